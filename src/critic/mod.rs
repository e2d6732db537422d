//! Critic compute: a *stack* of K small MLPs with identical shapes (Linear -> LayerNorm -> ReLU
//! per hidden layer, then a linear head) trained together. All K networks' parameters live in
//! one contiguous f32 buffer, network-major; every input row names the network it belongs to, so
//! one pass (one dispatch per kernel on the GPU) serves every agent, whatever K is.
//!
//! Two backends with the same operations: [`cpu::CpuCritic`] (the reference: rayon over
//! networks, matrix products through faer's `gemm`) and, with the `gpu` feature,
//! `gpu::GpuCritic` (WGSL compute shaders in `shaders/`, tested against the CPU). Both implement
//! [`CriticBackend`]; learners hold a [`Critic`], the backend [`choose_device`] picked.

mod backend;
pub mod cpu;
mod device;
mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
pub(crate) mod gru;
pub mod hl_gauss;
pub mod loss;
pub mod mixer;
mod optim;
pub mod ppo_loss;
pub mod pr2;
pub mod pr2_loss;

pub use backend::{CriticBackend, GradReducer};
pub use device::{
    Chosen, Critic, Device, DeviceParseError, GpuLimits, LOCAL_RANK_VARS, LocalRank, choose_device,
    local_rank,
};
pub use error::CriticError;
pub(crate) use error::check_len;
pub use optim::{AdamConfig, NetOptim, StepStats};

use serde::{Deserialize, Serialize};

/// Which network every member of a stack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// `layers` x (Linear -> LayerNorm -> ReLU), then a linear head.
    #[default]
    Mlp,
    /// Linear -> LayerNorm -> ReLU (`hidden` wide), a GRU cell of `hidden` units, then a
    /// linear head (see `gru.rs`); `layers` must be 1.
    Gru {
        /// The GRU cell's hidden-state width.
        hidden: usize,
    },
}

impl Network {
    /// The hidden-state width a member carries between steps (0 for an MLP).
    pub fn state_width(&self) -> usize {
        match self {
            Network::Mlp => 0,
            Network::Gru { hidden } => *hidden,
        }
    }

    /// True for a recurrent network.
    pub fn is_recurrent(&self) -> bool {
        self.state_width() > 0
    }

    fn is_mlp(&self) -> bool {
        *self == Network::Mlp
    }
}

/// The shape of one network of a stack, and how many networks there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackSpec {
    /// K: networks in the stack.
    pub nets: usize,
    /// Input features per row (observation bytes).
    pub input: usize,
    /// Width of every hidden layer.
    pub hidden: usize,
    /// Hidden layers (Linear -> LayerNorm -> ReLU each); at least 1.
    pub layers: usize,
    /// Output width of the linear head (actions, or groups x classes).
    pub head: usize,
    /// MLP or GRU (left out of the saved form for an MLP, so older checkpoints read as MLPs).
    #[serde(default, skip_serializing_if = "Network::is_mlp")]
    pub network: Network,
}

/// One parameter tensor of a network: where it sits inside the network's parameter block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Name, e.g. `layer0.weight`.
    pub name: String,
    /// Offset in f32s from the start of the network's block.
    pub offset: usize,
    /// Rows (output features) for weights, 1 for vectors.
    pub rows: usize,
    /// Columns (input features) for weights, the length for vectors.
    pub cols: usize,
}

/// Offsets of one hidden layer's tensors inside a network block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerOffsets {
    /// `[out, in]` weight.
    pub weight: usize,
    /// `[out]` bias.
    pub bias: usize,
    /// `[out]` LayerNorm scale (absent for the head).
    pub gamma: usize,
    /// `[out]` LayerNorm shift (absent for the head).
    pub beta: usize,
    /// Input features.
    pub fan_in: usize,
    /// Output features.
    pub fan_out: usize,
}

impl StackSpec {
    /// Checks the shape is usable.
    pub fn validate(&self) -> Result<(), String> {
        if self.nets == 0
            || self.input == 0
            || self.hidden == 0
            || self.layers == 0
            || self.head == 0
        {
            return Err(format!("every dimension must be at least 1: {self:?}"));
        }
        if let Some(gru) = self.gru() {
            if self.layers != 1 {
                return Err(format!(
                    "a GRU network has one embedding layer before its cell, not {}: set layers: 1",
                    self.layers
                ));
            }
            gru.validate().map_err(|e| e.to_string())?;
            return match gru.params_per_net().checked_mul(self.nets) {
                Some(p) if p <= MAX_PARAMS => Ok(()),
                _ => Err(format!(
                    "{self:?} may have more than {MAX_PARAMS} parameters in all"
                )),
            };
        }
        if self.layers > MAX_LAYERS {
            return Err(format!(
                "{} hidden layers; at most {MAX_LAYERS}",
                self.layers
            ));
        }
        // Parameters per network, then in all, without overflow (a generous upper bound: every
        // layer as wide as the widest).
        let widest = self.input.max(self.hidden).max(self.head);
        let per_layer = widest
            .checked_mul(widest)
            .and_then(|w| w.checked_add(3 * widest));
        let total = per_layer
            .and_then(|p| p.checked_mul(self.layers + 1))
            .and_then(|p| p.checked_mul(self.nets))
            .filter(|&p| p <= MAX_PARAMS);
        if total.is_none() {
            return Err(format!(
                "{self:?} may have more than {MAX_PARAMS} parameters in all"
            ));
        }
        Ok(())
    }

    /// A GRU member's shape (the embedding `hidden` wide), or None for an MLP.
    pub(crate) fn gru(&self) -> Option<gru::GruSpec> {
        match self.network {
            Network::Mlp => None,
            Network::Gru { hidden } => Some(gru::GruSpec {
                input: self.input,
                embed: self.hidden,
                hidden,
                head: self.head,
            }),
        }
    }

    /// The hidden-state width each row carries between steps (0 for an MLP).
    pub fn state_width(&self) -> usize {
        self.network.state_width()
    }

    /// Offsets of the hidden layers then the head (whose `gamma`/`beta` are unused); an MLP's
    /// layout (a GRU member's is in `gru.rs`).
    pub fn layer_offsets(&self) -> Vec<LayerOffsets> {
        let mut out = Vec::with_capacity(self.layers + 1);
        let mut offset = 0;
        let mut fan_in = self.input;
        for l in 0..=self.layers {
            let head = l == self.layers;
            let fan_out = if head { self.head } else { self.hidden };
            let weight = offset;
            let bias = weight + fan_out * fan_in;
            let gamma = bias + fan_out;
            let beta = gamma + if head { 0 } else { fan_out };
            offset = beta + if head { 0 } else { fan_out };
            out.push(LayerOffsets {
                weight,
                bias,
                gamma,
                beta,
                fan_in,
                fan_out,
            });
            fan_in = fan_out;
        }
        out
    }

    /// Parameters of one network.
    pub fn params_per_net(&self) -> usize {
        if let Some(g) = self.gru() {
            return g.params_per_net();
        }
        let last = self.layer_offsets()[self.layers];
        last.bias + last.fan_out
    }

    /// Parameters of the whole stack.
    pub fn params(&self) -> usize {
        self.nets * self.params_per_net()
    }

    /// Every tensor of one network, in buffer order.
    pub fn tensors(&self) -> Vec<Tensor> {
        if let Some(g) = self.gru() {
            return g.tensors();
        }
        let mut out = Vec::new();
        for (l, o) in self.layer_offsets().iter().enumerate() {
            let name = if l == self.layers {
                "head".to_string()
            } else {
                format!("layer{l}")
            };
            out.push(Tensor {
                name: format!("{name}.weight"),
                offset: o.weight,
                rows: o.fan_out,
                cols: o.fan_in,
            });
            out.push(Tensor {
                name: format!("{name}.bias"),
                offset: o.bias,
                rows: 1,
                cols: o.fan_out,
            });
            if l < self.layers {
                out.push(Tensor {
                    name: format!("{name}.ln_gamma"),
                    offset: o.gamma,
                    rows: 1,
                    cols: o.fan_out,
                });
                out.push(Tensor {
                    name: format!("{name}.ln_beta"),
                    offset: o.beta,
                    rows: 1,
                    cols: o.fan_out,
                });
            }
        }
        out
    }

    /// Multiply-adds of one forward pass per row.
    pub fn forward_macs_per_row(&self) -> usize {
        if let Some(g) = self.gru() {
            return g.input * g.embed + 3 * g.hidden * (g.embed + g.hidden) + g.hidden * g.head;
        }
        self.layer_offsets()
            .iter()
            .map(|o| o.fan_in * o.fan_out)
            .sum()
    }

    /// Floating-point operations of one full update per row: forward, the weight gradients and
    /// the input gradients of every layer but the first (2 flops per multiply-add).
    pub fn update_flops_per_row(&self) -> usize {
        if let Some(g) = self.gru() {
            // Forward, every weight gradient, and every input gradient but the embedding's
            // (the gates' input and recurrent halves, the head).
            let fwd = self.forward_macs_per_row();
            let d_input = 3 * g.hidden * (g.embed + g.hidden) + g.hidden * g.head;
            return 2 * (2 * fwd + d_input);
        }
        let offsets = self.layer_offsets();
        let fwd: usize = offsets.iter().map(|o| o.fan_in * o.fan_out).sum();
        let d_input: usize = offsets[1..].iter().map(|o| o.fan_in * o.fan_out).sum();
        2 * (2 * fwd + d_input)
    }

    /// The bytes a backend holds for this stack at its peak during an update of `rows` rows
    /// (with the input gradient), by purpose. These are the buffers the backends allocate:
    /// `CpuCritic` grows its row buffers to exactly `rows`; `GpuCritic` rounds its row capacity
    /// up to a power of two (at least 64) and keeps a second set of activations for target
    /// passes.
    pub fn sizing(&self, rows: usize, backend: Backend) -> Sizing {
        self.sizing_for(rows, backend, true)
    }

    /// [`StackSpec::sizing`] for updates with or without the input gradient (training never
    /// asks for it; the CPU backend then skips its input-width buffers).
    pub fn sizing_for(&self, rows: usize, backend: Backend, input_grad: bool) -> Sizing {
        let p = self.params() as u64 * 4;
        if let Some(g) = self.gru() {
            return gru::sizing(&g, self.nets, p, rows, backend);
        }
        let (h, l, a, d) = (
            self.hidden as u64,
            self.layers as u64,
            self.head as u64,
            self.input as u64,
        );
        let w = h.max(d);
        match backend {
            Backend::Cpu => {
                let r = rows as u64;
                Sizing {
                    params: p,
                    grads: p,
                    adam: 2 * p,
                    target: p,
                    // x0; per layer x-hat, 1/std, activation; sorted and caller-order outputs,
                    // d_out, input gradient; forward's linear-output scratch; backward's sorted
                    // d_out, two gradient scratch blocks and the sorted input gradient. Then the
                    // sparse first layer's slots (16-bit index and u8 value per input, a length
                    // per row) and the transposed first-layer weights of every network.
                    activations: if input_grad {
                        r * 4 * (d + l * (2 * h + 1) + 3 * a + d + h + a + 2 * w + d)
                    } else {
                        let w = if l == 0 { w } else { h };
                        r * 4 * (d + l * (2 * h + 1) + 3 * a + h + a + 2 * w)
                    } + r * (3 * d + 4)
                        + self.nets as u64 * d * (if l == 0 { a } else { h }) * 4,
                    // Row order and 2 x (K + 1) boundaries.
                    indices: r * 4 + (self.nets as u64 + 1) * 8,
                }
            }
            Backend::Gpu => {
                let c = rows.next_power_of_two().max(64) as u64;
                let tiles = (c / 16 + self.nets as u64 + 1) * 16;
                Sizing {
                    params: p,
                    grads: p,
                    adam: 2 * p,
                    target: p,
                    // u8 and f32 input; online and target: per layer z, x-hat, activation,
                    // 1/std, and the output; d_out, g, dz, input gradient; loss rows, targets,
                    // mask, actions/labels.
                    activations: c * d
                        + c * 4 * d
                        + 2 * c * 4 * (l * (3 * h + 1) + a)
                        + c * 4 * (a + w + h + d)
                        + c * 4 * (3 + a),
                    // order, row network, tiles, starts, gradient norms, per-network
                    // optimiser scalars (step size, bias correction, clip, step mask, Polyak
                    // factor).
                    indices: c * 8
                        + tiles
                        + (self.nets as u64 + 1) * 4
                        + (self.nets as u64 * 4).max(16)
                        + self.nets as u64 * 32,
                }
            }
        }
    }
}

/// Which backend a sizing is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backend {
    /// [`cpu::CpuCritic`].
    Cpu,
    /// `gpu::GpuCritic`.
    Gpu,
}

/// Bytes a stack needs, by purpose (the memory preflight adds these up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizing {
    /// Parameters.
    pub params: u64,
    /// Gradients.
    pub grads: u64,
    /// Adam's two moment buffers.
    pub adam: u64,
    /// A target copy of the parameters (IQL).
    pub target: u64,
    /// Activations kept for backward and scratch, for the given rows.
    pub activations: u64,
    /// Row bookkeeping.
    pub indices: u64,
}

impl Sizing {
    /// Everything together.
    pub fn total(&self) -> u64 {
        self.params + self.grads + self.adam + self.target + self.activations + self.indices
    }
}

/// Rows of input: u8 observation channels (converted inside the first layer) or f32 features.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// `[R, D]` bytes.
    U8(&'a [u8]),
    /// `[R, D]` floats.
    F32(&'a [f32]),
}

impl Input<'_> {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Input::U8(x) => x.len(),
            Input::F32(x) => x.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// B sequences of T steps for a recurrent pass ([`CriticBackend::forward_seq`]). T is
/// `reset.len() / B`.
#[derive(Debug, Clone, Copy)]
pub struct Sequences<'a> {
    /// `[T, B, input]` time-major: row `t * B + b` is sequence b at step t.
    pub input: Input<'a>,
    /// `[B]` each sequence's network.
    pub nets: &'a [u32],
    /// `[B, g]` the hidden state entering step 0 (empty for an MLP stack).
    pub h0: &'a [f32],
    /// `[T, B]` 1 where the hidden state entering that step is zero (its episode starts there).
    pub reset: &'a [u8],
}

impl Sequences<'_> {
    /// B.
    pub fn batch(&self) -> usize {
        self.nets.len()
    }

    /// T (0 for an empty batch).
    pub fn steps(&self) -> usize {
        self.reset.len().checked_div(self.nets.len()).unwrap_or(0)
    }

    /// Checks the buffers against `spec` and returns (T, B).
    pub fn shape(&self, spec: &StackSpec) -> Result<(usize, usize), CriticError> {
        let (t, b) = (self.steps(), self.batch());
        check_len("reset ([T, B])", t * b, self.reset.len())?;
        check_len("h0 ([B, state])", b * spec.state_width(), self.h0.len())?;
        check_len(
            "input ([T, B, input])",
            t * b * spec.input,
            self.input.len(),
        )?;
        Ok((t, b))
    }

    /// The network of every row `t * B + b` for an MLP stack (an error for a recurrent one).
    pub(crate) fn mlp_rows(&self, spec: &StackSpec) -> Result<Vec<u32>, CriticError> {
        if spec.network.is_recurrent() {
            return Err(CriticError::Recurrent("this backend's sequence pass"));
        }
        let (t, _) = self.shape(spec)?;
        Ok(self.nets.repeat(t))
    }
}

/// Row order grouped by network: `order[i]` is the caller's row at sorted position i, and the
/// rows of network k are `order[starts[k]..starts[k + 1]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowPlan {
    /// Caller row per sorted position.
    pub order: Vec<u32>,
    /// K + 1 segment boundaries.
    pub starts: Vec<u32>,
}

impl RowPlan {
    /// A stable counting sort of rows by network; rejects network indices out of range.
    pub fn new(nets: &[u32], k: usize) -> Result<RowPlan, CriticError> {
        let mut counts = vec![0u32; k + 1];
        for (row, &n) in nets.iter().enumerate() {
            if n as usize >= k {
                return Err(CriticError::NetOutOfRange {
                    row,
                    net: n,
                    nets: k,
                });
            }
            counts[n as usize + 1] += 1;
        }
        for i in 0..k {
            counts[i + 1] += counts[i];
        }
        let starts = counts.clone();
        let mut next = counts;
        let mut order = vec![0u32; nets.len()];
        for (row, &n) in nets.iter().enumerate() {
            order[next[n as usize] as usize] = row as u32;
            next[n as usize] += 1;
        }
        Ok(RowPlan { order, starts })
    }

    /// Copies rows of `width` values from caller order into sorted order (`dst` row i is `src`
    /// row `order[i]`).
    pub(crate) fn gather<T: Copy>(&self, src: &[T], width: usize, dst: &mut [T]) {
        for (pos, &row) in self.order.iter().enumerate() {
            let row = row as usize;
            dst[pos * width..(pos + 1) * width]
                .copy_from_slice(&src[row * width..(row + 1) * width]);
        }
    }

    /// Copies rows of `width` values from sorted order back into caller order (`dst` row
    /// `order[i]` is `src` row i).
    pub(crate) fn scatter<T: Copy>(&self, src: &[T], width: usize, dst: &mut [T]) {
        for (pos, &row) in self.order.iter().enumerate() {
            let row = row as usize;
            dst[row * width..(row + 1) * width]
                .copy_from_slice(&src[pos * width..(pos + 1) * width]);
        }
    }
}

/// Initial parameters, PyTorch's defaults: weights and biases uniform in
/// `[-1/sqrt(fan_in), 1/sqrt(fan_in)]`, LayerNorm scale 1 and shift 0; deterministic in `seed`.
pub fn init_params(spec: &StackSpec, seed: u64) -> Vec<f32> {
    if let Some(g) = spec.gru() {
        return gru::init_params(&g, spec.nets, seed);
    }
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let per_net = spec.params_per_net();
    let mut params = vec![0.0f32; spec.params()];
    for net in params.chunks_exact_mut(per_net) {
        for (l, o) in spec.layer_offsets().iter().enumerate() {
            let bound = 1.0 / (o.fan_in as f32).sqrt();
            fill_uniform(&mut rng, &mut net[o.weight..o.bias + o.fan_out], bound);
            if l < spec.layers {
                net[o.gamma..o.gamma + o.fan_out].fill(1.0);
                net[o.beta..o.beta + o.fan_out].fill(0.0);
            }
        }
    }
    params
}

/// Fills `out` with draws uniform in `[-bound, bound]` (24-bit resolution), the draws every
/// initialisation of the critics makes.
pub(crate) fn fill_uniform(rng: &mut impl rand_core::Rng, out: &mut [f32], bound: f32) {
    for w in out {
        let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
        *w = (2.0 * u - 1.0) * bound;
    }
}

/// LayerNorm's epsilon.
pub const LN_EPS: f32 = 1e-5;

/// Most hidden layers a stack may have (the GPU backend's largest operation then stays well
/// inside its per-operation dispatch budget).
pub const MAX_LAYERS: usize = 32;

/// Most parameters a stack may have in all (an overflow guard; the memory preflight is the
/// real limit).
const MAX_PARAMS: usize = 1 << 48;
