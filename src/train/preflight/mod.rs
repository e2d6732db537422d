//! The memory preflight, before a run allocates anything: the check and the table `gridarena
//! plan` prints (`plan`), the device half on a GPU (`gpu_plan`), and each algorithm's tensors:
//! the shared vocabulary with PQN's, online DQN's and IQL's lines (`sizing`), PR2-IQL's
//! (`pr2`), the PPO learners' (`ppo`) and the team-value replay learners' (`team`). The
//! algorithm registry (`algos`) names each algorithm's sizing functions.

pub mod disk;
pub mod gpu_plan;
pub mod plan;
pub(crate) mod ppo;
pub(crate) mod pr2;
pub(crate) mod sizing;
pub(crate) mod team;
