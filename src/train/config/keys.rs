//! The configuration's keys: the common fields, the sections and their fields, and how a key
//! as a user writes it (`learn.lr`, `lr`, `epochs`, `network`) names one field. `--set`,
//! `--sweep`, the old flat form's migration and the error messages read this one table.

use super::Algo;

/// The top-level fields beside the sections (`replica_shard` is never in a file).
pub(crate) const COMMON: [&str; 17] = [
    "name",
    "scenario",
    "algo",
    "seed",
    "seeds",
    "sweep",
    "device",
    "total_steps",
    "arenas",
    "rollout",
    "desync_episodes",
    "reward_shaping",
    "population",
    "checkpoint_every",
    "keep_checkpoints",
    "keep_every",
    "checkpoint_replay",
];

/// Other names of common fields (serde aliases).
const COMMON_ALIASES: [(&str, &str); 1] = [("num_steps", "rollout")];

/// Other names of section fields (serde aliases, in every section that holds the field).
const FIELD_ALIASES: [(&str, &str); 1] = [("num_epochs", "epochs")];

/// A section of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Section {
    Network,
    Learn,
    Pqn,
    Iql,
    Pr2,
    OnlineDqn,
    Ppo,
    Qmix,
    Alignment,
    Loqa,
}

impl Section {
    /// Every section, in the order of the saved form.
    pub(crate) const ALL: [Section; 10] = [
        Section::Network,
        Section::Learn,
        Section::Pqn,
        Section::Iql,
        Section::Pr2,
        Section::OnlineDqn,
        Section::Ppo,
        Section::Qmix,
        Section::Alignment,
        Section::Loqa,
    ];

    /// Its field name in `RunConfig`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Section::Network => "network",
            Section::Learn => "learn",
            Section::Pqn => "pqn",
            Section::Iql => "iql",
            Section::Pr2 => "pr2",
            Section::OnlineDqn => "online_dqn",
            Section::Ppo => "ppo",
            Section::Qmix => "qmix",
            Section::Alignment => "alignment",
            Section::Loqa => "loqa",
        }
    }

    /// Its Rust type's name (what a RON error names as the struct).
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Section::Network => "NetworkConfig",
            Section::Learn => "LearnConfig",
            Section::Pqn => "PqnConfig",
            Section::Iql => "IqlConfig",
            Section::Pr2 => "Pr2Config",
            Section::OnlineDqn => "OnlineDqnConfig",
            Section::Ppo => "PpoConfig",
            Section::Qmix => "QmixConfig",
            Section::Alignment => "AlignmentConfig",
            Section::Loqa => "LoqaConfig",
        }
    }

    /// Its fields, in the order of the saved form.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Section::Network => &[
                "kind",
                "hidden",
                "layers",
                "gru_hidden",
                "memory_window",
                "burn_in",
                "shared",
            ],
            Section::Learn => &[
                "lr",
                "lr_decay",
                "lr_scale",
                "reference_batch",
                "gamma",
                "max_grad_norm",
                "radam",
                "loss",
                "huber_delta",
                "bins",
                "v_min",
                "v_max",
                "sigma",
                "eps_start",
                "eps_finish",
                "eps_fraction",
                "opponent_models",
            ],
            Section::Pqn => &["epochs", "minibatches", "lambda"],
            Section::Iql => &[
                "replay_capacity",
                "batch_size",
                "samples_per_insert",
                "min_replay",
                "rate_error_buffer",
                "target_tau",
                "cer",
                "threaded",
                "wait_seconds",
            ],
            Section::Pr2 => &[
                "critic",
                "pair_rank",
                "rho",
                "buffer_batch_size",
                "epochs",
                "minibatches",
            ],
            Section::OnlineDqn => &["epochs", "minibatches", "target_tau"],
            Section::Ppo => &[
                "epochs",
                "minibatches",
                "clip",
                "clip_value",
                "ent_coef",
                "vf_coef",
                "gae_lambda",
                "normalize_advantages",
            ],
            Section::Qmix => &["embed", "hyper_hidden"],
            Section::Alignment => &["beta"],
            Section::Loqa => &["weight", "temperature", "discount"],
        }
    }

    /// Whether `algo` reads this section (the network and `learn` are everyone's; PR2-IQL reads
    /// `iql` for its replay too).
    pub(crate) fn read_by(self, algo: Algo) -> bool {
        match self {
            Section::Network | Section::Learn => true,
            Section::Pqn => matches!(algo, Algo::Pqn | Algo::PqnVdn),
            Section::Iql => matches!(algo, Algo::Iql | Algo::Pr2Iql | Algo::Vdn | Algo::Qmix),
            Section::Pr2 => algo == Algo::Pr2Iql,
            Section::OnlineDqn => algo == Algo::OnlineDqn,
            Section::Ppo => matches!(
                algo,
                Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa
            ),
            Section::Qmix => algo == Algo::Qmix,
            Section::Alignment => algo == Algo::AdvantageAlignment,
            Section::Loqa => algo == Algo::Loqa,
        }
    }

    /// The section named `name`.
    pub(crate) fn named(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The section whose Rust type is `type_name`.
    pub(crate) fn of_type(type_name: &str) -> Option<Section> {
        Section::ALL
            .into_iter()
            .find(|s| s.type_name() == type_name)
    }

    /// Its field named `name` or by an alias of it.
    pub(crate) fn field(self, name: &str) -> Option<&'static str> {
        let name = FIELD_ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, f)| f);
        self.fields().iter().copied().find(|f| *f == name)
    }
}

/// One field of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// A common field.
    Common(&'static str),
    /// A section's field.
    Field(Section, &'static str),
    /// A whole section (a bare `learn`, `network`): its fields given as a RON struct.
    Section(Section),
}

impl Key {
    /// The dotted path: `learn.lr`, `rollout`, `network`.
    pub(crate) fn path(self) -> String {
        match self {
            Key::Common(f) => f.to_string(),
            Key::Field(s, f) => format!("{}.{f}", s.name()),
            Key::Section(s) => s.name().to_string(),
        }
    }

    /// The name the field had in the old flat form (`network.kind` was `network`).
    pub(crate) fn flat_name(self) -> &'static str {
        match self {
            Key::Common(f) | Key::Field(_, f) => {
                if self == Key::Field(Section::Network, "kind") {
                    "network"
                } else {
                    f
                }
            }
            Key::Section(s) => s.name(),
        }
    }
}

/// The common field named `name` (or by an alias).
pub(crate) fn common(name: &str) -> Option<&'static str> {
    let name = COMMON_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, f)| f);
    COMMON.iter().copied().find(|f| *f == name)
}

/// `name` and the other names of the field it names (`rollout`: `num_steps` too).
pub(crate) fn names_of(name: &str) -> Vec<&str> {
    let aliases = COMMON_ALIASES.iter().chain(&FIELD_ALIASES);
    std::iter::once(name)
        .chain(aliases.filter(|(_, f)| *f == name).map(|(alias, _)| *alias))
        .collect()
}

/// Every section field a bare (flat) name names: `lr` -> `learn.lr`; `epochs` -> three;
/// `network` (the old flat field) -> `network.kind`.
pub(crate) fn flat_candidates(name: &str) -> Vec<Key> {
    if name == "network" {
        return vec![Key::Field(Section::Network, "kind")];
    }
    Section::ALL
        .into_iter()
        .filter_map(|s| s.field(name).map(|f| Key::Field(s, f)))
        .collect()
}

/// `a`, `b` or `c`.
pub(crate) fn one_of(paths: &[String]) -> String {
    match paths {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|p| format!("`{p}`")).collect();
            format!("{} or `{last}`", init.join(", "))
        }
    }
}

/// Every key a `--set` takes, for an error message.
pub(crate) fn all_keys() -> String {
    let mut keys: Vec<String> = COMMON.iter().map(|f| f.to_string()).collect();
    for s in Section::ALL {
        keys.extend(s.fields().iter().map(|f| format!("{}.{f}", s.name())));
    }
    keys.join(", ")
}

/// The field `key` names in a configuration of `algo`: a dotted path (`learn.lr`), a common
/// field, a section's name, or a bare field name held by one section (`lr`) or by several
/// (`epochs`: the section `algo` reads; refused when it reads none of them, naming them).
pub(crate) fn resolve(key: &str, algo: Algo) -> Result<Key, String> {
    if let Some((section, field)) = key.split_once('.') {
        let Some(s) = Section::named(section) else {
            return Err(format!(
                "unknown field; `{section}` is not a section (sections are: {})",
                Section::ALL.map(Section::name).join(", ")
            ));
        };
        return match s.field(field) {
            Some(f) => Ok(Key::Field(s, f)),
            None => Err(not_in_section(s, field)),
        };
    }
    if let Some(f) = common(key) {
        return Ok(Key::Common(f));
    }
    if let Some(s) = Section::named(key) {
        return Ok(Key::Section(s));
    }
    let candidates = flat_candidates(key);
    match candidates[..] {
        [] => Err(format!("unknown field; fields are: {}", all_keys())),
        [one] => Ok(one),
        _ => {
            let read: Vec<Key> = candidates
                .iter()
                .copied()
                .filter(|k| matches!(k, Key::Field(s, _) if s.read_by(algo)))
                .collect();
            match read[..] {
                [one] => Ok(one),
                _ => Err(format!(
                    "`{key}` is a field of several sections and algo {} reads none of them: \
                     write {}",
                    algo_name(algo),
                    one_of(&candidates.iter().map(|k| k.path()).collect::<Vec<_>>())
                )),
            }
        }
    }
}

/// Why `field` is not a field of `s`: where it is instead, or what `s` holds.
pub(crate) fn not_in_section(s: Section, field: &str) -> String {
    let elsewhere: Vec<String> = flat_candidates(field)
        .into_iter()
        .filter(|k| !matches!(k, Key::Field(t, _) if *t == s))
        .map(Key::path)
        .collect();
    let common = common(field).map(str::to_string);
    let places: Vec<String> = elsewhere.into_iter().chain(common).collect();
    if places.is_empty() {
        format!(
            "unknown field `{field}` in `{}`; its fields are: {}",
            s.name(),
            s.fields().join(", ")
        )
    } else {
        format!(
            "`{field}` is not a field of `{}`: it is {}",
            s.name(),
            one_of(&places)
        )
    }
}

/// `algo`'s name as a configuration writes it (`pr2_iql`).
pub(crate) fn algo_name(algo: Algo) -> &'static str {
    match algo {
        Algo::Pqn => "pqn",
        Algo::Iql => "iql",
        Algo::Pr2Iql => "pr2_iql",
        Algo::OnlineDqn => "online_dqn",
        Algo::Ippo => "ippo",
        Algo::Mappo => "mappo",
        Algo::PqnVdn => "pqn_vdn",
        Algo::Vdn => "vdn",
        Algo::Qmix => "qmix",
        Algo::AdvantageAlignment => "advantage_alignment",
        Algo::Loqa => "loqa",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_resolve_by_section_and_by_algo() {
        let r = |k: &str, a| resolve(k, a).map(Key::path);
        assert_eq!(r("lr", Algo::Pqn).unwrap(), "learn.lr");
        assert_eq!(r("learn.lr", Algo::Iql).unwrap(), "learn.lr");
        assert_eq!(r("num_steps", Algo::Pqn).unwrap(), "rollout");
        assert_eq!(r("num_epochs", Algo::Pr2Iql).unwrap(), "pr2.epochs");
        assert_eq!(r("pqn.num_epochs", Algo::Iql).unwrap(), "pqn.epochs");
        assert_eq!(r("epochs", Algo::OnlineDqn).unwrap(), "online_dqn.epochs");
        assert_eq!(r("target_tau", Algo::Pr2Iql).unwrap(), "iql.target_tau");
        assert_eq!(r("network", Algo::Pqn).unwrap(), "network");
        let err = r("epochs", Algo::Iql).unwrap_err();
        assert!(
            err.contains("`pqn.epochs`, `pr2.epochs`, `online_dqn.epochs` or `ppo.epochs`"),
            "{err}"
        );
        let err = r("target_tau", Algo::Pqn).unwrap_err();
        assert!(err.contains("`iql.target_tau` or `online_dqn.target_tau`"));
        assert!(
            r("learning_rate", Algo::Pqn)
                .unwrap_err()
                .contains("unknown field")
        );
        let err = r("learn.epochs", Algo::Pqn).unwrap_err();
        assert!(err.contains("it is `pqn.epochs`"), "{err}");
        assert!(
            r("lrn.lr", Algo::Pqn)
                .unwrap_err()
                .contains("not a section")
        );
    }
}
