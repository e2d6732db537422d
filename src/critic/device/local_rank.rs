//! The rank's index among the ranks on its node, as the launcher exports it: OpenMPI's
//! `mpirun`, Slurm's `srun`, MPICH's Hydra. `--device gpu` (and `auto`'s GPU choice) takes
//! hardware adapter `local rank % adapters`, so 4 ranks on a 4-GPU node use 4 GPUs.

use crate::critic::CriticError;

/// The variables naming the node-local rank, in the order they are read.
pub const LOCAL_RANK_VARS: [&str; 3] = [
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "MPI_LOCALRANKID",
];

/// A node-local rank and the variable it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalRank {
    /// The rank's index on its node, from 0.
    pub rank: usize,
    /// The variable it came from (one of [`LOCAL_RANK_VARS`]).
    pub var: &'static str,
}

impl LocalRank {
    /// The adapter this rank takes among `count` (at least 1) candidates: `rank % count`.
    pub fn pick(self, count: usize) -> usize {
        self.rank % count.max(1)
    }
}

impl std::fmt::Display for LocalRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "local rank {} of {}", self.rank, self.var)
    }
}

/// The node-local rank from the first of [`LOCAL_RANK_VARS`] that `get` finds (`get` is the
/// environment, `|k| std::env::var(k).ok()`); `None` outside a launcher; an error naming the
/// variable when its value is not a non-negative integer.
pub fn local_rank(get: impl Fn(&str) -> Option<String>) -> Result<Option<LocalRank>, CriticError> {
    for var in LOCAL_RANK_VARS {
        let Some(value) = get(var) else { continue };
        let digits = value.trim();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CriticError::LocalRank { var, value });
        }
        return match digits.parse() {
            Ok(rank) => Ok(Some(LocalRank { rank, var })),
            Err(_) => Err(CriticError::LocalRank { var, value }),
        };
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::{LOCAL_RANK_VARS, LocalRank, local_rank};
    use crate::critic::CriticError;
    use proptest::prelude::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_launcher_variable_means_no_local_rank() {
        assert_eq!(local_rank(env(&[])).unwrap(), None);
        assert_eq!(
            local_rank(env(&[("OMPI_COMM_WORLD_RANK", "3")])).unwrap(),
            None
        );
    }

    #[test]
    fn each_launcher_variable_is_read_and_openmpi_comes_first() {
        for var in LOCAL_RANK_VARS {
            assert_eq!(
                local_rank(env(&[(var, "2")])).unwrap(),
                Some(LocalRank { rank: 2, var })
            );
        }
        let all = [
            ("MPI_LOCALRANKID", "7"),
            ("SLURM_LOCALID", "5"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
        ];
        let got = local_rank(env(&all)).unwrap().unwrap();
        assert_eq!((got.rank, got.var), (3, "OMPI_COMM_WORLD_LOCAL_RANK"));
        let got = local_rank(env(&all[..2])).unwrap().unwrap();
        assert_eq!((got.rank, got.var), (5, "SLURM_LOCALID"));
        assert_eq!(
            got.to_string(),
            "local rank 5 of SLURM_LOCALID",
            "the description says which variable"
        );
    }

    #[test]
    fn a_malformed_value_is_an_error_naming_the_variable() {
        for bad in ["", "x", "-1", "+1", "1.0", "99999999999999999999999"] {
            let err = local_rank(env(&[("SLURM_LOCALID", bad)])).unwrap_err();
            assert!(
                matches!(&err, CriticError::LocalRank { var: "SLURM_LOCALID", value } if value == bad),
                "{bad:?}: {err:?}"
            );
            assert!(err.to_string().contains("SLURM_LOCALID"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn the_pick_is_an_adapter_that_exists(rank in 0usize..100_000, count in 1usize..64) {
            let text = rank.to_string();
            let got = local_rank(env(&[("OMPI_COMM_WORLD_LOCAL_RANK", &text)])).unwrap().unwrap();
            prop_assert_eq!(got.rank, rank);
            let pick = got.pick(count);
            prop_assert!(pick < count);
            prop_assert_eq!(pick, rank % count);
        }

        #[test]
        fn ranks_of_a_full_node_take_distinct_adapters(count in 1usize..16) {
            let picks: std::collections::BTreeSet<_> = (0..count)
                .map(|rank| LocalRank { rank, var: "SLURM_LOCALID" }.pick(count))
                .collect();
            prop_assert_eq!(picks.len(), count);
        }
    }
}
