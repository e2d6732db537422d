//! What a resume may change: `--resume` continues the run that is in the directory, so the
//! configuration and scenario it is given are compared with the run's saved `config.ron` and
//! `scenario.ron` before anything is restored or written.
//!
//! Only run-control fields may differ: `name`, `device`, `total_steps`, `checkpoint_every`,
//! `keep_checkpoints`, `keep_every`, `iql.wait_seconds` and `checkpoint_replay` (how long, where, how often
//! and what is saved; never what is learned). Every other field, of every section, decides a
//! tensor's shape (`network.hidden`, `network.layers`, `arenas`, `seeds`, `algo`,
//! `learn.opponent_models`, the value head's `learn.loss` and `learn.bins`, ...), a random
//! stream (`seed`, `rollout`, ...) or the learning itself (`learn.lr`, `learn.gamma`, ...): a
//! resume that changed one would continue neither the
//! saved run nor the asked one, and would relabel the run's history. The scenario is compared
//! by its resolved content, not its path: the same file moved is the same scenario, an edited
//! one is not.

use std::fmt;

use super::RunError;
use super::run_dir::RunDir;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;

/// One field a resume would change: `field: saved -> asked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The field (`hidden`, `scenario max_steps`, ...).
    pub field: String,
    /// Its value in the run directory.
    pub saved: String,
    /// The value asked for.
    pub asked: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} -> {}", self.field, self.saved, self.asked)
    }
}

/// The refusal's text for `changes`: each on its own line, then how to go on.
pub(crate) fn describe(changes: &[Change]) -> String {
    let mut out = String::new();
    for c in changes {
        out.push_str(&format!("\n  {c}"));
    }
    out.push_str(
        "\nresume with the saved configuration (drop the flags and --set that change these; \
         total_steps, device, checkpoint_every, keep_checkpoints, keep_every, checkpoint_replay, \
         name and iql.wait_seconds may change), or start a new run with another --out",
    );
    out
}

/// Refuses resuming the run in `dir` with `asked` on `loaded` when that changes anything but
/// run-control fields. Reads only; writes nothing.
pub(crate) fn refuse_changes(
    dir: &RunDir,
    asked: &RunConfig,
    loaded: &LoadedScenario,
) -> Result<(), RunError> {
    let saved = RunDir::load_config(&dir.path)?;
    let mut changes = config_changes(&saved, asked);
    match std::fs::read_to_string(RunDir::scenario_file(&dir.path)) {
        Ok(text) => changes.extend(scenario_change(&text, &loaded.scenario.to_ron())),
        // A run without its scenario.ron: the paths are all there is to compare.
        Err(_) if saved.scenario != asked.scenario => changes.push(Change {
            field: "scenario".into(),
            saved: format!("{:?}", saved.scenario),
            asked: format!("{:?}", asked.scenario),
        }),
        Err(_) => {}
    }
    if changes.is_empty() {
        Ok(())
    } else {
        Err(RunError::ResumeMismatch {
            run: dir.path.clone(),
            changes,
        })
    }
}

/// The fields of `asked` that differ from `saved` (named by their dotted paths, `learn.lr`),
/// except run-control fields (and the scenario's path: its content is compared by
/// [`scenario_change`]).
pub(crate) fn config_changes(saved: &RunConfig, asked: &RunConfig) -> Vec<Change> {
    let mut changes = Vec::new();
    // Each struct destructured in full: a new field does not compile until it is sorted here.
    macro_rules! compare {
        ($ty:ident, $prefix:literal, $saved:expr, $asked:expr, skip [$($skip:ident),*],
         [$($field:ident),* $(,)?]) => {
            let $ty { $($skip: _,)* $($field),* } = $saved;
            $(
                let (s, a) = (format!("{:?}", $field), format!("{:?}", $asked.$field));
                if s != a {
                    changes.push(Change {
                        field: concat!($prefix, stringify!($field)).into(),
                        saved: s,
                        asked: a,
                    });
                }
            )*
        };
    }
    use super::config::{
        AlignmentConfig, IqlConfig, LearnConfig, LoqaConfig, NetworkConfig, OnlineDqnConfig,
        PpoConfig, PqnConfig, Pr2Config, QmixConfig,
    };
    compare!(
        RunConfig, "", saved, asked,
        skip [
            name, scenario, device, total_steps, checkpoint_every, keep_checkpoints,
            keep_every, checkpoint_replay,
            // Never in a file: a rank's share of the run, set by training.
            replica_shard,
            // The sections, compared below.
            network, learn, pqn, iql, pr2, online_dqn, ppo, qmix, alignment, loqa
        ],
        [algo, seed, seeds, sweep, arenas, rollout, desync_episodes, reward_shaping, population]
    );
    compare!(
        NetworkConfig, "network.", &saved.network, asked.network,
        skip [],
        [kind, hidden, layers, gru_hidden, memory_window, burn_in, shared]
    );
    compare!(
        LearnConfig, "learn.", &saved.learn, asked.learn,
        skip [],
        [
            lr, lr_decay, lr_scale, reference_batch, gamma, max_grad_norm, radam, loss,
            huber_delta, bins, v_min, v_max, sigma, eps_start, eps_finish, eps_fraction,
            opponent_models,
        ]
    );
    compare!(PqnConfig, "pqn.", &saved.pqn, asked.pqn, skip [], [epochs, minibatches, lambda]);
    compare!(
        IqlConfig,
        "iql.",
        &saved.iql,
        asked.iql,
        skip[wait_seconds],
        [
            replay_capacity,
            batch_size,
            samples_per_insert,
            min_replay,
            rate_error_buffer,
            target_tau,
            cer,
            threaded,
        ]
    );
    compare!(
        Pr2Config, "pr2.", &saved.pr2, asked.pr2,
        skip [],
        [critic, pair_rank, rho, buffer_batch_size, epochs, minibatches]
    );
    compare!(
        OnlineDqnConfig, "online_dqn.", &saved.online_dqn, asked.online_dqn,
        skip [],
        [epochs, minibatches, target_tau]
    );
    compare!(
        PpoConfig, "ppo.", &saved.ppo, asked.ppo,
        skip [],
        [
            epochs, minibatches, clip, clip_value, ent_coef, vf_coef, gae_lambda,
            normalize_advantages,
        ]
    );
    compare!(QmixConfig, "qmix.", &saved.qmix, asked.qmix, skip [], [embed, hyper_hidden]);
    compare!(AlignmentConfig, "alignment.", &saved.alignment, asked.alignment, skip [], [beta]);
    compare!(LoqaConfig, "loqa.", &saved.loqa, asked.loqa, skip [], [weight, temperature, discount]);
    changes
}

/// The first difference between two resolved scenarios (pretty RON, one field a line), named by
/// its field path (`scenario substrate.catch_reward`, `scenario map line 14`).
pub(crate) fn scenario_change(saved: &str, asked: &str) -> Option<Change> {
    let (s, a): (Vec<&str>, Vec<&str>) = (saved.lines().collect(), asked.lines().collect());
    let at = (0..s.len().max(a.len())).find(|&k| s.get(k) != a.get(k))?;
    let line = s.get(at).or(a.get(at)).copied().unwrap_or("");
    let path = field_path(&s[..at.min(s.len())], line);
    let key = |l: Option<&&str>| -> String {
        l.map_or("(end of file)".into(), |l| {
            let t = l.trim().trim_end_matches(',');
            key_value(t).map_or(t, |(_, v)| v).to_string()
        })
    };
    let field = match key_value(line.trim()) {
        Some(_) => format!("scenario {path}"),
        None if path.is_empty() => format!("scenario line {}", at + 1),
        None => format!("scenario {path} line {}", at + 1),
    };
    Some(Change {
        field,
        saved: key(s.get(at)),
        asked: key(a.get(at)),
    })
}

/// `key: value` of a trimmed RON line, when it names a field.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let ident = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident.then_some((k, v.trim()))
}

/// The dotted path of `line` given the lines before it: the keys of the enclosing fields (by
/// indentation), then its own key.
fn field_path(before: &[&str], line: &str) -> String {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut keys = Vec::new();
    let mut limit = indent(line);
    for l in before.iter().rev() {
        if l.trim().is_empty() || indent(l) >= limit {
            continue;
        }
        limit = indent(l);
        if let Some((k, _)) = key_value(l.trim()) {
            keys.push(k);
        }
    }
    keys.reverse();
    if let Some((k, _)) = key_value(line.trim()) {
        keys.push(k);
    }
    keys.join(".")
}
