//! The memory preflight: before a run allocates anything, the bytes of every large tensor it
//! will hold (with the formula that gives its size), the total, and the budget. A run that does
//! not fit is refused with the biggest tensors, their numbers and the knobs that shrink them.
//! `gridarena plan` prints the same table.

use serde::Serialize;

use super::config::{Algo, RunConfig};
use crate::critic::{Backend, Chosen, StackSpec};
use crate::error::human_bytes;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;

/// One tensor of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanTensor {
    /// What it is.
    pub name: String,
    /// Its size as a formula with the numbers filled in.
    pub shape: String,
    /// Bytes.
    pub bytes: u64,
    /// Config fields that shrink it.
    #[serde(skip)]
    pub knobs: &'static str,
}

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Every large tensor.
    pub tensors: Vec<PlanTensor>,
    /// Their sum.
    pub total_bytes: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// Whether the total fits the budget.
    pub fits: bool,
}

/// The default budget: three quarters of the memory available now (all of it unknown: 8 GiB).
pub fn default_budget() -> u64 {
    crate::sys::available_memory_bytes().map_or(8 << 30, |b| b / 4 * 3)
}

/// `n` with thousands separators.
pub(crate) fn fmt(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Plans a run of `cfg` on `loaded` with the critic on `device`, against `budget` bytes.
pub fn plan(cfg: &RunConfig, loaded: &LoadedScenario, device: &Chosen, budget: u64) -> Plan {
    let layout = Layout::derive(loaded);
    if cfg.algo == Algo::Pr2Iql {
        return plan_pr2(cfg, loaded, &layout, device, budget);
    }
    let single = super::pqn::stack_spec(cfg, loaded);
    let replicas = cfg.seeds.max(1) as u64;
    let spec = StackSpec {
        nets: single.nets * replicas as usize,
        ..single
    };
    let backend = match device {
        Chosen::Cpu { .. } => Backend::Cpu,
        #[cfg(feature = "gpu")]
        Chosen::Gpu { .. } => Backend::Gpu,
    };
    let (b, t, n) = (
        cfg.arenas as u64,
        cfg.rollout as u64,
        layout.learners as u64,
    );
    let d = spec.input as u64;
    let rows_per_step = replicas * b * n;
    // The largest pass: a training minibatch, or acting on every learner at once.
    let pass_rows = match cfg.algo {
        Algo::Pqn => (replicas * t * b * n / cfg.minibatches as u64).max(rows_per_step),
        Algo::Iql | Algo::Pr2Iql => (cfg.batch_size as u64).max(rows_per_step),
    };
    let s = spec.sizing_for(pass_rows as usize, backend, false);
    let mut tensors = vec![
        PlanTensor {
            name: "critic parameters, gradients, Adam moments, target".into(),
            shape: format!(
                "{} nets x {} params x 4 B x 5",
                spec.nets,
                fmt(spec.params_per_net() as u64)
            ),
            bytes: s.params + s.grads + s.adam + s.target,
            knobs: "lower hidden, layers or seeds, or use shared: true",
        },
        PlanTensor {
            name: "critic activations".into(),
            shape: format!(
                "{} rows per pass ({})",
                fmt(pass_rows),
                if cfg.algo == Algo::Pqn {
                    "rollout x arenas x learners / minibatches"
                } else {
                    "batch_size, or arenas x learners when acting"
                }
            ),
            bytes: s.activations + s.indices,
            knobs: "raise minibatches, or lower arenas, rollout, batch_size or hidden",
        },
        PlanTensor {
            name: "arenas".into(),
            shape: format!(
                "{} replicas x {} arenas x {} B",
                replicas,
                fmt(b),
                fmt(layout.bytes_per_arena() as u64)
            ),
            bytes: replicas * b * layout.bytes_per_arena() as u64,
            knobs: "lower arenas or seeds",
        },
    ];
    match cfg.algo {
        Algo::Pqn => tensors.push(PlanTensor {
            name: "rollout storage".into(),
            shape: format!(
                "{t} steps x {} rows x ({d} B obs + 24 B)",
                fmt(rows_per_step)
            ),
            bytes: t * rows_per_step * (d + 24) + rows_per_step * 4,
            knobs: "lower rollout, arenas or seeds",
        }),
        Algo::Iql | Algo::Pr2Iql => tensors.push(PlanTensor {
            name: "replay buffer".into(),
            shape: format!(
                "{} rows x (2 x {d} B obs + 16 B)",
                fmt(cfg.replay_capacity as u64)
            ),
            bytes: cfg.replay_capacity as u64 * (2 * d + 16),
            knobs: "lower replay_capacity",
        }),
    }
    if cfg.opponent_models {
        let m = StackSpec {
            nets: n as usize,
            input: spec.input,
            hidden: cfg.hidden,
            layers: cfg.layers,
            head: (n as usize).saturating_sub(1) * layout.actions,
        };
        // PQN scores a whole rollout in one pass; IQL one minibatch (and stores the others'
        // actions with every replayed row).
        let (rows, extra) = match cfg.algo {
            Algo::Pqn => (t * b * n, t * b * n * (4 + 4 * n)),
            _ => (cfg.batch_size as u64, cfg.replay_capacity as u64 * 4 * n),
        };
        tensors.push(PlanTensor {
            name: "opponent models".into(),
            shape: format!(
                "{n} nets x (N-1) x A = {} outputs, {} rows per pass",
                m.head,
                fmt(rows)
            ),
            bytes: m.sizing_for(rows as usize, backend, false).total()
                + rows * m.head as u64 * 4
                + extra,
            knobs: "opponent_models: false, or lower hidden, rollout or arenas",
        });
    }
    let total_bytes = tensors.iter().map(|t| t.bytes).sum();
    Plan {
        tensors,
        total_bytes,
        budget_bytes: budget,
        fits: total_bytes <= budget,
    }
}

fn backend_of(device: &Chosen) -> Backend {
    match device {
        Chosen::Cpu { .. } => Backend::Cpu,
        #[cfg(feature = "gpu")]
        Chosen::Gpu { .. } => Backend::Gpu,
    }
}

/// PR2-IQL's plan: the critic head (the only tensor whose width depends on the number of
/// agents) on its own line with its formula, so a joint critic's `A^N` shows where it comes from.
fn plan_pr2(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    device: &Chosen,
    budget: u64,
) -> Plan {
    use super::pr2;
    use crate::critic::pr2::HeadForm;
    let backend = backend_of(device);
    let (n, a) = (layout.learners, layout.actions);
    let head = pr2::head(cfg, n.max(2), a);
    let width = head.width_checked().unwrap_or(u64::MAX);
    let spec = pr2::stack_spec(cfg, loaded);
    let (t, s_seq, b) = (
        cfg.rollout as u64,
        cfg.buffer_batch_size as u64,
        cfg.arenas as u64,
    );
    let d = spec.input as u64;
    let rows = pr2::batch_rows(cfg, n) as u64;
    let mb_rows = pr2::pass_rows(cfg, n) as u64;
    let pass_rows = mb_rows.max(b * n as u64);
    let body = StackSpec { head: 0, ..spec };
    // Saturating arithmetic throughout: a joint head can be astronomically wide.
    let sized = |sp: &StackSpec| sp.sizing_for(pass_rows as usize, backend, false);
    let with_head = if width > u32::MAX as u64 {
        None
    } else {
        Some(sized(&spec))
    };
    let without = sized(&body);
    let head_params = (spec.hidden as u64)
        .saturating_add(1)
        .saturating_mul(width)
        .saturating_mul(n as u64 * 4 * 5);
    // Per row of the learner step, the backend keeps outputs and gradients of the head
    // (`sizing`), and the learner holds the output copy and its gradient: 2 more.
    let head_backend = with_head.map_or(u64::MAX, |w| {
        w.activations.saturating_sub(without.activations)
    });
    let head_host = pass_rows.saturating_mul(width).saturating_mul(4 * 2);
    let head_bytes = head_backend
        .saturating_add(head_host)
        .saturating_add(head_params);
    let copies = head_bytes as f64 / (pass_rows as f64 * width as f64 * 4.0);
    let form = match head.form {
        HeadForm::Joint => format!("{a}^{n} = {} per row", fmt(width)),
        HeadForm::Pairwise => format!("{a} + ({n}-1) x {a}^2 = {} per row", fmt(width)),
        HeadForm::LowRank(k) => format!("{a} + 2 x ({n}-1) x {a} x {k} = {} per row", fmt(width)),
    };
    let mut tensors = vec![
        PlanTensor {
            name: "critic head (outputs, gradients, head weights)".into(),
            shape: format!(
                "{form} x {} rows per pass ({} steps x {s_seq} sequences x {n} learners / {} minibatches) x 4 B x {copies:.1} (outputs, gradients, copies, weights)",
                fmt(pass_rows),
                t + 1,
                cfg.minibatches
            ),
            bytes: head_bytes,
            knobs: "use critic: factorized (pair_rank: k for less), or lower num_steps (rollout) / buffer_batch_size, or raise minibatches",
        },
        PlanTensor {
            name: "critic body (parameters, Adam, target, activations)".into(),
            shape: format!(
                "{} nets x {} params x 4 B x 5 + {} rows of activations",
                body.nets,
                fmt(body.params_per_net() as u64),
                fmt(pass_rows)
            ),
            bytes: without.total(),
            knobs: "lower hidden, layers, rollout or buffer_batch_size",
        },
        PlanTensor {
            name: "learner-step rows (observations, actions, targets)".into(),
            shape: format!(
                "{} rows x ({d} B obs + {} B)",
                fmt(rows),
                4 * (n as u64 + 5) + 4 * a as u64
            ),
            bytes: rows * (d + 4 * (n as u64 + 5) + 4 * a as u64),
            knobs: "lower rollout or buffer_batch_size",
        },
        PlanTensor {
            name: "arenas and rollout".into(),
            shape: format!(
                "{b} arenas x ({} B + {} steps x {n} learners x ({d} B obs + 8 B))",
                fmt(layout.bytes_per_arena() as u64),
                t + 1
            ),
            bytes: b * layout.bytes_per_arena() as u64 + (t + 1) * b * n as u64 * (d + 8),
            knobs: "lower arenas or rollout",
        },
        PlanTensor {
            name: "replay buffer".into(),
            shape: format!(
                "{} sequences x {} steps x {n} learners x ({d} B obs + 8 B)",
                pr2::replay_sequences(cfg),
                t + 1
            ),
            bytes: pr2::replay_sequences(cfg) as u64 * (t + 1) * n as u64 * (d + 8),
            knobs: "lower replay_capacity",
        },
    ];
    if cfg.opponent_models {
        let m = super::opponent::ConditionalModels::spec(cfg, n.max(2), a, spec.input);
        let ms = m.sizing_for(pass_rows as usize, backend, false);
        tensors.push(PlanTensor {
            name: "conditional opponent models".into(),
            shape: format!(
                "{n} nets x (N-1) x A x A = {} outputs, {} rows per pass",
                m.head,
                fmt(pass_rows)
            ),
            bytes: ms.total() + 2 * pass_rows * m.head as u64 * 4,
            knobs: "opponent_models: false, or lower hidden, rollout or buffer_batch_size",
        });
    }
    let total_bytes = tensors
        .iter()
        .fold(0u64, |acc, t| acc.saturating_add(t.bytes));
    Plan {
        tensors,
        total_bytes,
        budget_bytes: budget,
        fits: total_bytes <= budget,
    }
}

impl Plan {
    /// The table for humans.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for t in &self.tensors {
            out.push_str(&format!(
                "{:<52} {:>11}   {}\n",
                t.name,
                human_bytes(t.bytes),
                t.shape
            ));
        }
        out.push_str(&format!(
            "{:<52} {:>11}   budget {} ({})\n",
            "total",
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            if self.fits { "fits" } else { "DOES NOT FIT" }
        ));
        out
    }

    /// The refusal message: the biggest tensor with its numbers and knobs.
    pub fn refusal(&self) -> Option<String> {
        if self.fits {
            return None;
        }
        let big = self.tensors.iter().max_by_key(|t| t.bytes)?;
        Some(format!(
            "{} {} = {} of {} in all > budget {}: {}",
            big.name,
            big.shape,
            human_bytes(big.bytes),
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            big.knobs
        ))
    }
}

/// Parses a byte count: a number with an optional K, M, G or T suffix (binary units, `B`, `iB`
/// optional), e.g. `512M`, `2GiB`, `1.5G`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, scale) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512M or 2GiB"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{text:?} is not a size like 512M or 2GiB"));
    }
    Ok((v * scale as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("100").unwrap(), 100);
        assert!(parse_bytes("lots").is_err());
    }
}
