//! The sizing vocabulary of the memory preflight ([`super::plan`]): one tensor's line
//! ([`PlanTensor`]) and the lines PQN and IQL share (the Q-network stack, the opponent models);
//! for the GPU half ([`super::gpu_plan`]), the stacks an algorithm keeps on the device
//! ([`GpuSizing`]). Each algorithm lists its tensors with these: PQN's and online DQN's
//! ([`pqn_plan`], [`pqn_gpu`]) and IQL's ([`iql_plan`], [`iql_gpu`]) here, PR2-IQL's in
//! `pr2.rs`; the preflight sums them through the algorithm registry.

use serde::Serialize;

use crate::critic::{Backend, StackSpec};
use crate::error::human_bytes;
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::config::RunConfig;
use crate::train::kit::qnet::stack_spec;

/// One tensor of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanTensor {
    /// What it is.
    pub name: String,
    /// Its size as a formula with the numbers filled in.
    pub shape: String,
    /// Bytes.
    pub bytes: u64,
    /// Config fields that shrink it.
    #[serde(skip)]
    pub knobs: &'static str,
    /// Its bytes on disk, for what is also written to disk (the checkpoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    /// The learner's network parameters it holds (what a self-play snapshot copies; 0 for
    /// every other line).
    #[serde(skip)]
    pub params: u64,
}

/// One stack a run keeps on the device: its shape, the rows of its largest pass, and the
/// config fields that shrink it.
#[derive(Debug, Clone)]
pub(crate) struct GpuStack {
    /// What it is (`critic`, `opponent models`).
    pub name: &'static str,
    /// Its shape.
    pub spec: StackSpec,
    /// Rows of its largest pass.
    pub rows: u64,
    /// Config fields that shrink it.
    pub knobs: &'static str,
}

/// What an algorithm keeps on the device, and figures to compare with (lines of the plan not
/// counted in any total).
#[derive(Debug, Clone, Default)]
pub(crate) struct GpuSizing {
    /// The stacks on the device.
    pub stacks: Vec<GpuStack>,
    /// Figures for comparison (e.g. the joint PR2 Q tensors of the report this project
    /// started from).
    pub figures: Vec<PlanTensor>,
}

/// One line of a plan's table: the name, the bytes, the formula.
pub(crate) fn table_line(name: &str, bytes: u64, shape: &str) -> String {
    format!("{name:<52} {:>11}   {shape}\n", human_bytes(bytes))
}

/// `n` with thousands separators.
pub(crate) fn fmt(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The Q-network stack's tensors (PQN and IQL, every replica's networks stacked): parameters
/// with gradients, Adam and target, the activations of a pass of `pass_rows` rows (`pass`
/// says where that number comes from), and the arenas. Also returns the stack.
pub(crate) fn qnet_tensors(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
    pass_rows: u64,
    pass: &str,
) -> (Vec<PlanTensor>, StackSpec) {
    let replicas = cfg.replica_count() as u64;
    let spec = replicated_stack(cfg, loaded);
    let b = cfg.arenas as u64;
    let s = spec.sizing_for(pass_rows as usize, backend, false);
    let tensors = vec![
        PlanTensor {
            name: "critic parameters, gradients, Adam moments, target".into(),
            shape: format!(
                "{} nets x {} params x 4 B x 5",
                spec.nets,
                fmt(spec.params_per_net() as u64)
            ),
            bytes: s.params + s.grads + s.adam + s.target,
            knobs: "lower hidden, layers or seeds, or use shared: true",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "critic activations".into(),
            shape: format!("{} rows per pass ({pass})", fmt(pass_rows)),
            bytes: s.activations + s.indices,
            knobs: "raise minibatches, or lower arenas, rollout, batch_size or hidden",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "arenas".into(),
            shape: format!(
                "{} replicas x {} arenas x {} B",
                replicas,
                fmt(b),
                fmt(layout.bytes_per_arena() as u64)
            ),
            bytes: replicas * b * layout.bytes_per_arena() as u64,
            knobs: "lower arenas or seeds",
            disk_bytes: None,
            params: 0,
        },
    ];
    (tensors, spec)
}

/// The opponent models' stack (PQN and IQL) over `input` bytes: one network per learner and
/// replica, one group of action logits per other learner.
pub(crate) fn opponent_spec(cfg: &RunConfig, layout: &Layout, input: usize) -> StackSpec {
    let n = layout.learners;
    StackSpec {
        network: Default::default(),
        nets: n * cfg.replica_count(),
        input,
        hidden: cfg.network.hidden,
        layers: cfg.network.layers,
        head: n.saturating_sub(1) * layout.actions,
    }
}

/// The checkpoint's line. A checkpoint is written from memory: while saving, the host holds a
/// copy of every tensor it streams into the file and the learner's state as JSON text. The
/// file holds `params` critic parameters with both Adam moments and, with `target`, the target
/// parameters (4 B each), `models` opponent-model parameters with their Adam moments, the
/// replay's `replay` bytes when `checkpoint_replay` is on, and the state of `arenas` arenas of
/// `per_arena` bytes as JSON (about 2 B of text per byte on disk; the copy and the text take about 3 B
/// per byte in memory); the file is streamed through a 1 MiB buffer. The name shows the size
/// on disk.
pub(crate) fn checkpoint_tensor(
    cfg: &RunConfig,
    (params, target): (u64, bool),
    models: u64,
    replay: u64,
    (arenas, per_arena): (u64, u64),
) -> PlanTensor {
    let state = arenas.saturating_mul(per_arena);
    let replay = if cfg.checkpoint_replay { replay } else { 0 };
    let per_param = if target { 16 } else { 12 };
    let tensors = params
        .saturating_mul(per_param)
        .saturating_add(models.saturating_mul(12))
        .saturating_add(replay);
    let disk = tensors.saturating_add(state.saturating_mul(2));
    PlanTensor {
        name: format!(
            "checkpoint (written from memory; {} on disk)",
            human_bytes(disk)
        ),
        shape: format!(
            "{} params x {per_param} B + {} model params x 12 B + {} B replay + {} arenas x {} B x 3 (state as JSON) + 1 MiB buffer",
            fmt(params),
            fmt(models),
            fmt(replay),
            fmt(arenas),
            fmt(per_arena)
        ),
        bytes: tensors
            .saturating_add(state.saturating_mul(3))
            .saturating_add(1 << 20),
        knobs: "lower arenas, replay_capacity, hidden or layers, or set checkpoint_replay: false",
        disk_bytes: Some(disk),
        params,
    }
}

/// The opponent models' line (PQN and IQL): their stack over `input` bytes, a pass of `rows`
/// rows with its outputs, and `extra` bytes the learner keeps for them.
pub(crate) fn opponent_tensor(
    cfg: &RunConfig,
    layout: &Layout,
    input: usize,
    backend: Backend,
    rows: u64,
    extra: u64,
) -> PlanTensor {
    let m = opponent_spec(cfg, layout, input);
    PlanTensor {
        name: "opponent models".into(),
        shape: format!(
            "{} nets x (N-1) x A = {} outputs, {} rows per pass",
            m.nets,
            m.head,
            fmt(rows)
        ),
        bytes: m.sizing_for(rows as usize, backend, false).total()
            + rows * m.head as u64 * 4
            + extra,
        knobs: "opponent_models: false, or lower hidden, rollout or arenas",
        disk_bytes: None,
        params: 0,
    }
}

/// The Q-network stack of PQN and IQL: every replica's networks stacked.
pub(crate) fn replicated_stack(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let single = stack_spec(cfg, loaded);
    StackSpec {
        nets: single.nets * cfg.replica_count(),
        ..single
    }
}

/// Rows of PQN's largest critic pass: `replicas x rollout x arenas x learners / minibatches`,
/// at least one step's rows (acting).
pub(crate) fn pqn_pass_rows(cfg: &RunConfig, layout: &Layout) -> u64 {
    let rows_per_step = cfg.replica_count() as u64 * cfg.arenas as u64 * layout.learners as u64;
    // With recurrent networks a minibatch holds whole sequences, the memory's steps included.
    let steps = cfg.rollout as u64 + cfg.network.memory_window as u64;
    (rows_per_step * steps / cfg.passes().1 as u64).max(rows_per_step)
}

/// Rows of IQL's largest critic pass: `replicas x batch_size` (every replica's minibatch
/// stacked; x `rollout` with `network: gru`, whose minibatch is `batch_size` sequences), or
/// `replicas x arenas x learners` when acting.
pub(crate) fn iql_pass_rows(cfg: &RunConfig, layout: &Layout) -> u64 {
    let replicas = cfg.replica_count() as u64;
    let rows_per_step = replicas * cfg.arenas as u64 * layout.learners as u64;
    let mlp = cfg.network.kind == crate::train::config::NetworkKind::Mlp;
    let steps = if mlp { 1 } else { cfg.rollout as u64 };
    (replicas * cfg.iql.batch_size as u64 * steps).max(rows_per_step)
}

/// Bytes of one replayed step of a sequence of `input`-byte rows: input and successor, action,
/// reward, termination, truncation (4 B each) and the episode-start flag.
fn sequence_step_bytes(input: u64) -> u64 {
    2 * input + 17
}

/// IQL's sequence replay with `network: gru` (`iql/sequences.rs`) over `input`-byte rows and
/// hidden states of `state` floats: every replica's ring of `replay_capacity / rollout`
/// sequences (each with its hidden state at the start and its network), and the lines beside
/// it (the sequences being acted with the arenas' hidden states, and the stacked minibatch of
/// `batch_size` sequences with its target pass, at most twice as long). Returns the lines and
/// the ring's bytes (what a checkpoint's replay holds).
pub(crate) fn sequence_replay_tensors(
    cfg: &RunConfig,
    layout: &Layout,
    (spec, backend): (&StackSpec, Backend),
) -> (Vec<PlanTensor>, u64) {
    let (input, state, head) = (
        spec.input as u64,
        spec.state_width() as u64,
        spec.head as u64,
    );
    let replicas = cfg.replica_count() as u64;
    let steps = cfg.rollout as u64;
    let sequences = cfg.iql.replay_capacity as u64 / steps.max(1);
    // The successor's action mask where the substrate masks actions.
    let mask = if layout.action_mask {
        layout.actions as u64
    } else {
        0
    };
    let step = sequence_step_bytes(input) + mask;
    let ring = replicas * sequences * (steps * step + 4 * state + 4);
    let rows = replicas * cfg.arenas as u64 * layout.learners as u64;
    // The acting record, its start states and flags, the batches' states and the pass's copy.
    let acting = rows * (steps * step + 3 * 4 * state + 1);
    let n = replicas * cfg.iql.batch_size as u64;
    // Per trained step: the step, mask, target and bootstrap row; the outputs, their gradient
    // and one replica's copies of both; per target step (at most 2T): input, flag, outputs as
    // values and as Q-values.
    let minibatch = n * steps * (step + 16 + 4 * 4 * head)
        + n * 2 * steps * (input + 1 + 2 * 4 * head)
        + n * (4 * state + 4);
    // The recurrent critic keeps a pass of its own for the targets and one for acting. The
    // target pass is one step longer than the sequences plus one step per episode ending
    // inside them: at most twice as long, what is counted.
    let passes = [n * 2 * steps, rows].map(|r| {
        let s = spec.sizing_for(r as usize, backend, false);
        s.activations + s.indices
    });
    let lines = vec![
        PlanTensor {
            name: "critic target and acting passes".into(),
            shape: format!(
                "{} rows ({} sequences x 2 x rollout at most) and {} rows",
                fmt(n * 2 * steps),
                fmt(n),
                fmt(rows)
            ),
            bytes: passes[0] + passes[1],
            knobs: "lower batch_size, rollout, arenas or gru_hidden",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "replay buffer (sequences)".into(),
            shape: format!(
                "{replicas} replicas x {} sequences x ({steps} steps x (2 x {input} B obs + {} B) + {state} x 4 B state + 4 B)",
                fmt(sequences),
                17 + mask
            ),
            bytes: ring,
            knobs: "lower replay_capacity or seeds",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "sequences being acted, hidden states".into(),
            shape: format!(
                "{} rows x ({steps} steps x {step} B + 3 x {state} x 4 B)",
                fmt(rows)
            ),
            bytes: acting,
            knobs: "lower arenas, rollout, gru_hidden or seeds",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "sequence minibatch and target pass".into(),
            shape: format!(
                "{} sequences x ({steps} steps + up to {} target steps)",
                fmt(n),
                2 * steps
            ),
            bytes: minibatch,
            knobs: "lower batch_size or rollout",
            disk_bytes: None,
            params: 0,
        },
    ];
    (lines, ring)
}

/// The stacks PQN or IQL keeps on the device: the Q-networks over `pass_rows`, and the opponent
/// models over `opponent_rows` when the config has them.
fn qnet_gpu(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    pass_rows: u64,
    opponent_rows: u64,
) -> GpuSizing {
    let spec = replicated_stack(cfg, loaded);
    let mut stacks = vec![GpuStack {
        name: "critic",
        spec,
        rows: pass_rows,
        knobs: "lower hidden, layers, seeds, arenas, rollout or batch_size, or raise minibatches",
    }];
    if cfg.learn.opponent_models {
        stacks.push(GpuStack {
            name: "opponent models",
            spec: opponent_spec(cfg, layout, spec.input),
            rows: opponent_rows,
            knobs: "opponent_models: false, or lower hidden, rollout, arenas or batch_size",
        });
    }
    GpuSizing {
        stacks,
        figures: Vec::new(),
    }
}

/// PQN's device stacks (opponent models over every replica's whole rollout).
pub(crate) fn pqn_gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout) -> GpuSizing {
    let rollout_rows = cfg.replica_count() as u64
        * cfg.rollout as u64
        * cfg.arenas as u64
        * layout.learners as u64;
    qnet_gpu(
        cfg,
        loaded,
        layout,
        pqn_pass_rows(cfg, layout),
        rollout_rows,
    )
}

/// IQL's device stacks (opponent models over every replica's batch).
pub(crate) fn iql_gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout) -> GpuSizing {
    qnet_gpu(
        cfg,
        loaded,
        layout,
        iql_pass_rows(cfg, layout),
        cfg.replica_count() as u64 * cfg.iql.batch_size as u64,
    )
}

/// PQN's tensors for the memory preflight: the Q-network stack of every replica with a pass of
/// a training minibatch (or of acting on every learner), the rollout storage, and the
/// opponent models, which score a whole rollout in one pass.
pub(crate) fn pqn_plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let replicas = cfg.replica_count() as u64;
    let (b, t, n) = (
        cfg.arenas as u64,
        cfg.rollout as u64,
        layout.learners as u64,
    );
    let rows_per_step = replicas * b * n;
    let pass_rows = pqn_pass_rows(cfg, layout);
    let pass = match cfg.network.kind {
        crate::train::config::NetworkKind::Mlp => "rollout x arenas x learners / minibatches",
        crate::train::config::NetworkKind::Gru => {
            "(memory_window + rollout) x arenas x learners / minibatches"
        }
    };
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let d = spec.input as u64;
    let g = spec.state_width() as u64;
    if g > 0 {
        let (w, rows) = (cfg.network.memory_window as u64, rows_per_step);
        let mb = rows / cfg.passes().1 as u64 * (w + t);
        tensors.push(PlanTensor {
            name: "recurrent state and sequences".into(),
            shape: format!(
                "{} rows x {g} hidden x 4 B x 5, {t} + {w} steps of episode starts and memory, \
                 minibatches of {} sequence steps",
                fmt(rows),
                fmt(mb)
            ),
            // The batches' hidden states, the acting pass's copy, the rollout's and the
            // window's start states and the memory's; episode starts of the rollout, the next
            // step and the memory; the memory's inputs; a minibatch's gathered input, starts,
            // actions, targets, mask and its per-replica copies (outputs and gradients are the
            // critic's activations).
            bytes: 5 * rows * g * 4
                + (t + 1 + w) * rows
                + w * rows * d
                + mb * (d + 1 + 4 * 3 + 4 * 3),
            knobs: "lower gru_hidden, memory_window, arenas or seeds",
            disk_bytes: None,
            params: 0,
        });
    }
    tensors.push(PlanTensor {
        name: "rollout storage".into(),
        shape: format!(
            "{t} steps x {} rows x ({d} B obs + 32 B)",
            fmt(rows_per_step)
        ),
        bytes: t * rows_per_step * (d + 32) + rows_per_step * 4,
        knobs: "lower rollout, arenas or seeds",
        disk_bytes: None,
        params: 0,
    });
    if cfg.learn.opponent_models {
        let rows = replicas * t * b * n;
        let extra = rows * (4 + 4 * n);
        tensors.push(opponent_tensor(
            cfg, layout, spec.input, backend, rows, extra,
        ));
    }
    let models = if cfg.learn.opponent_models {
        opponent_spec(cfg, layout, spec.input).params() as u64
    } else {
        0
    };
    // With recurrent networks an arena's checkpoint also holds its learners' hidden states,
    // episode-start flags and memory (tensors, counted with the arena's state).
    let recurrent = if g > 0 {
        n * (4 * g * 2 + 1 + cfg.network.memory_window as u64 * (d + 1))
    } else {
        0
    };
    let (params, arenas) = (
        spec.params() as u64,
        (replicas * b, layout.bytes_per_arena() as u64 + recurrent),
    );
    tensors.push(checkpoint_tensor(cfg, (params, false), models, 0, arenas));
    tensors
}

/// IQL's tensors for the memory preflight: the Q-network stack of every replica with a pass of
/// every replica's minibatch (or of acting on every learner), every replica's replay buffer
/// (of sequences with `network: gru`, with the sequences being acted and the minibatch's
/// buffers), and the opponent models, which score one minibatch per pass and store the
/// others' actions with every replayed row.
pub(crate) fn iql_plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let (n, replicas) = (layout.learners as u64, cfg.replica_count() as u64);
    let pass_rows = iql_pass_rows(cfg, layout);
    let pass = "replicas x batch_size (x rollout with network: gru), or replicas x arenas x \
                learners when acting";
    let (mut tensors, spec) = qnet_tensors(cfg, loaded, layout, backend, pass_rows, pass);
    let d = spec.input as u64;
    // Each row's successor mask where the substrate masks actions.
    let mask = if layout.action_mask {
        layout.actions as u64
    } else {
        0
    };
    let mut replay = replicas * cfg.iql.replay_capacity as u64 * (2 * d + 16 + mask);
    if spec.state_width() > 0 {
        let (lines, ring) = sequence_replay_tensors(cfg, layout, (&spec, backend));
        tensors.extend(lines);
        replay = ring;
    } else {
        tensors.push(PlanTensor {
            name: "replay buffer".into(),
            shape: format!(
                "{replicas} replicas x {} rows x (2 x {d} B obs + {} B)",
                fmt(cfg.iql.replay_capacity as u64),
                16 + mask
            ),
            bytes: replay,
            knobs: "lower replay_capacity or seeds",
            disk_bytes: None,
            params: 0,
        });
    }
    let mut models = 0;
    if cfg.learn.opponent_models {
        let rows = replicas * cfg.iql.batch_size as u64;
        let extra = replicas * cfg.iql.replay_capacity as u64 * 4 * n;
        tensors.push(opponent_tensor(
            cfg, layout, spec.input, backend, rows, extra,
        ));
        replay += extra;
        models = opponent_spec(cfg, layout, spec.input).params() as u64;
    }
    let params = (spec.params() as u64, true);
    let arenas = (
        replicas * cfg.arenas as u64,
        layout.bytes_per_arena() as u64,
    );
    tensors.push(checkpoint_tensor(cfg, params, models, replay, arenas));
    tensors
}
