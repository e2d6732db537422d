//! The operations: what each of forward, target forward, backward, loss, the optimiser step and
//! Polyak averaging dispatches, with which bindings and grid, submitted as one compute pass each.

use std::convert::Infallible;

use super::GpuCritic;
use super::buffers::row_buffers;
use super::kernels::{
    AdamParams, FixedSlot, Item, LinearParams, LossParams, MAX_GROUPS, NormParams, PolyakParams,
    TILE, UniformArena, bind, dispatch, fold, run,
};
use crate::critic::loss::Loss;
use crate::critic::{AdamConfig, CriticError, Input, LN_EPS, LayerOffsets, NetOptim, check_len};

/// The uniforms of a linear kernel over `o` for rows cut into `tiles` row tiles.
pub(super) fn linear_params(
    o: &LayerOffsets,
    mode: u32,
    per_net: usize,
    tiles: u32,
) -> LinearParams {
    LinearParams {
        fan_in: o.fan_in as u32,
        fan_out: o.fan_out as u32,
        mode,
        per_net: per_net as u32,
        w_off: o.weight as u32,
        b_off: o.bias as u32,
        tiles,
        _pad: 0,
    }
}

/// The uniforms of a LayerNorm kernel over `o`'s output for `rows` rows.
pub(super) fn norm_params(o: &LayerOffsets, rows: usize, per_net: usize) -> NormParams {
    NormParams {
        width: o.fan_out as u32,
        rows: rows as u32,
        per_net: per_net as u32,
        gamma_off: o.gamma as u32,
        beta_off: o.beta as u32,
        eps: LN_EPS,
        _pad0: 0,
        _pad1: 0,
    }
}

/// The grid of a row-tiled kernel: `columns` in tiles of [`TILE`], the row tiles folded into y
/// and z.
pub(super) fn tile_grid(tiles: u32, columns: usize) -> (u32, u32, u32) {
    let (y, z) = if tiles <= MAX_GROUPS {
        (tiles.max(1), 1)
    } else {
        (MAX_GROUPS, tiles.div_ceil(MAX_GROUPS))
    };
    (columns.div_ceil(TILE) as u32, y, z)
}

/// The buffers the loss kernel reads and writes.
pub(super) struct LossBuffers<'a> {
    pub(super) order: &'a wgpu::Buffer,
    pub(super) out: &'a wgpu::Buffer,
    pub(super) actions: &'a wgpu::Buffer,
    pub(super) targets: &'a wgpu::Buffer,
    pub(super) mask: &'a wgpu::Buffer,
    pub(super) d_out: &'a wgpu::Buffer,
    pub(super) row_loss: &'a wgpu::Buffer,
}

/// Dispatch building and the operations.
impl GpuCritic {
    fn linear(&self, o: &LayerOffsets, mode: u32) -> LinearParams {
        linear_params(o, mode, self.spec.params_per_net(), self.tile_count)
    }

    fn norm(&self, o: &LayerOffsets) -> NormParams {
        norm_params(o, self.rows, self.spec.params_per_net())
    }

    fn tile_grid(&self, columns: usize) -> (u32, u32, u32) {
        tile_grid(self.tile_count, columns)
    }

    /// The forward items over the online or target parameters into their activations.
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
            let u = uniforms.push(&self.linear(o, mode))?;
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
                let u = uniforms.push(&self.norm(o))?;
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
                let u = uniforms.push(&self.norm(o))?;
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
                let u = uniforms.push(&self.norm(o))?;
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
            let u = uniforms.push(&self.linear(o, mode))?;
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
                let u = uniforms.push(&self.linear(o, mode))?;
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

    /// Builds one operation's dispatches against the uniform arena (`build` sees the critic,
    /// borrowed), then encodes them in one compute pass and submits; a failed build submits
    /// nothing.
    pub(super) fn submit<E>(
        &mut self,
        label: &str,
        build: impl for<'a> FnOnce(&'a GpuCritic, &mut UniformArena) -> Result<Vec<Item<'a>>, E>,
    ) -> Result<(), E> {
        let mut arena = self.uniforms.detach();
        let submitted = build(self, &mut arena)
            .map(|items| run(&self.device, &self.queue, &mut arena, label, items));
        arena.data.clear();
        self.uniforms.data = arena.data;
        self.dispatches += submitted?;
        Ok(())
    }

    /// Forward pass with the online parameters; keeps activations on the device for backward.
    /// Read the output with `output`.
    pub(crate) fn run_forward(&mut self, input: Input, nets: &[u32]) -> Result<(), CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise forward"));
        }
        self.upload_rows(input, nets)?;
        self.submit("forward", |c, u| c.forward_items(u, false))
    }

    /// Forward with the target parameters into separate activations (the online ones survive);
    /// returns the output (a readback).
    pub(super) fn run_forward_target(
        &mut self,
        input: Input,
        nets: &[u32],
    ) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise target forward"));
        }
        self.upload_rows(input, nets)?;
        self.submit("forward target", |c, u| c.forward_items(u, true))?;
        self.read_output(true)
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward.
    pub(super) fn run_backward(
        &mut self,
        d_out: &[f32],
        input_grad: bool,
    ) -> Result<(), CriticError> {
        if self.gru.is_some() {
            if input_grad {
                return Err(CriticError::Recurrent("the input gradient"));
            }
            return self.gru_backward(d_out);
        }
        let head = self.spec.head;
        check_len("d_output", self.rows * head, d_out.len())?;
        let mut sorted = vec![0.0f32; d_out.len()];
        self.plan.gather(d_out, head, &mut sorted);
        let rb = row_buffers(&self.rows_buf)?;
        self.queue
            .write_buffer(&rb.d_out, 0, bytemuck::cast_slice(&sorted));
        self.submit("backward", |c, u| c.backward_items(u, input_grad))
    }

    /// Loss of the last forward's output and its gradient on the device, then backward, in one
    /// submission. Read the loss with `read_loss`.
    pub(super) fn run_loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        if self.gru.is_some() {
            return self.gru_loss_backward(loss);
        }
        let rows = self.rows;
        let rb = row_buffers(&self.rows_buf)?;
        let params = self.upload_loss(loss, rows, (&rb.actions, &rb.targets, &rb.mask))?;
        self.submit("loss and backward", |c, arena| {
            let rb = row_buffers(&c.rows_buf)?;
            let buffers = LossBuffers {
                order: &rb.order,
                out: &rb.online.out,
                actions: &rb.actions,
                targets: &rb.targets,
                mask: &rb.mask,
                d_out: &rb.d_out,
                row_loss: &rb.row_loss,
            };
            let mut items = vec![c.loss_item(arena, &params, rows, &buffers)?];
            items.extend(c.backward_items(arena, false)?);
            Ok(items)
        })
    }

    /// Checks `loss` against `rows` rows of the head, uploads its actions (or labels), targets
    /// and mask into `(actions, targets, mask)`, and returns the loss kernel's uniforms.
    pub(super) fn upload_loss(
        &self,
        loss: &Loss,
        rows: usize,
        (actions, targets_buf, mask_buf): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<LossParams, CriticError> {
        let head = self.spec.head;
        loss.check(rows, head)?;
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
            Loss::HlGauss {
                bins,
                actions,
                targets,
                mask,
                ..
            } => (3, *bins, 0.0, *actions, Some(*targets), *mask),
        };
        let (v_min, v_max, sigma) = match loss {
            Loss::HlGauss {
                v_min,
                v_max,
                sigma,
                ..
            } => (*v_min, *v_max, *sigma),
            _ => (0.0, 0.0, 0.0),
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
            .write_buffer(actions, 0, bytemuck::cast_slice(labels));
        if let Some(t) = targets {
            self.queue
                .write_buffer(targets_buf, 0, bytemuck::cast_slice(t));
        }
        self.queue
            .write_buffer(mask_buf, 0, bytemuck::cast_slice(mask));
        Ok(LossParams {
            rows: rows as u32,
            head: head as u32,
            kind,
            groups: groups as u32,
            delta,
            scale: 1.0 / total,
            v_min,
            v_max,
            sigma,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        })
    }

    /// The loss kernel's dispatch over `rows` rows.
    pub(super) fn loss_item<'a>(
        &'a self,
        arena: &mut UniformArena,
        params: &LossParams,
        rows: usize,
        b: &LossBuffers,
    ) -> Result<Item<'a>, CriticError> {
        let k = &self.kernels;
        let (x, y) = fold((rows as u32).div_ceil(64));
        dispatch(
            &self.device,
            arena,
            (&k.loss, "loss"),
            params,
            &[
                b.order, b.out, b.actions, b.targets, b.mask, b.d_out, b.row_loss,
            ],
            (x, y, 1),
        )
    }

    /// The step with network k's scalars from `nets[k]` (`None`: it does not step): its count
    /// goes up by one and its step size and bias correction are [`AdamConfig::schedule`] of
    /// `cfg.for_net(nets[k])` at that count, as on the CPU, in two dispatches.
    pub(super) fn run_step(&mut self, cfg: &AdamConfig, nets: &[Option<NetOptim>]) {
        for (k, (s, steps)) in self.net_host.iter_mut().zip(&mut self.steps).enumerate() {
            let Some(n) = nets[k] else {
                s.stepping = 0;
                continue;
            };
            *steps += 1;
            let (step_size, bc2, adaptive) = cfg.for_net(&n).schedule(*steps);
            s.step_size = step_size;
            s.bc2 = bc2;
            s.adaptive = u32::from(adaptive);
            s.stepping = 1;
            s.max_norm = n.max_grad_norm.unwrap_or(0.0);
            s.clip = u32::from(n.max_grad_norm.is_some());
        }
        self.write_net_scalars();
        let count = self.spec.params() as u32;
        let per_net = self.spec.params_per_net() as u32;
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
        let adam = AdamParams {
            count,
            per_net,
            _pad0: 0,
            _pad1: 0,
            beta1: cfg.beta1,
            beta2: cfg.beta2,
            eps: cfg.eps,
            _pad2: 0,
        };
        let Ok(()) = self.submit::<Infallible>("optimiser step", |c, arena| {
            let k = &c.kernels;
            let u = arena.put(FixedSlot::First, &norm);
            let g1 = bind(
                &c.device,
                &arena.buffer,
                &k.grad_norm,
                "grad_norm",
                (u, 32),
                &[&c.grads, &c.norms],
            );
            let u = arena.put(FixedSlot::Second, &adam);
            let g2 = bind(
                &c.device,
                &arena.buffer,
                &k.adam,
                "adam",
                (u, 32),
                &[
                    &c.norms,
                    &c.grads,
                    &c.params,
                    &c.adam_m,
                    &c.adam_v,
                    &c.net_scalars,
                ],
            );
            let (x, y) = fold(count.div_ceil(256));
            Ok(vec![
                (&k.grad_norm, g1, (c.spec.nets as u32, 1, 1)),
                (&k.adam, g2, (x, y, 1)),
            ])
        });
    }

    /// The Polyak update with network k's factor `taus[k]`, in one dispatch.
    pub(super) fn run_average(&mut self, taus: &[f32]) {
        for (k, s) in self.net_host.iter_mut().enumerate() {
            s.tau = taus[k];
        }
        self.write_net_scalars();
        let count = self.spec.params() as u32;
        let params = PolyakParams {
            count,
            per_net: self.spec.params_per_net() as u32,
            _pad0: 0,
            _pad1: 0,
        };
        let Ok(()) = self.submit::<Infallible>("polyak", |c, arena| {
            let u = arena.put(FixedSlot::First, &params);
            let k = &c.kernels;
            let group = bind(
                &c.device,
                &arena.buffer,
                &k.polyak,
                "polyak",
                (u, 16),
                &[&c.params, &c.target, &c.net_scalars],
            );
            let (x, y) = fold(count.div_ceil(256));
            Ok(vec![(&k.polyak, group, (x, y, 1))])
        });
    }
}
