//! The device half of the memory preflight: the buffers the GPU critic will create for each
//! stack a run trains (the same buffers as `critic::gpu`: parameters and optimiser state in
//! `mod.rs`, the row buffers of `buffers.rs`, the readback staging of `readback.rs`), checked
//! before anything is created against the adapter's per-buffer limits (`max_buffer_size`,
//! `max_storage_buffer_binding_size`) and a device memory budget (`--gpu-memory`).
//!
//! wgpu reports no memory size, so the budget's default is a rule: a software adapter
//! (lavapipe, llvmpipe) keeps its buffers in host memory, so it gets the host budget; any other
//! adapter gets [`DEFAULT_GPU_MEMORY`] (8 GiB, what most current discrete GPUs have at least)
//! unless `--gpu-memory` says more.

use serde::Serialize;

use super::sizing::{GpuSizing, GpuStack, fmt, table_line};
use crate::critic::GpuLimits;
use crate::error::human_bytes;

/// The device memory budget of an adapter that is not a software one, when `--gpu-memory` is
/// not given: 8 GiB.
pub const DEFAULT_GPU_MEMORY: u64 = 8 << 30;

/// The rule the default budget follows, as `--help` and the plan say it.
pub const GPU_MEMORY_RULE: &str = "wgpu reports no memory size: a software adapter (lavapipe) \
     gets the host budget, any other adapter 8 GiB, unless --gpu-memory says otherwise";

/// One line of the device plan: a group of buffers of one stack.
#[derive(Debug, Clone, Serialize)]
pub struct GpuTensor {
    /// What it is.
    pub name: String,
    /// Its buffers as a formula with the numbers filled in.
    pub shape: String,
    /// Bytes of all its buffers.
    pub bytes: u64,
    /// Bytes of its largest single buffer (what the per-buffer limits apply to).
    pub largest: u64,
    /// Whether its buffers are bound as storage (then `max_storage_buffer_binding_size`
    /// applies as well as `max_buffer_size`).
    pub storage: bool,
    /// Config fields that shrink it.
    #[serde(skip)]
    pub knobs: &'static str,
}

/// A limit a device buffer or the device total can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GpuLimit {
    /// The adapter's `max_buffer_size`.
    MaxBufferSize,
    /// The adapter's `max_storage_buffer_binding_size`.
    MaxStorageBufferBindingSize,
    /// The device memory budget (`--gpu-memory`).
    GpuMemory,
}

impl std::fmt::Display for GpuLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GpuLimit::MaxBufferSize => "the adapter's max_buffer_size",
            GpuLimit::MaxStorageBufferBindingSize => {
                "the adapter's max_storage_buffer_binding_size"
            }
            GpuLimit::GpuMemory => "the --gpu-memory budget",
        })
    }
}

/// A device tensor that breaks a limit.
#[derive(Debug, Clone, Serialize)]
pub struct GpuBreach {
    /// The tensor's name.
    pub tensor: String,
    /// Its formula.
    pub shape: String,
    /// The bytes that break the limit (one buffer, or the device total for the budget).
    pub bytes: u64,
    /// The limit broken.
    pub limit: GpuLimit,
    /// The limit's value.
    pub limit_bytes: u64,
    /// Config fields that shrink it.
    #[serde(skip)]
    pub knobs: &'static str,
}

impl std::fmt::Display for GpuBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.limit {
            GpuLimit::GpuMemory => write!(
                f,
                "gpu total {} of device buffers > {} {}; the largest is {} {}: {}, or raise --gpu-memory if the adapter has more",
                human_bytes(self.bytes),
                self.limit,
                human_bytes(self.limit_bytes),
                self.tensor,
                self.shape,
                self.knobs
            ),
            _ => write!(
                f,
                "{} {}: one buffer of {} > {} {}: {}",
                self.tensor,
                self.shape,
                human_bytes(self.bytes),
                self.limit,
                human_bytes(self.limit_bytes),
                self.knobs
            ),
        }
    }
}

/// The device half of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct GpuPlan {
    /// The adapter (or why there is none).
    pub adapter: String,
    /// Its limits; `None` when no adapter was found.
    pub limits: Option<GpuLimits>,
    /// Every group of device buffers.
    pub tensors: Vec<GpuTensor>,
    /// Their sum.
    pub total_bytes: u64,
    /// The device memory budget.
    pub budget_bytes: u64,
    /// Where the budget comes from.
    pub budget_rule: String,
    /// Every limit broken (empty: it fits).
    pub breaches: Vec<GpuBreach>,
}

/// The device budget: `--gpu-memory` when given, else the host budget for a software adapter
/// and [`DEFAULT_GPU_MEMORY`] for any other (see [`GPU_MEMORY_RULE`]); with where it comes from.
pub fn gpu_budget(asked: Option<u64>, software: bool, host_budget: u64) -> (u64, String) {
    match (asked, software) {
        (Some(b), _) => (b, "--gpu-memory".into()),
        (None, true) => (
            host_budget,
            "software adapter: its buffers are host memory, so the host budget".into(),
        ),
        (None, false) => (
            DEFAULT_GPU_MEMORY,
            "default for a hardware adapter, wgpu reports no memory size; --gpu-memory to change"
                .into(),
        ),
    }
}

impl GpuPlan {
    /// The device plan of `sizing` on an adapter described by `adapter` with `limits` (`None`:
    /// unknown), against `budget` bytes.
    pub(crate) fn new(
        sizing: &GpuSizing,
        adapter: String,
        limits: Option<GpuLimits>,
        (budget_bytes, budget_rule): (u64, String),
    ) -> GpuPlan {
        let tensors: Vec<GpuTensor> = sizing.stacks.iter().flat_map(stack_tensors).collect();
        let total_bytes = tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes));
        let breaches = check(&tensors, limits.as_ref(), budget_bytes);
        GpuPlan {
            adapter,
            limits,
            tensors,
            total_bytes,
            budget_bytes,
            budget_rule,
            breaches,
        }
    }

    /// The device lines of the plan's table.
    pub fn table(&self) -> String {
        let limits = match &self.limits {
            Some(l) => format!(
                "max_buffer_size {}, max_storage_buffer_binding_size {}",
                human_bytes(l.max_buffer_size),
                human_bytes(l.max_storage_buffer_binding_size)
            ),
            None => "limits unknown (no adapter)".into(),
        };
        let mut out = format!("gpu: {}; {limits}\n", self.adapter);
        for t in &self.tensors {
            out.push_str(&table_line(&t.name, t.bytes, &t.shape));
        }
        out.push_str(&format!(
            "{:<52} {:>11}   gpu budget {} ({}) ({})\n",
            "gpu total",
            human_bytes(self.total_bytes),
            human_bytes(self.budget_bytes),
            self.budget_rule,
            if self.breaches.is_empty() {
                "fits"
            } else {
                "DOES NOT FIT"
            }
        ));
        out
    }
}

/// Every limit `tensors` break: each one's largest buffer against the adapter's per-buffer
/// limits (when known; the tighter limit broken is named), then their sum against `budget`
/// (naming the biggest tensor).
pub fn check(tensors: &[GpuTensor], limits: Option<&GpuLimits>, budget: u64) -> Vec<GpuBreach> {
    let mut breaches = Vec::new();
    if let Some(l) = limits {
        for t in tensors {
            let mut broken = vec![(GpuLimit::MaxBufferSize, l.max_buffer_size)];
            if t.storage {
                broken.push((
                    GpuLimit::MaxStorageBufferBindingSize,
                    l.max_storage_buffer_binding_size,
                ));
            }
            if let Some((limit, limit_bytes)) = broken
                .into_iter()
                .filter(|&(_, max)| t.largest > max)
                .min_by_key(|&(_, max)| max)
            {
                breaches.push(GpuBreach {
                    tensor: t.name.clone(),
                    shape: t.shape.clone(),
                    bytes: t.largest,
                    limit,
                    limit_bytes,
                    knobs: t.knobs,
                });
            }
        }
    }
    let total = tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes));
    if total > budget
        && let Some(big) = tensors.iter().max_by_key(|t| t.bytes)
    {
        breaches.push(GpuBreach {
            tensor: big.name.clone(),
            shape: format!("{} = {}", big.shape, human_bytes(big.bytes)),
            bytes: total,
            limit: GpuLimit::GpuMemory,
            limit_bytes: budget,
            knobs: big.knobs,
        });
    }
    breaches
}

/// One device buffer: its label, its size as a formula, its bytes.
type Buffer = (&'static str, String, u64);

/// The bytes of a buffer asked for `bytes`: `critic::gpu`'s `storage` rounds up to a multiple
/// of 4, at least 16.
fn storage_size(bytes: u64) -> u64 {
    bytes.max(16).next_multiple_of(4)
}

/// The uniform arena of `critic::gpu`'s kernels: 256 slots of 256 bytes.
const UNIFORM_ARENA: u64 = 256 * 256;

/// A line of buffers of `stack`: the group's total, its largest buffer, and a formula (the
/// common one when all are the same size, else the count and the largest).
fn group(stack: &GpuStack, what: &str, buffers: Vec<Buffer>, storage: bool) -> GpuTensor {
    let buffers: Vec<Buffer> = if storage {
        let round = |(label, formula, bytes): Buffer| (label, formula, storage_size(bytes));
        buffers.into_iter().map(round).collect()
    } else {
        buffers
    };
    let bytes = buffers.iter().fold(0u64, |a, b| a.saturating_add(b.2));
    let largest = buffers.iter().max_by_key(|b| b.2);
    let same = buffers
        .iter()
        .all(|b| b.2 == buffers[0].2 && b.1 == buffers[0].1);
    let shape = match largest {
        Some((_, formula, _)) if buffers.len() == 1 => formula.clone(),
        Some((_, formula, _)) if same => format!("{} x {formula}", buffers.len()),
        Some((label, formula, _)) => {
            format!("{} buffers, the largest {label}: {formula}", buffers.len())
        }
        None => String::new(),
    };
    GpuTensor {
        name: format!("gpu {}: {what}", stack.name),
        shape,
        bytes,
        largest: largest.map_or(0, |b| b.2),
        storage,
        knobs: stack.knobs,
    }
}

/// The buffers `GpuCritic` creates for `stack` (`mod.rs`: parameters, gradients, Adam, target,
/// gradient norms, per-network optimiser scalars; `buffers.rs`: row buffers for a capacity of
/// the rows rounded up to a power of two, at least 64; `readback.rs`: the staging buffer, grown
/// to the largest read rounded up to a power of two; `kernels.rs`: the uniform arena), in five
/// lines.
fn stack_tensors(stack: &GpuStack) -> Vec<GpuTensor> {
    let s = &stack.spec;
    let (k, d, h, l, a) = (
        s.nets as u64,
        s.input as u64,
        s.hidden as u64,
        s.layers as u64,
        s.head as u64,
    );
    let p = (s.params() as u64).saturating_mul(4);
    let c = stack
        .rows
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX)
        .max(64);
    let (fc, w) = (fmt(c), h.max(d));
    let rows = |n: u64| c.saturating_mul(n).saturating_mul(4);
    let per_net = fmt(s.params_per_net() as u64);
    let param = |label| (label, format!("{k} nets x {per_net} params x 4 B"), p);
    let params = vec![
        param("params"),
        param("grads"),
        param("adam m"),
        param("adam v"),
        param("target params"),
    ];
    if let Some(g) = s.gru() {
        // A GRU stack's row buffers, as `critic::gru::sizing` counts them (two passes, the
        // gradients and bookkeeping), the widest being the gates' `[rows, 3g]`.
        let sized = s.sizing(stack.rows as usize, crate::critic::Backend::Gpu);
        let widest = [3 * g.hidden, g.embed, g.input, g.head]
            .into_iter()
            .max()
            .unwrap_or(0) as u64;
        let rows_buffers = vec![(
            "GRU rows",
            format!(
                "{fc} rows of embedding {}, gates 3 x {}, head {} (two passes, gradients, bookkeeping)",
                g.embed, g.hidden, g.head
            ),
            sized.activations.saturating_add(sized.indices),
        )];
        let mut row_group = group(stack, "GRU row buffers", rows_buffers, true);
        row_group.largest = rows(widest);
        return vec![
            group(stack, "parameters, gradients, Adam, target", params, true),
            row_group,
        ];
    }
    let mut acts = Vec::new();
    for _pass in ["online", "target"] {
        for _layer in 0..l {
            for label in ["z", "x-hat", "activation"] {
                acts.push((label, format!("{fc} rows x {h} x 4 B"), rows(h)));
            }
            acts.push(("1/std", format!("{fc} rows x 4 B"), rows(1)));
        }
    }
    let out = |label| {
        (
            label,
            format!("{fc} rows x {} outputs x 4 B", fmt(a)),
            rows(a),
        )
    };
    let outputs = vec![
        out("online out"),
        out("target out"),
        out("d out"),
        out("loss actions"),
    ];
    let tiles = (c / 16 + k + 1) * 16;
    let bookkeeping = vec![
        (
            "input u8",
            format!("{fc} rows x {d} B"),
            c.saturating_mul(d),
        ),
        ("input f32", format!("{fc} rows x {d} x 4 B"), rows(d)),
        (
            "grad act",
            format!("{fc} rows x max({h}, {d}) x 4 B"),
            rows(w),
        ),
        ("grad z", format!("{fc} rows x {h} x 4 B"), rows(h)),
        ("grad input", format!("{fc} rows x {d} x 4 B"), rows(d)),
        ("row order", format!("{fc} rows x 4 B"), rows(1)),
        ("row net", format!("{fc} rows x 4 B"), rows(1)),
        ("loss targets", format!("{fc} rows x 4 B"), rows(1)),
        ("loss mask", format!("{fc} rows x 4 B"), rows(1)),
        ("row loss", format!("{fc} rows x 4 B"), rows(1)),
        ("row tiles", format!("({fc} / 16 + {k} + 1) x 16 B"), tiles),
        ("net starts", format!("({k} + 1) x 4 B"), (k + 1) * 4),
        ("grad norms", format!("{k} x 4 B"), (k * 4).max(16)),
        ("net scalars", format!("{k} x 32 B"), k * 32),
    ];
    let read = p.max(stack.rows.saturating_mul(a).saturating_mul(4));
    let staging = vec![
        (
            "readback staging",
            format!(
                "max(params, {} rows x {} outputs) x 4 B, to a power of two",
                fmt(stack.rows),
                fmt(a)
            ),
            read.checked_next_power_of_two().unwrap_or(u64::MAX),
        ),
        ("uniform arena", "256 slots x 256 B".into(), UNIFORM_ARENA),
    ];
    vec![
        group(stack, "parameters, gradients, Adam, target", params, true),
        group(
            stack,
            "hidden activations (online and target passes)",
            acts,
            true,
        ),
        group(
            stack,
            "outputs (online, target, gradient, loss actions)",
            outputs,
            true,
        ),
        group(
            stack,
            "row inputs, gradients and bookkeeping",
            bookkeeping,
            true,
        ),
        group(stack, "readback staging and uniforms", staging, false),
    ]
}

// The integration tests' skip rule for the GPU test below: fail under CI, else a recorded skip.
#[cfg(all(test, feature = "gpu"))]
#[path = "../../../tests/common/skip.rs"]
mod test_skip;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critic::{Backend, StackSpec};

    fn tensor(name: &str, bytes: u64, storage: bool) -> GpuTensor {
        GpuTensor {
            name: name.into(),
            shape: format!("{bytes} B"),
            bytes,
            largest: bytes,
            storage,
            knobs: "lower hidden",
        }
    }

    #[test]
    fn a_buffer_over_the_storage_binding_limit_is_refused_naming_it_and_the_limit() {
        let limits = GpuLimits {
            max_buffer_size: 256 << 20,
            max_storage_buffer_binding_size: 128 << 20,
        };
        let tensors = [
            tensor("small", 1 << 20, true),
            tensor("big outputs", 200 << 20, true),
        ];
        let breaches = check(&tensors, Some(&limits), u64::MAX);
        assert_eq!(breaches.len(), 1, "{breaches:?}");
        assert_eq!(breaches[0].tensor, "big outputs");
        assert_eq!(breaches[0].limit, GpuLimit::MaxStorageBufferBindingSize);
        let text = breaches[0].to_string();
        for part in [
            "big outputs",
            "200.00 MiB",
            "max_storage_buffer_binding_size",
            "128.00 MiB",
            "lower hidden",
        ] {
            assert!(text.contains(part), "{part:?} missing from {text}");
        }
        // A staging buffer is never bound as storage: only max_buffer_size applies.
        let staging = [tensor("staging", 200 << 20, false)];
        assert!(check(&staging, Some(&limits), u64::MAX).is_empty());
        let huge = [tensor("staging", 300 << 20, false)];
        assert_eq!(
            check(&huge, Some(&limits), u64::MAX)[0].limit,
            GpuLimit::MaxBufferSize
        );
    }

    #[test]
    fn a_total_over_the_gpu_budget_is_refused_naming_the_biggest_tensor_and_the_flag() {
        let tensors = [tensor("a", 600 << 20, true), tensor("b", 500 << 20, true)];
        assert!(check(&tensors, None, 2 << 30).is_empty());
        let breaches = check(&tensors, None, 1 << 30);
        assert_eq!(breaches.len(), 1);
        assert_eq!(
            (breaches[0].limit, breaches[0].tensor.as_str()),
            (GpuLimit::GpuMemory, "a")
        );
        let text = breaches[0].to_string();
        assert!(
            text.contains("--gpu-memory") && text.contains("1.00 GiB"),
            "{text}"
        );
    }

    #[test]
    fn the_default_gpu_budget_follows_the_adapter_kind() {
        assert_eq!(gpu_budget(None, false, 100).0, DEFAULT_GPU_MEMORY);
        assert_eq!(gpu_budget(None, true, 100).0, 100);
        assert_eq!(gpu_budget(Some(7), true, 100).0, 7);
    }

    #[test]
    fn the_device_buffers_add_up_to_the_gpu_backends_sizing() {
        let spec = StackSpec {
            network: Default::default(),
            nets: 6,
            input: 147,
            hidden: 128,
            layers: 2,
            head: 414,
        };
        for rows in [1, 100, 1542, 5000] {
            let stack = GpuStack {
                name: "critic",
                spec,
                rows,
                knobs: "",
            };
            let tensors = stack_tensors(&stack);
            let staging = tensors.last().map_or(0, |t| t.bytes);
            let sum: u64 = tensors.iter().map(|t| t.bytes).sum();
            let sizing = spec.sizing_for(rows as usize, Backend::Gpu, false).total();
            assert_eq!(sum - staging, sizing, "rows {rows}");
        }
    }

    #[cfg(feature = "gpu")]
    #[test]
    fn the_device_buffers_are_the_ones_the_gpu_critic_creates() {
        use crate::critic::gpu::GpuCritic;
        use crate::critic::{CriticBackend, Input};
        let spec = StackSpec {
            network: Default::default(),
            nets: 3,
            input: 5,
            hidden: 8,
            layers: 2,
            head: 7,
        };
        let rows = 100;
        if !super::test_skip::gpu_adapter_present() {
            return;
        }
        let mut critic = GpuCritic::new(spec, 1).expect("an adapter exists");
        let x = vec![0.5f32; rows * spec.input];
        let nets: Vec<u32> = (0..rows as u32).map(|r| r % 3).collect();
        critic.forward(Input::F32(&x), &nets).unwrap();
        critic.params().unwrap();
        let stack = GpuStack {
            name: "critic",
            spec,
            rows: rows as u64,
            knobs: "",
        };
        let planned: u64 = stack_tensors(&stack).iter().map(|t| t.bytes).sum();
        assert_eq!(critic.device_bytes(), planned);
    }
}
