//! The aggregate estimators over a score matrix `runs x tasks`, as rliable defines them: the
//! mean and the median of the per-task means, the interquartile mean of every score (the 25%
//! trimmed mean), the optimality gap, score distributions (the fraction of scores above a
//! threshold) and the probability of improvement of one algorithm over another.

/// Scores of one algorithm: `runs x tasks`, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    runs: usize,
    tasks: usize,
    data: Vec<f64>,
}

/// Why a score matrix was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScoresError {
    /// No run or no task.
    #[error("a score matrix needs at least one run and one task (got {runs} x {tasks})")]
    Empty {
        /// Runs.
        runs: usize,
        /// Tasks.
        tasks: usize,
    },
    /// Rows of different lengths.
    #[error("run {run} has {got} scores; run 0 has {want}")]
    Ragged {
        /// The run.
        run: usize,
        /// Its length.
        got: usize,
        /// Run 0's.
        want: usize,
    },
    /// A score that is not a finite number.
    #[error("the score of run {run} on task {task} is {value}: scores must be finite")]
    NotFinite {
        /// Run.
        run: usize,
        /// Task.
        task: usize,
        /// The value.
        value: f64,
    },
    /// Two matrices compared over different tasks.
    #[error("{a} tasks against {b}: compared algorithms need the same tasks")]
    Tasks {
        /// One count.
        a: usize,
        /// The other.
        b: usize,
    },
}

impl Scores {
    /// A matrix from its rows (one per run).
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Scores, ScoresError> {
        let runs = rows.len();
        let tasks = rows.first().map_or(0, Vec::len);
        if runs == 0 || tasks == 0 {
            return Err(ScoresError::Empty { runs, tasks });
        }
        let mut data = Vec::with_capacity(runs * tasks);
        for (run, row) in rows.iter().enumerate() {
            if row.len() != tasks {
                return Err(ScoresError::Ragged {
                    run,
                    got: row.len(),
                    want: tasks,
                });
            }
            for (task, &value) in row.iter().enumerate() {
                if !value.is_finite() {
                    return Err(ScoresError::NotFinite { run, task, value });
                }
            }
            data.extend_from_slice(row);
        }
        Ok(Scores { runs, tasks, data })
    }

    /// Runs.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// Tasks.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// Score of `run` on `task`.
    pub fn get(&self, run: usize, task: usize) -> f64 {
        self.data[run * self.tasks + task]
    }

    /// Every score, run by run.
    pub fn all(&self) -> &[f64] {
        &self.data
    }

    /// A matrix of the same shape whose entry (n, m) is this one's (`pick(n, m)`, m): each
    /// task's column resampled on its own (a stratified bootstrap sample).
    pub(crate) fn resampled(&self, mut pick: impl FnMut(usize, usize) -> usize) -> Scores {
        let mut data = Vec::with_capacity(self.data.len());
        for n in 0..self.runs {
            for m in 0..self.tasks {
                data.push(self.get(pick(n, m), m));
            }
        }
        Scores { data, ..*self }
    }

    fn task_means(&self) -> Vec<f64> {
        (0..self.tasks)
            .map(|m| (0..self.runs).map(|n| self.get(n, m)).sum::<f64>() / self.runs as f64)
            .collect()
    }
}

/// The aggregate metrics `gridarena report` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// The mean of the per-task means.
    Mean,
    /// The median of the per-task means.
    Median,
    /// The interquartile mean of all scores.
    Iqm,
    /// The optimality gap at 1 (normalised scores).
    OptimalityGap,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 4] = [
        Metric::Iqm,
        Metric::Median,
        Metric::Mean,
        Metric::OptimalityGap,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Mean => "mean",
            Metric::Median => "median",
            Metric::Iqm => "IQM",
            Metric::OptimalityGap => "optimality gap",
        }
    }

    /// Its value on `scores`.
    pub fn of(self, scores: &Scores) -> f64 {
        match self {
            Metric::Mean => mean(scores),
            Metric::Median => median(scores),
            Metric::Iqm => iqm(scores),
            Metric::OptimalityGap => optimality_gap(scores, 1.0),
        }
    }
}

/// The mean over tasks of the mean over runs.
pub fn mean(scores: &Scores) -> f64 {
    let t = scores.task_means();
    t.iter().sum::<f64>() / t.len() as f64
}

/// The median over tasks of the mean over runs (the mean of the two middle ones for an even
/// number of tasks).
pub fn median(scores: &Scores) -> f64 {
    let mut t = scores.task_means();
    t.sort_by(f64::total_cmp);
    let k = t.len();
    if k % 2 == 1 {
        t[k / 2]
    } else {
        (t[k / 2 - 1] + t[k / 2]) / 2.0
    }
}

/// The interquartile mean: the mean of all scores after cutting `floor(n / 4)` from each end
/// of the sorted n scores (scipy's `trim_mean(scores, 0.25, axis=None)`).
pub fn iqm(scores: &Scores) -> f64 {
    let mut all = scores.all().to_vec();
    all.sort_by(f64::total_cmp);
    let n = all.len();
    let cut = (0.25 * n as f64) as usize;
    let kept = &all[cut..n - cut];
    kept.iter().sum::<f64>() / kept.len() as f64
}

/// `gamma` minus the mean of the scores clipped at `gamma`: how far below the target the
/// scores fall, on average.
pub fn optimality_gap(scores: &Scores, gamma: f64) -> f64 {
    let all = scores.all();
    gamma - all.iter().map(|&s| s.min(gamma)).sum::<f64>() / all.len() as f64
}

/// The fraction of all scores strictly above `tau` (one point of a performance profile).
pub fn score_distribution(scores: &Scores, tau: f64) -> f64 {
    let all = scores.all();
    all.iter().filter(|&&s| s > tau).count() as f64 / all.len() as f64
}

/// The probability that a run of `x` scores above a run of `y` on a task (ties count a half),
/// averaged over tasks: the Mann-Whitney U statistic over `runs_x x runs_y` per task, and 0.5 on
/// a task where both hold the same scores in the same order.
pub fn probability_of_improvement(x: &Scores, y: &Scores) -> Result<f64, ScoresError> {
    if x.tasks != y.tasks {
        return Err(ScoresError::Tasks {
            a: x.tasks,
            b: y.tasks,
        });
    }
    let mut total = 0.0;
    for m in 0..x.tasks {
        let same = x.runs == y.runs && (0..x.runs).all(|n| x.get(n, m) == y.get(n, m));
        if same {
            total += 0.5;
            continue;
        }
        let mut u = 0.0;
        for a in 0..x.runs {
            for b in 0..y.runs {
                let (p, q) = (x.get(a, m), y.get(b, m));
                u += if p > q {
                    1.0
                } else if p == q {
                    0.5
                } else {
                    0.0
                };
            }
        }
        total += u / (x.runs * y.runs) as f64;
    }
    Ok(total / x.tasks as f64)
}
