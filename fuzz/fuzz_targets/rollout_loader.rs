//! Rollout bytes -> what `view` and `render` do before drawing: `Rollout::parse`, every frame
//! checked against the layout (`Replay::from_rollout`), observations rebuilt. Never panics.
#![no_main]

use std::path::Path;

use gridarena::rollout::Rollout;
use gridarena::viewer::source::{Replay, rebuild_observations};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz-rollout.ron");
    let Ok(rollout) = Rollout::parse(text, path) else {
        return;
    };
    let Ok(layout) = gridarena::render::output::rollout_layout(&rollout) else {
        return;
    };
    if let Ok(replay) = Replay::from_rollout(rollout, path) {
        for f in &replay.rollout().frames {
            let _ = rebuild_observations(&layout, f);
        }
    }
});
