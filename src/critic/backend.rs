//! The seam between learners and compute: [`CriticBackend`], the operations every backend
//! offers with one signature. Learners hold a [`super::Critic`], the backend chosen for a run.
//!
//! Values that live on a device (outputs, loss, parameters, gradient norms) come back as owned
//! vectors, read when asked: a backend never waits for its device unless the caller reads.
//! Adding a backend = one implementation of the trait and one arm in [`super::Critic::new`].

use super::loss::Loss;
use super::{AdamConfig, CriticError, Input, NetOptim, Sequences, StackSpec, StepStats, check_len};

/// A stack of MLPs that learners train: forward passes with online or target parameters,
/// backward, the optimiser step, and the state a checkpoint holds. CPU and GPU give the same
/// results within float rounding (tests/critic_gpu.rs checks it).
pub trait CriticBackend: Send {
    /// The shape of the stack.
    fn spec(&self) -> &StackSpec;

    /// Forward pass with the online parameters, keeping activations for backward; returns
    /// `[R, head]` in the caller's row order (`nets[r]` is row r's network).
    fn forward(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError>;

    /// Forward over sequences with the online parameters (see [`Sequences`]), keeping what
    /// backward needs; returns `[T, B, head]`, row `t * B + b` being sequence b at step t.
    /// [`CriticBackend::backward`] and [`CriticBackend::loss_backward`] then take that row
    /// order and run backpropagation through time. On an MLP stack every step is an
    /// independent row: the same as [`CriticBackend::forward`] over the T x B rows.
    fn forward_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        let rows = seq.mlp_rows(self.spec())?;
        self.forward(seq.input, &rows)
    }

    /// [`CriticBackend::forward_seq`] with the target parameters (the online activations
    /// survive, as with [`CriticBackend::forward_target`]).
    fn forward_target_seq(&mut self, seq: Sequences) -> Result<Vec<f32>, CriticError> {
        let rows = seq.mlp_rows(self.spec())?;
        self.forward_target(seq.input, &rows)
    }

    /// One acting step of B rows with the online parameters: `hidden` `[B, g]` is read as the
    /// state entering the step and replaced by the state leaving it (empty for an MLP); returns
    /// `[B, head]`. A recurrent stack leaves the training activations alone (an MLP's acting is
    /// its forward). The same arithmetic as
    /// [`CriticBackend::forward_seq`] with T = 1, so acting sees what training recomputes.
    fn act(
        &mut self,
        input: Input,
        nets: &[u32],
        hidden: &mut [f32],
    ) -> Result<Vec<f32>, CriticError> {
        if self.spec().network.is_recurrent() {
            return Err(CriticError::Recurrent("this backend's acting pass"));
        }
        super::check_len("hidden state of an MLP", 0, hidden.len())?;
        self.forward(input, nets)
    }

    /// Forward with the target parameters (the online activations survive; on the GPU the
    /// uploaded rows do not, so a target pass goes before the online forward it sits beside).
    fn forward_target(&mut self, input: Input, nets: &[u32]) -> Result<Vec<f32>, CriticError>;

    /// The averaging primitive: `target = taus[k] * online + (1 - taus[k]) * target` for
    /// network k, a factor of 0 leaving that network's target untouched. Callers use
    /// [`CriticBackend::polyak`] or [`CriticBackend::polyak_nets`], which check the length.
    fn average_targets(&mut self, taus: &[f32]) -> Result<(), CriticError>;

    /// The target parameters, network-major.
    fn target_params(&mut self) -> Result<Vec<f32>, CriticError>;

    /// Loss of the last forward's output and backward from its gradient (gradients are
    /// overwritten); read the value with [`CriticBackend::last_loss`].
    fn loss_backward(&mut self, loss: &Loss) -> Result<(), CriticError>;

    /// Backward from a given dL/d output of the last forward (`[R, head]`, caller order);
    /// gradients are overwritten.
    fn backward(&mut self, d_out: &[f32]) -> Result<(), CriticError>;

    /// The loss of the last [`CriticBackend::loss_backward`] (0 before any).
    fn last_loss(&mut self) -> Result<f32, CriticError>;

    /// The optimiser primitive: network k, unless `nets[k]` is `None`, counts one more Adam
    /// step and moves with its own learning rate and clip from `nets[k]` (betas, eps and RAdam
    /// from `cfg`). Every network's gradient norm is reported by
    /// [`CriticBackend::step_stats`]. Callers use [`CriticBackend::step`],
    /// [`CriticBackend::step_nets`] or [`CriticBackend::step_masked`], which check the lengths
    /// and average the gradients over ranks first when the critic is data-parallel.
    fn apply_step(
        &mut self,
        cfg: &AdamConfig,
        nets: &[Option<NetOptim>],
    ) -> Result<(), CriticError>;

    /// What the last [`CriticBackend::step`] or [`CriticBackend::step_nets`] saw (empty norms
    /// before any step on the CPU).
    fn step_stats(&mut self) -> Result<StepStats, CriticError>;

    /// All parameters, network-major.
    fn params(&mut self) -> Result<Vec<f32>, CriticError>;

    /// Replaces all parameters.
    fn set_params(&mut self, params: &[f32]) -> Result<(), CriticError>;

    /// The gradients of the last backward pass, network-major like the parameters.
    fn grads(&mut self) -> Result<Vec<f32>, CriticError>;

    /// Replaces the gradients the next step applies (data-parallel training averages them
    /// over ranks in between).
    fn set_grads(&mut self, grads: &[f32]) -> Result<(), CriticError>;

    /// Adam's moments (m, v) and its step count (the largest network's; every network's is
    /// [`CriticBackend::net_steps`]).
    fn adam_state(&mut self) -> Result<(Vec<f32>, Vec<f32>, u64), CriticError>;

    /// Restores Adam's moments and step count, the same for every network (checkpoints).
    fn set_adam_state(&mut self, m: &[f32], v: &[f32], steps: u64) -> Result<(), CriticError>;

    /// Each network's Adam step count.
    fn net_steps(&self) -> &[u64];

    /// Each network's Adam step count, to restore; [`CriticBackend::set_net_steps`] checks the
    /// length.
    fn net_steps_mut(&mut self) -> &mut [u64];

    /// Where a data-parallel critic keeps the hook that averages gradients over ranks before
    /// each step (`None` on one process).
    fn grad_reducer(&mut self) -> &mut Option<GradReducer>;

    // The operations below are written once, over the primitives above.

    /// One optimiser step on the current gradients: each network's gradient clipped to its own
    /// global norm, then Adam or RAdam with bias correction from the network's own step count.
    /// What it saw is read with [`CriticBackend::step_stats`], so a device is not made to wait
    /// after every step.
    fn step(&mut self, cfg: &AdamConfig) -> Result<(), CriticError> {
        let nets = vec![Some(NetOptim::from(cfg)); self.spec().nets];
        self.reduce_grads()?;
        self.apply_step(cfg, &nets)
    }

    /// [`CriticBackend::step`] with network k's own learning rate and clip, `nets[k]` (betas,
    /// eps and RAdam from `cfg`, whose `lr` and `max_grad_norm` are ignored): bit for bit what
    /// that network alone gets from `step(&cfg.for_net(&nets[k]))`. A [`CriticError::Shape`]
    /// unless there is one entry per network (nothing changes then, not even the step count).
    fn step_nets(&mut self, cfg: &AdamConfig, nets: &[NetOptim]) -> Result<(), CriticError> {
        check_len(
            "per-network optimiser scalars",
            self.spec().nets,
            nets.len(),
        )?;
        let nets: Vec<Option<NetOptim>> = nets.iter().copied().map(Some).collect();
        self.reduce_grads()?;
        self.apply_step(cfg, &nets)
    }

    /// [`CriticBackend::step_nets`] for the networks whose `active[k]` is true only; the others'
    /// parameters, moments and step counts stay as they are. Network k after any sequence of
    /// masked steps is bit for bit that network stepped alone its own number of times. A
    /// [`CriticError::Shape`] unless both have one entry per network (nothing changes then).
    fn step_masked(
        &mut self,
        cfg: &AdamConfig,
        nets: &[NetOptim],
        active: &[bool],
    ) -> Result<(), CriticError> {
        check_len(
            "per-network optimiser scalars",
            self.spec().nets,
            nets.len(),
        )?;
        check_len("per-network step mask", self.spec().nets, active.len())?;
        let nets: Vec<Option<NetOptim>> = nets
            .iter()
            .zip(active)
            .map(|(n, a)| a.then_some(*n))
            .collect();
        self.reduce_grads()?;
        self.apply_step(cfg, &nets)
    }

    /// `target = tau * online + (1 - tau) * target` (`tau = 1` copies).
    fn polyak(&mut self, tau: f32) -> Result<(), CriticError> {
        let taus = vec![tau; self.spec().nets];
        self.average_targets(&taus)
    }

    /// [`CriticBackend::polyak`] with network k's own factor `taus[k]` (a factor of 0 leaves
    /// that network's target untouched); a [`CriticError::Shape`] unless there is one per
    /// network (nothing changes then).
    fn polyak_nets(&mut self, taus: &[f32]) -> Result<(), CriticError> {
        check_len("per-network Polyak factors", self.spec().nets, taus.len())?;
        self.average_targets(taus)
    }

    /// Restores each network's Adam step count; a [`CriticError::Shape`] unless there is one
    /// per network (nothing changes then).
    fn set_net_steps(&mut self, steps: &[u64]) -> Result<(), CriticError> {
        check_len(
            "per-network Adam step counts",
            self.spec().nets,
            steps.len(),
        )?;
        self.net_steps_mut().copy_from_slice(steps);
        Ok(())
    }

    /// Replaces the gradients by what the data-parallel hook makes of them (their mean over
    /// ranks); nothing without a hook.
    fn reduce_grads(&mut self) -> Result<(), CriticError> {
        let Some(mut reduce) = self.grad_reducer().take() else {
            return Ok(());
        };
        let result = self.grads().and_then(|mut grads| {
            reduce(&mut grads);
            self.set_grads(&grads)
        });
        *self.grad_reducer() = Some(reduce);
        result
    }
}

/// What a data-parallel critic does to its gradients before each optimiser step (replace them
/// by their mean over the job's ranks; see `dist::reduce`).
pub type GradReducer = Box<dyn FnMut(&mut [f32]) + Send>;
