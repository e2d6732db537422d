//! The CPU stack's row-wise passes: forward with the online or target parameters, and
//! backward from a gradient of the output (optionally down to the input). Rows are grouped by
//! network and every network's block runs in parallel.

use rayon::prelude::*;

use super::net::{FirstSource, NetBackward, NetForward};
use super::profile::{self, Phase, span};
use super::sparse::MAX_SPARSE_INPUT;
use super::{CpuCritic, grad_units, refresh_transpose, segments, segments_ref, work_units};
use crate::critic::{CriticError, Input, RowPlan, check_len};

impl CpuCritic {
    /// Forward pass with the online parameters; keeps activations for [`CpuCritic::backward_rows`].
    /// Returns `[R, head]` in the caller's row order.
    pub(crate) fn forward_rows(
        &mut self,
        input: Input,
        nets: &[u32],
    ) -> Result<&[f32], CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise forward"));
        }
        let _wall = span(Phase::WallForward);
        check_len("input", nets.len() * self.spec.input, input.len())?;
        let plan = RowPlan::new(nets, self.spec.nets)?;
        let (rows, spec) = (nets.len(), self.spec);
        let a = &mut self.acts;
        a.rows = rows;
        a.plan = plan;
        let (d, h, head) = (spec.input, spec.hidden, spec.head);
        let gather = span(Phase::Gather);
        // The sparse first layer for each network whose u8 rows are at most
        // `sparse_threshold` dense.
        a.sparse_nets.clear();
        a.sparse_nets.resize(spec.nets, false);
        let sparse_input = match input {
            Input::U8(x) if !x.is_empty() && d <= MAX_SPARSE_INPUT => {
                a.row_nonzero.resize(rows, 0);
                a.row_nonzero
                    .par_iter_mut()
                    .zip(x.par_chunks(d))
                    .with_min_len(256)
                    .for_each(|(n, r)| *n = r.iter().filter(|&&v| v != 0).count() as u32);
                let per_row = &a.row_nonzero;
                let mut nonzero = 0usize;
                for (k, w) in a.plan.starts.windows(2).enumerate() {
                    let seg = &a.plan.order[w[0] as usize..w[1] as usize];
                    let nz: usize = seg.iter().map(|&r| per_row[r as usize] as usize).sum();
                    nonzero += nz;
                    a.sparse_nets[k] = !seg.is_empty()
                        && nz as f64 <= self.sparse_threshold as f64 * (seg.len() * d) as f64;
                }
                let any = a.sparse_nets.iter().any(|&s| s);
                profile::count_input(nonzero, x.len(), any);
                any.then_some(x)
            }
            _ => None,
        };
        let all_sparse = sparse_input.is_some() && a.sparse_nets.iter().all(|&s| s);
        if let Some(x) = sparse_input {
            a.csr.fill(x, &a.plan.order, d);
        }
        if !all_sparse {
            a.x0.resize(rows * d, 0.0);
        }
        a.xhat.resize_with(spec.layers, Vec::new);
        a.rstd.resize_with(spec.layers, Vec::new);
        a.act.resize_with(spec.layers, Vec::new);
        for l in 0..spec.layers {
            a.xhat[l].resize(rows * h, 0.0);
            a.rstd[l].resize(rows, 0.0);
            a.act[l].resize(rows * h, 0.0);
        }
        a.out_sorted.resize(rows * head, 0.0);
        a.out.resize(rows * head, 0.0);

        // Dense: gather each network's rows, converting u8 channels to f32 on the way.
        if !all_sparse {
            a.x0[..rows * d]
                .par_chunks_mut(d)
                .zip(a.plan.order.par_iter())
                .with_min_len(64)
                .for_each(|(dst, &row)| {
                    let row = row as usize;
                    match input {
                        Input::U8(x) => {
                            for (o, &v) in dst.iter_mut().zip(&x[row * d..(row + 1) * d]) {
                                *o = v as f32;
                            }
                        }
                        Input::F32(x) => dst.copy_from_slice(&x[row * d..(row + 1) * d]),
                    }
                });
        }

        drop(gather);
        if sparse_input.is_some() && !self.w1t_fresh {
            refresh_transpose(&spec, &self.offsets[0], &self.params, &mut self.w1t);
            self.w1t_fresh = true;
        }
        let (bounds, owner) = work_units(&a.plan.starts, rayon::current_num_threads());
        a.unit_bounds = bounds;
        a.unit_net = owner;
        let starts = a.unit_bounds.clone();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        let first = FirstSource {
            dense: &a.x0,
            sparse: (&a.csr, &a.sparse_nets),
            w1t: &self.w1t,
            d,
            block: self.offsets[0].fan_in * self.offsets[0].fan_out,
        };
        let mut xhat: Vec<Vec<&mut [f32]>> =
            a.xhat.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let mut rstd: Vec<Vec<&mut [f32]>> =
            a.rstd.iter_mut().map(|b| segments(b, &starts, 1)).collect();
        let mut act: Vec<Vec<&mut [f32]>> =
            a.act.iter_mut().map(|b| segments(b, &starts, h)).collect();
        let mut out_sorted = std::mem::take(&mut a.out_sorted);
        let outs = segments(&mut out_sorted, &starts, head);
        // Per network: transpose the per-layer lists so each task owns its slices.
        let mut tasks: Vec<NetForward> = Vec::with_capacity(outs.len());
        for (u, out) in outs.into_iter().enumerate() {
            let k = a.unit_net[u];
            tasks.push(NetForward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                x0: first.rows(starts[u] as usize, starts[u + 1] as usize, k),
                xhat: xhat.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                rstd: rstd.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                act: act.iter_mut().map(|v| std::mem::take(&mut v[u])).collect(),
                out,
            });
        }
        tasks.into_par_iter().for_each(|t| t.run(offsets, spec));
        a.out_sorted = out_sorted;

        a.plan.scatter(&a.out_sorted, head, &mut a.out);
        Ok(&a.out)
    }

    /// Forward with the target parameters (keeps nothing; the online activations survive).
    pub(super) fn forward_target_rows(
        &mut self,
        input: Input,
        nets: &[u32],
    ) -> Result<Vec<f32>, CriticError> {
        if self.gru.is_some() {
            return Err(CriticError::Recurrent("a row-wise target forward"));
        }
        self.swap_target();
        let saved = std::mem::take(&mut self.acts);
        let result = self.forward_rows(input, nets).map(|o| o.to_vec());
        self.acts = saved;
        self.swap_target();
        result
    }

    /// Swaps the online and target parameters (with their transposed first layers).
    fn swap_target(&mut self) {
        std::mem::swap(&mut self.params, &mut self.target);
        std::mem::swap(&mut self.w1t, &mut self.w1t_target);
        std::mem::swap(&mut self.w1t_fresh, &mut self.w1t_target_fresh);
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward; gradients are
    /// overwritten. With `input_grad`, also computes dL/d input (see [`CpuCritic::input_grad`]).
    pub(super) fn backward_rows(
        &mut self,
        d_out: &[f32],
        input_grad: bool,
    ) -> Result<(), CriticError> {
        if let Some(g) = &mut self.gru {
            if input_grad {
                return Err(CriticError::Recurrent("the input gradient"));
            }
            let _wall = span(Phase::WallBackward);
            return g.backward(&self.params, d_out, &mut self.grads);
        }
        let _wall = span(Phase::WallBackward);
        let (spec, a) = (self.spec, &mut self.acts);
        let (rows, d, h, head) = (a.rows, spec.input, spec.hidden, spec.head);
        if a.unit_bounds.is_empty() {
            return Err(CriticError::Shape {
                what: "forward passes before backward",
                expected: 1,
                got: 0,
            });
        }
        check_len("d_output", rows * head, d_out.len())?;
        // Sorted copy of the incoming gradient.
        let mut g_out = vec![0.0f32; rows * head];
        a.plan.gather(d_out, head, &mut g_out);
        // The scratch carries gradients of hidden activations; only the first layer's input
        // gradient (or a network without hidden layers) needs the input's width.
        let width = if input_grad || spec.layers == 0 {
            h.max(d)
        } else {
            h
        };
        let mut scratch_a = vec![0.0f32; rows * width];
        let mut scratch_b = vec![0.0f32; rows * width];
        let mut d_x0 = if input_grad {
            vec![0.0f32; rows * d]
        } else {
            Vec::new()
        };

        let (starts, unit_net) = grad_units(&a.plan.starts);
        let units = unit_net.len();
        let per_net = spec.params_per_net();
        let offsets = &self.offsets;
        // One unit per network: gradients go straight to their place; otherwise per unit, then
        // summed.
        let direct = units == spec.nets;
        self.unit_grads
            .resize(if direct { 0 } else { units * per_net }, 0.0);
        let first = FirstSource {
            dense: &a.x0,
            sparse: (&a.csr, &a.sparse_nets),
            w1t: &self.w1t,
            d,
            block: self.offsets[0].fan_in * self.offsets[0].fan_out,
        };
        let xhat: Vec<Vec<&[f32]>> = a.xhat.iter().map(|b| segments_ref(b, &starts, h)).collect();
        let rstd: Vec<Vec<&[f32]>> = a.rstd.iter().map(|b| segments_ref(b, &starts, 1)).collect();
        let act: Vec<Vec<&[f32]>> = a.act.iter().map(|b| segments_ref(b, &starts, h)).collect();
        let g = segments_ref(&g_out, &starts, head);
        let mut sa = segments(&mut scratch_a, &starts, width);
        let mut sb = segments(&mut scratch_b, &starts, width);
        let mut dx = if input_grad {
            segments(&mut d_x0, &starts, d)
        } else {
            Vec::new()
        };
        let grad_buf = if direct {
            &mut self.grads
        } else {
            &mut self.unit_grads
        };
        let mut grads: Vec<&mut [f32]> = grad_buf.chunks_exact_mut(per_net).collect();
        let mut tasks = Vec::with_capacity(units);
        for u in 0..units {
            let k = unit_net[u];
            tasks.push(NetBackward {
                n: (starts[u + 1] - starts[u]) as usize,
                net: &self.params[k * per_net..(k + 1) * per_net],
                grad: std::mem::take(&mut grads[u]),
                x0: first.rows(starts[u] as usize, starts[u + 1] as usize, k),
                xhat: xhat.iter().map(|v| v[u]).collect(),
                rstd: rstd.iter().map(|v| v[u]).collect(),
                act: act.iter().map(|v| v[u]).collect(),
                g_out: g[u],
                scratch_a: std::mem::take(&mut sa[u]),
                scratch_b: std::mem::take(&mut sb[u]),
                d_x0: dx.get_mut(u).map(std::mem::take),
            });
        }
        tasks.into_par_iter().for_each(|t| t.run(offsets, spec));
        // Each network's gradient is the sum over its units.
        let _sum = span(Phase::SumUnits);
        let (unit_grads, unit_net) = (&self.unit_grads, &unit_net);
        let sum_units = |(k, grad): (usize, &mut [f32])| {
            let mut first = true;
            for (u, _) in unit_net.iter().enumerate().filter(|(_, net)| **net == k) {
                let part = &unit_grads[u * per_net..(u + 1) * per_net];
                if first {
                    grad.copy_from_slice(part);
                    first = false;
                } else {
                    grad.iter_mut().zip(part).for_each(|(g, p)| *g += p);
                }
            }
            if first {
                grad.fill(0.0);
            }
        };
        if !direct {
            self.grads
                .par_chunks_mut(per_net)
                .enumerate()
                .for_each(sum_units);
        }

        if input_grad {
            a.d_input.resize(rows * d, 0.0);
            a.plan.scatter(&d_x0, d, &mut a.d_input);
        }
        Ok(())
    }
}
