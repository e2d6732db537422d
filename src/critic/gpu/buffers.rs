//! The device buffers: activations and row bookkeeping sized by the row capacity (grown to a
//! power of two and reused), the uploads of a batch's rows, and host writes of parameters,
//! gradients and Adam's state.

use super::GpuCritic;
use super::kernels::TILE;
use crate::critic::{CriticError, Input, RowPlan, check_len};

/// Activations of one pass over the hidden layers.
pub(super) struct LayerBuffers {
    pub(super) z: Vec<wgpu::Buffer>,
    pub(super) xhat: Vec<wgpu::Buffer>,
    pub(super) rstd: Vec<wgpu::Buffer>,
    pub(super) act: Vec<wgpu::Buffer>,
    pub(super) out: wgpu::Buffer,
}

/// Everything sized by the row capacity.
pub(super) struct RowBuffers {
    pub(super) capacity: usize,
    pub(super) input_words: wgpu::Buffer,
    pub(super) input_f32: wgpu::Buffer,
    pub(super) order: wgpu::Buffer,
    pub(super) row_net: wgpu::Buffer,
    pub(super) tiles: wgpu::Buffer,
    pub(super) starts: wgpu::Buffer,
    pub(super) online: LayerBuffers,
    pub(super) target: LayerBuffers,
    pub(super) d_out: wgpu::Buffer,
    pub(super) g: wgpu::Buffer,
    pub(super) dz: wgpu::Buffer,
    pub(super) d_input: wgpu::Buffer,
    pub(super) actions: wgpu::Buffer,
    pub(super) targets: wgpu::Buffer,
    pub(super) mask: wgpu::Buffer,
    pub(super) row_loss: wgpu::Buffer,
}

/// A storage buffer of at least `bytes` (16 at least, a multiple of 4), copyable both ways.
pub(super) fn storage(device: &wgpu::Device, label: &str, bytes: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16).next_multiple_of(4) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Row buffers, batch uploads and host-to-device writes of the stack's state.
impl GpuCritic {
    /// Allocates the row buffers for at least `rows` rows (a power of two, at least 64) unless
    /// the current ones are large enough.
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
    pub(super) fn upload_rows(&mut self, input: Input, nets: &[u32]) -> Result<(), CriticError> {
        check_len("input", nets.len() * self.spec.input, input.len())?;
        self.plan = RowPlan::new(nets, self.spec.nets)?;
        self.rows = nets.len();
        self.ensure_rows(self.rows);
        let rb = row_buffers(&self.rows_buf)?;
        self.input_mode = write_input(&self.queue, input, &rb.input_words, &rb.input_f32);
        let plan_buffers = [&rb.order, &rb.row_net, &rb.tiles, &rb.starts];
        self.tile_count = write_plan(&self.queue, &self.plan, self.spec.nets, plan_buffers);
        Ok(())
    }

    /// Replaces all parameters.
    pub(super) fn write_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        check_len("parameters", self.spec.params(), params.len())?;
        self.queue
            .write_buffer(&self.params, 0, bytemuck::cast_slice(params));
        Ok(())
    }

    /// Restores Adam's moments and step count, the same for every network.
    pub(super) fn write_adam_state(
        &mut self,
        m: &[f32],
        v: &[f32],
        steps: u64,
    ) -> Result<(), CriticError> {
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
        self.steps.fill(steps);
        Ok(())
    }

    /// Uploads the per-network optimiser scalars (`net_host`) ahead of the next submission.
    pub(super) fn write_net_scalars(&self) {
        self.queue
            .write_buffer(&self.net_scalars, 0, bytemuck::cast_slice(&self.net_host));
    }

    /// Replaces the gradients (external accumulation, and tests that feed both backends the
    /// same gradients).
    pub(super) fn write_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        check_len("gradients", self.spec.params(), grads.len())?;
        self.queue
            .write_buffer(&self.grads, 0, bytemuck::cast_slice(grads));
        Ok(())
    }
}

/// Uploads rows of input into `words` (u8, packed 4 per word) or `floats` (f32); returns the
/// linear kernels' input mode (0: u8, 1: f32).
pub(super) fn write_input(
    queue: &wgpu::Queue,
    input: Input,
    words: &wgpu::Buffer,
    floats: &wgpu::Buffer,
) -> u32 {
    match input {
        Input::U8(x) => {
            let mut padded = x.to_vec();
            padded.resize(x.len().next_multiple_of(4), 0);
            queue.write_buffer(words, 0, &padded);
            0
        }
        Input::F32(x) => {
            queue.write_buffer(floats, 0, bytemuck::cast_slice(x));
            1
        }
    }
}

/// Uploads a row plan: the caller row of each sorted row, each sorted row's network, the row
/// tiles and the networks' boundaries, into `[order, row_net, tiles, starts]`; returns the
/// number of tiles.
pub(super) fn write_plan(
    queue: &wgpu::Queue,
    plan: &RowPlan,
    nets: usize,
    [order, row_net_buf, tiles_buf, starts]: [&wgpu::Buffer; 4],
) -> u32 {
    let (row_net, tiles) = row_tiles(plan, nets);
    queue.write_buffer(order, 0, bytemuck::cast_slice(&plan.order));
    queue.write_buffer(row_net_buf, 0, bytemuck::cast_slice(&row_net));
    queue.write_buffer(tiles_buf, 0, bytemuck::cast_slice(&tiles));
    queue.write_buffer(starts, 0, bytemuck::cast_slice(&plan.starts));
    tiles.len() as u32
}

/// Each sorted row's network and the row tiles `(net, first row, end row, 0)` of at most
/// [`TILE`] rows of one network (one empty tile when there are no rows).
fn row_tiles(plan: &RowPlan, nets: usize) -> (Vec<u32>, Vec<[u32; 4]>) {
    let rows = plan.order.len();
    let mut row_net = vec![0u32; rows];
    let mut tiles: Vec<[u32; 4]> = Vec::new();
    for k in 0..nets {
        let (s, e) = (plan.starts[k], plan.starts[k + 1]);
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
    (row_net, tiles)
}

/// The per-row device buffers (a field borrow, so other fields stay usable); an error before the
/// first forward pass.
pub(super) fn row_buffers(rows: &Option<RowBuffers>) -> Result<&RowBuffers, CriticError> {
    rows.as_ref()
        .ok_or_else(|| CriticError::Gpu("no forward pass yet".into()))
}
