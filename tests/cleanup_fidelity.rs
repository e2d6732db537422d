//! clean_up against Melting Pot's own implementation (dm-meltingpot 2.4.1), with the episode
//! as the unit: python/scripts/meltingpot_sample.py ran 120 episodes of 1000 steps of
//! `clean_up` with 7 uniformly random players (every player NOOP on each 100th step, when
//! the frame is sampled) on two maps, the config's and the same with its river clean at the
//! start, and wrote per-episode statistics to python/tests/data/meltingpot_cleanup.json. Here
//! the same number of gridarena episodes of the same length (no random end) under the same
//! policy give the same statistics, and a Welch t-test on each must not reject equality.
//! Apples standing and polluted cells are compared over time too: each quarter's mean of an
//! episode's samples.
//!
//! Power: the smallest difference each comparison flags (|t| > 3.5) is printed beside it, and
//! the tests assert it stays below 12% of the reference's mean for the statistics that vary
//! (measured with 120 episodes a side: pollution 4-5%, cells cleaned 9-10%, zaps 10%, apples
//! eaten 9%, apples standing 10%; with the 30 episodes the reference held before, apples eaten
//! could only be told apart at 16% and cells cleaned at 22%).
//!
//! On the config's map the river starts 54% polluted, above the 40% at which apples stop
//! growing, and random players never clean it below: no apple grows on either side, and the
//! statistics that test anything are the pollution, the cleaning and the zaps. The clean
//! river tests the growth: the orchard fills while the pollution rises past the threshold,
//! then is eaten bare.

use gridarena::engine::EnvBatch;
use gridarena::scenario::Scenario;
use rand_core::{Rng, SeedableRng};

const CRITICAL_T: f64 = 3.5;
/// The smallest change, as a fraction of Melting Pot's mean, that the compared statistics must
/// be able to flag.
const POWER: f64 = 0.12;
const ACTIONS: u32 = 9;
const APPLE: u8 = 1;
const DIRT: u8 = 2;

/// Per-episode statistics, by name.
type Sample = Vec<(&'static str, Vec<f64>)>;

const STATS: [&str; 15] = [
    "apples eaten",
    "zaps landed",
    "cells cleaned",
    "apples standing (mean of samples)",
    "apples standing (first sample)",
    "polluted cells (mean of samples)",
    "polluted cells (first sample)",
    "apples standing (first quarter)",
    "apples standing (second quarter)",
    "apples standing (third quarter)",
    "apples standing (last quarter)",
    "polluted cells (first quarter)",
    "polluted cells (second quarter)",
    "polluted cells (third quarter)",
    "polluted cells (last quarter)",
];

/// The means of the four quarters of a series of samples: the statistic over time.
fn quarters(s: &[f64]) -> [f64; 4] {
    std::array::from_fn(|q| mean(&s[q * s.len() / 4..(q + 1) * s.len() / 4]))
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn var(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// One episode's statistics in [`STATS`] order.
fn stats(eaten: f64, zaps: f64, cleaned: f64, apples: &[f64], dirt: &[f64]) -> [f64; 15] {
    let (a, d) = (quarters(apples), quarters(dirt));
    [
        eaten,
        zaps,
        cleaned,
        mean(apples),
        apples[0],
        mean(dirt),
        dirt[0],
        a[0],
        a[1],
        a[2],
        a[3],
        d[0],
        d[1],
        d[2],
        d[3],
    ]
}

fn collect(per_episode: Vec<[f64; 15]>) -> Sample {
    STATS
        .iter()
        .enumerate()
        .map(|(k, &name)| (name, per_episode.iter().map(|e| e[k]).collect()))
        .collect()
}

/// The reference's variant `variant`, its episode length and sampling interval.
fn reference(variant: &str) -> (Sample, u32, u32) {
    let text = std::fs::read_to_string("python/tests/data/meltingpot_cleanup.json").unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = |e: &serde_json::Value, k: &str| -> Vec<f64> {
        e[k].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let f = |e: &serde_json::Value, k: &str| e[k].as_f64().unwrap();
    let eps = doc["variants"][variant].as_array().unwrap();
    let per_episode = eps
        .iter()
        .map(|e| {
            stats(
                f(e, "apples_eaten"),
                f(e, "zaps_landed"),
                f(e, "cells_cleaned"),
                &list(e, "apples_standing"),
                &list(e, "dirt_cells"),
            )
        })
        .collect();
    let steps = doc["episode_steps"].as_u64().unwrap() as u32;
    let every = doc["sample_every"].as_u64().unwrap() as u32;
    (collect(per_episode), steps, every)
}

/// The shipped asset with episodes of exactly `steps` steps (+1 so the counters can be read
/// before the reset), the river clean at the start if asked, with `edit` applied to its text.
fn ours(
    episodes: usize,
    steps: u32,
    every: u32,
    clean_river: bool,
    edit: impl Fn(String) -> String,
) -> Sample {
    let text = std::fs::read_to_string("assets/scenarios/clean_up.ron").unwrap();
    let text: String = text
        .lines()
        .map(|l| match l.trim_start().starts_with("\"#") && clean_river {
            true => l.replace('F', "H"),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("min_steps: 1000", "min_steps: 1000000")
        .replace("max_steps: 5000", &format!("max_steps: {}", steps + 1));
    let loaded = Scenario::parse(&edit(text), "clean_up.ron").unwrap();
    let mut b = EnvBatch::new(&loaded, episodes, 23).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let mut apples = vec![Vec::new(); episodes];
    let mut dirt = vec![Vec::new(); episodes];
    for t in 1..=steps {
        let sample = t % every == 0;
        for a in b.actions_mut().iter_mut() {
            *a = if sample {
                0
            } else {
                (rng.next_u32() % ACTIONS) as u8
            };
        }
        b.step().unwrap();
        if sample {
            for arena in 0..episodes {
                let items = b.snapshot(arena).items;
                let count = |v| items.iter().filter(|&&i| i == v).count() as f64;
                apples[arena].push(count(APPLE));
                dirt[arena].push(count(DIRT));
            }
        }
    }
    let per_episode = (0..episodes)
        .map(|a| {
            let c = b.counters(a);
            stats(c[0] as f64, c[2] as f64, c[4] as f64, &apples[a], &dirt[a])
        })
        .collect();
    collect(per_episode)
}

/// Welch's t statistic and the smallest difference of means it would flag (two samples with
/// no spread at all agree when their means do).
fn welch(a: &[f64], b: &[f64]) -> (f64, f64) {
    let se = (var(a) / a.len() as f64 + var(b) / b.len() as f64).sqrt();
    let d = mean(a) - mean(b);
    let t = if se == 0.0 && d == 0.0 { 0.0 } else { d / se };
    (t, CRITICAL_T * se)
}

/// The statistics that fail Welch's test, and per statistic (name, the smallest difference
/// the test flags as a fraction of the reference's mean; infinite where that mean is 0).
fn compare(ours: &Sample, theirs: &Sample) -> (Vec<String>, Vec<(&'static str, f64)>) {
    let (mut failures, mut power) = (Vec::new(), Vec::new());
    for ((name, a), (_, b)) in ours.iter().zip(theirs) {
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
        power.push((*name, detectable / mean(b).abs()));
    }
    (failures, power)
}

/// Asserts that a change of `fraction` of each of `names` would be flagged.
fn assert_power(power: &[(&str, f64)], names: &[&str], fraction: f64) {
    for name in names {
        let (_, p) = power.iter().find(|(n, _)| n == name).expect("a statistic");
        assert!(
            *p < fraction,
            "{name}: only a {:.0}% difference is detectable",
            p * 100.0
        );
    }
}

fn check(
    variant: &str,
    clean_river: bool,
    edit: impl Fn(String) -> String,
) -> (Vec<String>, Vec<(&'static str, f64)>) {
    let (theirs, steps, every) = reference(variant);
    let ours = ours(theirs[0].1.len(), steps, every, clean_river, edit);
    println!("-- {variant}");
    compare(&ours, &theirs)
}

/// On the config's map no apple grows on either side: the pollution, the cleaning and the zaps
/// are what is compared, each with enough episodes that a 12% change would be flagged.
#[test]
fn random_play_on_the_config_map_matches_melting_pot_per_episode() {
    let (failures, power) = check("config_map", false, |t| t);
    assert!(failures.is_empty(), "{failures:#?}");
    let names = [
        "polluted cells (mean of samples)",
        "cells cleaned",
        "zaps landed",
    ];
    assert_power(&power, &names, POWER);
}

/// From a clean river the orchard grows and is eaten: apples and pollution over the episode.
#[test]
fn random_play_from_a_clean_river_matches_melting_pot_per_episode() {
    let (failures, power) = check("clean_river", true, |t| t);
    assert!(failures.is_empty(), "{failures:#?}");
    let names = [
        "apples eaten",
        "apples standing (mean of samples)",
        "polluted cells (mean of samples)",
        "cells cleaned",
    ];
    assert_power(&power, &names, POWER);
}

#[test]
fn a_lower_pollution_rate_is_detected() {
    let (failures, _) = check("clean_river", true, |t| {
        t.replace("dirt_spawn_prob: 0.5", "dirt_spawn_prob: 0.4")
    });
    assert!(
        failures.iter().any(|f| f.starts_with("polluted cells")),
        "{failures:#?}"
    );
}
