//! QMIX's mixer in WGSL (`shaders/qmix_mixer.wgsl`): the rows of [`crate::critic::mixer`]'s
//! CPU reference, one thread each, on its own device queue of the adapter the critics use.
//! Every call uploads its rows, dispatches once and reads the results back in one copy.

use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use super::device;
use super::kernels::{MAX_GROUPS, SHADERS};
use crate::critic::mixer::{MixedLoss, MixerShape};
use crate::critic::{CriticError, check_len};

/// Mirrors `MixParams` of qmix_mixer.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct MixParams {
    rows: u32,
    agents: u32,
    embed: u32,
    mode: u32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
const _: () = assert!(size_of::<MixParams>() == 32);

/// Threads per workgroup of the mixer kernel.
const GROUP: usize = 64;

/// The mixer on a GPU.
pub struct GpuMixer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    shape: MixerShape,
}

impl GpuMixer {
    /// A mixer of `shape` on adapter `index` of wgpu's enumeration.
    pub fn on_adapter(shape: MixerShape, index: usize) -> Result<GpuMixer, CriticError> {
        let (_, adapter) = device::adapter(index)?;
        GpuMixer::on(shape, &adapter)
    }

    /// A mixer of `shape` on the preferred adapter (the one [`super::probe`] names).
    pub fn new(shape: MixerShape) -> Result<GpuMixer, CriticError> {
        let (_, adapter) = device::preferred_adapter()?;
        GpuMixer::on(shape, &adapter)
    }

    fn on(shape: MixerShape, adapter: &wgpu::Adapter) -> Result<GpuMixer, CriticError> {
        if shape.agents == 0 || shape.embed == 0 {
            return Err(CriticError::Spec(
                "a mixer needs agents and embed >= 1".into(),
            ));
        }
        let (device, queue) = device::open(adapter)?;
        let source = SHADERS
            .iter()
            .find(|(n, _)| *n == "qmix_mixer")
            .map_or("", |(_, s)| *s);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("qmix_mixer"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("qmix_mixer"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        Ok(GpuMixer {
            device,
            queue,
            pipeline,
            shape,
        })
    }

    /// `Q_tot` of every row.
    pub fn mix(&mut self, q: &[f32], hyper: &[f32]) -> Result<Vec<f32>, CriticError> {
        let rows = self.rows(q, hyper)?;
        let zeros = vec![0.0; rows];
        let mut out = self.run(0, (q, hyper, &zeros))?;
        Ok(out.swap_remove(0))
    }

    /// The mixed TD loss against `y` and its gradients.
    pub fn loss(&mut self, q: &[f32], hyper: &[f32], y: &[f32]) -> Result<MixedLoss, CriticError> {
        let rows = self.rows(q, hyper)?;
        check_len("mixer targets [R]", rows, y.len())?;
        let mut out = self.run(1, (q, hyper, y))?.into_iter();
        let mut next = || out.next().unwrap_or_default();
        let (_tot, d_q, d_hyper, row_loss) = (next(), next(), next(), next());
        Ok(MixedLoss {
            loss: row_loss.iter().map(|&v| v as f64).sum::<f64>() as f32,
            d_q,
            d_hyper,
        })
    }

    fn rows(&self, q: &[f32], hyper: &[f32]) -> Result<usize, CriticError> {
        let rows = q.len() / self.shape.agents;
        check_len("mixer values [R, N]", rows * self.shape.agents, q.len())?;
        check_len(
            "mixer hypernetwork outputs [R, N E + 2 E + 1]",
            rows * self.shape.hyper_width(),
            hyper.len(),
        )?;
        if rows > u32::MAX as usize / self.shape.hyper_width() {
            return Err(CriticError::Spec(format!(
                "{rows} mixer rows: too many for one dispatch"
            )));
        }
        Ok(rows)
    }

    /// One dispatch in `mode`; returns `[tot]` (mode 0) or `[tot, d_q, d_hyper, row_loss]`.
    fn run(
        &mut self,
        mode: u32,
        (q, hyper, y): (&[f32], &[f32], &[f32]),
    ) -> Result<Vec<Vec<f32>>, CriticError> {
        let rows = y.len();
        if rows == 0 {
            let empty = if mode == 0 { 1 } else { 4 };
            return Ok(vec![Vec::new(); empty]);
        }
        let params = MixParams {
            rows: rows as u32,
            agents: self.shape.agents as u32,
            embed: self.shape.embed as u32,
            mode,
            inv_rows: 1.0 / rows as f32,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        let d = &self.device;
        let init = |label: &str, contents: &[u8], usage| {
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let out_usage = storage | wgpu::BufferUsages::COPY_SRC;
        let uniform = init(
            "mixer params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        );
        let inputs = [
            init("mixer q", bytemuck::cast_slice(q), storage),
            init("mixer hyper", bytemuck::cast_slice(hyper), storage),
            init("mixer y", bytemuck::cast_slice(y), storage),
        ];
        let lens = [rows, q.len(), hyper.len(), rows];
        let outputs: Vec<wgpu::Buffer> = lens
            .iter()
            .map(|&len| {
                d.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("mixer output"),
                    size: (len * 4) as u64,
                    usage: out_usage,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        }];
        for (i, b) in inputs.iter().chain(&outputs).enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: b.as_entire_binding(),
            });
        }
        let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("qmix_mixer"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let groups = rows.div_ceil(GROUP);
        let (x, y_groups) = if groups <= MAX_GROUPS as usize {
            (groups as u32, 1)
        } else {
            (MAX_GROUPS, groups.div_ceil(MAX_GROUPS as usize) as u32)
        };
        let wanted = if mode == 0 { 1 } else { 4 };
        let sizes: Vec<u64> = lens[..wanted].iter().map(|&l| (l * 4) as u64).collect();
        let places: Vec<u64> = sizes
            .iter()
            .scan(0u64, |at, s| {
                let p = *at;
                *at += s.next_multiple_of(8);
                Some(p)
            })
            .collect();
        let bytes = places[wanted - 1] + sizes[wanted - 1];
        let staging = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("mixer readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("qmix_mixer"),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("qmix_mixer"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(x, y_groups, 1);
        }
        for ((buffer, &place), &size) in outputs.iter().zip(&places).zip(&sizes) {
            encoder.copy_buffer_to_buffer(buffer, 0, &staging, place, size);
        }
        self.queue.submit([encoder.finish()]);
        let slice = staging.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        d.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map_err(|e| CriticError::Gpu(e.to_string()))?;
        let data = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| CriticError::Gpu(e.to_string()))?;
            places
                .iter()
                .zip(&sizes)
                .map(|(&p, &s)| {
                    bytemuck::cast_slice::<u8, f32>(&view[p as usize..(p + s) as usize]).to_vec()
                })
                .collect()
        };
        staging.unmap();
        Ok(data)
    }
}
