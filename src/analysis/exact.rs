//! Exact best responses and NashConv over a [`TransitionModel`] with memory proportional to
//! the number of states: the frozen policies are a table `[S, N, A]`, values are `[S]` or
//! `[S, N]`, and successors are computed on the fly by the rules, or read from an optional
//! cache of the deterministic successor under every applied joint action (`[S, A^M]`, capped in
//! bytes: [`super::successors`]). No table is indexed by edges.
//!
//! Per state the solvers enumerate applied joint actions `b` (chance already folded in): each
//! other learner k applies `b_k` with probability `q_k(b_k) = sum_a pi_k(a | s) P(b_k | a)`
//! (slip), random walkers uniformly, removed agents idle. Agent i's best response then needs
//! `Q_i(s, a_i) = sum_b P(b_i | a_i) prod_{k != i} q_k(b_k) [r_i(s, b) + gamma V_i(s'(s, b))]`,
//! and policy evaluation weights every `b` by the full product.

use std::ops::ControlFlow;

use rayon::prelude::*;
use serde::Serialize;

mod stages;
pub(crate) use stages::agents_of;
pub use stages::{
    BestResponseDone, EvaluationDone, ExactError, ExactProgress, NashConv, Stages, SweepHook,
    nashconv, nashconv_from,
};

use super::model::TransitionModel;
use super::successors::{BLOCK, CacheStats, Entry, SuccessorCache};
use crate::components::AppliedAction;

/// Frozen policies: `probs[(s * N + i) * A + a]`.
#[derive(Debug, Clone)]
pub struct PolicyTable {
    /// Learners.
    pub learners: usize,
    /// Actions.
    pub actions: usize,
    /// Action distributions per state and learner.
    pub probs: Vec<f32>,
}

impl PolicyTable {
    /// Every learner uniform in every state.
    pub fn uniform(model: &TransitionModel) -> PolicyTable {
        let (n, a) = (model.learners(), model.actions());
        PolicyTable {
            learners: n,
            actions: a,
            probs: vec![1.0 / a as f32; model.states() as usize * n * a],
        }
    }

    /// A table from a function of (state, learner) to a distribution.
    pub fn from_fn(
        model: &TransitionModel,
        f: impl Fn(u64, usize, &mut [f32]) + Sync,
    ) -> PolicyTable {
        let (n, a) = (model.learners(), model.actions());
        let mut probs = vec![0.0f32; model.states() as usize * n * a];
        probs
            .par_chunks_mut(n * a)
            .enumerate()
            .for_each(|(s, row)| {
                for (i, d) in row.chunks_exact_mut(a).enumerate() {
                    f(s as u64, i, d);
                }
            });
        PolicyTable {
            learners: n,
            actions: a,
            probs,
        }
    }

    /// Deterministic policies from greedy actions `[S, N]`.
    pub fn from_actions(model: &TransitionModel, actions: &[u8]) -> PolicyTable {
        Self::from_fn(model, |s, i, d| {
            d.fill(0.0);
            d[actions[s as usize * model.learners() + i] as usize] = 1.0;
        })
    }

    /// Learner i's distribution in state s.
    pub fn dist(&self, s: u64, i: usize) -> &[f32] {
        let at = (s as usize * self.learners + i) * self.actions;
        &self.probs[at..at + self.actions]
    }
}

/// What the solvers need of a joint policy: every learner's intended-action distribution per
/// state. [`PolicyTable`] stores it (as `f32`); PSRO's meta-strategy mixtures compute it from
/// their members in `f64` (the gridworld PSRO module).
pub trait Behaviour: Sync {
    /// Writes learner `i`'s distribution over intended actions in state `s` into `out` (`A`
    /// entries).
    fn dist_into(&self, s: u64, i: usize, out: &mut [f64]);
}

impl Behaviour for PolicyTable {
    fn dist_into(&self, s: u64, i: usize, out: &mut [f64]) {
        for (o, &p) in out.iter_mut().zip(self.dist(s, i)) {
            *o = p as f64;
        }
    }
}

/// A per-thread scratch for on-the-fly successors.
struct Walker {
    state: crate::substrate::ArenaState,
    applied: Vec<AppliedAction>,
    rewards: Vec<f32>,
}

impl Walker {
    fn new(model: &TransitionModel) -> Walker {
        Walker {
            state: model.scratch(),
            applied: vec![AppliedAction(0); model.agents()],
            rewards: vec![0.0; model.learners()],
        }
    }

    /// The successor of state `s` under applied joint `code` (slot 0 most significant).
    fn step(&mut self, model: &TransitionModel, s: u64, code: u64) -> (Option<u64>, &[f32]) {
        let a = model.actions() as u64;
        let mut c = code;
        for slot in (0..model.agents()).rev() {
            self.applied[slot] = AppliedAction((c % a) as u8);
            c /= a;
        }
        model.load(s, &mut self.state);
        let next = model.step(&mut self.state, &self.applied).state;
        for (out, r) in self.rewards.iter_mut().zip(model.rewards(&self.state)) {
            *out = r.0;
        }
        (next, &self.rewards)
    }
}

/// Receives one applied joint action's code, next state (None: terminal) and rewards.
type Edge<'f> = dyn FnMut(u64, Option<u64>, &[f32]) + 'f;

/// Iteration limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Stop when the largest value change of a sweep is below this.
    pub delta: f64,
    /// Stop after this many sweeps regardless.
    pub max_sweeps: usize,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            delta: 1e-10,
            max_sweeps: 100_000,
        }
    }
}

/// The solvers over one model, with or without a successor cache.
pub struct Solver<'a> {
    model: &'a TransitionModel,
    cache: Option<SuccessorCache>,
    gamma: f64,
    tol: Tolerance,
}

/// Values of one solve: where it ended, or where it stands between two sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// `[S]` (best response) or `[S, N]` (policy evaluation).
    pub values: Vec<f64>,
    /// Sweeps done.
    pub sweeps: usize,
    /// The last sweep's largest change.
    pub delta: f64,
}

impl<'a> Solver<'a> {
    /// A solver; `cache` when the preflight allowed one.
    pub fn new(
        model: &'a TransitionModel,
        cache: Option<SuccessorCache>,
        gamma: f64,
        tol: Tolerance,
    ) -> Solver<'a> {
        Solver {
            model,
            cache,
            gamma,
            tol,
        }
    }

    /// The cache's counters so far (None without a cache).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().map(SuccessorCache::stats)
    }

    /// Per-agent applied-action probabilities `[M, A]` in state `s` (`out`), with `A` entries
    /// of scratch after them.
    fn applied_probs<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        s: u64,
        alive: &[bool],
        out: &mut [f64],
    ) {
        let (m, a) = (self.model.agents(), self.model.actions());
        let (out, pi) = out.split_at_mut(m * a);
        for slot in 0..m {
            let row = &mut out[slot * a..(slot + 1) * a];
            if slot < self.model.learners() && alive[slot] {
                policy.dist_into(s, slot, pi);
                for (b, v) in row.iter_mut().enumerate() {
                    *v = (0..a).map(|x| pi[x] * self.model.slip_prob(x, b)).sum();
                }
            } else {
                for (b, v) in row.iter_mut().enumerate() {
                    *v = self.model.applied_prob(slot, alive[slot], None, b);
                }
            }
        }
    }

    /// One sweep over every state: `update(s, visit)` where `visit(f)` calls `f(code, next,
    /// rewards)` for every applied joint action of s. Returns the largest change.
    fn sweep<F>(&self, width: usize, old: &[f64], new: &mut [f64], update: F) -> f64
    where
        F: Fn(u64, &mut dyn FnMut(&mut Edge), &[bool], &mut Vec<f64>, &mut [f64]) + Sync,
    {
        let j = self.model.applied_joint();
        let ju = j as usize;
        let cache = self.cache.as_ref();
        let n = self.model.learners();
        new.par_chunks_mut(width * BLOCK)
            .enumerate()
            .map_init(
                || {
                    (
                        Walker::new(self.model),
                        self.model.scratch(),
                        vec![false; self.model.agents()],
                        Vec::new(),
                    )
                },
                |(w, probe, alive, buf), (c, chunk)| {
                    let mut worst = 0.0f64;
                    let mut entry = cache.map_or(Entry::Miss, |cache| cache.entry(c as u64));
                    for (k, out) in chunk.chunks_exact_mut(width).enumerate() {
                        let s = (c * BLOCK + k) as u64;
                        self.model.load(s, probe);
                        for (x, al) in alive.iter_mut().enumerate() {
                            *al = TransitionModel::alive(probe, x);
                        }
                        let mut visit = |f: &mut Edge| match &mut entry {
                            Entry::Hit(slot) => {
                                for code in 0..ju {
                                    let at = k * ju + code;
                                    let nx = slot.next[at];
                                    f(
                                        code as u64,
                                        (nx != u32::MAX).then_some(nx as u64),
                                        &slot.rewards[at * n..(at + 1) * n],
                                    );
                                }
                            }
                            Entry::Fill(slot) => {
                                for code in 0..ju {
                                    let (nx, r) = w.step(self.model, s, code as u64);
                                    let at = k * ju + code;
                                    slot.next[at] = nx.map_or(u32::MAX, |t| t as u32);
                                    slot.rewards[at * n..(at + 1) * n].copy_from_slice(r);
                                    f(code as u64, nx, r);
                                }
                            }
                            Entry::Miss => {
                                for code in 0..j {
                                    let (nx, r) = w.step(self.model, s, code);
                                    f(code, nx, r);
                                }
                            }
                        };
                        update(s, &mut visit, alive, buf, out);
                        for (x, o) in out.iter().zip(&old[s as usize * width..]) {
                            worst = worst.max((x - o).abs());
                        }
                    }
                    worst
                },
            )
            .reduce(|| 0.0, f64::max)
    }

    /// Sweeps from `from` (zeros and no sweep when None) until the tolerance, calling `after`
    /// after every sweep: `Err` with the state reached when it breaks. Each sweep is a function
    /// of the values alone, so a solve continued from a saved state ends with the same bits.
    fn iterate(
        &self,
        width: usize,
        from: Option<Solved>,
        progress: &indicatif::ProgressBar,
        after: &mut dyn FnMut(&Solved) -> ControlFlow<()>,
        step: impl Fn(&[f64], &mut [f64]) -> f64,
    ) -> Result<Solved, Solved> {
        let s = self.model.states() as usize;
        let mut cur = from.unwrap_or_else(|| Solved {
            values: vec![0.0f64; s * width],
            sweeps: 0,
            delta: f64::INFINITY,
        });
        let mut next = vec![0.0f64; s * width];
        while cur.sweeps < self.tol.max_sweeps && cur.delta > self.tol.delta {
            cur.delta = step(&cur.values, &mut next);
            std::mem::swap(&mut cur.values, &mut next);
            cur.sweeps += 1;
            progress.set_message(format!("sweep {}, change {:.2e}", cur.sweeps, cur.delta));
            progress.tick();
            if after(&cur).is_break() {
                return Err(cur);
            }
        }
        Ok(cur)
    }

    /// The value of every learner under the joint policy, `[S, N]`.
    pub fn evaluate<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        progress: &indicatif::ProgressBar,
    ) -> Solved {
        either(self.evaluate_from(policy, None, progress, &mut |_| ControlFlow::Continue(())))
    }

    /// [`Solver::evaluate`] continued from `from`, `after` called after every sweep.
    fn evaluate_from<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        from: Option<Solved>,
        progress: &indicatif::ProgressBar,
        after: &mut dyn FnMut(&Solved) -> ControlFlow<()>,
    ) -> Result<Solved, Solved> {
        let (m, a, n) = (
            self.model.agents(),
            self.model.actions(),
            self.model.learners(),
        );
        let gamma = self.gamma;
        self.iterate(n, from, progress, after, |old, new| {
            self.sweep(n, old, new, |s, visit, alive, buf, out| {
                buf.resize(m * a + a, 0.0);
                let q = &mut buf[..];
                self.applied_probs(policy, s, alive, q);
                out.fill(0.0);
                visit(&mut |code, next, r| {
                    let w = weight(code, q, m, a, None);
                    if w == 0.0 {
                        return;
                    }
                    for k in 0..n {
                        let cont = next.map_or(0.0, |t| old[t as usize * n + k]);
                        out[k] += w * (r[k] as f64 + gamma * cont);
                    }
                });
            })
        })
    }

    /// Agent i's best-response values `[S]` against the others' frozen policies.
    pub fn best_response<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        i: usize,
        progress: &indicatif::ProgressBar,
    ) -> Solved {
        either(
            self.best_response_from(
                policy,
                i,
                None,
                progress,
                &mut |_| ControlFlow::Continue(()),
            ),
        )
    }

    /// [`Solver::best_response`] continued from `from`, `after` called after every sweep.
    fn best_response_from<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        i: usize,
        from: Option<Solved>,
        progress: &indicatif::ProgressBar,
        after: &mut dyn FnMut(&Solved) -> ControlFlow<()>,
    ) -> Result<Solved, Solved> {
        self.iterate(1, from, progress, after, |old, new| {
            self.best_response_sweep(policy, i, old, new, false)
        })
    }

    /// Agent i's greedy actions `[S]` with respect to its best-response `values` (from
    /// [`Solver::best_response`] against the same `policy`): in every state the lowest action
    /// whose value is within `1e-12` of the best (the idle action where i is removed).
    pub fn best_response_actions<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        i: usize,
        values: &[f64],
    ) -> Vec<u8> {
        let mut argmax = vec![0.0f64; values.len()];
        self.best_response_sweep(policy, i, values, &mut argmax, true);
        argmax.into_iter().map(|x| x as u8).collect()
    }

    /// One Bellman-optimality sweep for agent i: into `new` the best value per state, or with
    /// `argmax` the best action's index.
    fn best_response_sweep<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        i: usize,
        old: &[f64],
        new: &mut [f64],
        argmax: bool,
    ) -> f64 {
        let (m, a) = (self.model.agents(), self.model.actions());
        let gamma = self.gamma;
        self.sweep(1, old, new, |s, visit, alive, buf, out| {
            buf.clear();
            buf.resize(m * a + 2 * a, 0.0);
            let (q, by_own) = buf.split_at_mut(m * a + a);
            self.applied_probs(policy, s, alive, q);
            // Sum over the others' applied actions, per applied action of i.
            visit(&mut |code, next, r| {
                let w = weight(code, q, m, a, Some(i));
                if w == 0.0 {
                    return;
                }
                let b_i = digit(code, i, m, a);
                let cont = next.map_or(0.0, |t| old[t as usize]);
                by_own[b_i] += w * (r[i] as f64 + gamma * cont);
            });
            if !alive[i] {
                let idle = self.model.layout().idle_action as usize;
                out[0] = if argmax { idle as f64 } else { by_own[idle] };
                return;
            }
            let by_intended = (0..a).map(|x| {
                (0..a)
                    .map(|b| self.model.slip_prob(x, b) * by_own[b])
                    .sum::<f64>()
            });
            if argmax {
                let values: Vec<f64> = by_intended.collect();
                let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                out[0] = values.iter().position(|&x| x >= best - 1e-12).unwrap_or(0) as f64;
            } else {
                out[0] = by_intended.fold(f64::NEG_INFINITY, f64::max);
            }
        })
    }

    /// Exact NashConv of `policy` (all agents, or only `only`) with this solver (and its
    /// cache), and the best-response solves behind it (one per learner analysed, in order).
    /// No checkpoints: [`nashconv_from`] is the resumable driver for trained runs.
    pub fn nashconv<P: Behaviour + ?Sized>(
        &self,
        policy: &P,
        only: Option<usize>,
        progress: &indicatif::ProgressBar,
    ) -> (NashConv, Vec<Solved>) {
        let t0 = std::time::Instant::now();
        let model = self.model;
        let start = model.start_distribution();
        let n = model.learners();
        let eval = self.evaluate(policy, progress);
        let policy_values = stages::from_start(&start, &eval.values, n);
        let mut sweeps = vec![eval.sweeps];
        let agents = stages::agents_of(n, only);
        let mut br_values = policy_values.clone();
        let mut responses = Vec::with_capacity(agents.len());
        for &i in &agents {
            let br = self.best_response(policy, i, progress);
            sweeps.push(br.sweeps);
            br_values[i] = stages::from_start(&start, &br.values, 1)[0];
            responses.push(br);
        }
        let gains: Vec<f64> = (0..n).map(|k| br_values[k] - policy_values[k]).collect();
        let result = NashConv {
            nashconv: agents.iter().map(|&i| gains[i]).sum(),
            per_agent_gain: gains,
            policy_values,
            best_response_values: br_values,
            method: "exact".into(),
            states: model.states(),
            sweeps,
            cached: self.cache.is_some(),
            cache: self.cache_stats(),
            seconds: t0.elapsed().as_secs_f64(),
            resumed_from: None,
        };
        (result, responses)
    }
}

/// The state a solve ended in, stopped or not.
fn either(r: Result<Solved, Solved>) -> Solved {
    r.unwrap_or_else(|s| s)
}

/// Digit of `slot` in an applied joint code (slot 0 most significant).
fn digit(code: u64, slot: usize, m: usize, a: usize) -> usize {
    ((code / (a as u64).pow((m - 1 - slot) as u32)) % a as u64) as usize
}

/// The product of the agents' applied-action probabilities for `code`, skipping `skip`.
fn weight(code: u64, q: &[f64], m: usize, a: usize, skip: Option<usize>) -> f64 {
    let mut c = code;
    let mut w = 1.0;
    for slot in (0..m).rev() {
        let b = (c % a as u64) as usize;
        c /= a as u64;
        if Some(slot) != skip {
            w *= q[slot * a + b];
        }
    }
    w
}
