//! The memory preflight: before a run allocates anything, the bytes of every large tensor it
//! will hold (with the formula that gives its size), the total, and the budget. A run that does
//! not fit is refused with the biggest tensors, their numbers and the knobs that shrink them.
//! `gridarena plan` prints the same table. On a GPU the plan has a device half
//! ([`super::gpu_plan`]): the buffers the GPU critic will create, against the adapter's limits and
//! the `--gpu-memory` budget.

use serde::Serialize;

use super::disk::{DiskPlan, disk_plan};
use super::gpu_plan::{GpuPlan, gpu_budget};
pub use super::sizing::PlanTensor;
use super::sizing::table_line;
use crate::critic::{Backend, Chosen};
use crate::error::human_bytes;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::algos::algorithm;
use crate::train::config::RunConfig;

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Every large tensor.
    pub tensors: Vec<PlanTensor>,
    /// Their sum.
    pub total_bytes: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// Whether the total fits the budget (and, on a GPU, the device plan breaks no limit).
    pub fits: bool,
    /// Figures shown for comparison, not counted in any total (the joint PR2 critic's Q
    /// tensors as the report this project started from sized them).
    pub figures: Vec<PlanTensor>,
    /// The device half, when the critic runs on a GPU.
    pub gpu: Option<GpuPlan>,
    /// The disk the run's checkpoints take (a training plan; `None` for an analysis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskPlan>,
}

/// The device a plan is for.
#[derive(Debug, Clone, Copy)]
pub enum PlanDevice<'a> {
    /// The device chosen (its limits come from the probe).
    Chosen(&'a Chosen),
    /// A GPU asked for where none was found: planned with unknown limits (the reason given).
    MissingGpu(&'a str),
}

/// The default budget: three quarters of the memory available now (all of it unknown: 8 GiB).
pub fn default_budget() -> u64 {
    crate::sys::available_memory_bytes().map_or(8 << 30, |b| b / 4 * 3)
}

/// Plans a run of `cfg` on `loaded` with the critic on `device`, against `budget` bytes: the
/// algorithm lists its own tensors. On a GPU, the device buffers are checked against the
/// adapter's limits and the default device budget ([`plan_for`] takes `--gpu-memory`).
pub fn plan(cfg: &RunConfig, loaded: &LoadedScenario, device: &Chosen, budget: u64) -> Plan {
    plan_for(cfg, loaded, PlanDevice::Chosen(device), budget, None)
}

/// [`plan`] for `device`, with a device memory budget `gpu_memory` (`None`: the default rule,
/// [`super::gpu_plan::GPU_MEMORY_RULE`]).
pub fn plan_for(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    device: PlanDevice,
    budget: u64,
    gpu_memory: Option<u64>,
) -> Plan {
    let layout = Layout::derive(loaded);
    let algo = algorithm(cfg.algo);
    let mut tensors = (algo.plan)(cfg, loaded, &layout, backend_of(device));
    let snapshot_disk = self_play_tensors(cfg, &mut tensors);
    let total_bytes = tensors
        .iter()
        .fold(0u64, |acc, t| acc.saturating_add(t.bytes));
    let gpu_sizing = (algo.gpu)(cfg, loaded, &layout);
    let gpu = gpu_target(device).map(|(adapter, software, limits)| {
        let budget = gpu_budget(gpu_memory, software, budget);
        GpuPlan::new(&gpu_sizing, adapter, limits, budget)
    });
    let gpu_fits = gpu.as_ref().is_none_or(|g| g.breaches.is_empty());
    let disk = tensors
        .iter()
        .find_map(|t| t.disk_bytes)
        .map(|per| disk_plan(cfg, per.saturating_add(snapshot_disk)));
    Plan {
        tensors,
        total_bytes,
        budget_bytes: budget,
        fits: total_bytes <= budget && gpu_fits,
        figures: gpu_sizing.figures,
        gpu,
        disk,
    }
}

/// Self-play's lines (a run config whose `population` takes snapshots): the copy of the
/// learner that plays the snapshots (every line of the learner's but its checkpoint), and the
/// newest `max_snapshots` snapshots of its parameters with the copy a checkpoint writes of
/// them. Returns the bytes the snapshots add to each checkpoint on disk.
fn self_play_tensors(cfg: &RunConfig, tensors: &mut Vec<PlanTensor>) -> u64 {
    let Some(p) = cfg.population.as_ref().filter(|p| p.snapshot_every > 0) else {
        return 0;
    };
    let player = tensors
        .iter()
        .filter(|t| !t.name.starts_with("checkpoint"))
        .fold(0u64, |acc, t| acc.saturating_add(t.bytes));
    let params = tensors
        .iter()
        .fold(0u64, |acc, t| acc.saturating_add(t.params));
    let kept = (p.max_snapshots as u64)
        .saturating_mul(params)
        .saturating_mul(4);
    tensors.push(PlanTensor {
        name: "self-play player (a copy of the learner that plays the snapshots)".into(),
        shape: "the learner's lines above but its checkpoint".into(),
        bytes: player,
        knobs: "lower arenas, rollout, hidden or layers",
        disk_bytes: None,
        params: 0,
    });
    tensors.push(PlanTensor {
        name: "self-play snapshots (kept, and copied into each checkpoint)".into(),
        shape: format!(
            "{} snapshots x {} params x 4 B x 2",
            p.max_snapshots,
            super::sizing::fmt(params)
        ),
        bytes: kept.saturating_mul(2),
        knobs: "lower population.max_snapshots, hidden or layers",
        disk_bytes: None,
        params: 0,
    });
    kept
}

fn backend_of(device: PlanDevice) -> Backend {
    match device {
        PlanDevice::Chosen(Chosen::Cpu { .. }) => Backend::Cpu,
        #[cfg(feature = "gpu")]
        PlanDevice::Chosen(Chosen::Gpu { .. }) => Backend::Gpu,
        PlanDevice::MissingGpu(_) => Backend::Gpu,
    }
}

/// The adapter a device plan is for: its description, whether it is a software one, and its
/// limits (unknown without an adapter); `None` on the CPU.
fn gpu_target(device: PlanDevice) -> Option<(String, bool, Option<crate::critic::GpuLimits>)> {
    match device {
        PlanDevice::Chosen(Chosen::Cpu { .. }) => None,
        #[cfg(feature = "gpu")]
        PlanDevice::Chosen(Chosen::Gpu {
            adapter,
            software,
            limits,
            ..
        }) => Some((adapter.clone(), *software, Some(*limits))),
        PlanDevice::MissingGpu(reason) => Some((format!("no adapter ({reason})"), false, None)),
    }
}

impl Plan {
    /// The table for humans.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for t in &self.tensors {
            out.push_str(&table_line(&t.name, t.bytes, &t.shape));
        }
        out.push_str(&format!(
            "{:<52} {:>11}   budget {} ({})\n",
            "total",
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            if self.host_fits() {
                "fits"
            } else {
                "DOES NOT FIT"
            }
        ));
        if let Some(d) = &self.disk {
            out.push_str(&d.table_line());
        }
        for f in &self.figures {
            out.push_str(&table_line(&f.name, f.bytes, &f.shape));
        }
        if let Some(g) = &self.gpu {
            out.push_str(&g.table());
        }
        out
    }

    /// How a job of `ranks` ranks, `per_node` of them on each node, maps onto this plan (which
    /// is one rank's): each rank's arenas, the job's batch, and the memory of one node and of the
    /// whole job.
    pub fn job_lines(&self, cfg: &RunConfig, ranks: usize, per_node: usize) -> String {
        let (n, l) = (ranks.max(1) as u64, per_node.clamp(1, ranks.max(1)) as u64);
        let a = cfg.arenas as u64;
        let replicas = cfg.all_replica_count();
        let mut out = if cfg.iql.threaded {
            format!("ranks: {n}: train refuses threaded: true on several ranks\n")
        } else if replicas > 1 {
            let blocks = crate::dist::replica_blocks(replicas, ranks.max(1));
            let shares: Vec<String> = blocks
                .iter()
                .enumerate()
                .map(|(r, (first, end))| format!("rank {r}: {first}..{end}"))
                .collect();
            if (replicas as u64) < n {
                format!(
                    "ranks: {n}: train refuses {replicas} replicas on {n} ranks (each rank needs a \
                     whole replica); use at most {replicas} ranks\n"
                )
            } else {
                format!(
                    "ranks: {n} ({l} per node); the {replicas} replicas are split over the ranks in \
                     blocks ({}), each rank trains its own with no gradient exchange; every \
                     replica steps {a} arenas; the table is the largest block's\n",
                    shares.join(", ")
                )
            }
        } else {
            format!(
                "ranks: {n} ({l} per node); rank r steps the job's arenas r x {a} .. r x {a} + {}, \
                 the job's batch is {n} x {a} = {} arenas; every rank holds the same networks \
                 (gradients averaged over ranks)\n",
                a - 1,
                n * a
            )
        };
        out.push_str(&format!(
            "{:<52} {:>11}   node budget {} split over {l} ranks\n",
            format!("per node ({l} ranks)"),
            human_bytes(self.total_bytes.saturating_mul(l)),
            human_bytes(self.budget_bytes.saturating_mul(l)),
        ));
        out.push_str(&format!(
            "{:<52} {:>11}\n",
            format!("job ({n} ranks)"),
            human_bytes(self.total_bytes.saturating_mul(n))
        ));
        if let Some(g) = &self.gpu {
            out.push_str(&format!(
                "{:<52} {:>11}   (one GPU per rank)\n",
                format!("device, job ({n} ranks)"),
                human_bytes(g.total_bytes.saturating_mul(n))
            ));
        }
        out
    }

    /// Whether the host total fits its budget.
    fn host_fits(&self) -> bool {
        self.total_bytes <= self.budget_bytes
    }

    /// The refusal message: the biggest tensor with its numbers and knobs when the host
    /// budget is broken, else every device limit broken, each with its tensor and knobs (and
    /// the figures to compare with).
    pub fn refusal(&self) -> Option<String> {
        if self.fits {
            return None;
        }
        if self.host_fits() {
            return self.gpu_refusal();
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

    /// The device half's refusal: every limit broken, then the figures to compare with.
    fn gpu_refusal(&self) -> Option<String> {
        let g = self.gpu.as_ref()?;
        let mut parts: Vec<String> = g.breaches.iter().map(|b| b.to_string()).collect();
        parts.extend(
            self.figures
                .iter()
                .map(|f| format!("compare: {} {} = {}", f.name, f.shape, human_bytes(f.bytes))),
        );
        (!g.breaches.is_empty()).then(|| parts.join("; "))
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
