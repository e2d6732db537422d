//! The GPU backend: the same operations as [`super::cpu::CpuCritic`] as WGSL compute shaders
//! (`shaders/*.wgsl`, compiled into the binary) over stacked parameter buffers. The device and
//! pipelines are created once; row buffers once per capacity and reused; uniforms go through
//! one arena buffer of 256-byte slots written once per operation. Nothing is read back unless
//! the caller asks (outputs, loss, gradient norms, parameters).
//!
//! Dispatches per update depend on the number of layers only, never on K: every kernel serves
//! all networks at once (row tiles name their network; per-network reductions put K in the
//! workgroup grid).
//!
//! The files follow the concerns: `device` finds the adapter, `kernels` owns the pipelines and
//! their uniform structs, `buffers` the device buffers and uploads, `ops` the operations (what is
//! dispatched), `readback` what comes back to the host, `gru` the GRU stacks' sequence passes
//! and backpropagation through time, `gru_buffers` their device buffers.

mod buffers;
mod device;
mod gru;
mod gru_buffers;
mod kernels;
mod mixer;
mod oneshot;
mod ops;
mod ppo_loss;
mod readback;

use wgpu::util::DeviceExt;

#[cfg(test)]
pub(crate) use self::device::fake;
pub use self::device::{GpuInfo, adapters, probe};
pub(crate) use self::device::{NO_ADAPTER, preferred};
pub use self::kernels::SHADERS;
pub use self::mixer::GpuMixer;
pub use self::ppo_loss::GpuPpoLoss;

use self::buffers::{RowBuffers, storage};
use self::kernels::{Kernels, NetScalars, UniformArena};
use super::loss::Loss;
use super::{
    AdamConfig, CriticBackend, CriticError, GradReducer, Input, LayerOffsets, NetOptim, RowPlan,
    Sequences, StackSpec, StepStats, check_len, init_params,
};

/// A stack of MLPs or GRU networks on a GPU.
pub struct GpuCritic {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: GpuInfo,
    kernels: Kernels,
    spec: StackSpec,
    offsets: Vec<LayerOffsets>,
    params: wgpu::Buffer,
    grads: wgpu::Buffer,
    adam_m: wgpu::Buffer,
    adam_v: wgpu::Buffer,
    target: wgpu::Buffer,
    norms: wgpu::Buffer,
    /// `[K]` per-network step size, bias correction, clip, step mask and Polyak factor,
    /// written before each step and Polyak update from `net_host`.
    net_scalars: wgpu::Buffer,
    net_host: Vec<NetScalars>,
    uniforms: UniformArena,
    rows_buf: Option<RowBuffers>,
    rows: usize,
    plan: RowPlan,
    input_mode: u32,
    tile_count: u32,
    /// Each network's Adam step count (its own bias correction).
    steps: Vec<u64>,
    dispatches: u64,
    staging: Option<wgpu::Buffer>,
    /// The GRU passes' buffers (a GRU stack only).
    gru: Option<gru_buffers::GpuGru>,
    /// The data-parallel gradient hook ([`CriticBackend::grad_reducer`]).
    reducer: Option<GradReducer>,
}

impl GpuCritic {
    /// [`GpuCritic::on_adapter`] on the adapter wgpu prefers (what `--device gpu` takes
    /// outside MPI).
    pub fn new(spec: StackSpec, seed: u64) -> Result<GpuCritic, CriticError> {
        Self::on(spec, seed, device::preferred_adapter)
    }

    /// Opens adapter `index` of the enumeration (`gridarena devices`, `--device gpu:K`),
    /// compiles the pipelines and uploads PyTorch-style initial parameters from `seed` (the
    /// same values as the CPU backend's).
    pub fn on_adapter(spec: StackSpec, seed: u64, index: usize) -> Result<GpuCritic, CriticError> {
        Self::on(spec, seed, || device::adapter(index))
    }

    fn on(
        spec: StackSpec,
        seed: u64,
        adapter: impl FnOnce() -> Result<(GpuInfo, wgpu::Adapter), CriticError>,
    ) -> Result<GpuCritic, CriticError> {
        spec.validate().map_err(CriticError::Spec)?;
        let gru = spec
            .gru()
            .map(|g| gru_buffers::GpuGru::new(g, spec.nets))
            .transpose()?;
        let dispatches = kernels::max_dispatches(spec.layers);
        if dispatches > kernels::SLOTS {
            return Err(CriticError::TooManyDispatches {
                dispatches,
                max: kernels::SLOTS,
            });
        }
        if spec.params() > u32::MAX as usize {
            return Err(CriticError::Spec(format!(
                "{} parameters; the GPU backend indexes at most {}",
                spec.params(),
                u32::MAX
            )));
        }
        let (info, adapter) = adapter()?;
        let (device, queue) = device::open(&adapter)?;
        let kernels = Kernels::new(&device);
        let init = init_params(&spec, seed);
        let bytes = bytemuck::cast_slice::<f32, u8>(&init);
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: bytes,
            usage,
        });
        let target = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("target params"),
            contents: bytes,
            usage,
        });
        let zeros = vec![0u8; bytes.len()];
        let make = |label| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &zeros,
                usage,
            })
        };
        let (grads, adam_m, adam_v) = (make("grads"), make("adam m"), make("adam v"));
        let norms = storage(&device, "grad norms", spec.nets * 4);
        let net_scalars = storage(&device, "net scalars", spec.nets * size_of::<NetScalars>());
        let uniforms = UniformArena::new(&device);
        Ok(GpuCritic {
            device,
            queue,
            info,
            kernels,
            offsets: spec.layer_offsets(),
            spec,
            params,
            grads,
            adam_m,
            adam_v,
            target,
            norms,
            net_scalars,
            net_host: vec![NetScalars::default(); spec.nets],
            uniforms,
            rows_buf: None,
            rows: 0,
            plan: RowPlan::default(),
            input_mode: 0,
            tile_count: 0,
            steps: vec![0; spec.nets],
            dispatches: 0,
            staging: None,
            gru,
            reducer: None,
        })
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward, computing
    /// dL/d input too (read it with [`GpuCritic::input_grad`]); gradients are overwritten.
    pub fn backward_with_input(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.run_backward(d_out, true)
    }

    /// The adapter in use.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Compute dispatches issued so far (tests check they do not depend on K).
    pub fn dispatches(&self) -> u64 {
        self.dispatches
    }

    /// Bytes of every device buffer this critic holds now (the memory preflight's device plan
    /// is tested against it).
    pub fn device_bytes(&self) -> u64 {
        let mut buffers = vec![
            &self.params,
            &self.grads,
            &self.adam_m,
            &self.adam_v,
            &self.target,
            &self.norms,
            &self.net_scalars,
            &self.uniforms.buffer,
        ];
        buffers.extend(&self.staging);
        if let Some(g) = &self.gru {
            buffers.extend(g.device_buffers());
        }
        if let Some(rb) = &self.rows_buf {
            buffers.extend([
                &rb.input_words,
                &rb.input_f32,
                &rb.order,
                &rb.row_net,
                &rb.tiles,
                &rb.starts,
                &rb.d_out,
                &rb.g,
                &rb.dz,
                &rb.d_input,
                &rb.actions,
                &rb.targets,
                &rb.mask,
                &rb.row_loss,
            ]);
            for pass in [&rb.online, &rb.target] {
                buffers.extend(pass.z.iter().chain(&pass.xhat).chain(&pass.rstd));
                buffers.extend(pass.act.iter().chain([&pass.out]));
            }
        }
        buffers.iter().map(|b| b.size()).sum()
    }
}

/// The GPU's operations as a [`CriticBackend`]: outputs, loss and state are read back when
/// asked; nothing else waits for the device.
impl CriticBackend for GpuCritic {
    fn spec(&self) -> &StackSpec {
        &self.spec
    }

    fn forward(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.run_forward(input, nets)?;
        self.output()
    }

    fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.run_forward_target(input, nets)
    }

    fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        self.run_forward_seq(seq)
    }

    fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        self.run_forward_target_seq(seq)
    }

    fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        self.run_act(input, nets, hidden)
    }

    fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        self.run_loss_backward(loss)
    }

    fn backward(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.run_backward(d_out, false)
    }

    fn last_loss(&mut self) -> Result<f32, CriticError> {
        self.read_loss()
    }

    fn apply_step(
        &mut self,
        cfg: &AdamConfig,
        nets: &[Option<NetOptim>],
    ) -> Result<(), CriticError> {
        check_len("per-network optimiser scalars", self.spec.nets, nets.len())?;
        self.run_step(cfg, nets);
        Ok(())
    }

    fn average_targets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        check_len("per-network Polyak factors", self.spec.nets, taus.len())?;
        self.run_average(taus);
        Ok(())
    }

    fn target_params(&mut self) -> Result<Vec<f32>, CriticError> {
        self.read_target()
    }

    fn step_stats(&mut self) -> Result<StepStats, CriticError> {
        self.grad_norms()
    }

    fn params(&mut self) -> Result<Vec<f32>, CriticError> {
        self.read_params()
    }

    fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        self.write_params(params)
    }

    fn grads(&mut self) -> Result<Vec<f32>, CriticError> {
        self.read_grads()
    }

    fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        self.write_grads(grads)
    }

    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        self.read_adam_state()
    }

    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        self.write_adam_state(m, v, steps)
    }

    fn net_steps(&self) -> &[u64] {
        &self.steps
    }

    fn net_steps_mut(&mut self) -> &mut [u64] {
        &mut self.steps
    }

    fn grad_reducer(&mut self) -> &mut Option<GradReducer> {
        &mut self.reducer
    }
}
