//! The PPO learners' (IPPO's, MAPPO's) memory preflight: the policy stack, rollout and checkpoint as PQN's plan
//! counts them (one output per action), plus the value stack and the rollout's policy
//! columns (log-probabilities, advantages, action masks).

use crate::critic::{Backend, StackSpec};
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::preflight::sizing::{
    self, GpuSizing, GpuStack, PlanTensor, fmt, pqn_pass_rows, replicated_stack,
};

/// The value networks of every replica: the policy stack's shape with one output, over the
/// observation (IPPO) or over the global state and the one-hot index when shared (MAPPO).
fn value_spec(cfg: &RunConfig, loaded: &LoadedScenario, central: bool) -> StackSpec {
    let policy = replicated_stack(cfg, loaded);
    let learners = loaded.scenario.learners_per_arena();
    let input = if central {
        loaded.scenario.global_state_len() + if cfg.network.shared { learners } else { 0 }
    } else {
        policy.input
    };
    StackSpec {
        head: 1,
        input,
        ..policy
    }
}

/// IPPO's tensors.
pub(crate) fn ippo_plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    plan(cfg, loaded, layout, backend, false)
}

/// MAPPO's tensors: IPPO's with the value input rows (the global state) kept in the rollout.
pub(crate) fn mappo_plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    plan(cfg, loaded, layout, backend, true)
}

fn plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
    central: bool,
) -> Vec<PlanTensor> {
    let mut tensors = sizing::pqn_plan(cfg, loaded, layout, backend);
    let spec = value_spec(cfg, loaded, central);
    let pass_rows = pqn_pass_rows(cfg, layout);
    let s = spec.sizing_for(pass_rows as usize, backend, false);
    tensors.push(PlanTensor {
        name: "value networks: parameters, gradients, Adam moments, activations".into(),
        shape: format!(
            "{} nets x {} params x 4 B x 4, {} rows per pass",
            spec.nets,
            fmt(spec.params_per_net() as u64),
            fmt(pass_rows)
        ),
        bytes: s.params + s.grads + s.adam + s.activations + s.indices,
        knobs: "lower hidden, layers or seeds, or use shared: true",
        disk_bytes: Some(s.params + s.adam),
        params: spec.nets as u64 * spec.params_per_net() as u64,
    });
    let rows = cfg.replica_count() as u64
        * cfg.rollout as u64
        * cfg.arenas as u64
        * layout.learners as u64;
    let masks = if layout.action_mask {
        layout.actions as u64
    } else {
        0
    };
    // MAPPO keeps every row's value input (the global state) and the batch keeps the states.
    let state = if central { spec.input as u64 } else { 0 };
    tensors.push(PlanTensor {
        name: "policy columns of the rollout".into(),
        shape: format!(
            "{} rows x (4 B log-probability + 4 B advantage + {masks} B mask + {state} B \
             value input)",
            fmt(rows)
        ),
        bytes: rows * (8 + masks + state),
        knobs: "lower rollout, arenas or seeds",
        disk_bytes: None,
        params: 0,
    });
    tensors
}

/// IPPO's device stacks: the policy and the value networks.
pub(crate) fn ippo_gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout) -> GpuSizing {
    gpu(cfg, loaded, layout, false)
}

/// MAPPO's device stacks: the policy and the centralised value networks.
pub(crate) fn mappo_gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout) -> GpuSizing {
    gpu(cfg, loaded, layout, true)
}

fn gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout, central: bool) -> GpuSizing {
    let mut g = sizing::pqn_gpu(cfg, loaded, layout);
    g.stacks.push(GpuStack {
        name: "value networks",
        spec: value_spec(cfg, loaded, central),
        rows: pqn_pass_rows(cfg, layout),
        knobs: "lower hidden, layers, seeds, arenas or rollout, or raise minibatches",
    });
    g
}
