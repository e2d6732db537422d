//! Where the critic runs: `--device` resolved against the adapters present ([`choose_device`]),
//! and the [`Critic`] opened on the chosen backend.

use serde::{Deserialize, Serialize};

#[cfg(feature = "gpu")]
use super::gpu;
use super::{CriticBackend, CriticError, StackSpec, cpu};

/// Where the critic runs, as asked on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// A hardware GPU when one exists, the CPU otherwise (a software adapter such as lavapipe
    /// is slower than the CPU backend, so it is never chosen automatically).
    Auto,
    /// The CPU backend.
    Cpu,
    /// The GPU backend, on whatever adapter exists (software ones included).
    Gpu,
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
        /// Adapter name, driver and type.
        adapter: String,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
            Chosen::Gpu { adapter, .. } => write!(f, "gpu ({adapter})"),
        }
    }
}

/// Resolves `--device`: `auto` takes a hardware GPU when one exists and the CPU when the only
/// adapter is a software one or there is none; `gpu` insists on an adapter.
pub fn choose_device(device: Device) -> Result<Chosen, CriticError> {
    match device {
        Device::Cpu => Ok(Chosen::Cpu {
            reason: "asked for".into(),
        }),
        #[cfg(feature = "gpu")]
        Device::Gpu => gpu::probe().map(|info| info.chosen()),
        #[cfg(not(feature = "gpu"))]
        Device::Gpu => Err(CriticError::NoGpu("this build has no `gpu` feature".into())),
        // Probing loads the Vulkan loader and its implicit layers, which may print to stderr
        // (Mesa's device-select layer: `error: XDG_RUNTIME_DIR is invalid ...`); without a
        // hardware GPU's device node there is nothing `auto` would take, so it does not probe.
        #[cfg(feature = "gpu")]
        Device::Auto if !hardware_gpu_node_may_exist() => Ok(Chosen::Cpu {
            reason: format!("no hardware GPU device node ({})", GPU_NODES.join(", ")),
        }),
        #[cfg(feature = "gpu")]
        Device::Auto => match gpu::probe() {
            Ok(info) if !info.software => Ok(info.chosen()),
            Ok(info) => Ok(Chosen::Cpu {
                reason: format!("the only GPU is software: {}", info.describe()),
            }),
            Err(e) => Ok(Chosen::Cpu {
                reason: e.to_string(),
            }),
        },
        #[cfg(not(feature = "gpu"))]
        Device::Auto => Ok(Chosen::Cpu {
            reason: "built without the `gpu` feature".into(),
        }),
    }
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
            Chosen::Gpu { .. } => Box::new(gpu::GpuCritic::new(spec, seed)?),
        };
        Ok(Critic { backend })
    }

    /// This critic with every optimiser step averaged over `job`'s ranks first (data-parallel
    /// training); unchanged with one rank, so a one-rank job computes exactly what a run
    /// without a job does.
    pub fn data_parallel(self, job: &crate::dist::Job) -> Critic {
        if job.size() == 1 {
            return self;
        }
        Critic {
            backend: Box::new(crate::dist::reduce::AllReduced::new(
                self.backend,
                job.clone(),
            )),
        }
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
    use super::{Chosen, Critic};
    use crate::critic::cpu::CpuCritic;
    use crate::critic::loss::Loss;
    use crate::critic::{AdamConfig, Input, StackSpec};

    #[test]
    fn a_cpu_critic_reports_what_its_backend_computes() {
        let spec = StackSpec {
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
        let value = direct.loss_backward(&loss).unwrap();
        assert_eq!(critic.last_loss().unwrap(), value);
        critic.step(&adam);
        let stats = direct.step(&adam).clone();
        assert_eq!(critic.step_stats().unwrap(), stats);
        assert_eq!(critic.params().unwrap(), direct.params());
        critic.polyak(0.5);
        direct.polyak(0.5);
        assert_eq!(critic.target_params().unwrap(), direct.target());
    }
}
