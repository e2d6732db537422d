//! The learned best response over several seeds: each seed trains its own best response, and
//! the approximate NashConv carries a Student-t interval over the seeds.

use gridarena::analysis::learned::{LearnedOptions, learned, mean_t95, t975};
use gridarena::critic::{Device, choose_device};

#[path = "common/tiny_run.rs"]
mod tiny_run;
use tiny_run::train_tiny_pursuit;

#[test]
fn the_student_t_interval_matches_a_hand_computation() {
    assert_eq!(t975(1), 12.706);
    assert_eq!(t975(2), 4.303);
    assert_eq!(t975(30), 2.042);
    assert_eq!(t975(31), 1.96);
    assert!(t975(0).is_nan());
    // 1, 2, 6: mean 3, sample variance ((4 + 1 + 9) / 2) = 7, half-width 4.303 * sqrt(7 / 3).
    let (m, ci) = mean_t95(&[1.0, 2.0, 6.0]);
    assert_eq!(m, 3.0);
    assert!((ci - 4.303 * (7.0f64 / 3.0).sqrt()).abs() < 1e-12, "{ci}");
    assert!(mean_t95(&[5.0]).1.is_nan());
}

#[test]
fn best_responses_from_three_seeds_give_an_interval_over_seeds() {
    let run = std::env::temp_dir().join(format!("gridarena-learned-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run);
    // A checkpoint after one update of tiny_pursuit (exact NashConv about 1.56), and a best
    // response budget short enough that seeds land in different places (after 300 updates one
    // seed's gain is 0.17 ± 0.17).
    train_tiny_pursuit(&run, 1);
    let device = choose_device(Device::Cpu).unwrap();
    let opts = LearnedOptions {
        steps: 16 * 8 * 300,
        episodes: 64,
        seeds: 3,
    };
    let r = learned(&run, &device, Some(0), opts, false).unwrap();
    assert_eq!(r.seeds, 3);
    assert_eq!(r.interval_over, "best-response seeds");
    assert_eq!(r.per_seed_nashconv.len(), 3);
    // Each seed trains its own best response: their gains differ.
    let s = &r.per_seed_nashconv;
    assert!(
        s[0] != s[1] || s[1] != s[2],
        "three seeds gave the same NashConv {s:?}"
    );
    // The reported value and interval are the per-seed mean and its Student-t half-width.
    let (m, ci) = mean_t95(s);
    assert!((r.nashconv - m).abs() < 1e-12, "{} vs {m}", r.nashconv);
    assert!((r.nashconv_ci95 - ci).abs() < 1e-12);
    assert!(r.nashconv_ci95 > 0.0);
    // Only learner 0 was analysed: learner 1's entries stay 0.
    assert_eq!(r.per_agent_gain[1], 0.0);
    assert!((r.per_agent_gain[0] - m).abs() < 1e-12);
    // The written result names the seeds too.
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("nashconv_learned_agent0.json")).unwrap())
            .unwrap();
    assert_eq!(file["seeds"], 3, "{file}");
    assert_eq!(file["per_seed_nashconv"].as_array().unwrap().len(), 3);

    // Zero seeds is a bad request, not a panic.
    let zero = LearnedOptions { seeds: 0, ..opts };
    let err = learned(&run, &device, Some(0), zero, false).unwrap_err();
    assert!(err.to_string().contains("at least one"), "{err}");
    let _ = std::fs::remove_dir_all(run);
}
