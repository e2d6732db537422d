//! What a run reports once per update, at rank 0: a line of `metrics.jsonl`, the TensorBoard
//! scalars of every replica, and the progress bar (environment steps, steps per second, the
//! mean return of the last 20 updates that finished episodes, the loss). The other ranks hold
//! a hidden bar and no TensorBoard files.

use std::collections::VecDeque;
use std::time::Instant;

use indicatif::ProgressBar;

use super::RunError;
use super::run_dir::RunDir;
use super::tensorboard::RunBoard;
use crate::dist::TrafficReport;
use crate::layout::Layout;
use crate::train::kit::stats::{self, UpdateStats};

/// Updates whose mean returns the progress bar averages.
const RECENT: usize = 20;

/// A run's reports: the progress bar, the TensorBoard files and the recent returns.
pub(super) struct Reporter {
    bar: ProgressBar,
    /// Rank 0's TensorBoard files (none on the other ranks).
    board: Option<RunBoard>,
    /// Mean returns of the last [`RECENT`] updates with finished episodes, for the bar.
    recent: VecDeque<f64>,
    /// When the updates started: the `seconds` of the metrics and of the summary.
    start: Instant,
}

impl Reporter {
    /// A reporter whose bar (hidden unless `show`) counts `total` environment steps and stands
    /// at `at`, writing TensorBoard files into `board`.
    pub(super) fn new(show: bool, total: u64, at: u64, board: Option<RunBoard>) -> Reporter {
        let bar = progress_bar(show, total);
        bar.set_position(at);
        Reporter {
            bar,
            board,
            recent: VecDeque::new(),
            start: Instant::now(),
        }
    }

    /// Reports the job's update `done = (update, env_steps)` at `sps` environment steps per
    /// second: its line of `metrics.jsonl` (with `job = (ranks, traffic)`, the ranks and their
    /// allreduce traffic when there are several), its TensorBoard scalars and the bar.
    pub(super) fn log(
        &mut self,
        dir: &RunDir,
        stats: &UpdateStats,
        layout: &Layout,
        done: (u64, u64),
        sps: f64,
        (ranks, traffic): (usize, TrafficReport),
    ) -> Result<(), RunError> {
        let seconds = self.start.elapsed().as_secs_f64();
        let (mut line, mean_return) = stats::metrics_line(stats, layout, done, sps, seconds);
        if ranks > 1 {
            line["ranks"] = ranks.into();
            line["allreduce_seconds"] = traffic.seconds.into();
            line["allreduce_bytes"] = traffic.bytes.into();
            line["allreduce_calls"] = traffic.calls.into();
        }
        if let Some(r) = mean_return {
            self.recent.push_back(r);
            if self.recent.len() > RECENT {
                self.recent.pop_front();
            }
        }
        dir.append_metrics(&line.to_string())?;
        if let Some(board) = &mut self.board {
            board.log(stats, layout.learners, done.1, sps)?;
        }
        let recent_mean = if self.recent.is_empty() {
            f64::NAN
        } else {
            self.recent.iter().sum::<f64>() / self.recent.len() as f64
        };
        self.bar.set_position(done.1);
        self.bar.set_message(format!(
            "{sps:.0} sps  return {recent_mean:.2}  loss {:.4}",
            stats.loss
        ));
        Ok(())
    }

    /// Leaves the bar where it is (an update failed).
    pub(super) fn abandon(&self) {
        self.bar.abandon();
    }

    /// Clears the bar (the run ended).
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Seconds since the updates started.
    pub(super) fn seconds(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// The run's progress bar over environment steps (hidden unless `show`).
fn progress_bar(show: bool, total_steps: u64) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(total_steps)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} env steps  {msg}  eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
