#!/usr/bin/env bash
# The full-size preemption soak: a tiny run interrupted COUNT times (default 50), alternating
# SIGKILL, SIGTERM and SIGUSR1 at random moments, restarted each time by the same
# `gridarena train --resume-if-exists` command, must end bit for bit as an uninterrupted run
# (metrics and the final checkpoint's tensors). CI runs the same test with 6 interruptions.
#   scripts/soak.sh [COUNT] [SEED]
#   scripts/soak.sh --mpi [COUNT]    the same for a job under `mpirun -np 2` (CI: 3 interruptions):
#                                    SIGTERM, SIGKILL and SIGUSR1 in turn, to one rank or the other
# SEED varies the moments (default 2026); every round's signal, delay and outcome is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--mpi" ]; then
    export GRIDARENA_MPI_SOAK="${2:-50}"
    exec cargo test --features mpi --test mpi -- interrupted
fi
export GRIDARENA_SOAK="${1:-50}"
export GRIDARENA_SOAK_SEED="${2:-2026}"
exec cargo test --test preemption a_run_interrupted_again_and_again -- --nocapture
