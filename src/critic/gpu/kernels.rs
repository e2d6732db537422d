//! The kernels: the WGSL sources compiled into the binary, one pipeline per shader created
//! once per device, the Pod mirror of every shader's uniform struct, and how one operation's
//! dispatches are bound, encoded in one compute pass and submitted.

use bytemuck::{Pod, Zeroable};

use crate::critic::CriticError;

/// Rows per tile of the matrix kernels (their workgroups are 16 x 16).
pub(super) const TILE: usize = 16;
/// Largest workgroup count per grid dimension.
pub(super) const MAX_GROUPS: u32 = 65535;

/// The shaders, compiled into the binary.
pub const SHADERS: [(&str, &str); 14] = [
    (
        "linear_forward",
        include_str!("../../../shaders/linear_forward.wgsl"),
    ),
    (
        "linear_backward_input",
        include_str!("../../../shaders/linear_backward_input.wgsl"),
    ),
    (
        "linear_backward_weight",
        include_str!("../../../shaders/linear_backward_weight.wgsl"),
    ),
    (
        "layernorm_forward",
        include_str!("../../../shaders/layernorm_forward.wgsl"),
    ),
    (
        "layernorm_backward",
        include_str!("../../../shaders/layernorm_backward.wgsl"),
    ),
    (
        "layernorm_param_grad",
        include_str!("../../../shaders/layernorm_param_grad.wgsl"),
    ),
    ("loss", include_str!("../../../shaders/loss.wgsl")),
    ("grad_norm", include_str!("../../../shaders/grad_norm.wgsl")),
    ("adam", include_str!("../../../shaders/adam.wgsl")),
    ("polyak", include_str!("../../../shaders/polyak.wgsl")),
    (
        "gru_forward",
        include_str!("../../../shaders/gru_forward.wgsl"),
    ),
    (
        "gru_backward",
        include_str!("../../../shaders/gru_backward.wgsl"),
    ),
    (
        "qmix_mixer",
        include_str!("../../../shaders/qmix_mixer.wgsl"),
    ),
    ("ppo_loss", include_str!("../../../shaders/ppo_loss.wgsl")),
];

/// Mirrors `LinearParams` of the linear kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct LinearParams {
    pub(super) fan_in: u32,
    pub(super) fan_out: u32,
    pub(super) mode: u32,
    pub(super) per_net: u32,
    pub(super) w_off: u32,
    pub(super) b_off: u32,
    pub(super) tiles: u32,
    pub(super) _pad: u32,
}
const _: () = assert!(size_of::<LinearParams>() == 32);

/// Mirrors `NormParams` of the LayerNorm and grad-norm kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct NormParams {
    pub(super) width: u32,
    pub(super) rows: u32,
    pub(super) per_net: u32,
    pub(super) gamma_off: u32,
    pub(super) beta_off: u32,
    pub(super) eps: f32,
    pub(super) _pad0: u32,
    pub(super) _pad1: u32,
}
const _: () = assert!(size_of::<NormParams>() == 32);

/// Mirrors `LossParams` of loss.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct LossParams {
    pub(super) rows: u32,
    pub(super) head: u32,
    pub(super) kind: u32,
    pub(super) groups: u32,
    pub(super) delta: f32,
    pub(super) scale: f32,
    pub(super) v_min: f32,
    pub(super) v_max: f32,
    pub(super) sigma: f32,
    pub(super) _pad0: u32,
    pub(super) _pad1: u32,
    pub(super) _pad2: u32,
}
const _: () = assert!(size_of::<LossParams>() == 48);

/// Mirrors `AdamParams` of adam.wgsl (the step size, bias correction, clip and step mask are
/// per network: [`NetScalars`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct AdamParams {
    pub(super) count: u32,
    pub(super) per_net: u32,
    pub(super) _pad0: u32,
    pub(super) _pad1: u32,
    pub(super) beta1: f32,
    pub(super) beta2: f32,
    pub(super) eps: f32,
    pub(super) _pad2: u32,
}
const _: () = assert!(size_of::<AdamParams>() == 32);

/// Mirrors `PolyakParams` of polyak.wgsl (the factor is per network: [`NetScalars`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct PolyakParams {
    pub(super) count: u32,
    pub(super) per_net: u32,
    pub(super) _pad0: u32,
    pub(super) _pad1: u32,
}
const _: () = assert!(size_of::<PolyakParams>() == 16);

/// Mirrors `GruParams` of gru_forward.wgsl and gru_backward.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct GruParams {
    pub(super) hidden: u32,
    pub(super) steps: u32,
    pub(super) per_net: u32,
    /// `W_hh`'s offset in a network's block.
    pub(super) w_off: u32,
    /// `b_hh`'s offset in a network's block.
    pub(super) b_off: u32,
    /// Sequences (workgroups doing work).
    pub(super) seqs: u32,
    pub(super) _pad0: u32,
    pub(super) _pad1: u32,
}
const _: () = assert!(size_of::<GruParams>() == 32);

/// The widest GRU hidden state the kernels take: 64 threads per sequence, each carrying at
/// most `MAX_SLOTS` (16) units' gradient in gru_backward.wgsl.
pub(super) const MAX_GRU_HIDDEN: usize = 64 * 16;

/// Mirrors `NetScalars` of adam.wgsl and polyak.wgsl: one network's optimiser scalars, an
/// element of the `[K]` storage buffer both kernels read.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
pub(super) struct NetScalars {
    /// Adam's step size (`AdamConfig::schedule` of the network's learning rate).
    pub(super) step_size: f32,
    /// The gradient norm to clip to, when `clip` is 1.
    pub(super) max_norm: f32,
    /// 1: clip the gradient to `max_norm`; 0: no clipping.
    pub(super) clip: u32,
    /// The Polyak factor (0: the network's target is left untouched).
    pub(super) tau: f32,
    /// Adam's second-moment bias correction at the network's own step count.
    pub(super) bc2: f32,
    /// 1: the adaptive term; 0: RAdam's momentum-only warm-up.
    pub(super) adaptive: u32,
    /// 1: the network steps this time; 0: its parameters and moments stay as they are.
    pub(super) stepping: u32,
    pub(super) _pad0: u32,
}
const _: () = assert!(size_of::<NetScalars>() == 32);

/// The compute pipelines, created once per device.
pub(super) struct Kernels {
    pub(super) linear_forward: wgpu::ComputePipeline,
    pub(super) linear_backward_input: wgpu::ComputePipeline,
    pub(super) linear_backward_weight: wgpu::ComputePipeline,
    pub(super) layernorm_forward: wgpu::ComputePipeline,
    pub(super) layernorm_backward: wgpu::ComputePipeline,
    pub(super) layernorm_param_grad: wgpu::ComputePipeline,
    pub(super) loss: wgpu::ComputePipeline,
    pub(super) grad_norm: wgpu::ComputePipeline,
    pub(super) adam: wgpu::ComputePipeline,
    pub(super) polyak: wgpu::ComputePipeline,
    pub(super) gru_forward: wgpu::ComputePipeline,
    pub(super) gru_backward: wgpu::ComputePipeline,
}

impl Kernels {
    pub(super) fn new(device: &wgpu::Device) -> Kernels {
        let make = |name: &str| {
            let source = SHADERS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, s)| *s)
                .unwrap_or("");
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Kernels {
            linear_forward: make("linear_forward"),
            linear_backward_input: make("linear_backward_input"),
            linear_backward_weight: make("linear_backward_weight"),
            layernorm_forward: make("layernorm_forward"),
            layernorm_backward: make("layernorm_backward"),
            layernorm_param_grad: make("layernorm_param_grad"),
            loss: make("loss"),
            grad_norm: make("grad_norm"),
            adam: make("adam"),
            polyak: make("polyak"),
            gru_forward: make("gru_forward"),
            gru_backward: make("gru_backward"),
        }
    }
}

/// Uniform values of one operation, 256-byte slots in one buffer.
pub(super) struct UniformArena {
    pub(super) buffer: wgpu::Buffer,
    pub(super) data: Vec<u8>,
}

const SLOT: usize = 256;
/// Uniform slots, hence dispatches, one operation may use.
pub(super) const SLOTS: usize = 256;

/// The dispatches of the largest operation on a stack of `layers` hidden layers: the loss,
/// then per layer (the head included) the weight and input gradients and, for hidden layers,
/// the LayerNorm backward and its parameter gradients.
pub(super) fn max_dispatches(layers: usize) -> usize {
    1 + 4 * layers.saturating_add(1)
}

/// A uniform slot of an operation whose dispatch count does not depend on the stack.
#[derive(Debug, Clone, Copy)]
pub(super) enum FixedSlot {
    /// The first.
    First,
    /// The second.
    Second,
}

impl UniformArena {
    /// The arena's uniform buffer, `SLOTS` slots of `SLOT` bytes.
    pub(super) fn new(device: &wgpu::Device) -> UniformArena {
        UniformArena {
            buffer: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("uniform arena"),
                size: (SLOT * SLOTS) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            data: Vec::with_capacity(SLOT * SLOTS),
        }
    }

    /// The same buffer with the pending values taken out (an operation fills them while the
    /// critic is borrowed to build its dispatches).
    pub(super) fn detach(&mut self) -> UniformArena {
        UniformArena {
            buffer: self.buffer.clone(),
            data: std::mem::take(&mut self.data),
        }
    }

    /// Appends one dispatch's uniforms; refused past `SLOTS` dispatches in one operation
    /// (which [`max_dispatches`], checked when the critic is built, rules out).
    pub(super) fn push<T: Pod>(&mut self, value: &T) -> Result<u64, CriticError> {
        let offset = self.data.len();
        if offset / SLOT >= SLOTS {
            return Err(CriticError::TooManyDispatches {
                dispatches: offset / SLOT + 1,
                max: SLOTS,
            });
        }
        self.data.extend_from_slice(bytemuck::bytes_of(value));
        self.data.resize(offset + SLOT, 0);
        Ok(offset as u64)
    }

    /// Writes one of the first slots, for operations with a fixed number of dispatches.
    pub(super) fn put<T: Pod>(&mut self, slot: FixedSlot, value: &T) -> u64 {
        let offset = slot as usize * SLOT;
        let bytes = bytemuck::bytes_of(value);
        if self.data.len() < offset + SLOT {
            self.data.resize(offset + SLOT, 0);
        }
        self.data[offset..offset + bytes.len()].copy_from_slice(bytes);
        offset as u64
    }
}

/// One dispatch of an operation, encoded later in a single pass.
pub(super) type Item<'a> = (&'a wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32, u32));

pub(super) fn bind(
    device: &wgpu::Device,
    uniforms: &wgpu::Buffer,
    pipeline: &wgpu::ComputePipeline,
    label: &str,
    (offset, size): (u64, usize),
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: uniforms,
            offset,
            size: wgpu::BufferSize::new(size as u64),
        }),
    }];
    for (i, b) in buffers.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry {
            binding: i as u32 + 1,
            resource: b.as_entire_binding(),
        });
    }
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

/// One dispatch of `pipeline` with `uniform` in the next slot of `arena` and `buffers` bound
/// from binding 1 on.
pub(super) fn dispatch<'a, T: Pod>(
    device: &wgpu::Device,
    arena: &mut UniformArena,
    (pipeline, label): (&'a wgpu::ComputePipeline, &str),
    uniform: &T,
    buffers: &[&wgpu::Buffer],
    grid: (u32, u32, u32),
) -> Result<Item<'a>, CriticError> {
    let u = arena.push(uniform)?;
    let group = bind(
        device,
        &arena.buffer,
        pipeline,
        label,
        (u, size_of::<T>()),
        buffers,
    );
    Ok((pipeline, group, grid))
}

/// Splits a workgroup count over (x, y) so neither exceeds the per-dimension limit.
pub(super) fn fold(groups: u32) -> (u32, u32) {
    if groups <= MAX_GROUPS {
        (groups.max(1), 1)
    } else {
        (MAX_GROUPS, groups.div_ceil(MAX_GROUPS))
    }
}

/// Encodes the items in one compute pass, uploads this operation's uniforms and submits.
pub(super) fn run(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    uniforms: &mut UniformArena,
    label: &str,
    items: Vec<Item>,
) -> u64 {
    let mut encoder =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: None,
        });
        for (pipeline, group, (x, y, z)) in &items {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(*x, *y, *z);
        }
    }
    queue.write_buffer(&uniforms.buffer, 0, &uniforms.data);
    uniforms.data.clear();
    queue.submit([encoder.finish()]);
    items.len() as u64
}
