//! The team-value replay learners' (VDN's, QMIX's) memory preflight: the agents' Q-network
//! stack with a pass of `batch_size` teams (every learner's row), the replay of team
//! transitions, QMIX's hypernetworks, and the checkpoint holding them.

use crate::critic::Backend;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::preflight::sizing::{PlanTensor, checkpoint_tensor, fmt, qnet_tensors};

/// VDN's tensors.
pub(crate) fn vdn_plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    plan(cfg, loaded, layout, backend, false)
}

/// QMIX's tensors: VDN's, with the global states in the replay and the hypernetworks.
pub(crate) fn qmix_plan(
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
    mixer: bool,
) -> Vec<PlanTensor> {
    let (n, replicas) = (layout.learners as u64, cfg.replica_count() as u64);
    let acting = replicas * cfg.arenas as u64 * n;
    let pass_rows = (replicas * cfg.iql.batch_size as u64 * n).max(acting);
    let pass =
        "replicas x batch_size teams x learners, or replicas x arenas x learners when acting";
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let (d, s) = (
        spec.input as u64,
        if mixer { layout.state_len as u64 } else { 0 },
    );
    let per_team = n * (2 * d + 4) + 8 + 2 * s;
    let capacity = cfg.iql.replay_capacity as u64;
    let replay = replicas.saturating_mul(capacity).saturating_mul(per_team);
    tensors.push(PlanTensor {
        name: "replay buffer (team transitions)".into(),
        shape: format!(
            "{replicas} replicas x {} teams x ({n} x (2 x {d} B obs + 4 B) + 8 B + 2 x {s} B state)",
            fmt(capacity)
        ),
        bytes: replay,
        knobs: "lower replay_capacity or seeds",
        disk_bytes: None,
        params: 0,
    });
    let mut params = spec.params() as u64;
    if mixer {
        let hyper = crate::train::algos::qmix::hyper_spec(cfg, loaded);
        let hyper = crate::critic::StackSpec {
            nets: hyper.nets * cfg.replica_count(),
            ..hyper
        };
        let rows = (replicas * cfg.iql.batch_size as u64) as usize;
        let h = hyper.sizing_for(rows, backend, false);
        tensors.push(PlanTensor {
            name: "hypernetworks and mixer: parameters, gradients, Adam, target, activations"
                .into(),
            shape: format!(
                "{} nets x {} params x 4 B x 5, {} rows per pass",
                hyper.nets,
                fmt(hyper.params_per_net() as u64),
                fmt(rows as u64)
            ),
            bytes: h.params + h.grads + h.adam + h.target + h.activations + h.indices,
            knobs: "lower qmix.hyper_hidden, qmix.embed, batch_size or seeds",
            disk_bytes: None,
            params: 0,
        });
        params += hyper.params() as u64;
    }
    let arenas = (
        replicas * cfg.arenas as u64,
        layout.bytes_per_arena() as u64,
    );
    tensors.push(checkpoint_tensor(cfg, (params, true), 0, replay, arenas));
    tensors
}
