//! commons_harvest against Melting Pot's own implementation (dm-meltingpot 2.4.1), with the
//! episode as the unit: python/scripts/meltingpot_sample.py ran 120 episodes of 1000 steps of
//! `commons_harvest__open` with 7 uniformly random players and wrote per-episode statistics
//! to python/tests/data/meltingpot_harvest.json; here four times as many gridarena episodes
//! of the same length (no random end) under uniformly random actions give the same statistics,
//! and a Welch t-test on each per-episode statistic must not reject equality.
//!
//! Apples standing over time: the mean of each quarter of the episode's samples, besides the
//! whole episode's mean and the last sample.
//!
//! Power: with 120 Melting Pot episodes, 480 of ours and the spread of both samples, the
//! smallest difference the test flags (|t| > 3.5) is printed beside each statistic, and the
//! test asserts it stays below 10% of the reference's mean for apples eaten and apples
//! standing (measured: 8.3% for apples eaten, 3-6% for apples standing), so a change of the
//! regrowth table or radius fails it (a regrowth radius of 1 instead of 2 moves the mean
//! apples standing by more than 30%).

use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;
use rand_core::{Rng, SeedableRng};

const CRITICAL_T: f64 = 3.5;
/// gridarena's episodes per Melting Pot episode: ours are cheap, and more of them shrink the
/// smallest difference the test flags.
const OURS_PER_THEIRS: usize = 4;

struct Sample {
    eaten: Vec<f64>,
    zaps: Vec<f64>,
    standing_mean: Vec<f64>,
    standing_last: Vec<f64>,
    /// Per quarter of the episode, each episode's mean of that quarter's samples.
    standing_quarters: [Vec<f64>; 4],
}

/// Each series' mean over each quarter of its samples.
fn quarters(series: &[Vec<f64>]) -> [Vec<f64>; 4] {
    std::array::from_fn(|q| {
        series
            .iter()
            .map(|s| mean(&s[q * s.len() / 4..(q + 1) * s.len() / 4]))
            .collect()
    })
}

fn reference() -> (Sample, u32, u32) {
    let text = std::fs::read_to_string("python/tests/data/meltingpot_harvest.json").unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let eps = doc["episodes"].as_array().unwrap();
    let f = |e: &serde_json::Value, k: &str| e[k].as_f64().unwrap();
    let visible = |e: &serde_json::Value| -> Vec<f64> {
        e["apples_visible"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let s = Sample {
        eaten: eps.iter().map(|e| f(e, "apples_eaten")).collect(),
        zaps: eps.iter().map(|e| f(e, "zaps_landed")).collect(),
        standing_mean: eps.iter().map(|e| mean(&visible(e))).collect(),
        standing_last: eps.iter().map(|e| *visible(e).last().unwrap()).collect(),
        standing_quarters: quarters(&eps.iter().map(visible).collect::<Vec<_>>()),
    };
    let steps = doc["episode_steps"].as_u64().unwrap() as u32;
    let every = doc["sample_every"].as_u64().unwrap() as u32;
    (s, steps, every)
}

/// The shipped asset with episodes of exactly `steps` steps (+1 so the counters can be read
/// before the reset), with `edit` applied to its text.
fn ours(episodes: usize, steps: u32, every: u32, edit: impl Fn(String) -> String) -> Sample {
    let text = std::fs::read_to_string("assets/scenarios/commons_harvest_open.ron").unwrap();
    let text = text
        .replace("min_steps: 1000", "min_steps: 1000000")
        .replace("max_steps: 5000", &format!("max_steps: {}", steps + 1));
    let loaded = Scenario::parse(&edit(text), "commons_harvest_open.ron").unwrap();
    let mut b = EnvBatch::new(&loaded, episodes, 11).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut standing = vec![Vec::new(); episodes];
    for t in 1..=steps {
        for a in b.actions_mut().iter_mut() {
            *a = (rng.next_u32() % 8) as u8;
        }
        b.step().unwrap();
        if t % every == 0 {
            for (arena, s) in standing.iter_mut().enumerate() {
                let f = b.snapshot(arena);
                let w = b.layout().width;
                let occupied = |i: usize| {
                    f.positions
                        .iter()
                        .zip(&f.alive)
                        .any(|(&(x, y), &al)| al && y as usize * w + x as usize == i)
                };
                let n = (0..f.items.len())
                    .filter(|&i| f.items[i] != 0 && !occupied(i))
                    .count();
                s.push(n as f64);
            }
        }
    }
    let counters: Vec<Vec<u32>> = (0..episodes).map(|a| b.counters(a)).collect();
    Sample {
        eaten: counters.iter().map(|c| c[0] as f64).collect(),
        zaps: counters.iter().map(|c| c[2] as f64).collect(),
        standing_mean: standing.iter().map(|s| mean(s)).collect(),
        standing_last: standing.iter().map(|s| *s.last().unwrap()).collect(),
        standing_quarters: quarters(&standing),
    }
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn var(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Welch's t statistic and the smallest difference of means it would flag.
fn welch(a: &[f64], b: &[f64]) -> (f64, f64) {
    let se = (var(a) / a.len() as f64 + var(b) / b.len() as f64).sqrt();
    ((mean(a) - mean(b)) / se, CRITICAL_T * se)
}

/// The statistics that fail Welch's test, and per statistic (name, the smallest difference
/// the test flags as a fraction of the reference's mean).
fn compare(ours: &Sample, theirs: &Sample) -> (Vec<String>, Vec<(String, f64)>) {
    let (mut failures, mut power) = (Vec::new(), Vec::new());
    let quarter_names =
        ["first", "second", "third", "last"].map(|q| format!("apples standing ({q} quarter)"));
    let by_quarter = (0..4).map(|q| {
        (
            quarter_names[q].as_str(),
            &ours.standing_quarters[q],
            &theirs.standing_quarters[q],
        )
    });
    for (name, a, b) in [
        ("apples eaten", &ours.eaten, &theirs.eaten),
        ("zaps landed", &ours.zaps, &theirs.zaps),
        (
            "apples standing (mean of samples)",
            &ours.standing_mean,
            &theirs.standing_mean,
        ),
        (
            "apples standing (last sample)",
            &ours.standing_last,
            &theirs.standing_last,
        ),
    ]
    .into_iter()
    .chain(by_quarter)
    {
        let (t, detectable) = welch(a, b);
        let line = format!(
            "{name}: ours {:.2} vs Melting Pot {:.2}, t = {t:.2}, detectable difference {detectable:.2}",
            mean(a),
            mean(b)
        );
        println!("{line}");
        if t.abs() > CRITICAL_T {
            failures.push(line);
        }
        power.push((
            name.to_string(),
            detectable / mean(b).abs().max(f64::MIN_POSITIVE),
        ));
    }
    (failures, power)
}

#[test]
fn random_play_matches_melting_pot_per_episode() {
    let (theirs, steps, every) = reference();
    let ours = ours(OURS_PER_THEIRS * theirs.eaten.len(), steps, every, |t| t);
    let (failures, power) = compare(&ours, &theirs);
    assert!(failures.is_empty(), "{failures:#?}");
    // Enough episodes that a 10% change of the apples statistics would be flagged.
    for (name, fraction) in power.iter().filter(|(n, _)| n.starts_with("apples")) {
        assert!(
            *fraction < 0.10,
            "{name}: only a {:.0}% difference is detectable",
            fraction * 100.0
        );
    }
}

#[test]
fn a_smaller_regrowth_radius_is_detected() {
    let (theirs, steps, every) = reference();
    let ours = ours(OURS_PER_THEIRS * theirs.eaten.len(), steps, every, |t| {
        t.replace("regrowth_radius: 2.0", "regrowth_radius: 1.0")
    });
    assert!(!compare(&ours, &theirs).0.is_empty());
}
