//! [`Comm`] over MPI's world communicator (rsmpi). One thread at a time calls MPI (the thread
//! running the training loop, which may be a worker of the process's rayon pool rather than
//! the main thread; the parallel work inside an update never calls MPI), so MPI is initialised
//! with `Serialized` threading.

use mpi::Count;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use super::{Comm, JobError};

/// MPI's world, open for the life of this value (MPI is finalised when it is dropped).
pub(super) struct MpiComm {
    _universe: Universe,
    rank: usize,
    size: usize,
    version: String,
}

impl MpiComm {
    /// Initialises MPI (once per process).
    pub(super) fn init() -> Result<MpiComm, JobError> {
        let (universe, threading) =
            mpi::initialize_with_threading(mpi::Threading::Serialized).ok_or(JobError::Init)?;
        if threading < mpi::Threading::Serialized {
            return Err(JobError::Threading(format!("{threading:?}").to_lowercase()));
        }
        let world = universe.world();
        let version = mpi::environment::library_version().unwrap_or_else(|_| "MPI".into());
        // "Open MPI v4.1.4, package: Debian OpenMPI, ident: ..., repo rev: ...": the first part.
        let version = version
            .split([',', '\n'])
            .next()
            .unwrap_or("MPI")
            .trim()
            .to_string();
        Ok(MpiComm {
            rank: world.rank() as usize,
            size: world.size() as usize,
            _universe: universe,
            version,
        })
    }

    /// The world communicator (a handle, not a copy: cheap to make for every call, and it
    /// keeps this type `Send + Sync`).
    fn world(&self) -> SimpleCommunicator {
        SimpleCommunicator::world()
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allreduce_sum_f32(&self, buf: &mut [f32]) {
        let send = buf.to_vec();
        self.world()
            .all_reduce_into(&send[..], buf, SystemOperation::sum());
    }

    fn all_gather_u64(&self, value: u64) -> Vec<u64> {
        let mut out = vec![0u64; self.size];
        self.world().all_gather_into(&value, &mut out[..]);
        out
    }

    fn gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        // Every message carries one trailing byte: the buffer of an empty slice is the dangling
        // pointer 1, which Open MPI reads as MPI_IN_PLACE and refuses (MPI_ERR_ARG).
        let mut sent = Vec::with_capacity(bytes.len() + 1);
        sent.extend_from_slice(bytes);
        sent.push(0);
        let world = self.world();
        let root = world.process_at_rank(0);
        let lens = self.all_gather_u64(sent.len() as u64);
        if self.rank != 0 {
            root.gather_varcount_into(&sent[..]);
            return Vec::new();
        }
        let counts: Vec<Count> = lens.iter().map(|&l| l as Count).collect();
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let mut all = vec![0u8; lens.iter().sum::<u64>() as usize];
        {
            let mut partition = PartitionMut::new(&mut all[..], counts, &displs[..]);
            root.gather_varcount_into_root(&sent[..], &mut partition);
        }
        let mut out = Vec::with_capacity(self.size);
        let mut at = 0usize;
        for l in lens {
            out.push(all[at..at + l as usize - 1].to_vec());
            at += l as usize;
        }
        out
    }

    fn barrier(&self) {
        self.world().barrier();
    }

    fn abort(&self, code: i32) {
        self.world().abort(code)
    }

    fn describe(&self) -> String {
        format!("MPI, {} ranks ({})", self.size, self.version)
    }
}
