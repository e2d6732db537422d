//! Run-configuration text -> `RunConfig::parse_valid` (parse + validate) and the sizes derived
//! from a valid one. Every refusal names a line and column.
#![no_main]

use gridarena::train::config::{ConfigError, RunConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match RunConfig::parse_valid(text, "fuzz.ron") {
        Ok(cfg) => {
            let _ = (cfg.updates(), cfg.steps_per_update(), cfg.to_ron());
        }
        Err(e) => assert!(matches!(e, ConfigError::At { .. }), "no line:column in {e}"),
    }
});
