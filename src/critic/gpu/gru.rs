//! GRU stacks on the GPU (the network and its layout: [`crate::critic::gru`]; the reference
//! math: `cpu::gru`). A batch of B sequences of T steps is T x B rows `t * B + b`, sorted by
//! network with the stable row plan, so network k's rows are contiguous and time-major:
//! sequence i of network k (the i-th of its sequences in caller order, `n_k` of them) is at
//! sorted row `starts[k] + t * n_k + i`. The row-wise parts reuse the MLP kernels over all rows
//! (embedding Linear -> LayerNorm -> ReLU, the gates' input side, the head, and their
//! backward); only the recurrence is its own kernel, one workgroup per sequence running its T
//! steps in order (gru_forward.wgsl, gru_backward.wgsl). A forward is 5 dispatches, a loss and
//! backward 10, whatever T, B and K.
//!
//! Two sets of row buffers: `train` (kept for backward) and `scratch` (target passes and acting
//! steps), so neither a target pass nor an acting step disturbs what backward needs.

use super::GpuCritic;
use super::buffers::{storage, write_input, write_plan};
use super::kernels::{GruParams, Item, UniformArena, dispatch, fold};
use super::ops::{LossBuffers, linear_params, norm_params, tile_grid};
use crate::critic::gru::{GruOffsets, GruSpec};
use crate::critic::loss::Loss;
use crate::critic::{CriticError, Input, RowPlan, Sequences, check_len};

/// Rows a pass's buffers hold for `rows` rows: a power of two, at least 64.
pub(crate) fn row_capacity(rows: usize) -> usize {
    rows.next_power_of_two().max(64)
}

/// One pass's rows and activations, sized by a row capacity (sequences never outnumber rows).
pub(super) struct GruPass {
    capacity: usize,
    rows: usize,
    steps: usize,
    batch: usize,
    /// The rows `t * B + b` sorted by network.
    plan: RowPlan,
    input_mode: u32,
    tile_count: u32,
    input_words: wgpu::Buffer,
    input_f32: wgpu::Buffer,
    order: wgpu::Buffer,
    row_net: wgpu::Buffer,
    tiles: wgpu::Buffer,
    starts: wgpu::Buffer,
    /// `[B]` (net, sorted row of step 0, row stride, caller sequence).
    seqs: wgpu::Buffer,
    /// `[B, g]` hidden state entering step 0, caller order.
    h0: wgpu::Buffer,
    /// `[R]` reset flags of the sorted rows.
    reset: wgpu::Buffer,
    /// `[R, e]` embedding pre-activation, LayerNorm's x-hat, the cell's input u.
    z: wgpu::Buffer,
    xhat: wgpu::Buffer,
    u: wgpu::Buffer,
    /// `[R]` LayerNorm's 1/std.
    rstd: wgpu::Buffer,
    /// `[R, 3g]` the gates' input side `W_ih u + b_ih`.
    gi: wgpu::Buffer,
    /// `[R, 4g]` r | z | n | the recurrent side of n.
    gates: wgpu::Buffer,
    /// `[R, g]` hidden state entering and leaving each step.
    h_in: wgpu::Buffer,
    h_out: wgpu::Buffer,
    /// `[R, A]` the head's output, sorted rows.
    out: wgpu::Buffer,
}

/// What backward and the loss need besides the training pass.
pub(super) struct GruGradBuffers {
    capacity: usize,
    /// `[R, A]` dL/d output, sorted rows.
    d_out: wgpu::Buffer,
    /// `[R, g]` the head's dL/d h_out.
    d_h: wgpu::Buffer,
    /// `[R, 3g]` dL/d of the gates' input and recurrent sides.
    d_gi: wgpu::Buffer,
    d_gh: wgpu::Buffer,
    /// `[R, e]` dL/d u and dL/d of the embedding's pre-activation.
    d_u: wgpu::Buffer,
    dz: wgpu::Buffer,
    /// The loss's actions (or labels), targets and mask (caller order), and each row's loss.
    actions: wgpu::Buffer,
    targets: wgpu::Buffer,
    mask: wgpu::Buffer,
    row_loss: wgpu::Buffer,
}

/// A GRU stack's state on the GPU beside the parameters the MLP path shares.
pub(super) struct GpuGru {
    spec: GruSpec,
    offsets: GruOffsets,
    nets: usize,
    train: Option<GruPass>,
    scratch: Option<GruPass>,
    grad_buffers: Option<GruGradBuffers>,
    /// Whether `train` holds a forward that backward can use.
    ready: bool,
}

/// Which set of row buffers a pass uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Train,
    Scratch,
}

impl GruPass {
    fn new(device: &wgpu::Device, spec: &GruSpec, nets: usize, rows: usize) -> GruPass {
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
    fn new(device: &wgpu::Device, spec: &GruSpec, rows: usize) -> GruGradBuffers {
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
        if spec.hidden > super::kernels::MAX_GRU_HIDDEN {
            return Err(CriticError::Spec(format!(
                "a GRU hidden state of {} units; the GPU kernels take at most {}",
                spec.hidden,
                super::kernels::MAX_GRU_HIDDEN
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

    fn pass(&self, slot: Slot) -> Result<&GruPass, CriticError> {
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
fn upload<'p>(
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
    (pass.rows, pass.steps, pass.batch, pass.plan) = (rows, steps, batch, plan);
    Ok(pass)
}

/// The GRU operations of [`GpuCritic`].
impl GpuCritic {
    fn gru_state(&self) -> Result<&GpuGru, CriticError> {
        self.gru
            .as_ref()
            .ok_or(CriticError::Recurrent("no GRU in this stack"))
    }

    /// The recurrence's uniforms over a pass.
    fn gru_params(&self, gru: &GpuGru, pass: &GruPass) -> GruParams {
        GruParams {
            hidden: gru.spec.hidden as u32,
            steps: pass.steps as u32,
            per_net: gru.spec.params_per_net() as u32,
            w_off: gru.offsets.hidden_gates.weight as u32,
            b_off: gru.offsets.hidden_gates.bias as u32,
            seqs: pass.batch as u32,
            _pad0: 0,
            _pad1: 0,
        }
    }

    /// The forward dispatches over the pass in `slot` with `params` (online or target).
    fn gru_forward_items<'a>(
        &'a self,
        arena: &mut UniformArena,
        slot: Slot,
        params: &'a wgpu::Buffer,
    ) -> Result<Vec<Item<'a>>, CriticError> {
        let gru = self.gru_state()?;
        let p = gru.pass(slot)?;
        let (o, k, dev) = (&gru.offsets, &self.kernels, &self.device);
        let per_net = gru.spec.params_per_net();
        let (rows_x, rows_y) = fold(p.rows as u32);
        let (seq_x, seq_y) = fold(p.batch as u32);
        let lin = (&k.linear_forward, "linear_forward");
        let row_inputs = |x: &'a wgpu::Buffer, y: &'a wgpu::Buffer| {
            [
                &p.tiles,
                params,
                &p.input_words,
                &p.input_f32,
                &p.order,
                x,
                y,
            ]
        };
        Ok(vec![
            dispatch(
                dev,
                arena,
                lin,
                &linear_params(&o.embed, p.input_mode, per_net, p.tile_count),
                &row_inputs(&p.input_f32, &p.z),
                tile_grid(p.tile_count, o.embed.fan_out),
            )?,
            dispatch(
                dev,
                arena,
                (&k.layernorm_forward, "layernorm_forward"),
                &norm_params(&o.embed, p.rows, per_net),
                &[&p.row_net, params, &p.z, &p.xhat, &p.rstd, &p.u],
                (rows_x, rows_y, 1),
            )?,
            dispatch(
                dev,
                arena,
                lin,
                &linear_params(&o.input_gates, 2, per_net, p.tile_count),
                &row_inputs(&p.u, &p.gi),
                tile_grid(p.tile_count, o.input_gates.fan_out),
            )?,
            dispatch(
                dev,
                arena,
                (&k.gru_forward, "gru_forward"),
                &self.gru_params(gru, p),
                &[
                    &p.seqs, params, &p.h0, &p.reset, &p.gi, &p.h_in, &p.gates, &p.h_out,
                ],
                (seq_x, seq_y, 1),
            )?,
            dispatch(
                dev,
                arena,
                lin,
                &linear_params(&o.head, 2, per_net, p.tile_count),
                &row_inputs(&p.h_out, &p.out),
                tile_grid(p.tile_count, o.head.fan_out),
            )?,
        ])
    }

    /// The backward dispatches from `d_out` (on the device) of the training pass: every
    /// parameter's gradient, per network, overwritten.
    fn gru_backward_items<'a>(
        &'a self,
        arena: &mut UniformArena,
    ) -> Result<Vec<Item<'a>>, CriticError> {
        let gru = self.gru_state()?;
        let p = gru.pass(Slot::Train)?;
        let b = gru
            .grad_buffers
            .as_ref()
            .ok_or_else(|| CriticError::Gpu("no gradient buffers".into()))?;
        let (o, k, dev) = (&gru.offsets, &self.kernels, &self.device);
        let per_net = gru.spec.params_per_net();
        let nets = gru.nets as u32;
        let (rows_x, rows_y) = fold(p.rows as u32);
        let (seq_x, seq_y) = fold(p.batch as u32);
        let weight = (&k.linear_backward_weight, "linear_backward_weight");
        let input = (&k.linear_backward_input, "linear_backward_input");
        let weight_grid = |l: &crate::critic::LayerOffsets| {
            (
                (l.fan_in.div_ceil(16) + 1) as u32,
                l.fan_out.div_ceil(16) as u32,
                nets,
            )
        };
        let reduce = |dy: &'a wgpu::Buffer, x: &'a wgpu::Buffer| {
            [
                &p.starts,
                dy,
                &p.input_words,
                &p.input_f32,
                &p.order,
                x,
                &self.grads,
            ]
        };
        let lin = |l, mode| linear_params(l, mode, per_net, p.tile_count);
        Ok(vec![
            // The head.
            dispatch(
                dev,
                arena,
                weight,
                &lin(&o.head, 2),
                &reduce(&b.d_out, &p.h_out),
                weight_grid(&o.head),
            )?,
            dispatch(
                dev,
                arena,
                input,
                &lin(&o.head, 2),
                &[&p.tiles, &self.params, &b.d_out, &b.d_h],
                tile_grid(p.tile_count, o.head.fan_in),
            )?,
            // Through time.
            dispatch(
                dev,
                arena,
                (&k.gru_backward, "gru_backward"),
                &self.gru_params(gru, p),
                &[
                    &p.seqs,
                    &self.params,
                    &p.reset,
                    &p.gates,
                    &p.h_in,
                    &b.d_h,
                    &b.d_gi,
                    &b.d_gh,
                ],
                (seq_x, seq_y, 1),
            )?,
            // Both sides of the gates.
            dispatch(
                dev,
                arena,
                weight,
                &lin(&o.hidden_gates, 2),
                &reduce(&b.d_gh, &p.h_in),
                weight_grid(&o.hidden_gates),
            )?,
            dispatch(
                dev,
                arena,
                weight,
                &lin(&o.input_gates, 2),
                &reduce(&b.d_gi, &p.u),
                weight_grid(&o.input_gates),
            )?,
            dispatch(
                dev,
                arena,
                input,
                &lin(&o.input_gates, 2),
                &[&p.tiles, &self.params, &b.d_gi, &b.d_u],
                tile_grid(p.tile_count, o.input_gates.fan_in),
            )?,
            // The embedding.
            dispatch(
                dev,
                arena,
                (&k.layernorm_backward, "layernorm_backward"),
                &norm_params(&o.embed, p.rows, per_net),
                &[
                    &p.row_net,
                    &self.params,
                    &b.d_u,
                    &p.u,
                    &p.xhat,
                    &p.rstd,
                    &b.dz,
                ],
                (rows_x, rows_y, 1),
            )?,
            dispatch(
                dev,
                arena,
                (&k.layernorm_param_grad, "layernorm_param_grad"),
                &norm_params(&o.embed, p.rows, per_net),
                &[&p.starts, &b.d_u, &p.u, &p.xhat, &self.grads],
                (o.embed.fan_out.div_ceil(64) as u32, 1, nets),
            )?,
            dispatch(
                dev,
                arena,
                weight,
                &lin(&o.embed, p.input_mode),
                &reduce(&b.dz, &p.input_f32),
                weight_grid(&o.embed),
            )?,
        ])
    }

    /// Uploads `seq` into `slot` and runs the forward with `params` there; returns the output
    /// `[T, B, A]` in caller order (a readback).
    fn gru_forward(
        &mut self,
        seq: &Sequences,
        slot: Slot,
        target: bool,
    ) -> Result<Vec<f32>, CriticError> {
        seq.shape(&self.spec)?;
        let gru = self
            .gru
            .as_mut()
            .ok_or(CriticError::Recurrent("no GRU in this stack"))?;
        let rows = upload(&self.device, &self.queue, gru, slot, seq)?.rows;
        if rows == 0 {
            return Ok(Vec::new());
        }
        self.submit("gru forward", |c, arena| {
            let params = if target { &c.target } else { &c.params };
            c.gru_forward_items(arena, slot, params)
        })?;
        self.read_pass(slot, true)
    }

    /// The pass's output (`out`) or its last hidden states (`h_out`, for a one-step pass) in
    /// caller order (a readback).
    fn read_pass(&mut self, slot: Slot, out: bool) -> Result<Vec<f32>, CriticError> {
        let gru = self.gru_state()?;
        let width = if out { gru.spec.head } else { gru.spec.hidden };
        let p = gru.pass(slot)?;
        let buffer = if out { p.out.clone() } else { p.h_out.clone() };
        let plan = p.plan.clone();
        let sorted = self.read_f32(&buffer, plan.order.len() * width)?;
        let mut caller = vec![0.0f32; sorted.len()];
        plan.scatter(&sorted, width, &mut caller);
        Ok(caller)
    }

    /// Forward over sequences with the online parameters, kept for backward (see
    /// [`crate::critic::CriticBackend::forward_seq`]); `[T, B, head]`. On an MLP stack, the
    /// row-wise forward over the T x B rows.
    pub fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            let rows = seq.mlp_rows(&self.spec)?;
            self.forward(seq.input, &rows)?;
            return self.output();
        }
        if let Some(g) = &mut self.gru {
            g.ready = false;
        }
        let out = self.gru_forward(&seq, Slot::Train, false)?;
        if let Some(g) = &mut self.gru {
            g.ready = true;
        }
        Ok(out)
    }

    /// [`GpuCritic::forward_seq`] with the target parameters; what backward needs survives.
    pub fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            let rows = seq.mlp_rows(&self.spec)?;
            return self.forward_target(seq.input, &rows);
        }
        self.gru_forward(&seq, Slot::Scratch, true)
    }

    /// One acting step of B rows (see [`crate::critic::CriticBackend::act`]): `hidden` `[B, g]`
    /// in, the next state out; returns `[B, head]`. Forward with T = 1 in the scratch buffers,
    /// so what backward needs survives.
    pub fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            check_len("hidden state of an MLP", 0, hidden.len())?;
            self.forward(input, nets)?;
            return self.output();
        }
        let g = self.spec.state_width();
        check_len("hidden ([B, state])", nets.len() * g, hidden.len())?;
        check_len("input ([B, input])", nets.len() * self.spec.input, input.len())?;
        let h0 = hidden.to_vec();
        let reset = vec![0u8; nets.len()];
        let seq = Sequences {
            input,
            nets,
            h0: &h0,
            reset: &reset,
        };
        let out = self.gru_forward(&seq, Slot::Scratch, false)?;
        if !nets.is_empty() {
            hidden.copy_from_slice(&self.read_pass(Slot::Scratch, false)?);
        }
        Ok(out)
    }

    /// Makes sure the gradient buffers hold the training pass's rows.
    fn ensure_grad_buffers(&mut self) -> Result<(), CriticError> {
        let gru = self
            .gru
            .as_mut()
            .ok_or(CriticError::Recurrent("no GRU in this stack"))?;
        if !gru.ready {
            return Err(CriticError::Recurrent(
                "backward before a training forward_seq",
            ));
        }
        let rows = gru.pass(Slot::Train)?.rows;
        if gru.grad_buffers.as_ref().is_none_or(|b| b.capacity < rows) {
            gru.grad_buffers = Some(GruGradBuffers::new(&self.device, &gru.spec, rows));
        }
        Ok(())
    }

    /// Rows of the training pass (0 without one).
    fn gru_rows(&self) -> usize {
        self.gru
            .as_ref()
            .and_then(|g| g.train.as_ref())
            .map_or(0, |p| p.rows)
    }

    /// Zeroes every gradient (the backward of an empty batch).
    fn zero_grads(&mut self) {
        let zeros = vec![0u8; self.spec.params() * 4];
        self.queue.write_buffer(&self.grads, 0, &zeros);
    }

    /// BPTT from dL/d output `[T, B, A]` (caller order) of the last [`GpuCritic::forward_seq`];
    /// gradients overwritten.
    pub(super) fn gru_backward(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.ensure_grad_buffers()?;
        let rows = self.gru_rows();
        check_len("d_out ([T, B, head])", rows * self.spec.head, d_out.len())?;
        if rows == 0 {
            self.zero_grads();
            return Ok(());
        }
        let gru = self.gru_state()?;
        let plan = &gru.pass(Slot::Train)?.plan;
        let mut sorted = vec![0.0f32; d_out.len()];
        plan.gather(d_out, self.spec.head, &mut sorted);
        if let Some(b) = &gru.grad_buffers {
            self.queue
                .write_buffer(&b.d_out, 0, bytemuck::cast_slice(&sorted));
        }
        self.submit("gru backward", |c, arena| c.gru_backward_items(arena))
    }

    /// The loss of the last [`GpuCritic::forward_seq`]'s output and its gradient, then BPTT,
    /// in one submission.
    pub(super) fn gru_loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        self.ensure_grad_buffers()?;
        let rows = self.gru_rows();
        let gru = self.gru_state()?;
        let b = gru
            .grad_buffers
            .as_ref()
            .ok_or_else(|| CriticError::Gpu("no gradient buffers".into()))?;
        let params = self.upload_loss(loss, rows, (&b.actions, &b.targets, &b.mask))?;
        if rows == 0 {
            self.zero_grads();
            return Ok(());
        }
        self.submit("gru loss and backward", |c, arena| {
            let gru = c.gru_state()?;
            let p = gru.pass(Slot::Train)?;
            let b = gru
                .grad_buffers
                .as_ref()
                .ok_or_else(|| CriticError::Gpu("no gradient buffers".into()))?;
            let buffers = LossBuffers {
                order: &p.order,
                out: &p.out,
                actions: &b.actions,
                targets: &b.targets,
                mask: &b.mask,
                d_out: &b.d_out,
                row_loss: &b.row_loss,
            };
            let mut items = vec![c.loss_item(arena, &params, rows, &buffers)?];
            items.extend(c.gru_backward_items(arena)?);
            Ok(items)
        })
    }

    /// The loss of the last [`GpuCritic::gru_loss_backward`] (a readback; 0 before any).
    pub(super) fn gru_read_loss(&mut self) -> Result<f32, CriticError> {
        let rows = self.gru_rows();
        let gru = self.gru_state()?;
        let Some(b) = &gru.grad_buffers else {
            return Ok(0.0);
        };
        if rows == 0 {
            return Ok(0.0);
        }
        let buffer = b.row_loss.clone();
        let values = self.read_f32(&buffer, rows)?;
        Ok(values.iter().map(|v| *v as f64).sum::<f64>() as f32)
    }
}
