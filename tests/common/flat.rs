//! The old flat form of a run configuration, as run directories saved it before the
//! configuration had sections.

use gridarena::train::config::{Algo, RunConfig};

/// The old flat form of `cfg` as a run directory saved it: every section's fields at the top
/// (the network's `kind` as `network`), one value for a field several sections hold: the
/// section `cfg.algo` reads, PQN's when it reads none.
pub fn flat_text(cfg: &RunConfig) -> String {
    let shared_from = match cfg.algo {
        Algo::Pqn | Algo::Iql => ["pqn", "iql"],
        Algo::Pr2Iql => ["pr2", "iql"],
        Algo::OnlineDqn => ["online_dqn", "online_dqn"],
        Algo::Ippo
        | Algo::Mappo
        | Algo::PqnVdn
        | Algo::Vdn
        | Algo::Qmix
        | Algo::AdvantageAlignment
        | Algo::Loqa => {
            panic!("the flat form predates the PPO, VDN, QMIX and opponent-shaping learners")
        }
    };
    let mut out = Vec::new();
    let mut section = None;
    for line in cfg.to_ron().lines() {
        let t = line.trim();
        if line.starts_with("    ") && !line.starts_with("     ") && t.ends_with(": (") {
            section = Some(t.trim_end_matches(": (").to_string());
            continue;
        }
        if section.is_some() && line.starts_with("    ") && !line.starts_with("     ") && t == "),"
        {
            section = None;
            continue;
        }
        let Some(s) = &section else {
            out.push(line.to_string());
            continue;
        };
        // Sections added after the flat form had none of their fields there.
        if s == "ppo" || s == "qmix" || s == "alignment" || s == "loqa" {
            continue;
        }
        let (key, value) = t.split_once(':').unwrap();
        let keep = match key {
            "epochs" | "minibatches" => s == shared_from[0],
            "target_tau" => s == shared_from[1],
            _ => true,
        };
        if keep {
            let key = if key == "kind" { "network" } else { key };
            out.push(format!("    {key}:{value}"));
        }
    }
    out.join("\n")
}
