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
//! Two sets of row buffers (`gru_buffers`): `train` (kept for backward) and `scratch` (target
//! passes and acting steps), so neither a target pass nor an acting step disturbs what backward
//! needs.

use super::GpuCritic;
use super::gru_buffers::{GpuGru, GruGradBuffers, GruPass, Slot, upload};
use super::kernels::{GruParams, Item, UniformArena, dispatch, fold};
use super::ops::{LossBuffers, linear_params, norm_params, tile_grid};
use crate::critic::loss::Loss;
use crate::critic::{CriticError, Input, Sequences, check_len};

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

    /// Uploads `seq` into `slot` and runs the forward there with the online or `target`
    /// parameters; returns the output `[T, B, A]` in caller order and, for a one-step pass
    /// given `h_next` `[B, g]`, writes the hidden state leaving the step there (one readback).
    fn gru_forward(
        &mut self,
        seq: &Sequences,
        slot: Slot,
        target: bool,
        h_next: Option<&mut [f32]>,
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
        let gru = self.gru_state()?;
        let (a, g) = (gru.spec.head, gru.spec.hidden);
        let p = gru.pass(slot)?;
        let (out, h_out, plan) = (p.out.clone(), p.h_out.clone(), p.plan.clone());
        let mut parts = vec![(&out, rows * a)];
        if h_next.is_some() {
            parts.push((&h_out, rows * g));
        }
        let sorted = self.read_parts(&parts)?;
        let mut q = vec![0.0f32; rows * a];
        plan.scatter(&sorted[0], a, &mut q);
        if let (Some(h), Some(sorted_h)) = (h_next, sorted.get(1)) {
            check_len("next hidden state ([B, g])", rows * g, h.len())?;
            plan.scatter(sorted_h, g, h);
        }
        Ok(q)
    }

    /// Forward over sequences with the online parameters, kept for backward (see
    /// [`crate::critic::CriticBackend::forward_seq`]); `[T, B, head]`. On an MLP stack, the
    /// row-wise forward over the T x B rows.
    pub(super) fn run_forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            let rows = seq.mlp_rows(&self.spec)?;
            self.run_forward(seq.input, &rows)?;
            return self.output();
        }
        if let Some(g) = &mut self.gru {
            g.ready = false;
        }
        let out = self.gru_forward(&seq, Slot::Train, false, None)?;
        if let Some(g) = &mut self.gru {
            g.ready = true;
        }
        Ok(out)
    }

    /// `run_forward_seq` with the target parameters; what backward needs survives.
    pub(super) fn run_forward_target_seq(
        &mut self,
        seq: Sequences,
    ) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            let rows = seq.mlp_rows(&self.spec)?;
            return self.run_forward_target(seq.input, &rows);
        }
        self.gru_forward(&seq, Slot::Scratch, true, None)
    }

    /// One acting step of B rows (see [`crate::critic::CriticBackend::act`]): `hidden` `[B, g]`
    /// in, the next state out; returns `[B, head]`. Forward with T = 1 in the scratch buffers,
    /// so what backward needs survives.
    pub(super) fn run_act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_none() {
            check_len("hidden state of an MLP", 0, hidden.len())?;
            self.run_forward(input, nets)?;
            return self.output();
        }
        let g = self.spec.state_width();
        check_len("hidden ([B, state])", nets.len() * g, hidden.len())?;
        check_len(
            "input ([B, input])",
            nets.len() * self.spec.input,
            input.len(),
        )?;
        let h0 = hidden.to_vec();
        let reset = vec![0u8; nets.len()];
        let seq = Sequences {
            input,
            nets,
            h0: &h0,
            reset: &reset,
        };
        self.gru_forward(&seq, Slot::Scratch, false, Some(hidden))
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
