//! Data-parallel training across processes: which rank this process is among the ranks of a
//! job, and the few collective operations training needs (sum a gradient buffer over ranks,
//! gather a report at rank 0, compare checksums, wait for everyone).
//!
//! A [`Job`] is one process's view of the job. Without MPI (the default build, or the `mpi`
//! build started without a launcher) it is [`Job::single`]: rank 0 of 1, every collective the
//! identity, so training is exactly what it was before this module existed. With the `mpi`
//! feature and a launcher (`mpirun`, `srun`), [`Job::from_launcher`] opens MPI and every rank
//! holds the same communicator (see `mpi.rs`).
//!
//! What each rank does with it is decided elsewhere: the critic's gradients are averaged in
//! `reduce` before every optimiser step, arenas are keyed by their global index
//! ([`Job::first_arena`]), the training loop in `train` gathers reports and checks checksums.

#[cfg(feature = "mpi")]
mod mpi;
pub(crate) mod reduce;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The collective operations of a job, on whatever carries them (one process, or MPI).
/// Every rank must call the same operations in the same order with the same lengths.
pub trait Comm: Send + Sync {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;
    /// Ranks in the job.
    fn size(&self) -> usize;
    /// Replaces `buf` by its element-wise sum over all ranks.
    fn allreduce_sum_f32(&self, buf: &mut [f32]);
    /// Every rank's `value`, in rank order, on every rank.
    fn all_gather_u64(&self, value: u64) -> Vec<u64>;
    /// Every rank's `bytes`, in rank order, at rank 0 (empty on the other ranks).
    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>>;
    /// Returns once every rank has called it.
    fn barrier(&self);
    /// Ends every rank of the job with `code` (MPI_Abort); returns only where there is no job
    /// to end (one process).
    fn abort(&self, code: i32);
    /// What carries the job, for logs (`"one process"`, `"MPI (Open MPI v4.1.4)"`).
    fn describe(&self) -> String;
}

/// One process: rank 0 of 1, every collective the identity.
struct Single;

impl Comm for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn allreduce_sum_f32(&self, _: &mut [f32]) {}
    fn all_gather_u64(&self, value: u64) -> Vec<u64> {
        vec![value]
    }
    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        vec![bytes.to_vec()]
    }
    fn barrier(&self) {}
    fn abort(&self, _: i32) {}
    fn describe(&self) -> String {
        "one process".into()
    }
}

/// Time and bytes spent summing gradients over ranks since they were last taken.
#[derive(Debug, Default)]
struct Traffic {
    nanos: AtomicU64,
    bytes: AtomicU64,
    calls: AtomicU64,
    /// Gradient allreduces since the job started (never reset).
    total: AtomicU64,
}

/// What the gradient allreduces cost since [`Job::take_traffic`] was last called.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrafficReport {
    /// Seconds inside the allreduce calls (waiting for the slowest rank included).
    pub seconds: f64,
    /// Bytes each rank contributed (the buffer lengths).
    pub bytes: u64,
    /// Allreduce calls.
    pub calls: u64,
}

/// This process's place in a training job: its rank among `size` ranks and the communicator.
#[derive(Clone)]
pub struct Job {
    comm: Arc<dyn Comm>,
    traffic: Arc<Traffic>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Job(rank {} of {})", self.rank(), self.size())
    }
}

impl Default for Job {
    fn default() -> Job {
        Job::single()
    }
}

/// Problems opening a job.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// MPI could not be initialised.
    #[error(
        "MPI could not be initialised (was it already, or is the launcher's environment broken?)"
    )]
    Init,
    /// A gather of more bytes than MPI's 32-bit counts address.
    #[error("gathering {bytes} bytes at rank 0: MPI counts address at most 2 GiB in one gather")]
    TooLarge {
        /// The bytes of every rank together.
        bytes: u64,
    },
    /// MPI gave less thread support than training needs.
    #[error(
        "the MPI library supports only {0} threading; training needs `serialized` (one thread at a time)"
    )]
    Threading(String),
}

/// Environment variables MPI launchers set in every process they start (Open MPI's `mpirun`,
/// MPICH/Hydra's `mpiexec`, PMIx and PMI-2 as Slurm's `srun --mpi=...` sets them).
pub const LAUNCHER_VARS: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"];

impl Job {
    /// One process: rank 0 of 1.
    pub fn single() -> Job {
        Job::with(Arc::new(Single))
    }

    fn with(comm: Arc<dyn Comm>) -> Job {
        Job {
            comm,
            traffic: Arc::new(Traffic::default()),
        }
    }

    /// The job this process was started in: MPI when the build has the `mpi` feature and a
    /// launcher started the process (one of [`LAUNCHER_VARS`] is set), one process otherwise.
    /// MPI is initialised at most once per process; keep the returned job for the process's
    /// whole life (MPI is finalised when the last clone is dropped).
    pub fn from_launcher() -> Result<Job, JobError> {
        let launched = LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some());
        if !launched {
            return Ok(Job::single());
        }
        #[cfg(feature = "mpi")]
        {
            Ok(Job::with(Arc::new(mpi::MpiComm::init()?)))
        }
        #[cfg(not(feature = "mpi"))]
        {
            Ok(Job::single())
        }
    }

    /// The tasks a launcher started together with this process, when it says (Open MPI's
    /// `OMPI_COMM_WORLD_SIZE`, PMI's `PMI_SIZE`, Slurm's `SLURM_STEP_NUM_TASKS` under `srun`).
    /// More than one while this process is a one-rank job means the tasks are not joined (a
    /// build without the `mpi` feature, or `srun` without `--mpi=pmix|pmi2`): every task would
    /// train alone into the same run directory.
    pub fn launcher_tasks() -> Option<usize> {
        launcher_tasks_from(|v| std::env::var(v).ok())
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// True on the rank that prints and writes the run's files.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The global index of this rank's first arena when every rank steps `arenas` arenas:
    /// arena `a` of rank `r` is arena `r * arenas + a` of the job, and its random streams are
    /// keyed by that index, so one rank over B arenas and two over B/2 each draw the same.
    pub fn first_arena(&self, arenas: usize) -> u64 {
        (self.rank() * arenas) as u64
    }

    /// The key of a stream that is not an arena's (a shuffle or sampling stream), made
    /// distinct per rank: `base` itself on rank 0, so a one-rank job draws what a run without
    /// a job draws.
    pub(crate) fn rank_key(&self, base: u64) -> u64 {
        base - self.rank() as u64
    }

    /// What carries the job.
    pub fn describe(&self) -> String {
        self.comm.describe()
    }

    /// Sums `buf` over ranks in place (recording the time and bytes, see
    /// [`Job::take_traffic`]).
    pub fn allreduce_sum_f32(&self, buf: &mut [f32]) {
        let start = Instant::now();
        self.comm.allreduce_sum_f32(buf);
        let t = &self.traffic;
        t.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        t.bytes
            .fetch_add(std::mem::size_of_val(buf) as u64, Ordering::Relaxed);
        t.calls.fetch_add(1, Ordering::Relaxed);
        t.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Gradient allreduces this rank has taken part in since the job started: equal on every
    /// rank while the ranks step together.
    pub fn allreduces(&self) -> u64 {
        self.traffic.total.load(Ordering::Relaxed)
    }

    /// Every rank's value, in rank order.
    pub fn all_gather_u64(&self, value: u64) -> Vec<u64> {
        self.comm.all_gather_u64(value)
    }

    /// Every rank's bytes at rank 0 (empty elsewhere). MPI counts in 32-bit integers: more
    /// than 2 GiB in all is refused, on every rank alike.
    pub fn gather_bytes(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, JobError> {
        if self.size() > 1 {
            let total: u64 = self.all_gather_u64(bytes.len() as u64 + 1).iter().sum();
            if total > i32::MAX as u64 {
                return Err(JobError::TooLarge { bytes: total });
            }
        }
        Ok(self.comm.gather_bytes(bytes))
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// Ends the whole job with `code` when it has several ranks (a rank that stops alone
    /// would leave the others waiting in a collective forever); does nothing with one.
    pub fn abort(&self, code: i32) {
        if self.size() > 1 {
            self.comm.abort(code);
        }
    }

    /// The gradient allreduces' time and bytes since the last call.
    pub fn take_traffic(&self) -> TrafficReport {
        let t = &self.traffic;
        TrafficReport {
            seconds: t.nanos.swap(0, Ordering::Relaxed) as f64 * 1e-9,
            bytes: t.bytes.swap(0, Ordering::Relaxed),
            calls: t.calls.swap(0, Ordering::Relaxed),
        }
    }
}

/// [`Job::launcher_tasks`] from the variables `get` returns.
pub(crate) fn launcher_tasks_from(get: impl Fn(&str) -> Option<String>) -> Option<usize> {
    let slurm = get("SLURM_PROCID").is_some();
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"]
        .iter()
        .filter(|v| slurm || **v != "SLURM_STEP_NUM_TASKS")
        .filter_map(|v| get(v))
        .filter_map(|n| n.trim().parse::<usize>().ok())
        .max()
}

/// How `replicas` replicas split over `ranks` ranks when a job shards its replicas (seeds,
/// sweep grid points): contiguous blocks `first..end` in rank order, sizes differing by at most
/// one, every rank at least one replica (`ranks <= replicas`).
pub fn replica_blocks(replicas: usize, ranks: usize) -> Vec<(usize, usize)> {
    let ranks = ranks.max(1);
    (0..ranks)
        .map(|r| (r * replicas / ranks, (r + 1) * replicas / ranks))
        .collect()
}

/// Ranks of this job on this node, from the launcher's environment (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_SIZE`, MPICH's `MPI_LOCALNRANKS`, Slurm's
/// `SLURM_STEP_TASKS_PER_NODE` or `SLURM_NTASKS_PER_NODE`);
/// 1 when none says. The memory preflight divides the node's budget by it.
pub fn local_ranks() -> usize {
    local_ranks_from(|v| std::env::var(v).ok())
}

/// [`local_ranks`] from the variables `get` returns.
pub(crate) fn local_ranks_from(get: impl Fn(&str) -> Option<String>) -> usize {
    [
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        // The job step's tasks per node before the allocation's (`srun -n1` inside a larger
        // allocation is one task).
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_NTASKS_PER_NODE",
    ]
    .iter()
    .filter_map(|v| get(v))
    // Slurm may write `4(x2)`: 4 tasks on each of 2 nodes.
    .filter_map(|s| {
        let digits: String = s.trim().chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<usize>().ok()
    })
    .find(|&n| n > 0)
    .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::{Job, launcher_tasks_from, local_ranks_from, replica_blocks};

    /// An environment holding only `pairs`.
    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_launchers_task_count_is_read_from_mpi_and_srun() {
        assert_eq!(launcher_tasks_from(env(&[])), None);
        assert_eq!(
            launcher_tasks_from(env(&[("OMPI_COMM_WORLD_SIZE", "4")])),
            Some(4)
        );
        // Slurm's step size counts only inside a task srun started.
        assert_eq!(
            launcher_tasks_from(env(&[("SLURM_STEP_NUM_TASKS", "8")])),
            None
        );
        let srun = env(&[("SLURM_PROCID", "3"), ("SLURM_STEP_NUM_TASKS", "8")]);
        assert_eq!(launcher_tasks_from(srun), Some(8));
    }

    proptest::proptest! {
        #[test]
        fn replica_blocks_cover_every_replica_once_and_evenly(
            replicas in 1usize..300,
            ranks in 1usize..64,
        ) {
            proptest::prop_assume!(ranks <= replicas);
            let blocks = replica_blocks(replicas, ranks);
            proptest::prop_assert_eq!(blocks.len(), ranks);
            proptest::prop_assert_eq!(blocks[0].0, 0);
            proptest::prop_assert_eq!(blocks[ranks - 1].1, replicas);
            for w in blocks.windows(2) {
                proptest::prop_assert_eq!(w[0].1, w[1].0);
            }
            let sizes: Vec<usize> = blocks.iter().map(|(a, b)| b - a).collect();
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            proptest::prop_assert!(*lo >= 1 && hi - lo <= 1);
        }
    }

    #[test]
    fn local_ranks_read_the_launchers_variables() {
        assert_eq!(local_ranks_from(env(&[])), 1);
        assert_eq!(
            local_ranks_from(env(&[("OMPI_COMM_WORLD_LOCAL_SIZE", "4")])),
            4
        );
        assert_eq!(
            local_ranks_from(env(&[("SLURM_NTASKS_PER_NODE", "4(x2)")])),
            4
        );
        assert_eq!(local_ranks_from(env(&[("MPI_LOCALNRANKS", "zero")])), 1);
    }

    #[test]
    fn one_process_is_rank_0_of_1_and_its_collectives_are_the_identity() {
        let job = Job::single();
        assert_eq!((job.rank(), job.size(), job.first_arena(64)), (0, 1, 0));
        let mut buf = [1.5f32, -2.0];
        job.allreduce_sum_f32(&mut buf);
        assert_eq!(buf, [1.5, -2.0]);
        assert_eq!(job.all_gather_u64(7), vec![7]);
        assert_eq!(job.rank_key(u64::MAX >> 8), u64::MAX >> 8);
        let t = job.take_traffic();
        assert_eq!((t.bytes, t.calls), (8, 1));
        assert_eq!(job.take_traffic().calls, 0);
    }
}
