//! The algorithm kit: the learning maths and storage the algorithms share. Targets
//! (`returns`: PQN's lambda-returns), acting on values (`explore`), the Q-network stack and its
//! head (`qnet`, `q_head`), recurrent acting (`recurrent`), replay (`replay`: ring and replay
//! learners' state, `rate_limiter`), opponent models (`opponent`), learning and exploration
//! rates (`schedule`), what an update reports (`stats`), and the team-value learners' replay and
//! schedule (`team_replay`, `team_learner`; VDN's sum in `vdn`).

pub(crate) mod explore;
pub mod opponent;
pub(crate) mod ppo;
pub(crate) mod ppo_rollout;
pub(crate) mod q_head;
pub(crate) mod qnet;
pub mod rate_limiter;
pub(crate) mod recurrent;
pub(crate) mod replay;
pub(crate) mod returns;
pub(crate) mod run_state;
pub mod schedule;
pub(crate) mod stats;
pub(crate) mod team_learner;
pub(crate) mod team_replay;
pub(crate) mod vdn;
