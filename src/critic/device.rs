//! Where the critic runs: `--device` resolved against the adapters present ([`choose_device`]),
//! and the [`Critic`] opened on the chosen backend. The text and serde forms of [`Device`] are
//! in `spec`, the launcher's node-local rank (which adapter a rank takes) in `local_rank`.

mod local_rank;
mod spec;

pub use self::local_rank::{LOCAL_RANK_VARS, LocalRank, local_rank};
pub use self::spec::DeviceParseError;

#[cfg(feature = "gpu")]
use super::gpu;
use super::{CriticBackend, CriticError, StackSpec, cpu};

/// Where the critic runs, as asked on the command line (`--device auto|cpu|gpu|gpu:K`) or in a
/// run config (`device: auto`, `cpu`, `gpu`, `gpu(K)`; the string `"gpu:K"` is read too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// A hardware GPU when one exists, the CPU otherwise (a software adapter such as lavapipe
    /// is slower than the CPU backend, so it is never chosen automatically). Under MPI or
    /// Slurm, the hardware GPU is the rank's node-local one, as for [`Device::Gpu`].
    Auto,
    /// The CPU backend.
    Cpu,
    /// The GPU backend, on whatever adapter exists (software ones included): the one wgpu
    /// prefers (hardware before software); under MPI or Slurm, hardware adapter
    /// `local rank % hardware adapters` (see [`LOCAL_RANK_VARS`]).
    Gpu,
    /// The GPU backend on adapter K of the enumeration `gridarena devices` prints, on every
    /// rank.
    GpuIndex(usize),
}

impl Device {
    /// True for the forms that insist on the GPU backend (`gpu`, `gpu:K`).
    pub fn wants_gpu(self) -> bool {
        matches!(self, Device::Gpu | Device::GpuIndex(_))
    }
}

/// The device chosen, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// The CPU backend.
    Cpu {
        /// Why.
        reason: String,
    },
    /// A GPU adapter.
    #[cfg(feature = "gpu")]
    Gpu {
        /// Its index in the enumeration (`gridarena devices`, `--device gpu:K`).
        index: usize,
        /// Adapter name, driver and type.
        adapter: String,
        /// Why this adapter: asked for, wgpu's preference, or the rank's node-local index.
        reason: String,
        /// True for a software adapter (lavapipe, llvmpipe): its memory is host memory.
        software: bool,
        /// The adapter's buffer limits, as the probe saw them (the memory preflight checks
        /// every device buffer against them before anything is created).
        limits: GpuLimits,
    },
}

/// The adapter limits a single device buffer must respect (wgpu's `Limits`, the two the
/// critic's buffers can break). wgpu reports no memory size; the preflight's `--gpu-memory`
/// budget stands in for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct GpuLimits {
    /// Largest buffer the adapter creates, in bytes (`max_buffer_size`).
    pub max_buffer_size: u64,
    /// Largest storage buffer a shader can bind, in bytes (`max_storage_buffer_binding_size`).
    pub max_storage_buffer_binding_size: u64,
}

impl std::fmt::Display for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Chosen::Cpu { reason } => write!(f, "cpu ({reason})"),
            #[cfg(feature = "gpu")]
            Chosen::Gpu {
                index,
                adapter,
                reason,
                ..
            } => write!(f, "gpu:{index} ({adapter}; {reason})"),
        }
    }
}

/// Resolves `--device` against the adapters present and the launcher's environment: `auto`
/// takes a hardware GPU when one exists and the CPU when the only adapter is a software one or
/// there is none; `gpu` insists on an adapter; `gpu:K` on adapter K. Under a launcher (a
/// node-local rank in [`LOCAL_RANK_VARS`]), `gpu` and `auto` take hardware adapter
/// `local rank % hardware adapters` (any adapter when none is hardware, for `gpu`); a
/// malformed local rank is an error naming its variable.
pub fn choose_device(device: Device) -> Result<Chosen, CriticError> {
    choose_device_in(device, |k| std::env::var(k).ok())
}

/// [`choose_device`] with `env` as the environment.
pub(crate) fn choose_device_in(
    device: Device,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Chosen, CriticError> {
    let local = match device {
        Device::Auto | Device::Gpu => local_rank(env)?,
        Device::Cpu | Device::GpuIndex(_) => None,
    };
    // Without the GPU backend there is no adapter to pick: the local rank is only checked.
    #[cfg(not(feature = "gpu"))]
    let _ = local;
    match device {
        Device::Cpu => Ok(Chosen::Cpu {
            reason: "asked for".into(),
        }),
        #[cfg(feature = "gpu")]
        Device::GpuIndex(index) => {
            let adapters = gpu::adapters();
            match adapters.get(index) {
                Some(info) => Ok(info.chosen("asked for")),
                None => Err(CriticError::NoSuchAdapter {
                    index,
                    count: adapters.len(),
                }),
            }
        }
        #[cfg(feature = "gpu")]
        Device::Gpu => pick_gpu(&gpu::adapters(), local, false)
            .ok_or_else(|| CriticError::NoGpu(gpu::NO_ADAPTER.into())),
        #[cfg(not(feature = "gpu"))]
        Device::Gpu | Device::GpuIndex(_) => {
            Err(CriticError::NoGpu("this build has no `gpu` feature".into()))
        }
        // Probing loads the Vulkan loader and its implicit layers, which may print to stderr
        // (Mesa's device-select layer: `error: XDG_RUNTIME_DIR is invalid ...`); without a
        // hardware GPU's device node there is nothing `auto` would take, so it does not probe.
        #[cfg(feature = "gpu")]
        Device::Auto if !hardware_gpu_node_may_exist() => Ok(Chosen::Cpu {
            reason: format!("no hardware GPU device node ({})", GPU_NODES.join(", ")),
        }),
        #[cfg(feature = "gpu")]
        Device::Auto => {
            let adapters = gpu::adapters();
            Ok(
                pick_gpu(&adapters, local, true).unwrap_or_else(|| Chosen::Cpu {
                    reason: match gpu::preferred(&adapters) {
                        Some(info) => format!("the only GPU is software: {}", info.describe()),
                        None => gpu::NO_ADAPTER.into(),
                    },
                }),
            )
        }
        #[cfg(not(feature = "gpu"))]
        Device::Auto => Ok(Chosen::Cpu {
            reason: "built without the `gpu` feature".into(),
        }),
    }
}

/// The adapter `gpu` (or, `hardware_only`, `auto`) takes among `adapters`: without a local
/// rank, the one wgpu prefers; with one, hardware adapter `rank % hardware adapters` (for
/// `gpu` on a machine with software adapters only, `rank % adapters`). `None` when there is
/// nothing to take.
#[cfg(feature = "gpu")]
fn pick_gpu(
    adapters: &[gpu::GpuInfo],
    local: Option<LocalRank>,
    hardware_only: bool,
) -> Option<Chosen> {
    let hardware: Vec<&gpu::GpuInfo> = adapters.iter().filter(|a| !a.software).collect();
    let Some(local) = local else {
        let info = gpu::preferred(adapters).filter(|a| !(hardware_only && a.software))?;
        return Some(info.chosen("preferred: hardware before software"));
    };
    let (candidates, kind) = if hardware.is_empty() && !hardware_only {
        (adapters.iter().collect(), "adapter (none is hardware)")
    } else {
        (hardware, "hardware adapter")
    };
    let info = candidates.get(local.pick(candidates.len()))?;
    let n = candidates.len();
    Some(info.chosen(format!("{local}: {kind} {} % {n}", local.rank)))
}

/// Device nodes through which Linux exposes a hardware GPU to Vulkan (Mesa and AMD/Intel
/// drivers, NVIDIA's driver, WSL2).
#[cfg(feature = "gpu")]
const GPU_NODES: [&str; 3] = ["/dev/dri/renderD*", "/dev/nvidia*", "/dev/dxg"];

/// False when the system certainly has no hardware GPU (Linux without any of [`GPU_NODES`]);
/// true elsewhere, or when it cannot tell.
#[cfg(feature = "gpu")]
fn hardware_gpu_node_may_exist() -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    let has_entry = |dir: &str, prefix: &str| match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix)),
        // An unreadable /dev says nothing: probe.
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    };
    has_entry("/dev/dri", "renderD")
        || has_entry("/dev", "nvidia")
        || std::path::Path::new("/dev/dxg").exists()
}

/// A critic on whichever backend was chosen: the operations are [`CriticBackend`]'s, reached
/// through `Deref` (`critic.forward(..)`, `critic.step(..)`).
pub struct Critic {
    backend: Box<dyn CriticBackend>,
}

impl Critic {
    /// A stack on the chosen device, initialised from `seed` (identical on both backends).
    pub fn new(spec: StackSpec, seed: u64, device: &Chosen) -> Result<Critic, CriticError> {
        let backend: Box<dyn CriticBackend> = match device {
            Chosen::Cpu { .. } => Box::new(cpu::CpuCritic::new(spec, seed)?),
            #[cfg(feature = "gpu")]
            Chosen::Gpu { index, .. } => Box::new(gpu::GpuCritic::on_adapter(spec, seed, *index)?),
        };
        Ok(Critic { backend })
    }

    /// This critic with every optimiser step averaged over `job`'s ranks first (data-parallel
    /// training); unchanged with one rank, so a one-rank job computes exactly what a run
    /// without a job does.
    pub fn data_parallel(mut self, job: &crate::dist::Job) -> Critic {
        if job.size() > 1 {
            *self.backend.grad_reducer() = Some(crate::dist::reduce::mean_over_ranks(job.clone()));
        }
        self
    }
}

impl std::ops::Deref for Critic {
    type Target = dyn CriticBackend;

    fn deref(&self) -> &Self::Target {
        &*self.backend
    }
}

impl std::ops::DerefMut for Critic {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.backend
    }
}

#[cfg(test)]
mod tests {
    use super::{Chosen, Critic, Device, choose_device_in};
    use crate::critic::CriticError;
    use crate::critic::cpu::CpuCritic;
    use crate::critic::loss::Loss;
    use crate::critic::{AdamConfig, CriticBackend, Input, StackSpec};

    #[test]
    fn a_cpu_critic_reports_what_its_backend_computes() {
        let spec = StackSpec {
            network: Default::default(),
            nets: 2,
            input: 3,
            hidden: 4,
            layers: 1,
            head: 2,
        };
        let chosen = Chosen::Cpu {
            reason: "test".into(),
        };
        let mut critic = Critic::new(spec, 7, &chosen).unwrap();
        let mut direct = CpuCritic::new(spec, 7).unwrap();
        let (x, nets) = ([1.0, 0.0, 2.0, 0.5, 1.5, 1.0], [1, 0]);
        let (actions, targets) = ([1u32, 0], [0.5f32, -0.5]);
        let loss = Loss::Mse {
            actions: &actions,
            targets: &targets,
            mask: None,
        };
        let adam = AdamConfig::default();
        let out = critic.forward(Input::F32(&x), &nets).unwrap();
        assert_eq!(out, direct.forward(Input::F32(&x), &nets).unwrap());
        critic.loss_backward(&loss).unwrap();
        direct.loss_backward(&loss).unwrap();
        assert_eq!(critic.last_loss().unwrap(), direct.last_loss().unwrap());
        critic.step(&adam).unwrap();
        direct.step(&adam).unwrap();
        assert_eq!(critic.step_stats().unwrap(), direct.step_stats().unwrap());
        assert_eq!(critic.params().unwrap(), direct.params().unwrap());
        critic.polyak(0.5).unwrap();
        direct.polyak(0.5).unwrap();
        assert_eq!(
            critic.target_params().unwrap(),
            direct.target_params().unwrap()
        );
    }

    #[test]
    fn a_malformed_local_rank_stops_gpu_and_auto_before_any_probe() {
        let env = |k: &str| (k == "OMPI_COMM_WORLD_LOCAL_RANK").then(|| "two".to_string());
        for device in [Device::Gpu, Device::Auto] {
            let err = choose_device_in(device, env).unwrap_err();
            assert!(
                matches!(
                    &err,
                    CriticError::LocalRank {
                        var: "OMPI_COMM_WORLD_LOCAL_RANK",
                        ..
                    }
                ),
                "{device}: {err:?}"
            );
        }
        // `cpu` and an explicit `gpu:K` (the same K on every rank) do not read it.
        assert!(matches!(
            choose_device_in(Device::Cpu, env),
            Ok(Chosen::Cpu { .. })
        ));
        #[cfg(feature = "gpu")]
        assert!(matches!(
            choose_device_in(Device::GpuIndex(100_000), env),
            Err(CriticError::NoSuchAdapter { index: 100_000, .. })
        ));
    }

    #[cfg(feature = "gpu")]
    mod pick {
        use super::super::{LocalRank, pick_gpu};
        use crate::critic::Chosen;
        use crate::critic::gpu::fake;
        use wgpu::DeviceType::{Cpu, DiscreteGpu, IntegratedGpu};

        /// The adapter index and reason `pick_gpu` chooses among adapters of `types`.
        fn pick(
            types: &[wgpu::DeviceType],
            rank: Option<usize>,
            hardware_only: bool,
        ) -> Option<(usize, String)> {
            let list: Vec<_> = types.iter().enumerate().map(|(i, &t)| fake(i, t)).collect();
            let local = rank.map(|rank| LocalRank {
                rank,
                var: "OMPI_COMM_WORLD_LOCAL_RANK",
            });
            match pick_gpu(&list, local, hardware_only)? {
                Chosen::Gpu { index, reason, .. } => Some((index, reason)),
                Chosen::Cpu { .. } => None,
            }
        }

        #[test]
        fn without_a_launcher_gpu_and_auto_take_wgpus_preferred_adapter() {
            let node = [Cpu, IntegratedGpu, DiscreteGpu];
            assert_eq!(pick(&node, None, false).unwrap().0, 2);
            assert_eq!(pick(&node, None, true).unwrap().0, 2);
            // A software adapter alone: `gpu` takes it, `auto` does not.
            assert_eq!(pick(&[Cpu], None, false).unwrap().0, 0);
            assert_eq!(pick(&[Cpu], None, true), None);
            assert_eq!(pick(&[], None, false), None);
        }

        #[test]
        fn local_ranks_spread_over_the_hardware_adapters_only() {
            // lavapipe enumerated between four GPUs: ranks 0..4 take the four GPUs, rank 4
            // wraps around to the first.
            let node = [DiscreteGpu, Cpu, DiscreteGpu, DiscreteGpu, DiscreteGpu];
            let picks: Vec<usize> = (0..5)
                .map(|r| pick(&node, Some(r), false).unwrap().0)
                .collect();
            assert_eq!(picks, [0, 2, 3, 4, 0]);
            let (index, reason) = pick(&node, Some(2), true).unwrap();
            assert_eq!(index, 3);
            assert_eq!(
                reason,
                "local rank 2 of OMPI_COMM_WORLD_LOCAL_RANK: hardware adapter 2 % 4"
            );
            // Software adapters only: `gpu` spreads over them, `auto` takes the CPU.
            assert_eq!(pick(&[Cpu, Cpu], Some(3), false).unwrap().0, 1);
            assert_eq!(pick(&[Cpu, Cpu], Some(3), true), None);
        }
    }
}
