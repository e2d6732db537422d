//! Kernels that run once per call on host data (QMIX's mixer, PPO's losses): one pipeline on
//! its own device queue of an adapter, and a call that uploads the inputs, dispatches one row
//! per thread and reads every output back in one copy.

use wgpu::util::DeviceExt;

use super::device;
use super::kernels::{MAX_GROUPS, SHADERS};
use crate::critic::CriticError;

/// Threads per workgroup of the one-shot kernels (`@workgroup_size(64, 1, 1)`).
const GROUP: usize = 64;

/// One shader's pipeline on a device of its own.
pub(super) struct OneShot {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
}

impl OneShot {
    /// The shader `name` of [`SHADERS`] on adapter `index`, or the preferred adapter.
    pub(super) fn new(name: &'static str, index: Option<usize>) -> Result<OneShot, CriticError> {
        let (_, adapter) = match index {
            Some(i) => device::adapter(i)?,
            None => device::preferred_adapter()?,
        };
        let (device, queue) = device::open(&adapter)?;
        let source = SHADERS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, s)| *s);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        Ok(OneShot {
            device,
            queue,
            pipeline,
        })
    }

    /// One dispatch over `rows` rows: binding 0 the `uniform` bytes, then the `inputs` (storage,
    /// read), then one output of each length of `outputs` (f32s, read back in order). Every
    /// binding must be at least 4 bytes: the caller passes a placeholder for an empty one.
    pub(super) fn run(
        &self,
        rows: usize,
        uniform: &[u8],
        inputs: &[&[u8]],
        outputs: &[usize],
    ) -> Result<Vec<Vec<f32>>, CriticError> {
        let d = &self.device;
        let init = |label: &str, contents: &[u8], usage| {
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let params = init("one-shot params", uniform, wgpu::BufferUsages::UNIFORM);
        let ins: Vec<wgpu::Buffer> = inputs
            .iter()
            .map(|b| init("one-shot input", b, wgpu::BufferUsages::STORAGE))
            .collect();
        let sizes: Vec<u64> = outputs.iter().map(|&l| (l.max(1) * 4) as u64).collect();
        let outs: Vec<wgpu::Buffer> = sizes
            .iter()
            .map(|&size| {
                d.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("one-shot output"),
                    size,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (i, b) in ins.iter().chain(&outs).enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: b.as_entire_binding(),
            });
        }
        let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("one-shot"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let groups = rows.div_ceil(GROUP).max(1);
        let (x, y) = if groups <= MAX_GROUPS as usize {
            (groups as u32, 1)
        } else {
            (MAX_GROUPS, groups.div_ceil(MAX_GROUPS as usize) as u32)
        };
        let places: Vec<u64> = sizes
            .iter()
            .scan(0u64, |at, s| {
                let p = *at;
                *at += s.next_multiple_of(8);
                Some(p)
            })
            .collect();
        let bytes = places.last().zip(sizes.last()).map_or(4, |(p, s)| p + s);
        let staging = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("one-shot readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("one-shot"),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("one-shot"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
        for ((buffer, &place), &size) in outs.iter().zip(&places).zip(&sizes) {
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
                .zip(outputs)
                .map(|(&p, &len)| {
                    let at = p as usize;
                    bytemuck::cast_slice::<u8, f32>(&view[at..at + len * 4]).to_vec()
                })
                .collect()
        };
        staging.unmap();
        Ok(data)
    }
}

/// `x` as bytes for a storage binding, a 4-byte placeholder when empty.
pub(super) fn bytes_or_placeholder<T: bytemuck::Pod>(x: &[T]) -> &[u8] {
    if x.is_empty() {
        &[0; 4]
    } else {
        bytemuck::cast_slice(x)
    }
}
