//! The GRU critic network's shape and parameter layout: one network is
//!
//! ```text
//! x_t [d] -> Linear(d -> e) -> LayerNorm(e) -> ReLU -> u_t [e]
//!         -> GRU cell (u_t, h_{t-1}) -> h_t [g] -> Linear(g -> A) -> q_t [A]
//! ```
//!
//! with the cell in PyTorch's convention (`torch.nn.GRU`; gate rows ordered r, z, n):
//!
//! ```text
//! r  = sigmoid(W_ir u + b_ir + W_hr h + b_hr)
//! z  = sigmoid(W_iz u + b_iz + W_hz h + b_hz)
//! n  = tanh(W_in u + b_in + r * (W_hn h + b_hn))
//! h' = (1 - z) * n + z * h
//! ```
//!
//! Where a sequence's episode starts at step t (its `reset` flag), the hidden state entering
//! step t is zero. The embedding's LayerNorm is the MLP's (epsilon [`super::LN_EPS`]). The math on the CPU is `cpu::gru`; docs/algorithms.md, "GRU critic", has the
//! equations of backpropagation through time.

use super::{Backend, CriticError, LayerOffsets, Sizing, Tensor, fill_uniform};

/// The shape of one GRU network (a stack of them shares it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GruSpec {
    /// Input features per step (observation bytes), d.
    pub(crate) input: usize,
    /// Width of the embedding (Linear -> LayerNorm -> ReLU) feeding the cell, e.
    pub(crate) embed: usize,
    /// Hidden-state width of the GRU cell, g.
    pub(crate) hidden: usize,
    /// Output width of the linear head (actions), A.
    pub(crate) head: usize,
}

/// Where each linear part of a GRU network sits in its parameter block. The cell's three gates
/// are one linear layer on each side (`[3g, in]` weights, rows r then z then n), so each side
/// is one matrix product; the embedding's LayerNorm tensors are its `gamma`/`beta` (unused by
/// the other three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GruOffsets {
    /// `Linear(d -> e)` and its LayerNorm.
    pub(crate) embed: LayerOffsets,
    /// The cell's input side: `W_ih` `[3g, e]`, `b_ih` `[3g]`.
    pub(crate) input_gates: LayerOffsets,
    /// The cell's recurrent side: `W_hh` `[3g, g]`, `b_hh` `[3g]`.
    pub(crate) hidden_gates: LayerOffsets,
    /// `Linear(g -> A)`.
    pub(crate) head: LayerOffsets,
}

/// Most parameters one GRU network may have (an overflow guard; the memory preflight is the
/// real limit).
const MAX_PARAMS_PER_NET: usize = 1 << 40;

impl GruSpec {
    /// Checks the shape is usable: every width at least 1, the parameter count bounded.
    pub(crate) fn validate(&self) -> Result<(), CriticError> {
        if self.input == 0 || self.embed == 0 || self.hidden == 0 || self.head == 0 {
            return Err(CriticError::Spec(format!(
                "every GRU dimension must be at least 1: {self:?}"
            )));
        }
        // Generous bound without overflow: every matrix as wide as the widest side, four of
        // them (the gate sides count three times).
        let widest = (self.input.max(self.embed))
            .max(self.hidden.saturating_mul(3))
            .max(self.head);
        let bounded = widest
            .checked_mul(widest)
            .and_then(|w| w.checked_add(3 * widest))
            .and_then(|w| w.checked_mul(4))
            .is_some_and(|p| p <= MAX_PARAMS_PER_NET);
        if !bounded {
            return Err(CriticError::Spec(format!(
                "{self:?} may have more than {MAX_PARAMS_PER_NET} parameters per network"
            )));
        }
        Ok(())
    }

    /// The offsets of the four linear parts, in buffer order: embedding (weight, bias, LayerNorm
    /// scale, shift), input gates, recurrent gates, head.
    pub(crate) fn offsets(&self) -> GruOffsets {
        let (d, e, g, a) = (self.input, self.embed, self.hidden, self.head);
        let embed = LayerOffsets {
            weight: 0,
            bias: e * d,
            gamma: e * d + e,
            beta: e * d + 2 * e,
            fan_in: d,
            fan_out: e,
        };
        let plain = |start: usize, fan_in: usize, fan_out: usize| {
            let bias = start + fan_out * fan_in;
            LayerOffsets {
                weight: start,
                bias,
                gamma: bias + fan_out,
                beta: bias + fan_out,
                fan_in,
                fan_out,
            }
        };
        let input_gates = plain(embed.beta + e, e, 3 * g);
        let hidden_gates = plain(input_gates.gamma, g, 3 * g);
        let head = plain(hidden_gates.gamma, g, a);
        GruOffsets {
            embed,
            input_gates,
            hidden_gates,
            head,
        }
    }

    /// Parameters of one network.
    pub(crate) fn params_per_net(&self) -> usize {
        self.offsets().head.gamma
    }

    /// Every tensor of one network, in buffer order (names follow PyTorch's `nn.GRU`).
    pub(crate) fn tensors(&self) -> Vec<Tensor> {
        let o = self.offsets();
        let t = |name: &str, offset: usize, rows: usize, cols: usize| Tensor {
            name: name.to_string(),
            offset,
            rows,
            cols,
        };
        let (e, g3) = (self.embed, 3 * self.hidden);
        vec![
            t("embed.weight", o.embed.weight, e, self.input),
            t("embed.bias", o.embed.bias, 1, e),
            t("embed.ln_gamma", o.embed.gamma, 1, e),
            t("embed.ln_beta", o.embed.beta, 1, e),
            t("gru.weight_ih", o.input_gates.weight, g3, e),
            t("gru.bias_ih", o.input_gates.bias, 1, g3),
            t("gru.weight_hh", o.hidden_gates.weight, g3, self.hidden),
            t("gru.bias_hh", o.hidden_gates.bias, 1, g3),
            t("head.weight", o.head.weight, self.head, self.hidden),
            t("head.bias", o.head.bias, 1, self.head),
        ]
    }
}

/// Initial parameters of `nets` GRU networks, network-major, PyTorch's defaults as for the MLP
/// stack ([`super::init_params`], the same stream of draws): linear layers uniform in
/// `[-1/sqrt(fan_in), 1/sqrt(fan_in)]`, LayerNorm scale 1 and shift 0, and every tensor of the
/// cell uniform in `[-1/sqrt(g), 1/sqrt(g)]` as `nn.GRU` does; deterministic in `seed`.
pub(crate) fn init_params(spec: &GruSpec, nets: usize, seed: u64) -> Vec<f32> {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let o = spec.offsets();
    let per_net = spec.params_per_net();
    let mut params = vec![0.0f32; nets * per_net];
    let cell_bound = 1.0 / (spec.hidden as f32).sqrt();
    for net in params.chunks_exact_mut(per_net) {
        let e = &o.embed;
        fill_uniform(
            &mut rng,
            &mut net[e.weight..e.bias + e.fan_out],
            1.0 / (e.fan_in as f32).sqrt(),
        );
        net[e.gamma..e.gamma + e.fan_out].fill(1.0);
        net[e.beta..e.beta + e.fan_out].fill(0.0);
        for side in [&o.input_gates, &o.hidden_gates] {
            fill_uniform(&mut rng, &mut net[side.weight..side.gamma], cell_bound);
        }
        let h = &o.head;
        fill_uniform(
            &mut rng,
            &mut net[h.weight..h.gamma],
            1.0 / (h.fan_in as f32).sqrt(),
        );
    }
    params
}

/// The bytes a CPU GRU cache holds once sized for T steps of B sequences (`cpu::gru`'s
/// `GruCache`, whose test checks it): per row the input, 4 embedding-wide and 12 + 3
/// hidden-wide f32 buffers, 1/std and the reset byte; per sequence 3 hidden states.
pub(crate) fn cpu_cache_bytes(spec: &GruSpec, steps: usize, batch: usize) -> u64 {
    let (d, e, g) = (spec.input as u64, spec.embed as u64, spec.hidden as u64);
    let rows = (steps * batch) as u64;
    rows * (4 * (d + 4 * e + 15 * g + 1) + 1) + batch as u64 * 4 * 3 * g
}

/// The bytes a stack of `nets` GRU networks holds for an update of `rows` rows (T x B; the
/// memory preflight), `p` being the parameters' bytes.
///
/// The CPU keeps a cache per work unit for training, one for target passes and one for acting
/// (see `cpu::gru` for a cache's bytes, here counted with every row its own sequence, the most
/// per-sequence state), and the input, outputs and output gradient in the caller's order.
///
/// The GPU (`gpu::gru`) holds exactly this, all sized by the row capacity c (`rows` rounded up
/// to a power of two, at least 64): two passes (training, and target passes and acting), each
/// the u8 and f32 input, 1/std, the embedding's z, x-hat and u, the gates' input side, the
/// gates with the recurrent side of n, h_in, h_out and the output, plus the row order, row
/// network, sequence places (4 words), reset flags, row tiles and network boundaries; for
/// backward, dL/d output, d h, both gate sides' gradients, d u, d z, and the loss's actions,
/// targets, mask and row losses; the gradient norms and per-network optimiser scalars. The
/// uniform arena and the readback staging buffer are not counted (as for the MLP stack).
pub(crate) fn sizing(spec: &GruSpec, nets: usize, p: u64, rows: usize, backend: Backend) -> Sizing {
    let (d, e, a, g) = (
        spec.input as u64,
        spec.embed as u64,
        spec.head as u64,
        spec.hidden as u64,
    );
    let k = nets as u64;
    let r = rows as u64;
    let (activations, indices) = match backend {
        Backend::Cpu => {
            let cache = cpu_cache_bytes(spec, 1, rows);
            let caller = r * (4 * d + 3 * 4 * a + 4 * g + 1);
            (2 * cache + caller, r * 4 + (k + 1) * 8)
        }
        Backend::Gpu => {
            // A storage buffer is at least 16 bytes.
            let c = rows.next_power_of_two().max(64) as u64;
            let pass = c * d + 4 * c * (d + 1 + 3 * e + 10 * g + a);
            let grads = 4 * c * (2 * a + 7 * g + 2 * e + 3);
            let pass_indices = 4 * c * 7 + (c / 16 + k + 1) * 16 + ((k + 1) * 4).max(16);
            (
                2 * pass + grads,
                2 * pass_indices + (k * 4).max(16) + k * 32,
            )
        }
    };
    Sizing {
        params: p,
        grads: p,
        adam: 2 * p,
        target: p,
        activations,
        indices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_tile_the_block_in_order() {
        let spec = GruSpec {
            input: 5,
            embed: 6,
            hidden: 4,
            head: 3,
        };
        let mut next = 0;
        for t in spec.tensors() {
            assert_eq!(t.offset, next, "{}", t.name);
            next += t.rows * t.cols;
        }
        assert_eq!(next, spec.params_per_net());
        assert_eq!(
            next,
            5 * 6 + 3 * 6 + (12 * 6 + 12) + (12 * 4 + 12) + (3 * 4 + 3)
        );
    }

    #[test]
    fn init_is_seeded_bounded_and_layer_norm_neutral() {
        let spec = GruSpec {
            input: 5,
            embed: 6,
            hidden: 4,
            head: 3,
        };
        let a = init_params(&spec, 2, 7);
        assert_eq!(a, init_params(&spec, 2, 7));
        assert_ne!(a, init_params(&spec, 2, 8));
        let per = spec.params_per_net();
        assert_ne!(a[..per], a[per..], "networks draw different parameters");
        let o = spec.offsets();
        for net in a.chunks_exact(per) {
            assert!(net[o.embed.gamma..o.embed.beta].iter().all(|&v| v == 1.0));
            assert!(
                net[o.embed.beta..o.input_gates.weight]
                    .iter()
                    .all(|&v| v == 0.0)
            );
            assert!(
                net[o.input_gates.weight..o.head.weight]
                    .iter()
                    .all(|v| v.abs() <= 0.5)
            );
        }
    }

    #[test]
    fn zero_widths_are_refused() {
        let spec = GruSpec {
            input: 5,
            embed: 6,
            hidden: 0,
            head: 3,
        };
        assert!(matches!(spec.validate(), Err(CriticError::Spec(_))));
        let huge = GruSpec {
            hidden: usize::MAX / 2,
            ..spec
        };
        assert!(huge.validate().is_err());
    }
}
