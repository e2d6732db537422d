#!/usr/bin/env bash
# The full-size preemption soak: a tiny run interrupted COUNT times (default 50), alternating
# SIGKILL, SIGTERM and SIGUSR1 at random moments, restarted each time by the same
# `gridarena train --resume-if-exists` command, must end bit for bit as an uninterrupted run
# (metrics and the final checkpoint's tensors). CI runs the same test with 6 interruptions.
#   scripts/soak.sh [COUNT] [SEED]
# SEED varies the moments (default 2026); every round's signal, delay and outcome is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GRIDARENA_SOAK="${1:-50}"
export GRIDARENA_SOAK_SEED="${2:-2026}"
exec cargo test --test preemption a_run_interrupted_again_and_again -- --nocapture
