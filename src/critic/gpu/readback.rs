//! Device-to-host reads: outputs back in the caller's row order, the loss, gradient norms and
//! the stack's state, through one staging buffer grown to the largest read (each read waits for
//! the device).

use super::GpuCritic;
use super::buffers::row_buffers;
use crate::critic::{CriticError, StepStats};

/// Reads back what the device computed.
impl GpuCritic {
    /// The last forward's output, `[R, head]` in caller order (a readback).
    pub(super) fn output(&mut self) -> Result<Vec<f32>, CriticError> {
        self.read_output(false)
    }

    /// The last output of the online or target forward, in caller order (a readback).
    pub(super) fn read_output(&mut self, target: bool) -> Result<Vec<f32>, CriticError> {
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

    /// Rows of `width` values back from sorted into caller order.
    fn unsort(&self, sorted: &[f32], width: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; sorted.len()];
        self.plan.scatter(sorted, width, &mut out);
        out
    }

    /// The loss of the last loss-and-backward pass (a readback).
    pub(super) fn read_loss(&mut self) -> Result<f32, CriticError> {
        if self.gru.is_some() {
            return self.gru_read_loss();
        }
        let rb = row_buffers(&self.rows_buf)?;
        let buffer = rb.row_loss.clone();
        let rows = self.read_f32(&buffer, self.rows)?;
        Ok(rows.iter().map(|v| *v as f64).sum::<f64>() as f32)
    }

    /// Gradient norms seen by the last step, per network (a readback).
    pub(super) fn grad_norms(&mut self) -> Result<StepStats, CriticError> {
        let norms = self.norms.clone();
        let squared = self.read_f32(&norms, self.spec.nets)?;
        Ok(StepStats {
            grad_norms: squared.iter().map(|v| v.sqrt()).collect(),
        })
    }

    /// All parameters (a readback).
    pub(super) fn read_params(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.params.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// The target parameters (a readback).
    pub(super) fn read_target(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.target.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// The last backward's gradients (a readback).
    pub(super) fn read_grads(&mut self) -> Result<Vec<f32>, CriticError> {
        let b = self.grads.clone();
        self.read_f32(&b, self.spec.params())
    }

    /// dL/d input of the last [`GpuCritic::backward_with_input`] (`[R, D]`, caller order; a readback).
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

    /// Adam's moments and step count, the largest network's (readbacks, for checkpoints).
    pub(super) fn read_adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        let (m, v) = (self.adam_m.clone(), self.adam_v.clone());
        let n = self.spec.params();
        let steps = self.steps.iter().copied().max().unwrap_or(0);
        Ok((self.read_f32(&m, n)?, self.read_f32(&v, n)?, steps))
    }

    /// Reads `len` f32s from the start of `buffer`, waiting for the device.
    pub(super) fn read_f32(
        &mut self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<f32>, CriticError> {
        let mut parts = self.read_parts(&[(buffer, len)])?;
        Ok(parts.pop().unwrap_or_default())
    }

    /// Reads `len` f32s from the start of each buffer in one copy and one wait for the device
    /// (each part at an 8-byte aligned place of the staging buffer).
    pub(super) fn read_parts(
        &mut self,
        parts: &[(&wgpu::Buffer, usize)],
    ) -> Result<Vec<Vec<f32>>, CriticError> {
        let sizes: Vec<u64> = parts
            .iter()
            .map(|(_, len)| (*len * 4).max(4) as u64)
            .collect();
        let places: Vec<u64> = sizes
            .iter()
            .scan(0u64, |at, size| {
                let place = *at;
                *at += size.next_multiple_of(8);
                Some(place)
            })
            .collect();
        let bytes = places.last().zip(sizes.last()).map_or(4, |(p, s)| p + s);
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
        for ((buffer, _), (&place, &size)) in parts.iter().zip(places.iter().zip(&sizes)) {
            encoder.copy_buffer_to_buffer(buffer, 0, staging, place, size);
        }
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
            parts
                .iter()
                .zip(&places)
                .map(|((_, len), &place)| {
                    let at = place as usize;
                    bytemuck::cast_slice::<u8, f32>(&view[at..at + len * 4]).to_vec()
                })
                .collect()
        };
        staging.unmap();
        Ok(data)
    }
}
