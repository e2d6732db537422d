//! How `gridarena train` stops on a signal: SIGINT (Ctrl-C), SIGTERM (`kill`, a scheduler's
//! preemption) and SIGUSR1 (Slurm's `--signal` warning before the time limit) all ask the run
//! to finish its current update, save a checkpoint and exit with [`EXIT_STOPPED`]; a second
//! signal exits at once, without a checkpoint, with 128 + its number (130 for a second Ctrl-C).
//!
//! The signals are taken on a thread of their own (signal-hook's iterator), so the messages
//! are printed outside a signal handler. The flag it sets is the one training polls between
//! updates ([`TrainOptions::stop`](gridarena::train::TrainOptions::stop)); under MPI the ranks
//! agree on it, so a signal on any rank stops every rank after the same update.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;

/// The exit status of a run a signal stopped after its checkpoint (EX_TEMPFAIL of
/// sysexits.h): not finished, nothing lost, run the same command again (`--resume-if-exists`)
/// to continue. A finished run exits 0, a failed one 1.
pub(crate) const EXIT_STOPPED: u8 = 75;

/// The signals that stop a run.
const STOP_SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGUSR1];

/// What the stop handler shares with the run: the flag training polls, and the first signal
/// that set it (0 while none has).
pub(crate) struct StopHandler {
    /// Set by the first signal; [`TrainOptions::stop`](gridarena::train::TrainOptions::stop).
    pub(crate) stop: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
}

impl StopHandler {
    /// The name of the signal that stopped this process (`None` when none did: the stop came
    /// from another rank of the job).
    pub(crate) fn signal_name(&self) -> Option<&'static str> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(name(s)),
        }
    }
}

/// `SIGINT`, `SIGTERM` or `SIGUSR1`.
fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGUSR1 => "SIGUSR1",
        _ => "signal",
    }
}

/// Takes SIGINT, SIGTERM and SIGUSR1 from now on: the first asks training to checkpoint and
/// stop after the current update, a second exits at once with 128 + its number.
pub(crate) fn install_stop_handler() -> Result<StopHandler> {
    let handler = StopHandler {
        stop: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicI32::new(0)),
    };
    let mut signals = Signals::new(STOP_SIGNALS).context("installing the signal handlers")?;
    let (stop, first) = (handler.stop.clone(), handler.signal.clone());
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if stop.swap(true, Ordering::SeqCst) {
                    eprintln!(
                        "\nsecond signal ({}): exiting without a checkpoint",
                        name(signal)
                    );
                    std::process::exit(128 + signal);
                }
                first.store(signal, Ordering::SeqCst);
                eprintln!(
                    "\n{}: finishing the current update and saving a checkpoint, then exiting \
                     with status {EXIT_STOPPED} (a second signal aborts at once)",
                    name(signal)
                );
            }
        })
        .context("starting the signal thread")?;
    Ok(handler)
}
