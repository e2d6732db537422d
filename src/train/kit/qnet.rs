//! The Q-network stack PQN and IQL share: one network per learner slot (independent), or one
//! network for every learner with the learner's one-hot index appended to its observation
//! (`shared`). Observation rows `[R, N, O]` become network input rows `[R x N, input]` here.
//! The head has one output per action, or `bins` logits per action with HL-Gauss
//! ([`QHead`] turns outputs into Q-values).

use super::q_head::QHead;
use crate::critic::{Critic, Input, Network, StackSpec};
use crate::scenario::LoadedScenario;
use crate::train::config::{NetworkKind, RunConfig};
use crate::train::error::TrainError;

/// The Q-network stack a scenario needs under this configuration.
pub fn stack_spec(cfg: &RunConfig, loaded: &LoadedScenario) -> StackSpec {
    let learners = loaded.scenario.learners_per_arena();
    let obs = loaded.scenario.observation_len();
    StackSpec {
        network: network(cfg),
        nets: if cfg.network.shared { 1 } else { learners },
        input: obs + if cfg.network.shared { learners } else { 0 },
        hidden: cfg.network.hidden,
        layers: cfg.network.layers,
        head: loaded.scenario.action_set().len() * QHead::of(cfg).outputs_per_action(),
    }
}

/// The network kind `cfg` asks for (`network`, `gru_hidden`).
pub(crate) fn network(cfg: &RunConfig) -> Network {
    match cfg.network.kind {
        NetworkKind::Mlp => Network::Mlp,
        NetworkKind::Gru => Network::Gru {
            hidden: cfg.gru_width(),
        },
    }
}

/// Writes observation rows `obs` (`obs_len` bytes each, learner `row % learners`) as network
/// input rows of `input` bytes into `out`: a copy, or with a shared network (`input >
/// obs_len`) the observation followed by the learner's one-hot index.
pub(crate) fn write_input(
    obs: &[u8],
    learners: usize,
    obs_len: usize,
    input: usize,
    out: &mut [u8],
) {
    if input == obs_len {
        out.copy_from_slice(obs);
        return;
    }
    for (row, chunk) in out.chunks_exact_mut(input).enumerate() {
        chunk[..obs_len].copy_from_slice(&obs[row * obs_len..(row + 1) * obs_len]);
        chunk[obs_len..].fill(0);
        chunk[obs_len + row % learners] = 1;
    }
}

/// The network of each of `rows` rows (learner `row % learners`): the learner's own, or the
/// shared one.
pub(crate) fn row_nets(rows: usize, learners: usize, shared: bool) -> Vec<u32> {
    (0..rows)
        .map(|r| if shared { 0 } else { (r % learners) as u32 })
        .collect()
}

/// Q-values `[R x N, A]` of independent or shared Q-networks with head `head` for raw
/// observation rows `[R, N, O]` (R arenas' learners in slot order). With recurrent networks,
/// `hidden` `[R x N, g]` holds the rows' hidden states and is replaced by the next ones (one
/// acting step); memoryless networks take it empty.
pub(crate) fn q_rows(
    critic: &mut Critic,
    head: &QHead,
    obs: &[u8],
    (learners, obs_len, input): (usize, usize, usize),
    hidden: &mut [f32],
) -> Result<Vec<f32>, TrainError> {
    let rows = obs.len() / obs_len.max(1);
    let shared = input > obs_len;
    let nets = row_nets(rows, learners, shared);
    if !shared {
        return Ok(head.q_values(critic.act(Input::U8(obs), &nets, hidden)?));
    }
    let mut x = vec![0u8; rows * input];
    write_input(obs, learners, obs_len, input, &mut x);
    Ok(head.q_values(critic.act(Input::U8(&x), &nets, hidden)?))
}

/// The final observations of the arenas whose episode the last step truncated, as network
/// input rows: which arenas, their rows' input `[k x N, input]`, networks and hidden states
/// (those the step's acting pass left, before the episode's end zeroed them); `None` when no
/// arena truncated.
pub(crate) struct TruncatedRows {
    pub arenas: Vec<usize>,
    pub input: Vec<u8>,
    pub nets: Vec<u32>,
    pub hidden: Vec<f32>,
}

/// [`TruncatedRows`] of `batch` after a step, rows through `nets` (`[B x N]`) with `hidden`
/// (`[B x N, g]`, empty for memoryless networks) and `input` bytes per row.
pub(crate) fn truncated_rows(
    batch: &crate::engine::EnvBatch,
    nets: &[u32],
    hidden: &[f32],
    input: usize,
) -> Option<TruncatedRows> {
    let (n, o) = (batch.layout().learners, batch.layout().obs_len);
    let b = batch.buffers();
    let g = hidden.len() / nets.len().max(1);
    let arenas: Vec<usize> = (0..batch.arenas())
        .filter(|&k| b.truncated[k] != 0)
        .collect();
    if arenas.is_empty() {
        return None;
    }
    let mut rows = TruncatedRows {
        input: vec![0; arenas.len() * n * input],
        nets: Vec::new(),
        hidden: Vec::new(),
        arenas,
    };
    for (k, &arena) in rows.arenas.iter().enumerate() {
        let src = &b.final_obs[arena * n * o..(arena + 1) * n * o];
        let at = k * n * input;
        write_input(src, n, o, input, &mut rows.input[at..at + n * input]);
        rows.nets
            .extend_from_slice(&nets[arena * n..(arena + 1) * n]);
        rows.hidden
            .extend_from_slice(&hidden[arena * n * g..(arena + 1) * n * g]);
    }
    Some(rows)
}
