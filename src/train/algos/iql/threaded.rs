//! IQL's threaded mode (`threaded: true`): an actor thread steps the arenas and
//! inserts rows while this thread learns whenever the rate limiter allows. Thread timing decides
//! which rows each minibatch sees, so threaded runs are not bit-for-bit reproducible.

use super::Iql;
use super::buffer::Replay;
use crate::critic::{AdamConfig, CriticBackend, Input};
use crate::train::error::TrainError;
use crate::train::kit::explore::act_epsilon_greedy;
use crate::train::kit::replay::{ReplayCore, successor_input, successor_mask};
use crate::train::kit::schedule::StepValues;

impl Iql {
    /// Threaded mode: an actor thread steps the arenas and inserts rows (waiting on the rate
    /// limiter when the learner falls behind), this thread learns whenever the limiter allows.
    /// The actor acts with a copy of the parameters refreshed every 8 learner steps. Waits are
    /// bounded by `wait_seconds`; running out reports which bound held the thread.
    /// Returns the summed loss and the learner steps.
    pub(super) fn update_threaded(
        &mut self,
        adam: &AdamConfig,
        threshold: u64,
    ) -> Result<(f64, u64), TrainError> {
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::time::{Duration, Instant};

        use crate::train::kit::rate_limiter::SharedLimiter;

        let wait = Duration::from_secs_f64(self.cfg.iql.wait_seconds.max(0.001));
        let limiter = SharedLimiter::new(self.core.limiter.clone());
        let replay = Mutex::new(std::mem::replace(
            &mut self.replay.rows,
            Replay::new(0, 0, 0, (0, 0)),
        ));
        let snapshot = Mutex::new(self.critic.params()?);
        let version = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        let Iql {
            cfg,
            batch,
            core,
            mb,
            critic,
            spec,
            head,
            learners,
            actions,
            nets,
            progress,
            ..
        } = self;
        let (cfg, spec, head, n, a) = (&*cfg, *spec, *head, *learners, *actions);
        let values = StepValues::of(cfg, *adam);
        let ReplayCore {
            explore,
            sampler,
            learner_steps,
            ..
        } = core;
        let update = progress.update;
        let lock_replay = || replay.lock().unwrap_or_else(|p| p.into_inner());

        let (result, actor_seconds) = std::thread::scope(|scope| {
            let actor = scope.spawn(|| -> Result<f64, TrainError> {
                let finish = |r| {
                    done.store(true, Ordering::SeqCst);
                    limiter.close();
                    r
                };
                let mut acting = match crate::critic::cpu::CpuCritic::new(spec, 0) {
                    Ok(c) => c,
                    Err(e) => return finish(Err(e.into())),
                };
                let (mut seen, mut sim) = (u64::MAX, 0.0);
                let (mut next, mut next_mask) = (Vec::new(), Vec::new());
                let mask_kept = batch.action_mask().is_some();
                for _ in 0..cfg.rollout {
                    let v = version.load(Ordering::SeqCst);
                    if v != seen {
                        let p = snapshot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                        if let Err(e) = acting.set_params(&p) {
                            return finish(Err(e.into()));
                        }
                        seen = v;
                    }
                    let obs = batch.buffers().obs.clone();
                    let q = match acting.forward(Input::U8(&obs), nets) {
                        Ok(q) => head.q_values(q.to_vec()),
                        Err(e) => return finish(Err(e.into())),
                    };
                    let (chosen, mask) = batch.actions_and_mask();
                    act_epsilon_greedy(explore, &q, a, threshold, (chosen, mask));
                    let taken: Vec<u32> = chosen.iter().map(|&x| x as u32).collect();
                    let t0 = Instant::now();
                    if let Err(e) = batch.step() {
                        return finish(Err(e.into()));
                    }
                    sim += t0.elapsed().as_secs_f64();
                    // The rows go into the replay before the limiter counts them: counting
                    // first would let the learner sample rows not yet written.
                    let b = batch.buffers();
                    let o = batch.layout().obs_len;
                    successor_input(b, (n, o, o), &mut next);
                    successor_mask(b, mask_kept, &mut next_mask);
                    let write = || {
                        let rows: (&[u8], &[u8], &[u8]) = (&obs, &next, &next_mask);
                        lock_replay().insert_step(rows, &taken, b, nets, n, false)
                    };
                    if let Err(e) = limiter.insert_with(taken.len() as u64, wait, write) {
                        return finish(Err(TrainError::Config(format!("actor: {e}"))));
                    }
                }
                finish(Ok(sim))
            });

            // The learner, on this thread.
            let (mut losses, mut steps) = (0.0f64, 0u64);
            let mut waited = Duration::ZERO;
            let mut learn = || -> Result<(), TrainError> {
                loop {
                    let start = Instant::now();
                    match limiter.sample(cfg.iql.batch_size as u64, Duration::from_millis(20)) {
                        Ok(()) => {
                            waited = Duration::ZERO;
                            mb.fill(&lock_replay(), sampler, cfg);
                            losses += mb.train(critic, &values, (a, head), update)? as f64;
                            steps += 1;
                            *learner_steps += 1;
                            if steps % 8 == 0 {
                                *snapshot.lock().unwrap_or_else(|p| p.into_inner()) =
                                    critic.params()?;
                                version.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Err(e) => {
                            if done.load(Ordering::SeqCst)
                                && !limiter.can_sample(cfg.iql.batch_size as u64)
                            {
                                return Ok(());
                            }
                            waited += start.elapsed();
                            if waited > wait {
                                return Err(TrainError::Config(format!("learner: {e}")));
                            }
                        }
                    }
                }
            };
            let learned = learn();
            if learned.is_err() {
                done.store(true, Ordering::SeqCst);
            }
            let acted = actor
                .join()
                .unwrap_or_else(|_| Err(TrainError::Config("the actor thread panicked".into())));
            let seconds = acted.as_ref().map_or(0.0, |s| *s);
            (
                learned.and(acted.map(|_| ())).map(|()| (losses, steps)),
                seconds,
            )
        });
        progress.sim_seconds += actor_seconds;
        self.core.limiter = limiter.snapshot();
        self.replay.rows = replay.into_inner().unwrap_or_else(|p| p.into_inner());
        result
    }
}
