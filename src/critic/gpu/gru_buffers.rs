//! The GRU passes' device buffers: two sets of row buffers (`train`, kept for backward, and
//! `scratch`, for target passes and acting steps), the gradient buffers of backward and the
//! loss, and the upload of a batch of sequences (the layout is in the `gru` module's notes).

use super::buffers::{storage, write_input, write_plan};
use super::kernels::MAX_GRU_HIDDEN;
use crate::critic::gru::{GruOffsets, GruSpec};
use crate::critic::{CriticError, RowPlan, Sequences};

/// Rows a pass's buffers hold for `rows` rows: a power of two, at least 64.
fn row_capacity(rows: usize) -> usize {
    rows.next_power_of_two().max(64)
}

/// One pass's rows and activations, sized by a row capacity (sequences never outnumber rows).
pub(super) struct GruPass {
    pub(super) capacity: usize,
    pub(super) rows: usize,
    pub(super) steps: usize,
    pub(super) batch: usize,
    /// The rows `t * B + b` sorted by network.
    pub(super) plan: RowPlan,
    pub(super) input_mode: u32,
    pub(super) tile_count: u32,
    pub(super) input_words: wgpu::Buffer,
    pub(super) input_f32: wgpu::Buffer,
    pub(super) order: wgpu::Buffer,
    pub(super) row_net: wgpu::Buffer,
    pub(super) tiles: wgpu::Buffer,
    pub(super) starts: wgpu::Buffer,
    /// `[B]` (net, sorted row of step 0, row stride, caller sequence).
    pub(super) seqs: wgpu::Buffer,
    /// `[B, g]` hidden state entering step 0, caller order.
    pub(super) h0: wgpu::Buffer,
    /// `[R]` reset flags of the sorted rows.
    pub(super) reset: wgpu::Buffer,
    /// `[R, e]` embedding pre-activation, LayerNorm's x-hat, the cell's input u.
    pub(super) z: wgpu::Buffer,
    pub(super) xhat: wgpu::Buffer,
    pub(super) u: wgpu::Buffer,
    /// `[R]` LayerNorm's 1/std.
    pub(super) rstd: wgpu::Buffer,
    /// `[R, 3g]` the gates' input side `W_ih u + b_ih`.
    pub(super) gi: wgpu::Buffer,
    /// `[R, 4g]` r | z | n | the recurrent side of n.
    pub(super) gates: wgpu::Buffer,
    /// `[R, g]` hidden state entering and leaving each step.
    pub(super) h_in: wgpu::Buffer,
    pub(super) h_out: wgpu::Buffer,
    /// `[R, A]` the head's output, sorted rows.
    pub(super) out: wgpu::Buffer,
}

/// What backward and the loss need besides the training pass.
pub(super) struct GruGradBuffers {
    pub(super) capacity: usize,
    /// `[R, A]` dL/d output, sorted rows.
    pub(super) d_out: wgpu::Buffer,
    /// `[R, g]` the head's dL/d h_out.
    pub(super) d_h: wgpu::Buffer,
    /// `[R, 3g]` dL/d of the gates' input and recurrent sides.
    pub(super) d_gi: wgpu::Buffer,
    pub(super) d_gh: wgpu::Buffer,
    /// `[R, e]` dL/d u and dL/d of the embedding's pre-activation.
    pub(super) d_u: wgpu::Buffer,
    pub(super) dz: wgpu::Buffer,
    /// The loss's actions (or labels), targets and mask (caller order), and each row's loss.
    pub(super) actions: wgpu::Buffer,
    pub(super) targets: wgpu::Buffer,
    pub(super) mask: wgpu::Buffer,
    pub(super) row_loss: wgpu::Buffer,
}

/// A GRU stack's state on the GPU beside the parameters the MLP path shares.
pub(super) struct GpuGru {
    pub(super) spec: GruSpec,
    pub(super) offsets: GruOffsets,
    pub(super) nets: usize,
    pub(super) train: Option<GruPass>,
    pub(super) scratch: Option<GruPass>,
    pub(super) grad_buffers: Option<GruGradBuffers>,
    /// Whether `train` holds a forward that backward can use.
    pub(super) ready: bool,
}

/// Which set of row buffers a pass uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Train,
    Scratch,
}

impl GruPass {
    pub(super) fn new(device: &wgpu::Device, spec: &GruSpec, nets: usize, rows: usize) -> GruPass {
        let c = row_capacity(rows);
        let (d, e, g, a) = (spec.input, spec.embed, spec.hidden, spec.head);
        let f = |label: &str, floats: usize| storage(device, label, c * floats * 4);
        GruPass {
            capacity: c,
            rows: 0,
            steps: 0,
            batch: 0,
            plan: RowPlan::default(),
            input_mode: 0,
            tile_count: 0,
            input_words: storage(device, "gru input u8", c * d),
            input_f32: f("gru input f32", d),
            order: f("gru row order", 1),
            row_net: f("gru row net", 1),
            tiles: storage(device, "gru row tiles", (c / 16 + nets + 1) * 16),
            starts: storage(device, "gru net starts", (nets + 1) * 4),
            seqs: f("gru sequences", 4),
            h0: f("gru h0", g),
            reset: f("gru reset", 1),
            z: f("gru embed z", e),
            xhat: f("gru embed xhat", e),
            u: f("gru embed u", e),
            rstd: f("gru embed rstd", 1),
            gi: f("gru gates input side", 3 * g),
            gates: f("gru gates", 4 * g),
            h_in: f("gru h in", g),
            h_out: f("gru h out", g),
            out: f("gru out", a),
        }
    }

    fn buffers(&self) -> [&wgpu::Buffer; 18] {
        [
            &self.input_words,
            &self.input_f32,
            &self.order,
            &self.row_net,
            &self.tiles,
            &self.starts,
            &self.seqs,
            &self.h0,
            &self.reset,
            &self.z,
            &self.xhat,
            &self.u,
            &self.rstd,
            &self.gi,
            &self.gates,
            &self.h_in,
            &self.h_out,
            &self.out,
        ]
    }
}

impl GruGradBuffers {
    pub(super) fn new(device: &wgpu::Device, spec: &GruSpec, rows: usize) -> GruGradBuffers {
        let c = row_capacity(rows);
        let (e, g, a) = (spec.embed, spec.hidden, spec.head);
        let f = |label: &str, floats: usize| storage(device, label, c * floats * 4);
        GruGradBuffers {
            capacity: c,
            d_out: f("gru d out", a),
            d_h: f("gru d h", g),
            d_gi: f("gru d gates input side", 3 * g),
            d_gh: f("gru d gates recurrent side", 3 * g),
            d_u: f("gru d u", e),
            dz: f("gru d embed z", e),
            actions: f("gru loss actions", a),
            targets: f("gru loss targets", 1),
            mask: f("gru loss mask", 1),
            row_loss: f("gru row loss", 1),
        }
    }

    fn buffers(&self) -> [&wgpu::Buffer; 10] {
        [
            &self.d_out,
            &self.d_h,
            &self.d_gi,
            &self.d_gh,
            &self.d_u,
            &self.dz,
            &self.actions,
            &self.targets,
            &self.mask,
            &self.row_loss,
        ]
    }
}

impl GpuGru {
    /// The state of a stack of `nets` networks of shape `spec`; buffers come with the first
    /// pass. Refused when the hidden state is wider than the kernels take.
    pub(super) fn new(spec: GruSpec, nets: usize) -> Result<GpuGru, CriticError> {
        if spec.hidden > MAX_GRU_HIDDEN {
            return Err(CriticError::Spec(format!(
                "a GRU hidden state of {} units; the GPU kernels take at most {}",
                spec.hidden, MAX_GRU_HIDDEN
            )));
        }
        Ok(GpuGru {
            offsets: spec.offsets(),
            spec,
            nets,
            train: None,
            scratch: None,
            grad_buffers: None,
            ready: false,
        })
    }

    /// Every device buffer held now.
    pub(super) fn device_buffers(&self) -> Vec<&wgpu::Buffer> {
        let mut out = Vec::new();
        for pass in [&self.train, &self.scratch].into_iter().flatten() {
            out.extend(pass.buffers());
        }
        if let Some(g) = &self.grad_buffers {
            out.extend(g.buffers());
        }
        out
    }

    pub(super) fn pass(&self, slot: Slot) -> Result<&GruPass, CriticError> {
        match slot {
            Slot::Train => &self.train,
            Slot::Scratch => &self.scratch,
        }
        .as_ref()
        .ok_or_else(|| CriticError::Gpu("no sequence pass yet".into()))
    }
}

/// Uploads a batch of sequences into the pass in `slot` (grown to fit): the input, the row
/// plan, each sequence's place, the sorted reset flags and h0. Returns the pass.
pub(super) fn upload<'p>(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    gru: &'p mut GpuGru,
    slot: Slot,
    seq: &Sequences,
) -> Result<&'p GruPass, CriticError> {
    let (steps, batch, nets) = (seq.steps(), seq.batch(), gru.nets);
    let rows = steps * batch;
    let seq_plan = RowPlan::new(seq.nets, nets)?;
    let plan = RowPlan::new(&seq.nets.repeat(steps), nets)?;
    let (spec, place) = match slot {
        Slot::Train => (&gru.spec, &mut gru.train),
        Slot::Scratch => (&gru.spec, &mut gru.scratch),
    };
    if place.as_ref().is_none_or(|p| p.capacity < rows) {
        *place = Some(GruPass::new(device, spec, nets, rows));
    }
    let Some(pass) = place.as_mut() else {
        return Err(CriticError::Gpu("no sequence buffers".into()));
    };
    (pass.rows, pass.steps, pass.batch) = (rows, steps, batch);
    if rows == 0 {
        // Nothing to run (and B may exceed the buffers' capacity when T is 0).
        pass.plan = plan;
        return Ok(pass);
    }
    let mut seqs: Vec<[u32; 4]> = Vec::with_capacity(batch);
    for k in 0..nets {
        let (s, e) = (seq_plan.starts[k] as usize, seq_plan.starts[k + 1] as usize);
        for (i, &b) in seq_plan.order[s..e].iter().enumerate() {
            let first = plan.starts[k] + i as u32;
            seqs.push([k as u32, first, (e - s) as u32, b]);
        }
    }
    let reset: Vec<u32> = plan
        .order
        .iter()
        .map(|&r| u32::from(seq.reset[r as usize] != 0))
        .collect();
    pass.input_mode = write_input(queue, seq.input, &pass.input_words, &pass.input_f32);
    let plan_buffers = [&pass.order, &pass.row_net, &pass.tiles, &pass.starts];
    pass.tile_count = write_plan(queue, &plan, nets, plan_buffers);
    queue.write_buffer(&pass.seqs, 0, bytemuck::cast_slice(&seqs));
    queue.write_buffer(&pass.reset, 0, bytemuck::cast_slice(&reset));
    queue.write_buffer(&pass.h0, 0, bytemuck::cast_slice(seq.h0));
    pass.plan = plan;
    Ok(pass)
}
