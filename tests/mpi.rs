//! Data-parallel training on MPI (`cargo test --features mpi --test mpi`; needs Open MPI's
//! `mpirun`). A test binary of its own (`harness = false`): run normally it launches itself
//! under `mpirun -np 2` (and `-np 3`) for the checks that run inside the ranks, then drives the
//! `gridarena` binary under `mpirun` for the command-line checks.
//!
//! Inside the ranks: 2 ranks x B/2 arenas give the gradient of one process over the same B
//! arenas' rows; PQN, IQL and PR2-IQL (with opponent models) hold bit-identical parameters on
//! every rank after every update, and not those of a rank training alone; a run stopped and
//! resumed across 2 ranks continues exactly; only rank 0 writes metrics, over every rank's
//! steps. Through the binary: one rank under MPI is bit for bit a run without MPI; a rank killed
//! while writing a checkpoint leaves the previous one complete, loadable and resumable; a
//! resume under another number of ranks is refused with both numbers; a rank whose parameters
//! drift is named by the checksum; a job stopped by SIGTERM or SIGUSR1 on one rank, or killed,
//! and restarted by the same `--resume-if-exists` command ends as the uninterrupted job
//! (`mpi/preemption.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gridarena::critic::loss::Loss;
use gridarena::critic::{AdamConfig, Chosen, Critic, Device, Input, StackSpec};
use gridarena::dist::Job;
use gridarena::engine::EnvBatch;
use gridarena::scenario::{LoadedScenario, Scenario};
use gridarena::train::config::{
    Algo, LearnConfig, NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig,
};
use gridarena::train::run_dir::load_checkpoint;
use gridarena::train::{TrainOptions, new_learner, new_learner_in, train, train_in};

#[path = "mpi/preemption.rs"]
mod preemption;

const RANK_MODE: &str = "GRIDARENA_MPI_TEST_RANK_MODE";
const DIR_VAR: &str = "GRIDARENA_MPI_TEST_DIR";
const BIN: &str = env!("CARGO_BIN_EXE_gridarena");

fn main() {
    if let Ok(mode) = std::env::var(RANK_MODE) {
        return rank_mode(&mode);
    }
    let base = std::env::temp_dir().join(format!("gridarena-mpi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    type Check = (&'static str, fn(&Path));
    let checks: [Check; 7] = [
        (
            "ranks: gradients, identical parameters, resume, metrics (-np 2)",
            |b| ranks(2, "all", b),
        ),
        (
            "ranks: gradients, identical parameters, 4 seeds (-np 3)",
            |b| ranks(3, "three", b),
        ),
        (
            "one rank under MPI is bit for bit a run without MPI",
            one_rank_is_no_mpi,
        ),
        (
            "a rank killed mid-checkpoint leaves a loadable checkpoint",
            killed_rank,
        ),
        (
            "a resume under another number of ranks is refused",
            other_rank_count,
        ),
        ("a drifting rank is named by the checksum", drifting_rank),
        (
            "a job interrupted by signals and restarted ends as one uninterrupted (-np 2)",
            preemption::interrupted_job,
        ),
    ];
    // `cargo test --features mpi --test mpi -- WORD...` runs only the checks whose names hold
    // a WORD.
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (mut failed, mut ran) = (Vec::new(), 0);
    for (i, (name, check)) in checks.into_iter().enumerate() {
        if !words.is_empty() && !words.iter().any(|w| name.contains(w.as_str())) {
            continue;
        }
        ran += 1;
        let dir = base.join(format!("check_{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        print!("test {name} ... ");
        match std::panic::catch_unwind(|| check(&dir)) {
            Ok(()) => println!("ok"),
            Err(_) => {
                println!("FAILED");
                failed.push(name);
            }
        }
    }
    if failed.is_empty() {
        let _ = std::fs::remove_dir_all(&base);
        println!("\nmpi: {ran} of {} checks run, all passed", checks.len());
    } else {
        println!(
            "\nmpi: failed: {failed:?} (files kept in {})",
            base.display()
        );
        std::process::exit(1);
    }
}

/// `mpirun` as root, oversubscribing the 2 cores, with `vars` exported to every rank.
fn mpirun(np: usize, vars: &[(&str, &str)]) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ]);
    for (k, v) in vars {
        c.args(["-x", &format!("{k}={v}")]);
    }
    c.env("RAYON_NUM_THREADS", "1")
        .args(["-x", "RAYON_NUM_THREADS"]);
    // Containers often forbid the cross-memory attach Open MPI's shared-memory transport tries
    // first; plain copies work everywhere.
    c.env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    c
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs this test binary in rank mode `mode` on `np` ranks.
fn ranks(np: usize, mode: &str, dir: &Path) {
    let exe = std::env::current_exe().unwrap();
    let out = mpirun(np, &[(RANK_MODE, mode), (DIR_VAR, dir.to_str().unwrap())])
        .arg(exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

// ------------------------------------------------------------------------------------------
// Inside the ranks
// ------------------------------------------------------------------------------------------

fn rank_mode(mode: &str) {
    // A failed assertion on one rank must end the job, not leave the others in a collective.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("rank panicked: {info}");
        std::process::abort();
    }));
    let job = Job::from_launcher().unwrap();
    assert!(
        job.size() > 1,
        "rank mode runs under mpirun with several ranks"
    );
    let dir = PathBuf::from(std::env::var(DIR_VAR).unwrap());
    gathers_of_empty_messages(&job);
    gradients_match(&job, &cpu());
    // The GPU backend reads its gradients back and uploads their mean (lavapipe in CI).
    match gridarena::critic::choose_device(Device::Gpu) {
        Ok(gpu) => gradients_match(&job, &gpu),
        Err(e) if std::env::var_os("CI").is_some() => panic!("CI has no GPU adapter: {e}"),
        Err(e) => eprintln!("SKIPPED: the GPU gradients under MPI need an adapter: {e}"),
    }
    for algo in [
        Algo::Pqn,
        Algo::Iql,
        Algo::Pr2Iql,
        Algo::OnlineDqn,
        Algo::Ippo,
        Algo::Mappo,
        Algo::PqnVdn,
        Algo::Vdn,
        Algo::Qmix,
        Algo::AdvantageAlignment,
        Algo::Loqa,
    ] {
        identical_parameters(&job, algo);
    }
    if mode == "all" {
        resume_is_exact(&job, &dir);
        replicas_split_over_ranks(&job, &dir, 3);
    } else {
        // 4 seeds on 3 ranks: rank 1 trains replica 1 alone (seeded seed + 1, not seed).
        replicas_split_over_ranks(&job, &dir, 4);
    }
    job.barrier();
}

/// Gathers where every rank, or only some, send nothing arrive at rank 0 as sent (an empty
/// buffer once reached Open MPI as MPI_IN_PLACE and failed the job).
fn gathers_of_empty_messages(job: &Job) {
    let none = job.gather_bytes(&[]).unwrap();
    let mine = vec![7u8; job.rank()];
    let some = job.gather_bytes(&mine).unwrap();
    if job.is_root() {
        assert_eq!(none, vec![Vec::<u8>::new(); job.size()]);
        let expected: Vec<Vec<u8>> = (0..job.size()).map(|r| vec![7u8; r]).collect();
        assert_eq!(some, expected);
    }
}

fn cpu() -> Chosen {
    Chosen::Cpu {
        reason: "test".into(),
    }
}

/// Rank r over arenas r*B/N.. of the job and one process over all B arenas see the same rows,
/// and the averaged gradient of the ranks is the one process's gradient (1e-5 relative), on
/// `device`.
fn gradients_match(job: &Job, device: &Chosen) {
    let loaded = Scenario::default_pursuit();
    let (per, n) = (4usize, job.size());
    let full = EnvBatch::new(&loaded, per * n, 11).unwrap();
    let mine = EnvBatch::new_from(&loaded, per, 11, job.first_arena(per)).unwrap();
    let (obs_full, obs_mine) = (&full.buffers().obs, &mine.buffers().obs);
    let slice = obs_mine.len();
    assert_eq!(
        &obs_full[job.rank() * slice..(job.rank() + 1) * slice],
        &obs_mine[..],
        "rank {}'s arenas are not the job's arenas {}..",
        job.rank(),
        job.first_arena(per)
    );
    let learners = loaded.scenario.learners_per_arena();
    let input = full.layout().obs_len;
    let spec = StackSpec {
        network: Default::default(),
        nets: learners,
        input,
        hidden: 32,
        layers: 2,
        head: 5,
    };
    let rows_full = per * n * learners;
    let rows = per * learners;
    let nets = |r: usize| -> Vec<u32> { (0..r).map(|i| (i % learners) as u32).collect() };
    let actions = |first: usize, r: usize| -> Vec<u32> {
        (first..first + r).map(|i| ((i * 3) % 5) as u32).collect()
    };
    let targets = |first: usize, r: usize| -> Vec<f32> {
        (first..first + r)
            .map(|i| ((i * 7) % 11) as f32 / 10.0)
            .collect()
    };
    // The MSE gradient of `critic` over rows `first..first + r` (observations `obs`).
    let backward = |critic: &mut Critic, obs: &[u8], first: usize, r: usize| {
        critic.forward(Input::U8(obs), &nets(r)).unwrap();
        let (a, t) = (actions(first, r), targets(first, r));
        let loss = Loss::Mse {
            actions: &a,
            targets: &t,
            mask: None,
        };
        critic.loss_backward(&loss).unwrap();
        critic.grads().unwrap()
    };
    // One process over every row.
    let mut one = Critic::new(spec, 3, device).unwrap();
    let want = backward(&mut one, obs_full, 0, rows_full);
    // This rank over its rows, averaged over the ranks by the step.
    let mut dp = Critic::new(spec, 3, device).unwrap().data_parallel(job);
    let local = backward(&mut dp, obs_mine, job.rank() * rows, rows);
    // RAdam's first step is plain SGD with momentum: p - lr x gradient, so the step itself
    // shows which gradient it applied.
    let sgd = AdamConfig {
        lr: 1.0,
        max_grad_norm: None,
        radam: true,
        ..AdamConfig::default()
    };
    let before = dp.params().unwrap();
    dp.step(&sgd).unwrap();
    dp.step_stats().unwrap();
    let got = dp.grads().unwrap();
    let applied: Vec<f32> = before
        .iter()
        .zip(dp.params().unwrap())
        .map(|(b, a)| b - a)
        .collect();
    let scale = want.iter().fold(0f32, |m, g| m.max(g.abs()));
    let worst = max_diff(&got, &want);
    assert!(scale > 0.0);
    assert!(
        worst <= 1e-5 * scale,
        "averaged gradient off by {worst} (largest gradient {scale})"
    );
    // The step applied the averaged gradient (up to the rounding of p - g).
    let off = max_diff(&applied, &want);
    assert!(
        off <= 1e-5 * scale + 1e-6,
        "the step applied a gradient off by {off} (largest gradient {scale})"
    );
    // The rank's own gradient is not the job's (the test would pass without averaging
    // otherwise).
    let own_diff = max_diff(&local, &want);
    assert!(
        own_diff > 1e-3 * scale,
        "rank {}: own gradient already equal",
        job.rank()
    );
}

/// The largest element-wise difference of `a` and `b`.
fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

fn pursuit_3() -> (RunConfig, LoadedScenario) {
    let cfg = RunConfig {
        scenario: Some(PathBuf::from("assets/scenarios/pursuit_3.ron")),
        device: Device::Cpu,
        arenas: 4,
        checkpoint_every: 100,
        rollout: 8,
        total_steps: 4 * 8 * 4,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        learn: LearnConfig {
            opponent_models: true,
            ..Default::default()
        },
        pqn: PqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        pr2: Pr2Config {
            minibatches: 2,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    (cfg, loaded)
}

/// A small run of `algo` with opponent models that takes learner steps from the first update.
fn config(algo: Algo) -> (RunConfig, LoadedScenario) {
    let (pqn, _) = pursuit_3();
    let cfg = match algo {
        Algo::Pqn => pqn,
        Algo::Iql => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.learn.lr = 1e-3;
            cfg.learn.lr_decay = false;
            cfg.iql.batch_size = 16;
            cfg.iql.cer = 2;
            cfg.iql.replay_capacity = 200;
            cfg.iql.min_replay = 32;
            cfg
        }
        Algo::Pr2Iql => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.scenario = Some(PathBuf::from("assets/scenarios/climbing_game.ron"));
            cfg.rollout = 4;
            cfg.total_steps = 4 * 4 * 4;
            cfg.iql.replay_capacity = 40;
            cfg.iql.min_replay = 16;
            cfg.iql.target_tau = 0.05;
            cfg.pr2.buffer_batch_size = 2;
            cfg.online_dqn.target_tau = 0.05;
            cfg
        }
        // No opponent models: the algorithm has none.
        Algo::OnlineDqn => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.learn.opponent_models = false;
            cfg.iql.target_tau = 0.1;
            cfg.online_dqn.target_tau = 0.1;
            cfg
        }
        // No opponent models: the algorithm has none.
        Algo::PqnVdn => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.learn.opponent_models = false;
            cfg
        }
        // IQL's replay of team transitions; no opponent models.
        Algo::Vdn | Algo::Qmix => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.learn.opponent_models = false;
            cfg.learn.lr = 1e-3;
            cfg.learn.lr_decay = false;
            cfg.iql.batch_size = 8;
            cfg.iql.cer = 2;
            cfg.iql.replay_capacity = 100;
            cfg.iql.min_replay = 16;
            cfg.qmix.embed = 4;
            cfg.qmix.hyper_hidden = 8;
            cfg
        }
        Algo::Ippo | Algo::Mappo | Algo::AdvantageAlignment | Algo::Loqa => {
            let mut cfg = pqn;
            cfg.algo = algo;
            cfg.learn.opponent_models = false;
            cfg.ppo.minibatches = 2;
            cfg
        }
    };
    let loaded = gridarena::train::load_scenario(&cfg).unwrap();
    (cfg, loaded)
}

/// Every rank's `params`, equal bit for bit (checked at rank 0; every rank learns the answer).
fn assert_all_equal(job: &Job, params: &[f32], what: &str) {
    let bytes: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    let all = job.gather_bytes(&bytes).unwrap();
    let same = u64::from(all.iter().all(|b| *b == all[0]));
    let agreed = job.all_gather_u64(if job.is_root() { same } else { 1 });
    assert_eq!(agreed[0], 1, "{what}: the ranks' parameters differ");
}

/// After every update every rank holds the same parameters, and rank 0's are not those of
/// rank 0 training alone on its own arenas.
fn identical_parameters(job: &Job, algo: Algo) {
    let (cfg, loaded) = config(algo);
    let mut learner = new_learner_in(&cfg, &loaded, &cpu(), job).unwrap();
    let mut alone = new_learner(&cfg, &loaded, &cpu()).unwrap();
    for u in 1..=cfg.updates() {
        learner.update().unwrap();
        alone.update().unwrap();
        let p = learner.params().unwrap();
        assert_all_equal(job, &p, &format!("{algo:?} after update {u}"));
        // The opponent models are averaged the same way.
        if !cfg.learn.opponent_models {
            continue;
        }
        let c = learner.checkpoint().unwrap();
        let models = c.extra.iter().find(|(n, _)| n == "models.params");
        let Some((_, gridarena::train::tensors::Tensor::F32(m))) = models else {
            panic!("{algo:?}: no opponent models in the checkpoint");
        };
        assert_all_equal(
            job,
            m,
            &format!("{algo:?}'s opponent models after update {u}"),
        );
    }
    let p = learner.params().unwrap();
    if job.is_root() {
        assert_ne!(
            p,
            alone.params().unwrap(),
            "{algo:?}: the ranks did not exchange gradients"
        );
    }
}

/// A run trained straight and one stopped after 2 updates and resumed, across the ranks, end
/// with the same parameters, Adam and state on every rank; rank 0 alone wrote the metrics.
fn resume_is_exact(job: &Job, dir: &Path) {
    let (cfg, _) = config(Algo::Iql);
    let straight = dir.join("straight");
    let split = dir.join("split");
    let opts = TrainOptions {
        checksum_every: Some(1),
        ..TrainOptions::default()
    };
    let done = train_in(&cfg, &straight, &opts, job).unwrap();
    assert_eq!(done.env_steps, cfg.total_steps * job.size() as u64);
    let first = TrainOptions {
        until_update: Some(2),
        ..opts.clone()
    };
    train_in(&cfg, &split, &first, job).unwrap();
    let again = TrainOptions {
        resume: true,
        ..opts
    };
    let resumed = train_in(&cfg, &split, &again, job).unwrap();
    assert_eq!(resumed.resume_note, None);
    job.barrier();
    if !job.is_root() {
        return;
    }
    let last = |run: &Path| run.join(format!("checkpoints/update_{:08}", cfg.updates()));
    let (a, b) = (last(&straight), last(&split));
    let (ca, cb) = (load_checkpoint(&a).unwrap(), load_checkpoint(&b).unwrap());
    assert_eq!(ca.params, cb.params);
    assert_eq!((ca.adam_m, ca.adam_v), (cb.adam_m, cb.adam_v));
    assert_eq!(ca.state, cb.state);
    for r in 1..job.size() {
        let shard = |c: &Path| load_checkpoint(&c.join(format!("rank_{r}"))).unwrap();
        let (sa, sb) = (shard(&a), shard(&b));
        assert_eq!(sa.state, sb.state, "rank {r}'s shard");
        assert_eq!(sa.extra, sb.extra, "rank {r}'s replay");
        assert_ne!(sa.state, ca.state, "rank {r} saved rank 0's state");
    }
    let manifest = std::fs::read_to_string(a.join("manifest.json")).unwrap();
    assert!(
        manifest.contains(&format!("\"ranks\": {}", job.size())),
        "{manifest}"
    );
    // Only rank 0 writes metrics: one line per update, with the job's steps.
    let metrics = std::fs::read_to_string(straight.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, cfg.updates());
    let per_update = cfg.steps_per_update() * job.size() as u64;
    // Every update allreduces at least the whole critic gradient once (4 B per parameter),
    // in f32s.
    let gradient = 4 * ca.params.len() as u64;
    for (u, l) in lines.iter().enumerate() {
        assert_eq!(l["env_steps"], (u as u64 + 1) * per_update);
        assert_eq!(l["ranks"], job.size());
        let (bytes, calls) = (
            l["allreduce_bytes"].as_u64().unwrap(),
            l["allreduce_calls"].as_u64().unwrap(),
        );
        assert!(
            calls >= 1 && bytes >= gradient && bytes % 4 == 0,
            "update {}: {bytes} B in {calls} calls, gradient {gradient} B",
            u + 1
        );
    }
}

/// `seeds` seeds split over the ranks (with 3 on 2 ranks, rank 0 trains seed 0 and rank 1 seeds
/// 1 and 2; no gradient exchange) train exactly what one process trains with them stacked: the
/// same networks, assembled in the checkpoint, and the same per-seed returns in the metrics;
/// stopped and resumed, the job continues exactly.
fn replicas_split_over_ranks(job: &Job, dir: &Path, seeds: usize) {
    let (pqn, _) = config(Algo::Pqn);
    let cfg = RunConfig { seeds, ..pqn };
    let (split, stopped) = (dir.join("seeds-split"), dir.join("seeds-stopped"));
    let summary = train_in(&cfg, &split, &TrainOptions::default(), job).unwrap();
    assert_eq!(
        summary.env_steps, cfg.total_steps,
        "env steps are per replica"
    );
    let first = TrainOptions {
        until_update: Some(2),
        ..TrainOptions::default()
    };
    train_in(&cfg, &stopped, &first, job).unwrap();
    let again = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    train_in(&cfg, &stopped, &again, job).unwrap();
    if job.is_root() {
        let one = dir.join("seeds-one-process");
        train(&cfg, &one, &TrainOptions::default()).unwrap();
        let last = |run: &Path| {
            load_checkpoint(&run.join(format!("checkpoints/update_{:08}", cfg.updates()))).unwrap()
        };
        let (a, b, c) = (last(&split), last(&one), last(&stopped));
        assert_eq!(
            a.params, b.params,
            "the assembled stack is not one process's"
        );
        assert_eq!(
            a.params, c.params,
            "the resumed job is not the straight one"
        );
        // Replica 0's opponent models: rank 0's own (a single run's when it trains one
        // replica), and the one process's first replica's.
        let find = |c: &gridarena::train::run_dir::Checkpoint| {
            let named = |name: &str| c.extra.iter().find(|(n, _)| n == name);
            named("replica.0.models.params")
                .or_else(|| named("models.params"))
                .map(|(_, t)| t.clone())
        };
        assert!(
            find(&b).is_some(),
            "the one process saved no opponent models"
        );
        assert_eq!(find(&a), find(&b), "replica 0's opponent models");
        let per_seed = |run: &Path| -> Vec<serde_json::Value> {
            std::fs::read_to_string(run.join("metrics.jsonl"))
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    serde_json::json!([v["env_steps"], v["seeds_return_per_seed"]])
                })
                .collect()
        };
        assert_eq!(per_seed(&split), per_seed(&one));
        let seeds = per_seed(&split);
        assert_eq!(seeds.len() as u64, cfg.updates());
        assert!(
            seeds
                .iter()
                .any(|v| v[1].as_array().is_some_and(|a| a.len() == cfg.seeds))
        );
        // One process evaluates any replica of the job's checkpoint.
        let report = gridarena::train::eval::evaluate_replica(&split, 2, &cpu(), 2).unwrap();
        assert_eq!(report.episodes, 2);
    }
    job.barrier();
}

// ------------------------------------------------------------------------------------------
// Through the binary
// ------------------------------------------------------------------------------------------

/// A small PQN run's command-line arguments into `out`.
fn pqn_args(out: &Path, updates: u64) -> Vec<String> {
    let steps = 4 * 8 * updates;
    [
        "train",
        "--out",
        out.to_str().unwrap(),
        "--scenario",
        "assets/scenarios/pursuit_3.ron",
        "--device",
        "cpu",
        "--steps",
        &steps.to_string(),
        "--set",
        "arenas=4",
        "--set",
        "rollout=8",
        "--set",
        "hidden=16",
        "--set",
        "layers=1",
        "--set",
        "checkpoint_every=1",
        "--set",
        "keep_checkpoints=5",
        "--set",
        "opponent_models=true",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn final_params(run: &Path) -> Vec<f32> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("update_")
        })
        .collect();
    all.sort();
    load_checkpoint(all.last().unwrap()).unwrap().params
}

fn one_rank_is_no_mpi(dir: &Path) {
    let plain = dir.join("plain");
    let o = Command::new(BIN)
        .args(pqn_args(&plain, 3))
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let ranked = dir.join("mpi");
    let o = mpirun(1, &[])
        .arg(BIN)
        .args(pqn_args(&ranked, 3))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(final_params(&plain), final_params(&ranked));
}

fn killed_rank(dir: &Path) {
    let run = dir.join("run");
    let o = mpirun(2, &[("GRIDARENA_FAULT", "kill-in-checkpoint:1:2")])
        .arg(BIN)
        .args(pqn_args(&run, 4))
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "the job survived a killed rank: {}",
        show(&o)
    );
    let ckpts = run.join("checkpoints");
    let names: Vec<String> = std::fs::read_dir(&ckpts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"update_00000001".to_string()), "{names:?}");
    assert!(!names.contains(&"update_00000002".to_string()), "{names:?}");
    // The newest complete checkpoint evaluates in one process...
    let o = Command::new(BIN)
        .args([
            "eval",
            "--run",
            run.to_str().unwrap(),
            "--episodes",
            "2",
            "--device",
            "cpu",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    // ... and the job resumes from it.
    let o = mpirun(2, &[])
        .arg(BIN)
        .args(["train", "--resume", run.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert!(ckpts.join("update_00000004/manifest.json").is_file());
}

fn other_rank_count(dir: &Path) {
    let run = dir.join("run");
    let o = mpirun(2, &[])
        .arg(BIN)
        .args(pqn_args(&run, 2))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let before = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let resume = ["train", "--resume", run.to_str().unwrap(), "--steps", "128"];
    fails_with(
        mpirun(3, &[]).arg(BIN).args(resume),
        "written by a job of 2 rank(s); this job has 3",
    );
    fails_with(
        Command::new(BIN).args(resume),
        "written by a job of 2 rank(s); this job has 1",
    );
    // The refusals left the run as it was.
    let after = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    assert_eq!(before, after);
}

fn drifting_rank(dir: &Path) {
    let run = dir.join("run");
    fails_with(
        mpirun(2, &[("GRIDARENA_FAULT", "perturb:1:2")])
            .arg(BIN)
            .args(pqn_args(&run, 4))
            .args(["--checksum-every", "1"]),
        "after update 2 the parameters of rank(s) 1 differ from rank 0's",
    );
}

/// Runs `cmd`, which must fail saying `text` on stderr.
fn fails_with(cmd: &mut Command, text: &str) {
    let o = cmd.output().unwrap();
    assert!(!o.status.success(), "it succeeded: {}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(text), "no `{text}` in: {}", show(&o));
}
