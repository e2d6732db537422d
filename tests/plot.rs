//! The learning-curve PNG of a tiny two-seed run: written, decodable, of the documented size,
//! from metrics lines that carry each seed's counters.

use std::path::PathBuf;

use gridarena::critic::Device;
use gridarena::train::config::{NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig};
use gridarena::train::plot::{PLOT_SIZE, plot_run};
use gridarena::train::{TrainOptions, train};

#[test]
fn a_two_seed_run_plots_a_png_of_the_expected_size_with_each_seeds_counters() {
    let run: PathBuf =
        std::env::temp_dir().join(format!("gridarena-plot-two-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run);
    let cfg = RunConfig {
        scenario: Some(PathBuf::from("tests/data/chase.ron")),
        device: Device::Cpu,
        seeds: 2,
        arenas: 16,
        rollout: 8,
        total_steps: 16 * 8 * 12,
        checkpoint_every: 100,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
            ..Default::default()
        },
        pqn: PqnConfig {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        pr2: Pr2Config {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        online_dqn: OnlineDqnConfig {
            epochs: 1,
            minibatches: 2,
            ..Default::default()
        },
        ..RunConfig::default()
    };
    train(&cfg, &run, &TrainOptions::default()).unwrap();

    // Every line carries both seeds' counters (null where a seed finished no episode).
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let mut with_counters = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let per_seed = v["seeds_counters_per_seed"].as_array().unwrap();
        assert_eq!(per_seed.len(), 2, "{line}");
        with_counters += per_seed.iter().filter(|c| c["catches"].is_number()).count();
    }
    assert!(with_counters > 0, "no seed finished an episode");

    let png = plot_run(&run).unwrap();
    assert_eq!(png, run.join("learning_curve.png"));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let info = reader.info();
    assert_eq!((info.width, info.height), PLOT_SIZE);
    // Not blank: each panel draws its curve in its colour, where the panel is (return top
    // left, catches top right, loss below; the top 5/9 of the height holds the first two).
    let (w, h) = (PLOT_SIZE.0 as usize, PLOT_SIZE.1 as usize);
    let mut pixels = vec![0u8; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgb, "{frame:?}");
    let split = h * 5 / 9;
    let count = |colour: [u8; 3], xs: std::ops::Range<usize>, ys: std::ops::Range<usize>| {
        ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
            .filter(|&(x, y)| pixels[(y * w + x) * 3..(y * w + x) * 3 + 3] == colour)
            .count()
    };
    for (name, colour, xs, ys) in [
        ("return", [31, 119, 180], 0..w / 2, 0..split),
        ("catches", [44, 160, 44], w / 2..w, 0..split),
        ("loss", [214, 39, 40], 0..w, split..h),
    ] {
        let n = count(colour, xs, ys);
        assert!(n >= 200, "{name}: {n} pixels of its curve's colour");
    }
    if std::env::var_os("GRIDARENA_KEEP_PLOT").is_none() {
        let _ = std::fs::remove_dir_all(&run);
    } else {
        eprintln!("kept {}", png.display());
    }
}
