//! Hyperparameter sweeps in one process: a run's `sweep` (from the config's `sweep:` block and
//! `--sweep key=[v1, v2, ...]`) is a grid of values for per-network scalars; every grid point x
//! every seed is one **replica**. All replicas' networks sit in one stack (replica k owns a
//! contiguous block of networks), one forward/backward pass serves them all, and each replica
//! reads its own values of the swept keys, so replica k computes exactly what a single run with
//! that grid point's values and seed `seed + s` computes.
//!
//! Order: grid points in the cartesian product of the keys in name order (the first key varies
//! slowest), seeds fastest within a point: replica `k = point x seeds + s`.
//!
//! A key is a field as `--set` names it: a dotted path (`learn.lr`) or a bare name
//! (`lr`; one several sections hold, such as `target_tau`, is the one the run's `algo` reads);
//! it is kept as written in the replicas' labels, metrics and tables. Keys that change a
//! tensor's shape or the arenas (`network.hidden`, `arenas`, `rollout`, ...) are refused with
//! their name: they cannot share one stack. PQN, IQL and PR2-IQL sweep (each its
//! own keys, [`sweepable`]); IQL's and PR2-IQL's replicas learn at their own moments (each
//! network has its own Adam step count), so their rate limiters' keys sweep too, and each
//! replica has its own value loss.

use super::keys::{self, Key, Section};
use super::{Algo, ConfigError, RunConfig};

/// The value loss's keys (every learner sweeps them).
const LOSS_KEYS: [(&str, &str); 5] = [
    (
        "loss",
        "the replica's value loss (every point's head as wide: mse and huber, or hl_gauss)",
    ),
    ("huber_delta", "the replica's Huber threshold"),
    ("v_min", "the replica's HL-Gauss support"),
    ("v_max", "the replica's HL-Gauss support"),
    ("sigma", "the replica's HL-Gauss smoothing"),
];

/// `a` then `b` (`N` = their lengths' sum, checked when the constant is built).
const fn concat<const A: usize, const B: usize, const N: usize>(
    a: [(&'static str, &'static str); A],
    b: [(&'static str, &'static str); B],
) -> [(&'static str, &'static str); N] {
    assert!(A + B == N);
    let mut out = [("", ""); N];
    let mut i = 0;
    while i < N {
        out[i] = if i < A { a[i] } else { b[i - A] };
        i += 1;
    }
    out
}

/// The keys a PQN sweep may vary, with what each is per replica.
pub const SWEEPABLE: [(&str, &str); 13] = concat(PQN_KEYS, LOSS_KEYS);

/// PQN's own keys (beside the value loss's).
const PQN_KEYS: [(&str, &str); 8] = [
    ("lr", "learning rate (network-wise Adam step)"),
    ("lr_decay", "linear decay of the learning rate"),
    ("gamma", "discount of the replica's lambda-returns"),
    ("lambda", "lambda of the replica's lambda-returns"),
    ("eps_start", "exploration at the start"),
    ("eps_finish", "exploration after the decay"),
    (
        "eps_fraction",
        "fraction of the run the exploration decays over",
    ),
    ("max_grad_norm", "per-network gradient clip"),
];

/// The keys an IQL sweep may vary, with what each is per replica.
pub const IQL_SWEEPABLE: [(&str, &str); 17] = concat(IQL_KEYS, LOSS_KEYS);

/// IQL's own keys (beside the value loss's).
const IQL_KEYS: [(&str, &str); 12] = [
    ("lr", "learning rate (network-wise Adam step)"),
    ("lr_decay", "linear decay of the learning rate"),
    ("gamma", "discount of the replica's TD targets"),
    ("eps_start", "exploration at the start"),
    ("eps_finish", "exploration after the decay"),
    (
        "eps_fraction",
        "fraction of the run's steps the exploration decays over",
    ),
    ("max_grad_norm", "per-network gradient clip"),
    (
        "target_tau",
        "Polyak factor of the replica's target networks",
    ),
    (
        "cer",
        "newest rows (PR2-IQL: whether the newest sequence) in every learner step of the \
         replica's replay",
    ),
    (
        "samples_per_insert",
        "the replica's rate limiter: rows sampled per row inserted",
    ),
    (
        "min_replay",
        "the replica's rate limiter: rows in its replay before it learns",
    ),
    (
        "rate_error_buffer",
        "the replica's rate limiter: slack around samples_per_insert",
    ),
];

/// The keys a PR2-IQL sweep may vary: IQL's (`cer` puts the replica's newest sequence in every
/// learner step; the rate limiter counts arena-steps; with `loss: hl_gauss` the support is the
/// own terms', and `huber_delta` the pairwise terms' threshold).
pub const PR2_SWEEPABLE: [(&str, &str); 17] = IQL_SWEEPABLE;

/// The keys an online DQN sweep may vary.
pub const ONLINE_DQN_SWEEPABLE: [(&str, &str); 13] = concat(ONLINE_DQN_KEYS, LOSS_KEYS);

/// Online DQN's own keys (beside the value loss's).
const ONLINE_DQN_KEYS: [(&str, &str); 8] = [
    ("lr", "learning rate"),
    ("lr_decay", "linear decay of the learning rate"),
    ("gamma", "discount of the replica's one-step targets"),
    (
        "target_tau",
        "Polyak factor of the replica's target networks",
    ),
    ("eps_start", "exploration at the start"),
    ("eps_finish", "exploration after the decay"),
    (
        "eps_fraction",
        "fraction of the run the exploration decays over",
    ),
    ("max_grad_norm", "per-network gradient clip"),
];

/// The keys a PQN-VDN sweep may vary (PQN's, without the value loss: it is MSE).
pub const PQN_VDN_SWEEPABLE: [(&str, &str); 8] = PQN_KEYS;

/// The keys an IPPO or MAPPO sweep may vary.
pub const IPPO_SWEEPABLE: [(&str, &str); 8] = [
    ("lr", "learning rate"),
    ("lr_decay", "linear decay of the learning rate"),
    ("gamma", "discount"),
    ("max_grad_norm", "per-network gradient clip"),
    ("clip", "the surrogate's clipping range"),
    ("ent_coef", "weight of the entropy bonus"),
    ("vf_coef", "weight of the value loss"),
    ("gae_lambda", "GAE's lambda"),
];

/// The keys a sweep of Advantage Alignment may vary: IPPO's and its weight.
pub const ALIGNMENT_SWEEPABLE: [(&str, &str); 9] = {
    let mut keys = [("beta", "weight of the alignment term"); 9];
    let mut k = 0;
    while k < IPPO_SWEEPABLE.len() {
        keys[k] = IPPO_SWEEPABLE[k];
        k += 1;
    }
    keys
};

/// The keys a sweep of LOQA may vary: IPPO's and its opponent term's.
pub const LOQA_SWEEPABLE: [(&str, &str); 11] = {
    let mut keys = [("weight", "weight of the opponent term"); 11];
    let mut k = 0;
    while k < IPPO_SWEEPABLE.len() {
        keys[k] = IPPO_SWEEPABLE[k];
        k += 1;
    }
    keys[9] = ("temperature", "the opponents' softmax temperature");
    keys[10] = ("discount", "loaded DiCE's extra discount");
    keys
};

/// The keys a sweep of `algo` may vary.
pub fn sweepable(algo: Algo) -> &'static [(&'static str, &'static str)] {
    match algo {
        Algo::Pqn => &SWEEPABLE,
        Algo::Iql => &IQL_SWEEPABLE,
        Algo::Pr2Iql => &PR2_SWEEPABLE,
        Algo::OnlineDqn => &ONLINE_DQN_SWEEPABLE,
        Algo::Ippo | Algo::Mappo => &IPPO_SWEEPABLE,
        Algo::AdvantageAlignment => &ALIGNMENT_SWEEPABLE,
        Algo::Loqa => &LOQA_SWEEPABLE,
        Algo::PqnVdn => &PQN_VDN_SWEEPABLE,
        Algo::Vdn | Algo::Qmix => &IQL_KEYS,
    }
}

/// Largest number of replicas (grid points x seeds) in one run.
pub const MAX_REPLICAS: usize = 1024;

pub use super::Sweep;

impl RunConfig {
    /// Derived: every replica with its single-run configuration; refuses a key that cannot be
    /// swept and a grid point whose values its fields refuse (see [`replicas`]).
    pub fn replicas(&self) -> Result<Vec<Replica>, ConfigError> {
        replicas(self)
    }
}

/// One replica of a run: a grid point and a seed, with the configuration it trains with.
#[derive(Debug, Clone, PartialEq)]
pub struct Replica {
    /// Position in the stack (its networks are the k-th block).
    pub index: usize,
    /// Grid point (0 without a sweep).
    pub point: usize,
    /// Seed index within the point (its seed is `seed + s`).
    pub seed_index: usize,
    /// The grid point's values, key to RON text, in key order.
    pub values: Vec<(String, String)>,
    /// The single-run configuration this replica equals (`seeds: 1`, no sweep).
    pub cfg: RunConfig,
}

impl Replica {
    /// The grid point as `key=value` pairs (`"lr=0.001 gamma=0.99"`), or `"-"` without a sweep.
    pub fn point_label(&self) -> String {
        point_label(&self.values)
    }
}

/// `key=value` pairs joined by spaces, `"-"` for none.
pub fn point_label(values: &[(String, String)]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `--sweep key=[v1, v2, ...]` (RON values; the brackets may be left out:
/// `key=v1,v2`).
pub fn parse_axis(arg: &str) -> Result<(String, Vec<ron::Value>), ConfigError> {
    let bad = |message: String| ConfigError::Override {
        assignment: format!("--sweep {arg}"),
        message,
    };
    let (key, values) = arg
        .split_once('=')
        .ok_or_else(|| bad("expected key=[v1, v2, ...]".into()))?;
    let values = values.trim();
    let inner = values
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(values);
    // Enum values (`loss=[mse,huber]`) are bare identifiers, which a RON value cannot hold:
    // they are kept as strings and set unquoted.
    let quoted: Vec<String> = inner
        .split(',')
        .map(|t| {
            let t = t.trim();
            let ident = t
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ident && t != "true" && t != "false" {
                format!("\"{t}\"")
            } else {
                t.to_string()
            }
        })
        .collect();
    let list = format!("[{}]", quoted.join(","));
    let parsed: Vec<ron::Value> = crate::scenario::ron_options()
        .from_str(&list)
        .map_err(|e| bad(format!("values are not a RON list: {e}")))?;
    if parsed.is_empty() {
        return Err(bad("no values".into()));
    }
    Ok((key.trim().to_string(), parsed))
}

/// A grid value as `--set` text: numbers and bools in RON, strings unquoted (enum values such as
/// `loss: "mse"` are written as strings in a config's `sweep:` block).
fn value_text(value: &ron::Value) -> Result<String, String> {
    match value {
        ron::Value::String(s) => Ok(s.clone()),
        ron::Value::Unit => {
            Err("a unit value: write enum values as names (`mse`) or strings".into())
        }
        v => ron::to_string(v).map_err(|e| e.to_string()),
    }
}

/// The field a sweep key names with `algo` (`lr` and `learn.lr` alike; the bare `network` is
/// `network.kind`), or why it names none.
fn swept_field(algo: Algo, key: &str) -> Result<Key, String> {
    match keys::resolve(key, algo) {
        Ok(Key::Section(Section::Network)) => Ok(Key::Field(Section::Network, "kind")),
        Ok(Key::Section(s)) => Err(format!(
            "is the section `{}`: sweep its fields (`{}.{}`)",
            s.name(),
            s.name(),
            s.fields()[0]
        )),
        Ok(k) => Ok(k),
        // A bare name several sections hold, none of them read by `algo`.
        Err(_) if keys::flat_candidates(key).len() > 1 => {
            Err("is not read by this algorithm".into())
        }
        Err(_) => Err("is not a per-network scalar".into()),
    }
}

/// Why `key` cannot be swept with `algo`, or `None` when it can. A key is resolved as `--set`
/// resolves it; the reasons name it as written.
fn refusal(algo: Algo, key: &str) -> Option<String> {
    let allowed = sweepable(algo);
    let keys: Vec<&str> = allowed.iter().map(|(k, _)| *k).collect();
    let refuse = |why: &str| {
        Some(format!(
            "key `{key}` {why}; a sweep with algo {algo:?} varies per-network scalars only: {} (or run separate sweeps)",
            keys.join(", ")
        ))
    };
    let field = match swept_field(algo, key) {
        Ok(field) => field,
        Err(why) => return refuse(&why),
    };
    if allowed
        .iter()
        .any(|(k, _)| swept_field(algo, k) == Ok(field))
    {
        return None;
    }
    if let Key::Field(s, _) = field
        && !s.read_by(algo)
    {
        return refuse("is not read by this algorithm");
    }
    refuse(match field.flat_name() {
        "hidden" | "layers" | "shared" | "opponent_models" | "critic" | "pair_rank" | "algo"
        | "rho" | "scenario" | "loss" | "bins" => "changes the networks' shapes",
        "arenas" | "rollout" | "epochs" | "minibatches" | "total_steps" | "batch_size"
        | "buffer_batch_size" | "replay_capacity" | "desync_episodes" | "threaded" => {
            "changes the arenas or the shape of the data every replica shares"
        }
        "seed" | "seeds" => "is the seed axis: use `seeds` (every grid point runs each seed)",
        "radam" => "is one optimiser for the whole stack",
        "sweep" => "cannot sweep itself",
        "lambda" | "target_tau" | "cer" | "samples_per_insert" | "min_replay"
        | "rate_error_buffer" | "huber_delta" | "v_min" | "v_max" | "sigma" => {
            "is not read by this algorithm"
        }
        _ => "is not a per-network scalar",
    })
}

/// The grid points of `sweep`: each a list of (key, value) in key order.
pub fn points(sweep: &Sweep) -> Vec<Vec<(String, ron::Value)>> {
    let mut points: Vec<Vec<(String, ron::Value)>> = vec![Vec::new()];
    for (key, values) in sweep {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// Grid points x seeds, without building them (saturating).
pub fn replica_count(cfg: &RunConfig) -> usize {
    cfg.replica_count()
}

/// Every replica of `cfg`, each with its single-run configuration; refuses a key that cannot be
/// swept, an empty value list, and a value its field refuses (naming the key).
pub fn replicas(cfg: &RunConfig) -> Result<Vec<Replica>, ConfigError> {
    let bad = |message: String| ConfigError::Invalid {
        field: "sweep",
        message,
    };
    let mut fields: Vec<(Key, &str)> = Vec::new();
    for (key, values) in &cfg.sweep {
        if let Some(why) = refusal(cfg.algo, key) {
            return Err(bad(why));
        }
        if values.is_empty() {
            return Err(bad(format!("key `{key}` has no values")));
        }
        if let Ok(field) = swept_field(cfg.algo, key) {
            if let Some((_, other)) = fields.iter().find(|(f, _)| *f == field) {
                return Err(bad(format!(
                    "keys `{other}` and `{key}` both name `{}`; sweep it once",
                    field.path()
                )));
            }
            fields.push((field, key));
        }
    }
    let count = cfg.all_replica_count();
    if count > MAX_REPLICAS {
        return Err(bad(format!(
            "{count} replicas (grid points x seeds); at most {MAX_REPLICAS}"
        )));
    }
    let seeds = cfg.seeds.max(1);
    let mut out = Vec::with_capacity(count);
    for (p, point) in points(&cfg.sweep).into_iter().enumerate() {
        let mut base = RunConfig {
            seeds: 1,
            sweep: Sweep::new(),
            replica_shard: None,
            ..cfg.clone()
        };
        let mut values = Vec::new();
        for (key, value) in &point {
            let text = value_text(value).map_err(|e| bad(format!("key `{key}`: {e}")))?;
            base.set(&format!("{key}={text}"))
                .map_err(|e| bad(format!("key `{key}` value {text}: {e}")))?;
            values.push((key.clone(), text));
        }
        base.validate().map_err(|e| match e {
            ConfigError::Invalid { field, message } => bad(format!(
                "grid point {}: field `{field}`: {message}",
                point_label(&values)
            )),
            e => e,
        })?;
        for s in 0..seeds {
            out.push(Replica {
                index: out.len(),
                point: p,
                seed_index: s,
                values: values.clone(),
                cfg: RunConfig {
                    seed: cfg.seed.wrapping_add(s as u64),
                    ..base.clone()
                },
            });
        }
    }
    // One stack: every replica's head must be as wide (a swept `loss` may not mix hl_gauss
    // with mse or huber).
    let width = |c: &RunConfig| crate::train::kit::q_head::QHead::of(c).outputs_per_action();
    if let Some(r) = out.iter().find(|r| width(&r.cfg) != width(cfg)) {
        return Err(bad(format!(
            "grid point {} gives the networks {} outputs per action where the configuration's \
             `loss` gives {}: `loss` may sweep mse and huber, not hl_gauss beside them (it \
             changes the head; set `loss` to one of the swept kinds)",
            r.point_label(),
            width(&r.cfg),
            width(cfg)
        )));
    }
    // One rank's share: its replicas keep their seeds and values, renumbered from 0 in its
    // stack.
    if let Some((first, end)) = cfg.replica_shard {
        if first >= end || end > out.len() {
            return Err(bad(format!(
                "replica share {first}..{end} of a run with {} replicas",
                out.len()
            )));
        }
        out.truncate(end);
        out.drain(..first);
        for (k, r) in out.iter_mut().enumerate() {
            r.index = k;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_sweep(axes: &[&str]) -> RunConfig {
        let mut cfg = RunConfig::default();
        for a in axes {
            let (k, v) = parse_axis(a).unwrap();
            cfg.sweep.insert(k, v);
        }
        cfg
    }

    #[test]
    fn grid_is_the_cartesian_product_in_key_order_with_seeds_fastest() {
        let mut cfg = with_sweep(&["lr=[1e-3, 5e-4]", "gamma=0.9,0.99,0.999"]);
        cfg.seeds = 2;
        cfg.seed = 7;
        let reps = replicas(&cfg).unwrap();
        assert_eq!(reps.len(), 12);
        assert_eq!(replica_count(&cfg), 12);
        // gamma (first key by name) varies slowest, then lr, then the seed.
        let r = &reps[3];
        assert_eq!((r.point, r.seed_index, r.cfg.seed), (1, 1, 8));
        assert_eq!((r.cfg.learn.gamma, r.cfg.learn.lr), (0.9, 5e-4));
        assert_eq!(r.point_label(), "gamma=0.9 lr=0.0005");
        assert_eq!(
            (reps[11].cfg.learn.gamma, reps[11].cfg.learn.lr),
            (0.999, 5e-4)
        );
        assert!(
            reps.iter()
                .all(|r| r.cfg.seeds == 1 && r.cfg.sweep.is_empty())
        );
        // The same values a `--set` gives, bit for bit.
        let mut single = RunConfig::default();
        single.set("lr=5e-4").unwrap();
        assert_eq!(r.cfg.learn.lr.to_bits(), single.learn.lr.to_bits());
    }

    #[test]
    fn shape_keys_and_bad_values_are_refused_by_name() {
        for key in ["hidden", "arenas", "seeds", "radam", "scenario"] {
            let err = replicas(&with_sweep(&[&format!("{key}=[1, 2]")]))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("`{key}`")), "{err}");
        }
        let err = replicas(&with_sweep(&["gamma=[0.9, 1.5]"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("gamma=1.5") && err.contains("[0, 1]"), "{err}");
        assert!(parse_axis("lr").is_err());
        assert!(parse_axis("lr=[]").is_err());
        assert!(parse_axis("lr=[1e-3,").is_err());
        // PR2-IQL sweeps its per-network scalars, its rate limiter's keys and its value loss,
        // not a shape.
        let mut pr2 = with_sweep(&[
            "lr=[1e-3, 5e-4]",
            "target_tau=[0.05, 0.5]",
            "samples_per_insert=[1.0, 2.0]",
            "huber_delta=[1.0, 2.0]",
        ]);
        pr2.algo = Algo::Pr2Iql;
        assert_eq!(replicas(&pr2).unwrap().len(), 16);
        let mut refused = with_sweep(&["hidden=[1, 2]"]);
        refused.algo = Algo::Pr2Iql;
        let err = replicas(&refused).unwrap_err().to_string();
        assert!(err.contains("`hidden`"), "{err}");
    }

    #[test]
    fn no_sweep_gives_one_replica_per_seed() {
        let cfg = RunConfig {
            seeds: 3,
            ..RunConfig::default()
        };
        let reps = replicas(&cfg).unwrap();
        assert_eq!(reps.len(), 3);
        assert_eq!(reps[2].cfg.seed, 2);
        assert_eq!(reps[2].point_label(), "-");
    }
}
