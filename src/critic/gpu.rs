//! The GPU backend: the same operations as [`super::cpu::CpuCritic`] as WGSL compute shaders
//! (`shaders/*.wgsl`, compiled into the binary) over stacked parameter buffers. The device and
//! pipelines are created once; row buffers once per capacity and reused; uniforms go through
//! one arena buffer of 256-byte slots written once per operation. Nothing is read back unless
//! the caller asks (outputs, loss, gradient norms, parameters).
//!
//! Dispatches per update depend on the number of layers only, never on K: every kernel serves
//! all networks at once (row tiles name their network; per-network reductions put K in the
//! workgroup grid).

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use super::loss::Loss;
use super::{
    AdamConfig, CriticError, Input, LN_EPS, LayerOffsets, RowPlan, StackSpec, StepStats,
    init_params,
};

/// Rows per tile of the matrix kernels (their workgroups are 16 x 16).
const TILE: usize = 16;
/// Largest workgroup count per grid dimension.
const MAX_GROUPS: u32 = 65535;

/// The shaders, compiled into the binary.
pub const SHADERS: [(&str, &str); 10] = [
    (
        "linear_forward",
        include_str!("../../shaders/linear_forward.wgsl"),
    ),
    (
        "linear_backward_input",
        include_str!("../../shaders/linear_backward_input.wgsl"),
    ),
    (
        "linear_backward_weight",
        include_str!("../../shaders/linear_backward_weight.wgsl"),
    ),
    (
        "layernorm_forward",
        include_str!("../../shaders/layernorm_forward.wgsl"),
    ),
    (
        "layernorm_backward",
        include_str!("../../shaders/layernorm_backward.wgsl"),
    ),
    (
        "layernorm_param_grad",
        include_str!("../../shaders/layernorm_param_grad.wgsl"),
    ),
    ("loss", include_str!("../../shaders/loss.wgsl")),
    ("grad_norm", include_str!("../../shaders/grad_norm.wgsl")),
    ("adam", include_str!("../../shaders/adam.wgsl")),
    ("polyak", include_str!("../../shaders/polyak.wgsl")),
];

/// Mirrors `LinearParams` of the linear kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct LinearParams {
    fan_in: u32,
    fan_out: u32,
    mode: u32,
    per_net: u32,
    w_off: u32,
    b_off: u32,
    tiles: u32,
    _pad: u32,
}
const _: () = assert!(size_of::<LinearParams>() == 32);

/// Mirrors `NormParams` of the LayerNorm and grad-norm kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct NormParams {
    width: u32,
    rows: u32,
    per_net: u32,
    gamma_off: u32,
    beta_off: u32,
    eps: f32,
    _pad0: u32,
    _pad1: u32,
}
const _: () = assert!(size_of::<NormParams>() == 32);

/// Mirrors `LossParams` of loss.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct LossParams {
    rows: u32,
    head: u32,
    kind: u32,
    groups: u32,
    delta: f32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}
const _: () = assert!(size_of::<LossParams>() == 32);

/// Mirrors `AdamParams` of adam.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct AdamParams {
    count: u32,
    per_net: u32,
    adaptive: u32,
    _pad0: u32,
    step_size: f32,
    bc2: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    max_norm: f32,
    _pad1: u32,
    _pad2: u32,
}
const _: () = assert!(size_of::<AdamParams>() == 48);

/// Mirrors `PolyakParams` of polyak.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct PolyakParams {
    count: u32,
    tau: f32,
    _pad0: u32,
    _pad1: u32,
}
const _: () = assert!(size_of::<PolyakParams>() == 16);

/// What was found when looking for a GPU.
#[derive(Debug, Clone)]
pub struct GpuInfo {
    /// Adapter name.
    pub name: String,
    /// Backend (Vulkan, Metal, ...).
    pub backend: String,
    /// Driver and its version.
    pub driver: String,
    /// True for software rasterisers such as lavapipe.
    pub software: bool,
}

impl GpuInfo {
    /// One line for logs.
    pub fn describe(&self) -> String {
        let kind = if self.software {
            "software"
        } else {
            "hardware"
        };
        format!(
            "{} via {}, {} ({kind})",
            self.name, self.backend, self.driver
        )
    }
}

fn adapter() -> Result<wgpu::Adapter, CriticError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::all();
    let instance = wgpu::Instance::new(desc);
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    };
    pollster::block_on(instance.request_adapter(&options))
        .map_err(|e| CriticError::NoGpu(e.to_string()))
}

fn info_of(adapter: &wgpu::Adapter) -> GpuInfo {
    let i = adapter.get_info();
    GpuInfo {
        name: i.name.clone(),
        backend: format!("{:?}", i.backend),
        driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
        software: i.device_type == wgpu::DeviceType::Cpu,
    }
}

/// Looks for a GPU adapter without opening a device.
pub fn probe() -> Result<GpuInfo, CriticError> {
    adapter().map(|a| info_of(&a))
}

/// The compute pipelines, created once per device.
struct Kernels {
    linear_forward: wgpu::ComputePipeline,
    linear_backward_input: wgpu::ComputePipeline,
    linear_backward_weight: wgpu::ComputePipeline,
    layernorm_forward: wgpu::ComputePipeline,
    layernorm_backward: wgpu::ComputePipeline,
    layernorm_param_grad: wgpu::ComputePipeline,
    loss: wgpu::ComputePipeline,
    grad_norm: wgpu::ComputePipeline,
    adam: wgpu::ComputePipeline,
    polyak: wgpu::ComputePipeline,
}

impl Kernels {
    fn new(device: &wgpu::Device) -> Kernels {
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
        }
    }
}

/// Activations of one pass over the hidden layers.
struct LayerBuffers {
    z: Vec<wgpu::Buffer>,
    xhat: Vec<wgpu::Buffer>,
    rstd: Vec<wgpu::Buffer>,
    act: Vec<wgpu::Buffer>,
    out: wgpu::Buffer,
}

/// Everything sized by the row capacity.
struct RowBuffers {
    capacity: usize,
    input_words: wgpu::Buffer,
    input_f32: wgpu::Buffer,
    order: wgpu::Buffer,
    row_net: wgpu::Buffer,
    tiles: wgpu::Buffer,
    starts: wgpu::Buffer,
    online: LayerBuffers,
    target: LayerBuffers,
    d_out: wgpu::Buffer,
    g: wgpu::Buffer,
    dz: wgpu::Buffer,
    d_input: wgpu::Buffer,
    actions: wgpu::Buffer,
    targets: wgpu::Buffer,
    mask: wgpu::Buffer,
    row_loss: wgpu::Buffer,
}

/// Uniform values of one operation, 256-byte slots in one buffer.
struct UniformArena {
    buffer: wgpu::Buffer,
    data: Vec<u8>,
}

const SLOT: usize = 256;
const SLOTS: usize = 256;

impl UniformArena {
    fn push<T: Pod>(&mut self, value: &T) -> u64 {
        let offset = self.data.len();
        assert!(
            offset / SLOT < SLOTS,
            "more than {SLOTS} dispatches in one operation"
        );
        self.data.extend_from_slice(bytemuck::bytes_of(value));
        self.data.resize(offset + SLOT, 0);
        offset as u64
    }
}

/// A stack of MLPs on a GPU.
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
    uniforms: UniformArena,
    rows_buf: Option<RowBuffers>,
    rows: usize,
    plan: RowPlan,
    input_mode: u32,
    tile_count: u32,
    steps: u64,
    dispatches: u64,
    staging: Option<wgpu::Buffer>,
}

/// One dispatch of an operation, encoded later in a single pass.
type Item<'a> = (&'a wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32, u32));

fn bind(
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

fn storage(device: &wgpu::Device, label: &str, bytes: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16).next_multiple_of(4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Splits a workgroup count over (x, y) so neither exceeds the per-dimension limit.
fn fold(groups: u32) -> (u32, u32) {
    if groups <= MAX_GROUPS {
        (groups.max(1), 1)
    } else {
        (MAX_GROUPS, groups.div_ceil(MAX_GROUPS))
    }
}

impl GpuCritic {
    /// Opens the adapter, compiles the pipelines and uploads PyTorch-style initial parameters
    /// from `seed` (the same values as the CPU backend's).
    pub fn new(spec: StackSpec, seed: u64) -> Result<GpuCritic, CriticError> {
        spec.validate().map_err(CriticError::Spec)?;
        let adapter = adapter()?;
        let info = info_of(&adapter);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gridarena critic"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            experimental_features: Default::default(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: Default::default(),
        }))
        .map_err(|e| CriticError::NoGpu(e.to_string()))?;
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
        let uniforms = UniformArena {
            buffer: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("uniform arena"),
                size: (SLOT * SLOTS) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            data: Vec::with_capacity(SLOT * SLOTS),
        };
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
            uniforms,
            rows_buf: None,
            rows: 0,
            plan: RowPlan::default(),
            input_mode: 0,
            tile_count: 0,
            steps: 0,
            dispatches: 0,
            staging: None,
        })
    }

    /// The adapter in use.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Compute dispatches issued so far (tests check they do not depend on K).
    pub fn dispatches(&self) -> u64 {
        self.dispatches
    }

    fn ensure_rows(&mut self, rows: usize) {
        if self.rows_buf.as_ref().is_some_and(|b| b.capacity >= rows) {
            return;
        }
        let cap = rows.next_power_of_two().max(64);
        let (d, h, a, k) = (
            self.spec.input,
            self.spec.hidden,
            self.spec.head,
            self.spec.nets,
        );
        let dev = &self.device;
        let layers = |prefix: &str| LayerBuffers {
            z: (0..self.spec.layers)
                .map(|l| storage(dev, &format!("{prefix} z{l}"), cap * h * 4))
                .collect(),
            xhat: (0..self.spec.layers)
                .map(|l| storage(dev, &format!("{prefix} xhat{l}"), cap * h * 4))
                .collect(),
            rstd: (0..self.spec.layers)
                .map(|l| storage(dev, &format!("{prefix} rstd{l}"), cap * 4))
                .collect(),
            act: (0..self.spec.layers)
                .map(|l| storage(dev, &format!("{prefix} act{l}"), cap * h * 4))
                .collect(),
            out: storage(dev, &format!("{prefix} out"), cap * a * 4),
        };
        self.rows_buf = Some(RowBuffers {
            capacity: cap,
            input_words: storage(dev, "input u8", cap * d),
            input_f32: storage(dev, "input f32", cap * d * 4),
            order: storage(dev, "row order", cap * 4),
            row_net: storage(dev, "row net", cap * 4),
            tiles: storage(dev, "row tiles", (cap / TILE + k + 1) * 16),
            starts: storage(dev, "net starts", (k + 1) * 4),
            online: layers("online"),
            target: layers("target"),
            d_out: storage(dev, "d out", cap * a * 4),
            g: storage(dev, "grad act", cap * h.max(d) * 4),
            dz: storage(dev, "grad z", cap * h * 4),
            d_input: storage(dev, "grad input", cap * d * 4),
            actions: storage(dev, "loss actions", cap * a * 4),
            targets: storage(dev, "loss targets", cap * 4),
            mask: storage(dev, "loss mask", cap * 4),
            row_loss: storage(dev, "row loss", cap * 4),
        });
    }

    /// Uploads a batch's rows and their network plan.
    fn upload_rows(&mut self, input: Input, nets: &[u32]) -> Result<(), CriticError> {
        let expected = nets.len() * self.spec.input;
        if input.len() != expected {
            return Err(CriticError::Shape {
                what: "input",
                expected,
                got: input.len(),
            });
        }
        self.plan = RowPlan::new(nets, self.spec.nets)?;
        self.rows = nets.len();
        self.ensure_rows(self.rows);
        let rb = row_buffers(&self.rows_buf)?;
        match input {
            Input::U8(x) => {
                let mut padded = x.to_vec();
                padded.resize(x.len().next_multiple_of(4), 0);
                self.queue.write_buffer(&rb.input_words, 0, &padded);
                self.input_mode = 0;
            }
            Input::F32(x) => {
                self.queue
                    .write_buffer(&rb.input_f32, 0, bytemuck::cast_slice(x));
                self.input_mode = 1;
            }
        }
        let mut row_net = vec![0u32; self.rows];
        let mut tiles: Vec<[u32; 4]> = Vec::new();
        for k in 0..self.spec.nets {
            let (s, e) = (self.plan.starts[k], self.plan.starts[k + 1]);
            row_net[s as usize..e as usize].fill(k as u32);
            let mut t = s;
            while t < e {
                tiles.push([k as u32, t, (t + TILE as u32).min(e), 0]);
                t += TILE as u32;
            }
        }
        if tiles.is_empty() {
            tiles.push([0, 0, 0, 0]);
        }
        self.queue
            .write_buffer(&rb.order, 0, bytemuck::cast_slice(&self.plan.order));
        self.queue
            .write_buffer(&rb.row_net, 0, bytemuck::cast_slice(&row_net));
        self.queue
            .write_buffer(&rb.tiles, 0, bytemuck::cast_slice(&tiles));
        self.queue
            .write_buffer(&rb.starts, 0, bytemuck::cast_slice(&self.plan.starts));
        self.tile_count = tiles.len() as u32;
        Ok(())
    }

    /// Encodes the items in one compute pass, uploads this operation's uniforms and submits.
    fn run(
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

    fn linear(&self, o: &LayerOffsets, mode: u32) -> LinearParams {
        LinearParams {
            fan_in: o.fan_in as u32,
            fan_out: o.fan_out as u32,
            mode,
            per_net: self.spec.params_per_net() as u32,
            w_off: o.weight as u32,
            b_off: o.bias as u32,
            tiles: self.tile_count,
            _pad: 0,
        }
    }

    fn norm(&self, o: &LayerOffsets) -> NormParams {
        NormParams {
            width: o.fan_out as u32,
            rows: self.rows as u32,
            per_net: self.spec.params_per_net() as u32,
            gamma_off: o.gamma as u32,
            beta_off: o.beta as u32,
            eps: LN_EPS,
            _pad0: 0,
            _pad1: 0,
        }
    }

    fn tile_grid(&self, columns: usize) -> (u32, u32, u32) {
        let t = self.tile_count;
        let (y, z) = if t <= MAX_GROUPS {
            (t.max(1), 1)
        } else {
            (MAX_GROUPS, t.div_ceil(MAX_GROUPS))
        };
        (columns.div_ceil(TILE) as u32, y, z)
    }

    /// The forward items over `params` into `acts`.
    fn forward_items<'a>(
        &'a self,
        uniforms: &mut UniformArena,
        target: bool,
    ) -> Result<Vec<Item<'a>>, CriticError> {
        let rb = row_buffers(&self.rows_buf)?;
        let (params, acts) = if target {
            (&self.target, &rb.target)
        } else {
            (&self.params, &rb.online)
        };
        let k = &self.kernels;
        let mut items = Vec::new();
        let (rows_x, rows_y) = fold(self.rows as u32);
        for l in 0..=self.spec.layers {
            let o = &self.offsets[l];
            let head = l == self.spec.layers;
            let mode = if l == 0 { self.input_mode } else { 2 };
            let x = if l == 0 {
                &rb.input_f32
            } else {
                &acts.act[l - 1]
            };
            let y = if head { &acts.out } else { &acts.z[l] };
            let u = uniforms.push(&self.linear(o, mode));
            let group = bind(
                &self.device,
                &uniforms.buffer,
                &k.linear_forward,
                "linear_forward",
                (u, 32),
                &[
                    &rb.tiles,
                    params,
                    &rb.input_words,
                    &rb.input_f32,
                    &rb.order,
                    x,
                    y,
                ],
            );
            items.push((&k.linear_forward, group, self.tile_grid(o.fan_out)));
            if !head {
                let u = uniforms.push(&self.norm(o));
                let group = bind(
                    &self.device,
                    &uniforms.buffer,
                    &k.layernorm_forward,
                    "layernorm_forward",
                    (u, 32),
                    &[
                        &rb.row_net,
                        params,
                        &acts.z[l],
                        &acts.xhat[l],
                        &acts.rstd[l],
                        &acts.act[l],
                    ],
                );
                items.push((&k.layernorm_forward, group, (rows_x, rows_y, 1)));
            }
        }
        Ok(items)
    }

    /// The backward items from `d_out` (already on the device).
    fn backward_items<'a>(
        &'a self,
        uniforms: &mut UniformArena,
        input_grad: bool,
    ) -> Result<Vec<Item<'a>>, CriticError> {
        let rb = row_buffers(&self.rows_buf)?;
        let acts = &rb.online;
        let k = &self.kernels;
        let mut items = Vec::new();
        let (rows_x, rows_y) = fold(self.rows as u32);
        let nets = self.spec.nets as u32;
        let layers = self.spec.layers;
        // dy of the layer being processed: the head's d_out, then dz of each hidden layer.
        for l in (0..=layers).rev() {
            let o = &self.offsets[l];
            let head = l == layers;
            if !head {
                // From g (dL/d act of layer l) to dz, and LayerNorm's parameter gradients.
                let u = uniforms.push(&self.norm(o));
                let group = bind(
                    &self.device,
                    &uniforms.buffer,
                    &k.layernorm_backward,
                    "layernorm_backward",
                    (u, 32),
                    &[
                        &rb.row_net,
                        &self.params,
                        &rb.g,
                        &acts.act[l],
                        &acts.xhat[l],
                        &acts.rstd[l],
                        &rb.dz,
                    ],
                );
                items.push((&k.layernorm_backward, group, (rows_x, rows_y, 1)));
                let u = uniforms.push(&self.norm(o));
                let group = bind(
                    &self.device,
                    &uniforms.buffer,
                    &k.layernorm_param_grad,
                    "layernorm_param_grad",
                    (u, 32),
                    &[&rb.starts, &rb.g, &acts.act[l], &acts.xhat[l], &self.grads],
                );
                items.push((
                    &k.layernorm_param_grad,
                    group,
                    (o.fan_out.div_ceil(64) as u32, 1, nets),
                ));
            }
            let dy = if head { &rb.d_out } else { &rb.dz };
            let mode = if l == 0 { self.input_mode } else { 2 };
            let x = if l == 0 {
                &rb.input_f32
            } else {
                &acts.act[l - 1]
            };
            let u = uniforms.push(&self.linear(o, mode));
            let group = bind(
                &self.device,
                &uniforms.buffer,
                &k.linear_backward_weight,
                "linear_backward_weight",
                (u, 32),
                &[
                    &rb.starts,
                    dy,
                    &rb.input_words,
                    &rb.input_f32,
                    &rb.order,
                    x,
                    &self.grads,
                ],
            );
            items.push((
                &k.linear_backward_weight,
                group,
                (
                    (o.fan_in.div_ceil(TILE) + 1) as u32,
                    o.fan_out.div_ceil(TILE) as u32,
                    nets,
                ),
            ));
            let dx = if l > 0 {
                Some(&rb.g)
            } else if input_grad {
                Some(&rb.d_input)
            } else {
                None
            };
            if let Some(dx) = dx {
                let u = uniforms.push(&self.linear(o, mode));
                let group = bind(
                    &self.device,
                    &uniforms.buffer,
                    &k.linear_backward_input,
                    "linear_backward_input",
                    (u, 32),
                    &[&rb.tiles, &self.params, dy, dx],
                );
                items.push((&k.linear_backward_input, group, self.tile_grid(o.fan_in)));
            }
        }
        Ok(items)
    }

    /// Forward pass with the online parameters; keeps activations on the device for backward.
    /// Read the output with [`GpuCritic::output`].
    pub fn forward(&mut self, input: Input, nets: &[u32]) -> Result<(), CriticError> {
        self.upload_rows(input, nets)?;
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let items = self.forward_items(&mut arena, false)?;
        self.dispatches += Self::run(&self.device, &self.queue, &mut arena, "forward", items);
        self.uniforms.data = arena.data;
        Ok(())
    }

    /// Forward with the target parameters into separate activations (the online ones survive);
    /// returns the output (a readback).
    pub fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.upload_rows(input, nets)?;
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let items = self.forward_items(&mut arena, true)?;
        self.dispatches += Self::run(
            &self.device,
            &self.queue,
            &mut arena,
            "forward target",
            items,
        );
        self.uniforms.data = arena.data;
        self.read_output(true)
    }

    /// The last forward's output, `[R, head]` in caller order (a readback).
    pub fn output(&mut self) -> Result<Vec<f32>, CriticError> {
        self.read_output(false)
    }

    fn read_output(&mut self, target: bool) -> Result<Vec<f32>, CriticError> {
        let head = self.spec.head;
        let rb = row_buffers(&self.rows_buf)?;
        let buffer = if target {
            rb.target.out.clone()
        } else {
            rb.online.out.clone()
        };
        let sorted = self.read_f32(&buffer, self.rows * head)?;
        Ok(self.unsort(&sorted, head))
    }

    fn unsort(&self, sorted: &[f32], width: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; sorted.len()];
        for (pos, &row) in self.plan.order.iter().enumerate() {
            let row = row as usize;
            out[row * width..(row + 1) * width]
                .copy_from_slice(&sorted[pos * width..(pos + 1) * width]);
        }
        out
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward.
    pub fn backward(&mut self, d_out: &[f32], input_grad: bool) -> Result<(), CriticError> {
        let head = self.spec.head;
        if d_out.len() != self.rows * head {
            return Err(CriticError::Shape {
                what: "d_output",
                expected: self.rows * head,
                got: d_out.len(),
            });
        }
        let mut sorted = vec![0.0f32; d_out.len()];
        for (pos, &row) in self.plan.order.iter().enumerate() {
            let row = row as usize;
            sorted[pos * head..(pos + 1) * head]
                .copy_from_slice(&d_out[row * head..(row + 1) * head]);
        }
        let rb = row_buffers(&self.rows_buf)?;
        self.queue
            .write_buffer(&rb.d_out, 0, bytemuck::cast_slice(&sorted));
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let items = self.backward_items(&mut arena, input_grad)?;
        self.dispatches += Self::run(&self.device, &self.queue, &mut arena, "backward", items);
        self.uniforms.data = arena.data;
        Ok(())
    }

    /// Loss of the last forward's output and its gradient on the device, then backward, in one
    /// submission. Read the loss with [`GpuCritic::read_loss`].
    pub fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        let (rows, head) = (self.rows, self.spec.head);
        loss.check(rows, head)?;
        let rb = row_buffers(&self.rows_buf)?;
        let ones;
        let (kind, groups, delta, labels, targets, mask) = match loss {
            Loss::Mse {
                actions,
                targets,
                mask,
            } => (0u32, 1usize, 0.0f32, *actions, Some(*targets), *mask),
            Loss::Huber {
                delta,
                actions,
                targets,
                mask,
            } => (1, 1, *delta, *actions, Some(*targets), *mask),
            Loss::CrossEntropy {
                groups,
                labels,
                mask,
            } => (2, *groups, 0.0, *labels, None, *mask),
        };
        let mask = match mask {
            Some(m) => m,
            None => {
                ones = vec![1.0f32; rows];
                &ones[..]
            }
        };
        let total: f32 =
            mask.iter().sum::<f32>().max(1.0) * if kind == 2 { groups as f32 } else { 1.0 };
        self.queue
            .write_buffer(&rb.actions, 0, bytemuck::cast_slice(labels));
        if let Some(t) = targets {
            self.queue
                .write_buffer(&rb.targets, 0, bytemuck::cast_slice(t));
        }
        self.queue
            .write_buffer(&rb.mask, 0, bytemuck::cast_slice(mask));
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let params = LossParams {
            rows: rows as u32,
            head: head as u32,
            kind,
            groups: groups as u32,
            delta,
            scale: 1.0 / total,
            _pad0: 0,
            _pad1: 0,
        };
        let u = arena.push(&params);
        let k = &self.kernels;
        let group = bind(
            &self.device,
            &arena.buffer,
            &k.loss,
            "loss",
            (u, 32),
            &[
                &rb.order,
                &rb.online.out,
                &rb.actions,
                &rb.targets,
                &rb.mask,
                &rb.d_out,
                &rb.row_loss,
            ],
        );
        let (x, y) = fold((rows as u32).div_ceil(64));
        let mut items: Vec<Item> = vec![(&k.loss, group, (x, y, 1))];
        items.extend(self.backward_items(&mut arena, false)?);
        self.dispatches += Self::run(
            &self.device,
            &self.queue,
            &mut arena,
            "loss and backward",
            items,
        );
        self.uniforms.data = arena.data;
        Ok(())
    }

    /// The loss of the last [`GpuCritic::loss_backward`] (a readback).
    pub fn read_loss(&mut self) -> Result<f32, CriticError> {
        let rb = row_buffers(&self.rows_buf)?;
        let buffer = rb.row_loss.clone();
        let rows = self.read_f32(&buffer, self.rows)?;
        Ok(rows.iter().map(|v| *v as f64).sum::<f64>() as f32)
    }

    /// One optimiser step: per-network gradient norms, clipping, Adam or RAdam.
    pub fn step(&mut self, cfg: &AdamConfig) {
        self.steps += 1;
        let (step_size, bc2, adaptive) = cfg.schedule(self.steps);
        let count = self.spec.params() as u32;
        let per_net = self.spec.params_per_net() as u32;
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let k = &self.kernels;
        let norm = NormParams {
            width: 0,
            rows: 0,
            per_net,
            gamma_off: 0,
            beta_off: 0,
            eps: 0.0,
            _pad0: 0,
            _pad1: 0,
        };
        let u = arena.push(&norm);
        let g1 = bind(
            &self.device,
            &arena.buffer,
            &k.grad_norm,
            "grad_norm",
            (u, 32),
            &[&self.grads, &self.norms],
        );
        let adam = AdamParams {
            count,
            per_net,
            adaptive: u32::from(adaptive),
            _pad0: 0,
            step_size,
            bc2,
            beta1: cfg.beta1,
            beta2: cfg.beta2,
            eps: cfg.eps,
            max_norm: cfg.max_grad_norm.unwrap_or(0.0),
            _pad1: 0,
            _pad2: 0,
        };
        let u = arena.push(&adam);
        let g2 = bind(
            &self.device,
            &arena.buffer,
            &k.adam,
            "adam",
            (u, 48),
            &[
                &self.norms,
                &self.grads,
                &self.params,
                &self.adam_m,
                &self.adam_v,
            ],
        );
        let (x, y) = fold(count.div_ceil(256));
        let items: Vec<Item> = vec![
            (&k.grad_norm, g1, (self.spec.nets as u32, 1, 1)),
            (&k.adam, g2, (x, y, 1)),
        ];
        self.dispatches += Self::run(
            &self.device,
            &self.queue,
            &mut arena,
            "optimiser step",
            items,
        );
        self.uniforms.data = arena.data;
    }

    /// Gradient norms seen by the last step, per network (a readback).
    pub fn grad_norms(&mut self) -> Result<StepStats, CriticError> {
        let norms = self.norms.clone();
        let squared = self.read_f32(&norms, self.spec.nets)?;
        Ok(StepStats {
            grad_norms: squared.iter().map(|v| v.sqrt()).collect(),
        })
    }

    /// `target = tau * online + (1 - tau) * target`; `tau = 1` copies.
    pub fn polyak(&mut self, tau: f32) {
        let count = self.spec.params() as u32;
        let mut arena = UniformArena {
            buffer: self.uniforms.buffer.clone(),
            data: std::mem::take(&mut self.uniforms.data),
        };
        let u = arena.push(&PolyakParams {
            count,
            tau,
            _pad0: 0,
            _pad1: 0,
        });
        let k = &self.kernels;
        let group = bind(
            &self.device,
            &arena.buffer,
            &k.polyak,
            "polyak",
            (u, 16),
            &[&self.params, &self.target],
        );
        let (x, y) = fold(count.div_ceil(256));
        self.dispatches += Self::run(
            &self.device,
            &self.queue,
            &mut arena,
            "polyak",
            vec![(&k.polyak, group, (x, y, 1))],
        );
        self.uniforms.data = arena.data;
    }

    /// Copies the online parameters into the target copy.
    pub fn copy_to_target(&mut self) {
        self.polyak(1.0);
    }

    /// All parameters (a readback).
    pub fn params(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.params.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// The target parameters (a readback).
    pub fn target(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.target.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// The last backward's gradients (a readback).
    pub fn grads(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.grads.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// dL/d input of the last backward with `input_grad` (`[R, D]`, caller order; a readback).
    pub fn input_grad(&mut self) -> Result<Vec<f32>, CriticError> {
        let d = self.spec.input;
        let rb = self
            .rows_buf
            .as_ref()
            .ok_or_else(|| CriticError::Gpu("no backward pass yet".into()))?;
        let b = rb.d_input.clone();
        let sorted = self.read_f32(&b, self.rows * d)?;
        Ok(self.unsort(&sorted, d))
    }

    /// Replaces all parameters.
    pub fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        if params.len() != self.spec.params() {
            return Err(CriticError::Shape {
                what: "parameters",
                expected: self.spec.params(),
                got: params.len(),
            });
        }
        self.queue
            .write_buffer(&self.params, 0, bytemuck::cast_slice(params));
        Ok(())
    }

    /// Adam's moments and step count (readbacks, for checkpoints).
    pub fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        let (m, v) = (self.adam_m.clone(), self.adam_v.clone());
        let n = self.spec.params();
        Ok((self.read_f32(&m, n)?, self.read_f32(&v, n)?, self.steps))
    }

    /// Restores Adam's moments and step count.
    pub fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        let n = self.spec.params();
        if m.len() != n || v.len() != n {
            return Err(CriticError::Shape {
                what: "adam state",
                expected: n,
                got: m.len().min(v.len()),
            });
        }
        self.queue
            .write_buffer(&self.adam_m, 0, bytemuck::cast_slice(m));
        self.queue
            .write_buffer(&self.adam_v, 0, bytemuck::cast_slice(v));
        self.steps = steps;
        Ok(())
    }

    /// Replaces the gradients (external accumulation, and tests that feed both backends the
    /// same gradients).
    pub fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        if grads.len() != self.spec.params() {
            return Err(CriticError::Shape {
                what: "gradients",
                expected: self.spec.params(),
                got: grads.len(),
            });
        }
        self.queue
            .write_buffer(&self.grads, 0, bytemuck::cast_slice(grads));
        Ok(())
    }

    /// Reads `len` f32s from the start of `buffer`, waiting for the device.
    fn read_f32(&mut self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, CriticError> {
        let bytes = (len * 4).max(4) as u64;
        let device = &self.device;
        let staging = match &mut self.staging {
            Some(s) if s.size() >= bytes => s,
            slot => slot.insert(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback staging"),
                size: bytes.next_power_of_two(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })),
        };
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            });
        encoder.copy_buffer_to_buffer(buffer, 0, staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        let slice = staging.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| CriticError::Gpu(e.to_string()))?;
        let data = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| CriticError::Gpu(e.to_string()))?;
            bytemuck::cast_slice::<u8, f32>(&view[..len * 4]).to_vec()
        };
        staging.unmap();
        Ok(data)
    }
}

/// The per-row device buffers (a field borrow, so other fields stay usable); an error before the
/// first forward pass.
fn row_buffers(rows: &Option<RowBuffers>) -> Result<&RowBuffers, CriticError> {
    rows.as_ref()
        .ok_or_else(|| CriticError::Gpu("no forward pass yet".into()))
}

/// Times full updates on the GPU backend (waiting for the device at the end of each repeat).
pub fn bench_critic_gpu(
    cfg: &crate::bench::CriticBenchConfig,
) -> Result<crate::bench::CriticBenchResult, CriticError> {
    use std::time::Instant;
    let mut critic = GpuCritic::new(cfg.spec, 0)?;
    let batch = crate::bench::CriticBatch::new(&cfg.spec, cfg.rows);
    let adam = AdamConfig::default();
    let loss = Loss::Mse {
        actions: &batch.actions,
        targets: &batch.targets,
        mask: None,
    };
    let update = |c: &mut GpuCritic| -> Result<(), CriticError> {
        c.forward(Input::U8(&batch.obs), &batch.nets)?;
        c.loss_backward(&loss)?;
        c.step(&adam);
        Ok(())
    };
    for _ in 0..3 {
        update(&mut critic)?;
    }
    critic.read_loss()?;
    let mut rows_per_s = Vec::new();
    for _ in 0..cfg.repeat.max(1) {
        let start = Instant::now();
        for _ in 0..cfg.updates {
            update(&mut critic)?;
        }
        critic.read_loss()?; // waits for the device
        rows_per_s.push((cfg.rows * cfg.updates) as f64 / start.elapsed().as_secs_f64());
    }
    Ok(crate::bench::CriticBenchResult {
        rows_per_s,
        flops_per_row: cfg.spec.update_flops_per_row(),
    })
}
