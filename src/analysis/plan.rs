//! The analysis preflight: before any enumeration or table allocation, the number of states,
//! (state, joint action) pairs, successor edges with slip fan-out (estimated by enumerating the
//! successors of a fixed random sample of pairs), and the bytes of every table the chosen
//! method needs, against the budget. The exact method caps its successor cache at what is left
//! of half the budget beside everything else (or at `--cache-bytes`), and lists its checkpoint
//! file's size on disk (the values `[S, N]`); the explicit graph is refused when it does not fit.

use rand_core::Rng;
use serde::Serialize;

use super::explicit::edge_bytes;
use super::model::TransitionModel;
use crate::train::plan::{Plan, PlanTensor};
use crate::train::preflight::sizing::fmt;

/// The buffers of writing or reading the exact analysis' checkpoint (the values stream
/// through them).
const CHECKPOINT_BUFFERS: u64 = 128 << 10;

/// How NashConv is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Value iteration over states with successors on the fly (or cached when it fits).
    Exact,
    /// Materialise the explicit stochastic graph first (tiny scenarios, reference only).
    Explicit,
}

/// The counts the preflight works from.
#[derive(Debug, Clone, Serialize)]
pub struct Estimates {
    /// Non-terminal states.
    pub states: u64,
    /// Learners' intended joint actions per state, `A^N`.
    pub joint_actions: u64,
    /// `states x A^N`.
    pub pairs: u64,
    /// Applied joint actions per state (chance outcomes), `A^M` with slip.
    pub fan_out_bound: u64,
    /// Estimated distinct successor edges of the explicit graph.
    pub edges: u64,
    /// Bytes of the explicit graph.
    pub explicit_graph_bytes: u64,
}

/// The preflight's answer.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisPlan {
    /// The counts.
    pub estimates: Estimates,
    /// The tables of the chosen method, their total and the budget.
    pub plan: Plan,
    /// Whether the exact method keeps a successor cache (a cap of at least one block).
    pub cache: bool,
    /// The exact method's successor-cache cap in bytes (0: none).
    pub cache_bytes: u64,
    /// Bytes of the uncapped successor cache (every state's successors).
    pub cache_full_bytes: u64,
    /// At most the bytes on disk of the exact method's checkpoint (`RUN/nashconv_exact.partial`:
    /// the values `[S, N]` as f64 and a header); 0 for the explicit method.
    pub checkpoint_file_bytes: u64,
}

/// Counts for `model`; the edges from `samples` random pairs (fixed seed).
pub fn estimate(model: &TransitionModel, samples: usize) -> Estimates {
    let (n, a) = (model.learners(), model.actions());
    let states = model.states();
    let joint_actions = (a as u64).saturating_pow(n as u32);
    let pairs = states.saturating_mul(joint_actions);
    let fan_out_bound = (0..model.agents())
        .map(|s| model.fan_out_per_agent(s) as u64)
        .product::<u64>();
    let mut rng = crate::rng::stream(0xA11A, 0, crate::rng::Purpose::Rules);
    let k = samples.min(pairs as usize).max(1);
    let mut total = 0u64;
    let mut intended = vec![0u8; n];
    for _ in 0..k {
        let s = rng.next_u64() % states.max(1);
        for x in intended.iter_mut() {
            *x = crate::rng::below(rng.next_u32(), a as u32) as u8;
        }
        total += model.successors(s, &intended).len() as u64;
    }
    let edges = ((total as f64 / k as f64) * pairs as f64) as u64;
    Estimates {
        states,
        joint_actions,
        pairs,
        fan_out_bound,
        edges,
        explicit_graph_bytes: edges
            .saturating_mul(edge_bytes(n))
            .saturating_add(pairs.saturating_mul(8)),
    }
}

/// The plan for `method` under `budget` bytes. `obs_batch` sizes the observation batches used
/// to tabulate the frozen policies. `cache_cap`: the successor cache's byte cap; by default
/// what is left of half the budget beside the other tables (never more than the whole cache).
pub fn plan(
    model: &TransitionModel,
    method: Method,
    budget: u64,
    obs_batch: u64,
    cache_cap: Option<u64>,
) -> AnalysisPlan {
    let e = estimate(model, 256);
    let (n, a) = (model.learners() as u64, model.actions() as u64);
    let o = model.layout().obs_len as u64;
    let s = e.states;
    let starts = model.start_distribution().len() as u64;
    let mut tensors = vec![
        PlanTensor {
            name: "frozen policies".into(),
            shape: format!("{} states x {n} learners x {a} actions x 4 B", fmt(s)),
            bytes: s.saturating_mul(n * a * 4),
            knobs: "a smaller scenario, or --nashconv learned",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "values (current and next sweep)".into(),
            shape: format!("2 x {} states x {n} learners x 8 B", fmt(s)),
            bytes: s.saturating_mul(2 * n * 8),
            knobs: "a smaller scenario, or --nashconv learned",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "start distribution and observation batches".into(),
            shape: format!(
                "{} start states x 16 B + {} states x {n} x {o} B",
                fmt(starts),
                fmt(obs_batch)
            ),
            bytes: starts * 16 + obs_batch * n * (o + 64 * 4),
            knobs: "",
            disk_bytes: None,
            params: 0,
        },
    ];
    use super::successors::SuccessorCache;
    let full = SuccessorCache::bytes(model);
    let mut cap = 0;
    let mut checkpoint_file_bytes = 0;
    match method {
        Method::Exact => {
            let file = super::partial::max_file_bytes(s, n);
            checkpoint_file_bytes = file;
            tensors.push(PlanTensor {
                name: "checkpoint buffers".into(),
                shape: format!(
                    "on disk: RUN/nashconv_exact.partial, {} states x {n} learners x 8 B + header \
                     = {} (twice while it is replaced; --checkpoint-every 0: none)",
                    fmt(s),
                    crate::error::human_bytes(file)
                ),
                bytes: CHECKPOINT_BUFFERS,
                knobs: "",
                disk_bytes: Some(file),
                params: 0,
            });
            let rest: u64 = tensors.iter().map(|t| t.bytes).sum();
            let asked = cache_cap.unwrap_or_else(|| (budget / 2).saturating_sub(rest));
            cap = SuccessorCache::capped_bytes(model, asked);
            let share = if full == 0 {
                0.0
            } else {
                100.0 * (cap as f64 / full as f64).min(1.0)
            };
            tensors.push(PlanTensor {
                name: if cap == 0 {
                    "successor cache (none: successors computed on the fly)".into()
                } else if cap >= full {
                    "successor cache (every state)".into()
                } else {
                    format!("successor cache (capped: {share:.0}% of states, rest on the fly)")
                },
                shape: format!(
                    "{} states x {} applied joint actions x ({} B), blocks of {}; whole table {}",
                    fmt(s),
                    fmt(model.applied_joint()),
                    4 + 4 * n,
                    super::successors::BLOCK,
                    crate::error::human_bytes(full)
                ),
                bytes: cap,
                knobs: "a smaller --cache-bytes",
                disk_bytes: None,
                params: 0,
            });
        }
        Method::Explicit => tensors.push(PlanTensor {
            name: "explicit transition graph".into(),
            shape: format!(
                "{} edges (estimated: {} states x {} joint actions x {:.1} successors, slip fan-out up to {}) x {} B + {} pair offsets x 8 B",
                fmt(e.edges),
                fmt(s),
                fmt(e.joint_actions),
                e.edges as f64 / e.pairs.max(1) as f64,
                e.fan_out_bound,
                edge_bytes(n as usize),
                fmt(e.pairs)
            ),
            bytes: e.explicit_graph_bytes,
            knobs: "use --nashconv exact (values per state, successors on the fly)",
            disk_bytes: None,
            params: 0,
        }),
    }
    let total_bytes = tensors.iter().fold(0u64, |t, x| t.saturating_add(x.bytes));
    AnalysisPlan {
        estimates: e,
        plan: Plan {
            tensors,
            total_bytes,
            budget_bytes: budget,
            fits: total_bytes <= budget,
            figures: Vec::new(),
            gpu: None,
            disk: None,
        },
        cache: cap > 0,
        cache_bytes: cap,
        cache_full_bytes: full,
        checkpoint_file_bytes,
    }
}

impl AnalysisPlan {
    /// The counts and the table for humans.
    pub fn table(&self) -> String {
        let e = &self.estimates;
        format!(
            "states {}; (state, joint action) pairs {}; explicit graph: ~{} edges, {} (slip fan-out up to {} per pair)\n{}",
            fmt(e.states),
            fmt(e.pairs),
            fmt(e.edges),
            crate::error::human_bytes(e.explicit_graph_bytes),
            e.fan_out_bound,
            self.plan.table()
        )
    }
}
