//! Checkpoint `state.json` text -> the syntax check `load_checkpoint` runs, then a PQN learner's
//! `load_state` (pursuit_3, CPU); a state that loads must also step the arenas. A text that does
//! not decode is refused at a line and column.
#![no_main]

use std::cell::RefCell;
use std::path::Path;

use gridarena::critic::{Device, choose_device};
use gridarena::train::config::RunConfig;
use gridarena::train::run_dir::check_state_syntax;
use gridarena::train::{BoxedLearner, TrainError, load_scenario, new_learner};
use libfuzzer_sys::fuzz_target;

thread_local! {
    /// One learner for every input: building it is the slow part.
    static LEARNER: RefCell<Option<BoxedLearner>> = const { RefCell::new(None) };
}

fn learner() -> BoxedLearner {
    let mut cfg = RunConfig {
        device: Device::Cpu,
        scenario: Some("assets/scenarios/pursuit_3.ron".into()),
        arenas: 2,
        rollout: 4,
        ..RunConfig::default()
    };
    cfg.pqn.minibatches = 1;
    (cfg.network.hidden, cfg.network.layers) = (4, 1);
    let loaded = load_scenario(&cfg).expect("run from the repository root");
    let device = choose_device(Device::Cpu).expect("the CPU device");
    new_learner(&cfg, &loaded, &device).expect("a PQN learner")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = check_state_syntax(text, Path::new("state.json")) {
        // `state.json:LINE:COLUMN: message`, both counted from 1.
        let mut parts = e.splitn(4, ':');
        let (file, line, column) = (parts.next(), parts.next(), parts.next());
        let at = |p: Option<&str>| {
            p.and_then(|p| p.parse::<u64>().ok())
                .is_some_and(|n| n >= 1)
        };
        assert!(
            file == Some("state.json") && at(line) && at(column) && parts.next().is_some(),
            "no line:column in {e}"
        );
        return;
    }
    LEARNER.with_borrow_mut(|slot| {
        let learner = slot.get_or_insert_with(learner);
        match learner.load_state(text, &[]) {
            Ok(_) => {
                let _ = learner.batch().step();
            }
            Err(TrainError::State(e)) => assert!(e.line() >= 1, "no line in {e}"),
            Err(_) => {}
        }
    });
});
