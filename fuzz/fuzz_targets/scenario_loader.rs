//! Scenario text -> `Scenario::parse` (what `Scenario::load` runs); a scenario that validates
//! must also build a batch and step it. Every refusal names a line and column.
#![no_main]

use gridarena::{EnvBatch, Scenario};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(text, "fuzz.ron") {
        Ok(loaded) => {
            if let Ok(mut batch) = EnvBatch::new(&loaded, 2, 7) {
                for _ in 0..3 {
                    if batch.step().is_err() {
                        break;
                    }
                }
            }
        }
        Err(e) => assert!(e.line >= 1 && e.column >= 1, "no line:column in {e}"),
    }
});
