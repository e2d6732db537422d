//! The CPU backend, and the reference the GPU is tested against: rows grouped by network, every
//! network's block processed in parallel with rayon, matrix products through faer's `gemm`
//! (`crate::simd::gemm`), or for sparse u8 batches a sparse first layer (`sparse`). Activations
//! are kept in network order between forward and backward; buffers grow to the largest batch
//! seen and are reused. [`profile`] times the passes on request.

pub(crate) mod gru;
mod gru_stack;
mod net;
mod optim;
mod pass;
pub mod profile;
mod sparse;

use rayon::prelude::*;

use self::profile::{Phase, span};
pub use self::sparse::SPARSE_DENSITY;
use self::sparse::{SparseRows, transpose};
use super::loss::{Loss, loss_and_grad};
use super::{
    AdamConfig, CriticBackend, CriticError, GradReducer, Input, LayerOffsets, NetOptim, RowPlan,
    Sequences, StackSpec, StepStats, check_len, init_params,
};
use gru_stack::GruStack;

/// A stack of MLPs or GRU networks ([`StackSpec::network`]) on the CPU.
pub struct CpuCritic {
    spec: StackSpec,
    offsets: Vec<LayerOffsets>,
    params: Vec<f32>,
    grads: Vec<f32>,
    adam_m: Vec<f32>,
    adam_v: Vec<f32>,
    target: Vec<f32>,
    /// Each network's Adam step count (its own bias correction).
    steps: Vec<u64>,
    acts: Activations,
    /// Per work unit gradients, summed per network after backward.
    unit_grads: Vec<f32>,
    /// The loss of the last [`CpuCritic::loss_backward`].
    last_loss: f32,
    /// What the last [`CpuCritic::step`] saw.
    last_step: StepStats,
    /// Density at or below which u8 batches take the sparse first layer.
    sparse_threshold: f32,
    /// Per network, the `[fan_in, fan_out]` transpose of the first layer's online weights
    /// (valid when `w1t_fresh`), and of the target weights.
    w1t: Vec<f32>,
    w1t_target: Vec<f32>,
    w1t_fresh: bool,
    w1t_target_fresh: bool,
    /// The GRU passes, for a recurrent stack.
    gru: Option<GruStack>,
    /// The data-parallel gradient hook ([`CriticBackend::grad_reducer`]).
    reducer: Option<GradReducer>,
}

/// What forward keeps for backward, in network (sorted) row order.
#[derive(Default)]
struct Activations {
    rows: usize,
    plan: RowPlan,
    /// Work-unit boundaries in sorted rows (each unit inside one network).
    unit_bounds: Vec<u32>,
    /// Network of each work unit.
    unit_net: Vec<usize>,
    /// `[R, D]` input converted to f32 (dense batches).
    x0: Vec<f32>,
    /// Per network: whether the last forward took the sparse first layer for its rows (their
    /// input is then `csr`). Decided from each network's own rows, so a network's result does
    /// not depend on the other networks' rows in the batch (a replica stacked with others
    /// computes what it computes alone).
    sparse_nets: Vec<bool>,
    /// Non-zero bytes per input row of the last u8 forward (reused, not reallocated).
    row_nonzero: Vec<u32>,
    /// The non-zero u8 inputs (sparse batches).
    csr: SparseRows,
    /// Per hidden layer: `[R, H]` linear output normalised (x-hat).
    xhat: Vec<Vec<f32>>,
    /// Per hidden layer: `[R]` reciprocal standard deviation.
    rstd: Vec<Vec<f32>>,
    /// Per hidden layer: `[R, H]` post-ReLU output.
    act: Vec<Vec<f32>>,
    /// `[R, A]` head output, sorted order.
    out_sorted: Vec<f32>,
    /// `[R, A]` head output, caller order.
    out: Vec<f32>,
    /// `[R, A]` loss gradient, caller order.
    d_out: Vec<f32>,
    /// `[R, D]` input gradient, caller order (when asked).
    d_input: Vec<f32>,
}

/// Work units: contiguous sorted-row ranges inside one network each. A network is split into
/// several units when there are fewer networks than threads (a shared network still uses every
/// core); its weight gradients are then summed over its units.
fn work_units(starts: &[u32], threads: usize) -> (Vec<u32>, Vec<usize>) {
    let nets = starts.len() - 1;
    let per_net = if nets >= threads {
        1
    } else {
        threads.div_ceil(nets) * 2
    };
    let mut bounds = vec![0u32];
    let mut owner = Vec::new();
    for k in 0..nets {
        let (s, e) = (starts[k], starts[k + 1]);
        let chunks = per_net.min(((e - s) as usize / 64).max(1)) as u32;
        for c in 1..=chunks {
            bounds.push(s + (e - s) * c / chunks);
            owner.push(k);
        }
    }
    (bounds, owner)
}

/// Rows per work unit of backward, whatever the thread count, so that the order in which a
/// shared network's weight gradients are summed (and so the result) does not depend on it.
const GRAD_UNIT_ROWS: usize = 1024;

/// Backward's work units: each network cut into `ceil(rows / GRAD_UNIT_ROWS)` even parts.
fn grad_units(starts: &[u32]) -> (Vec<u32>, Vec<usize>) {
    let mut bounds = vec![0u32];
    let mut owner = Vec::new();
    for k in 0..starts.len() - 1 {
        let (s, e) = (starts[k], starts[k + 1]);
        let chunks = ((e - s) as usize).div_ceil(GRAD_UNIT_ROWS).max(1) as u32;
        for c in 1..=chunks {
            bounds.push(s + (e - s) * c / chunks);
            owner.push(k);
        }
    }
    (bounds, owner)
}

/// Refreshes `w1t`, every network's transposed first-layer weights.
fn refresh_transpose(spec: &StackSpec, first: &LayerOffsets, params: &[f32], w1t: &mut Vec<f32>) {
    let _t = span(Phase::Transpose);
    let (fi, fo, per_net) = (first.fan_in, first.fan_out, spec.params_per_net());
    w1t.resize(spec.nets * fi * fo, 0.0);
    w1t.par_chunks_mut(fi * fo)
        .zip(params.par_chunks(per_net))
        .for_each(|(t, net)| transpose(fo, fi, &net[first.weight..], t));
}

/// Cuts `buf` into one `[n_k * width]` slice per network segment.
fn segments<'a, T>(mut buf: &'a mut [T], starts: &[u32], width: usize) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(starts.len() - 1);
    for k in 0..starts.len() - 1 {
        let n = (starts[k + 1] - starts[k]) as usize * width;
        let (head, tail) = buf.split_at_mut(n);
        out.push(head);
        buf = tail;
    }
    out
}

fn segments_ref<'a, T>(buf: &'a [T], starts: &[u32], width: usize) -> Vec<&'a [T]> {
    (0..starts.len() - 1)
        .map(|k| &buf[starts[k] as usize * width..starts[k + 1] as usize * width])
        .collect()
}

impl CpuCritic {
    /// A stack with PyTorch-style initial parameters from `seed`.
    pub fn new(spec: StackSpec, seed: u64) -> Result<CpuCritic, CriticError> {
        spec.validate().map_err(CriticError::Spec)?;
        if profile::from_env() {
            profile::enable(true);
        }
        let params = init_params(&spec, seed);
        let n = params.len();
        Ok(CpuCritic {
            offsets: spec.layer_offsets(),
            spec,
            target: params.clone(),
            params,
            grads: vec![0.0; n],
            adam_m: vec![0.0; n],
            adam_v: vec![0.0; n],
            steps: vec![0; spec.nets],
            acts: Activations::default(),
            unit_grads: Vec::new(),
            last_loss: 0.0,
            last_step: StepStats {
                grad_norms: Vec::new(),
            },
            sparse_threshold: SPARSE_DENSITY,
            w1t: Vec::new(),
            w1t_target: Vec::new(),
            w1t_fresh: false,
            w1t_target_fresh: false,
            gru: spec.gru().map(|g| GruStack::new(g, spec.nets)),
            reducer: None,
        })
    }

    /// Sets the density (fraction of non-zero u8 inputs in a batch) at or below which forward
    /// and backward use the sparse first layer; 0 keeps every batch with a non-zero byte dense,
    /// a negative value every batch. Both paths give the same results up to float rounding.
    pub fn set_sparse_threshold(&mut self, density: f32) {
        self.sparse_threshold = density;
    }

    /// The density threshold of the sparse first layer (see [`CpuCritic::set_sparse_threshold`]).
    pub fn sparse_threshold(&self) -> f32 {
        self.sparse_threshold
    }

    /// Backward from dL/d output (`[R, head]`, caller order) of the last forward, computing
    /// dL/d input too (read it with [`CpuCritic::input_grad`]); gradients are overwritten.
    pub fn backward_with_input(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.backward_rows(d_out, true)
    }

    /// dL/d input of the last [`CpuCritic::backward_with_input`] (`[R, D]`, caller order).
    pub fn input_grad(&self) -> &[f32] {
        &self.acts.d_input
    }
}

/// With `GRIDARENA_CPU_PROFILE` set, a critic prints the time breakdown so far when dropped.
impl Drop for CpuCritic {
    fn drop(&mut self) {
        if profile::enabled() && profile::from_env() {
            let mut p = profile::take();
            p.updates = self.steps.iter().copied().max().unwrap_or(0).max(1);
            eprintln!("{p}");
        }
    }
}
/// The CPU's operations as a [`CriticBackend`]: results are copied out of the backend's buffers
/// (the one copy per read the learners have always made).
impl CriticBackend for CpuCritic {
    fn spec(&self) -> &StackSpec {
        &self.spec
    }

    fn forward(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.forward_rows(input, nets).map(<[f32]>::to_vec)
    }

    fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError> {
        self.forward_target_rows(input, nets)
    }

    fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        seq.shape(&self.spec)?;
        match &mut self.gru {
            Some(g) => {
                let _wall = span(Phase::WallForward);
                g.forward(&self.params, &seq).map(<[f32]>::to_vec)
            }
            None => {
                let rows = seq.mlp_rows(&self.spec)?;
                self.forward_rows(seq.input, &rows).map(<[f32]>::to_vec)
            }
        }
    }

    fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        seq.shape(&self.spec)?;
        match &mut self.gru {
            Some(g) => g.forward_target(&self.target, &seq),
            None => {
                let rows = seq.mlp_rows(&self.spec)?;
                self.forward_target_rows(seq.input, &rows)
            }
        }
    }

    fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        match &mut self.gru {
            Some(g) => g.act(&self.params, input, nets, hidden),
            None => {
                check_len("hidden state of an MLP", 0, hidden.len())?;
                self.forward_rows(input, nets).map(<[f32]>::to_vec)
            }
        }
    }

    fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError> {
        if let Some(g) = &mut self.gru {
            let head = self.spec.head;
            let out = std::mem::take(&mut g.out);
            let rows = out.len() / head;
            let checked = loss.check(rows, head);
            let mut d_out = std::mem::take(&mut self.acts.d_out);
            d_out.resize(rows * head, 0.0);
            let value = checked.map(|()| loss_and_grad(loss, &out, head, &mut d_out));
            g.out = out;
            let result = value.and_then(|v| {
                self.backward_rows(&d_out, false)?;
                Ok(v)
            });
            self.acts.d_out = d_out;
            let value = result?;
            self.last_loss = value;
            return Ok(());
        }
        let (rows, head) = (self.acts.rows, self.spec.head);
        loss.check(rows, head)?;
        let mut d_out = std::mem::take(&mut self.acts.d_out);
        d_out.resize(rows * head, 0.0);
        let value = {
            let _t = span(Phase::Loss);
            loss_and_grad(loss, &self.acts.out, head, &mut d_out)
        };
        let result = self.backward_rows(&d_out, false);
        self.acts.d_out = d_out;
        result?;
        self.last_loss = value;
        Ok(())
    }

    fn backward(&mut self, d_out: &[f32]) -> Result<(), CriticError> {
        self.backward_rows(d_out, false)
    }

    fn last_loss(&mut self) -> Result<f32, CriticError> {
        Ok(self.last_loss)
    }

    fn apply_step(
        &mut self,
        cfg: &AdamConfig,
        nets: &[Option<NetOptim>],
    ) -> Result<(), CriticError> {
        check_len("per-network optimiser scalars", self.spec.nets, nets.len())?;
        self.step_each(cfg, |k| nets[k]);
        Ok(())
    }

    fn average_targets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        check_len("per-network Polyak factors", self.spec.nets, taus.len())?;
        self.average(|k| taus[k]);
        Ok(())
    }

    fn target_params(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(self.target.clone())
    }

    fn step_stats(&mut self) -> Result<StepStats, CriticError> {
        Ok(self.last_step.clone())
    }

    fn params(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(self.params.clone())
    }

    fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError> {
        check_len("parameters", self.params.len(), params.len())?;
        self.params.copy_from_slice(params);
        self.w1t_fresh = false;
        Ok(())
    }

    fn grads(&mut self) -> Result<Vec<f32>, CriticError> {
        Ok(self.grads.clone())
    }

    fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError> {
        check_len("gradients", self.grads.len(), grads.len())?;
        self.grads.copy_from_slice(grads);
        Ok(())
    }

    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError> {
        let steps = self.steps.iter().copied().max().unwrap_or(0);
        Ok((self.adam_m.clone(), self.adam_v.clone(), steps))
    }

    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError> {
        if m.len() != self.params.len() || v.len() != self.params.len() {
            return Err(CriticError::Shape {
                what: "adam state",
                expected: self.params.len(),
                got: m.len().min(v.len()),
            });
        }
        self.adam_m.copy_from_slice(m);
        self.adam_v.copy_from_slice(v);
        self.steps.fill(steps);
        Ok(())
    }

    fn net_steps(&self) -> &[u64] {
        &self.steps
    }

    fn net_steps_mut(&mut self) -> &mut [u64] {
        &mut self.steps
    }

    fn grad_reducer(&mut self) -> &mut Option<GradReducer> {
        &mut self.reducer
    }
}
