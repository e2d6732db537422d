//! PR2-IQL's memory preflight: its tensors (the critic head on its own line, so a joint
//! critic's `A^N` shows where it comes from) and the stacks it keeps on a GPU, from the shapes
//! the algorithm asks for (`algos/pr2/shapes.rs`).

use crate::critic::pr2::HeadForm;
use crate::critic::{Backend, StackSpec};
use crate::layout::Layout;
use crate::scenario::LoadedScenario;
use crate::train::algos::pr2::{
    batch_rows, critic_row, head, pass_rows, replay_sequences, stack_spec,
};
use crate::train::config::RunConfig;
use crate::train::kit::opponent::ConditionalModels;
use crate::train::preflight::sizing::{GpuSizing, GpuStack, PlanTensor, checkpoint_tensor, fmt};

/// The critic stack of every replica (seeds x sweep grid points): one block of
/// [`stack_spec`]'s networks each.
pub(crate) fn replicas_spec(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let single = stack_spec(cfg, loaded);
    StackSpec {
        nets: single.nets.saturating_mul(cfg.replica_count()),
        ..single
    }
}

/// PR2-IQL's plan: the critic head (the only tensor whose width depends on the number of
/// agents) on its own line with its formula, so a joint critic's `A^N` shows where it comes from;
/// every replica (seeds x sweep grid points) counted: its networks in the stack, its rows in
/// every pass, its arenas, rollout and replay.
pub(crate) fn plan(
    cfg: &RunConfig,
    loaded: &LoadedScenario,
    layout: &Layout,
    backend: Backend,
) -> Vec<PlanTensor> {
    let (n, a) = (layout.learners, layout.actions);
    let row = critic_row(cfg, n.max(2), a);
    let head = row.head;
    let width = row.width_checked().unwrap_or(u64::MAX);
    let reps = cfg.replica_count() as u64;
    let spec = replicas_spec(cfg, loaded);
    let (t, s_seq, b) = (
        cfg.rollout as u64,
        cfg.pr2.buffer_batch_size as u64,
        cfg.arenas as u64,
    );
    let d = spec.input as u64;
    let rows = reps.saturating_mul(batch_rows(cfg, n) as u64);
    let mb_rows = pass_rows(cfg, n) as u64;
    let pass_rows = reps.saturating_mul(mb_rows.max(b * n as u64));
    let body = StackSpec { head: 0, ..spec };
    // Saturating arithmetic throughout: a joint head can be astronomically wide.
    let sized = |sp: &StackSpec| sp.sizing_for(pass_rows as usize, backend, false);
    let with_head = if width > u32::MAX as u64 {
        None
    } else {
        Some(sized(&spec))
    };
    let without = sized(&body);
    let head_params = (spec.hidden as u64)
        .saturating_add(1)
        .saturating_mul(width)
        .saturating_mul(spec.nets as u64 * 4 * 5);
    // Per row of the learner step, the backend keeps outputs and gradients of the head
    // (`sizing`), and the learner holds the output copy and its gradient: 2 more.
    let head_backend = with_head.map_or(u64::MAX, |w| {
        w.activations.saturating_sub(without.activations)
    });
    let head_host = pass_rows.saturating_mul(width).saturating_mul(4 * 2);
    let head_bytes = head_backend
        .saturating_add(head_host)
        .saturating_add(head_params);
    let copies = head_bytes as f64 / (pass_rows as f64 * width as f64 * 4.0);
    // HL-Gauss widens each categorical entry (own terms; joint actions) to `bins` logits.
    let bins = match row.bins() {
        1 => String::new(),
        b => format!(" x {b} bins"),
    };
    let form = match head.form {
        HeadForm::Joint => format!("{a}^{n}{bins} = {} per row", fmt(width)),
        HeadForm::Pairwise => format!("{a}{bins} + ({n}-1) x {a}^2 = {} per row", fmt(width)),
        HeadForm::LowRank(k) => {
            format!(
                "{a}{bins} + 2 x ({n}-1) x {a} x {k} = {} per row",
                fmt(width)
            )
        }
    };
    let g = spec.state_width() as u64;
    // A recurrent critic's sequences: each stored sequence's entering hidden states and
    // episode starts (in the replay and the checkpoint).
    let replay_states = if g > 0 {
        reps * replay_sequences(cfg) as u64 * (n as u64 * g * 4 + t)
    } else {
        0
    };
    // Each observation's action mask where the substrate masks actions; K final observations
    // (and their masks) per sequence, the most truncations a rollout can hold.
    let m = if layout.action_mask {
        layout.actions as u64
    } else {
        0
    };
    let finals = t.div_ceil(u64::from(layout.max_steps.max(1))) * n as u64 * (d + m);
    let replay = reps * replay_sequences(cfg) as u64 * ((t + 1) * n as u64 * (d + 8 + m) + finals)
        + replay_states;
    let mut tensors = vec![
        PlanTensor {
            name: "critic head (outputs, gradients, head weights)".into(),
            shape: format!(
                "{form} x {} rows per pass ({reps} replicas x {} steps x {s_seq} sequences x {n} learners / {} minibatches) x 4 B x {copies:.1} (outputs, gradients, copies, weights)",
                fmt(pass_rows),
                t + 1,
                cfg.pr2.minibatches
            ),
            bytes: head_bytes,
            knobs: "use critic: factorized (pair_rank: k for less), or lower num_steps (rollout) / buffer_batch_size, or raise minibatches, or fewer seeds / grid points",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "critic body (parameters, Adam, target, activations)".into(),
            shape: format!(
                "{} nets x {} params x 4 B x 5 + {} rows of activations",
                body.nets,
                fmt(body.params_per_net() as u64),
                fmt(pass_rows)
            ),
            bytes: without.total(),
            knobs: "lower hidden, layers, rollout or buffer_batch_size, or seeds",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "learner-step rows (observations, actions, targets)".into(),
            shape: format!(
                "{} rows x ({d} B obs + {} B)",
                fmt(rows),
                4 * (n as u64 + 5) + 4 * a as u64
            ),
            bytes: rows * (d + 4 * (n as u64 + 5) + 4 * a as u64),
            knobs: "lower rollout or buffer_batch_size",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "arenas and rollout".into(),
            shape: format!(
                "{reps} replicas x {b} arenas x ({} B + {} steps x {n} learners x ({d} B obs + {} B) + {} B final observations)",
                fmt(layout.bytes_per_arena() as u64),
                t + 1,
                8 + m,
                fmt(finals)
            ),
            bytes: reps
                * b
                * (layout.bytes_per_arena() as u64 + (t + 1) * n as u64 * (d + 8 + m) + finals),
            knobs: "lower arenas or rollout, or seeds",
            disk_bytes: None,
            params: 0,
        },
        PlanTensor {
            name: "replay buffer".into(),
            shape: format!(
                "{reps} replicas x {} sequences x ({} steps x {n} learners x ({d} B obs + {} B) + {} B final observations)",
                replay_sequences(cfg),
                t + 1,
                8 + m,
                fmt(finals)
            ),
            bytes: replay,
            knobs: "lower replay_capacity or seeds",
            disk_bytes: None,
            params: 0,
        },
    ];
    if g > 0 {
        // The learner step's timelines (steps, inserted final observations, padding) staged
        // per sequence and gathered time-major for a pass, with their states; the arenas' and
        // the rollout's hidden states and episode starts.
        let k = t.div_ceil(u64::from(layout.max_steps.max(1)));
        let seqs = reps * s_seq;
        let timeline = t + 1 + k;
        let step = 2 * seqs * (timeline * n as u64 * (d + 1) + n as u64 * g * 4);
        let acting = reps * b * (2 * n as u64 * g * 4 + t + 1);
        tensors.push(PlanTensor {
            name: "recurrent sequences (hidden states, episode starts, timelines)".into(),
            shape: format!(
                "{} stored sequences x ({n} x {g} floats + {t} flags); 2 x {seqs} sequences x ({timeline} steps x {n} learners x ({d} B + 1) + {n} x {g} floats); {reps} x {b} arenas x {n} learners x {g} floats x 2",
                fmt(reps * replay_sequences(cfg) as u64),
            ),
            bytes: replay_states + step + acting,
            knobs: "lower gru_hidden, replay_capacity, buffer_batch_size or rollout",
            disk_bytes: None,
            params: 0,
        });
    }
    if cfg.learn.opponent_models {
        let m = ConditionalModels::spec(cfg, n.max(2), a, spec.input);
        let ms = m.sizing_for(pass_rows as usize, backend, false);
        tensors.push(PlanTensor {
            name: "conditional opponent models".into(),
            shape: format!(
                "{reps} replicas x {n} nets x (N-1) x A x A = {} outputs, {} rows per pass",
                m.head,
                fmt(pass_rows)
            ),
            bytes: ms.total() + 2 * pass_rows * m.head as u64 * 4,
            knobs: "opponent_models: false, or lower hidden, rollout or buffer_batch_size",
            disk_bytes: None,
            params: 0,
        });
    }
    let models = if cfg.learn.opponent_models {
        ConditionalModels::spec(cfg, n.max(2), a, spec.input).params() as u64
    } else {
        0
    };
    let params = (body.params() as u64).saturating_add(head_params / 20);
    let arenas = (reps * b, layout.bytes_per_arena() as u64);
    tensors.push(checkpoint_tensor(
        cfg,
        (params, true),
        models,
        replay,
        arenas,
    ));
    tensors
}

/// What PR2-IQL keeps on the device: the critic stack (its head is the joint critic's `A^N`
/// outputs per row) and the conditional opponent models, over the rows of the largest pass;
/// for a joint critic, the report's figure of its Q tensors beside them.
pub(crate) fn gpu(cfg: &RunConfig, loaded: &LoadedScenario, layout: &Layout) -> GpuSizing {
    let (n, a) = (layout.learners, layout.actions);
    let spec = replicas_spec(cfg, loaded);
    let rows = (pass_rows(cfg, n) as u64)
        .max(cfg.arenas as u64 * n as u64)
        .saturating_mul(cfg.replica_count() as u64);
    let mut stacks = vec![GpuStack {
        name: "PR2 critic",
        spec,
        rows,
        knobs: "use critic: factorized (pair_rank: k for less), or lower num_steps (rollout) / buffer_batch_size, or raise minibatches",
    }];
    if cfg.learn.opponent_models {
        stacks.push(GpuStack {
            name: "conditional opponent models",
            spec: ConditionalModels::spec(cfg, n.max(2), a, spec.input),
            rows,
            knobs: "opponent_models: false, or lower hidden, rollout or buffer_batch_size",
        });
    }
    let head = head(cfg, n.max(2), a);
    let figures = match head.form {
        HeadForm::Joint => vec![joint_q_figure(
            cfg.rollout as u64 + 1,
            cfg.pr2.buffer_batch_size as u64,
            n,
            a,
            head.width_checked().unwrap_or(u64::MAX),
        )],
        _ => Vec::new(),
    };
    GpuSizing { stacks, figures }
}

/// The joint PR2 critic's Q tensors of one learner's sampled batch, `(num_steps + 1) x
/// buffer_batch_size x A^N x 4 B x 2` (values and their gradients): the figure of the report
/// this project started from (6 agents x 9 actions: 257 x 4 x 531,441 x 4 B x 2 = 4.07 GiB),
/// shown beside the plan so a refusal can be related to it.
pub(crate) fn joint_q_figure(
    steps: u64,
    sequences: u64,
    agents: usize,
    actions: usize,
    width: u64,
) -> PlanTensor {
    PlanTensor {
        name: "PR2 joint Q tensors of one learner's batch".into(),
        shape: format!(
            "{steps} steps x {sequences} sequences x {actions}^{agents} = {} joint actions x 4 B x 2 (values, gradients); not counted: the passes above hold it in slices",
            fmt(width)
        ),
        bytes: steps
            .saturating_mul(sequences)
            .saturating_mul(width)
            .saturating_mul(8),
        knobs: "use critic: factorized",
        disk_bytes: None,
        params: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::human_bytes;

    #[test]
    fn the_report_figure_is_4_07_gib() {
        let f = joint_q_figure(257, 4, 6, 9, 531_441);
        assert_eq!(f.bytes, 4_370_570_784);
        assert_eq!(human_bytes(f.bytes), "4.07 GiB");
    }
}
