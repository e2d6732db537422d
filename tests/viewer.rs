//! Smoke tests of `gridarena view`: the window opens under Xvfb (lavapipe), replays a recorded
//! rollout or a run's greedy policy live, writes a screenshot after a few frames and exits; the
//! screenshot shows the grid with every agent's colour. Without a display, or with a bad
//! rollout or a checkpoint that does not fit, `view` fails with a clear message.
//!
//! The Xvfb tests skip loudly when `xvfb-run` is not on PATH, unless `CI` is set.

#![cfg(feature = "viewer")]

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

#[path = "common/skip.rs"]
mod skip;

use gridarena::critic::Device;
use gridarena::render::output::rollout_layout;
use gridarena::render::scene::palette;
use gridarena::rollout::Rollout;
use gridarena::train::config::{NetworkConfig, OnlineDqnConfig, PqnConfig, Pr2Config, RunConfig};
use gridarena::train::{TrainOptions, train};

const BIN: &str = env!("CARGO_BIN_EXE_gridarena");
const SCENARIO: &str = "assets/scenarios/pursuit_3.ron";

/// `xvfb-run -a` picks a free display number racily; one window at a time.
static XVFB: Mutex<()> = Mutex::new(());

fn xvfb_available() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("xvfb-run").is_file()));
    if !found {
        skip::skip("xvfb-run is not on PATH (install xvfb)");
    }
    found
}

/// A fresh directory under the system temp dir (kept, so screenshots stay as artifacts).
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gridarena-viewer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Records 60 random-policy steps of pursuit_3 with the binary.
fn record(dir: &Path) -> PathBuf {
    let path = dir.join("r.ron");
    let out = Command::new(BIN)
        .args([
            "rollout",
            "--scenario",
            SCENARIO,
            "--seed",
            "1",
            "--steps",
            "60",
            "--out",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "rollout failed: {}", show(&out));
    path
}

/// `xvfb-run -a timeout 60 gridarena view ARGS --screenshot SHOT --after-frames 8`.
fn view_under_xvfb(args: &[&std::ffi::OsStr], shot: &Path) -> Output {
    let _one = XVFB.lock().unwrap_or_else(|e| e.into_inner());
    Command::new("xvfb-run")
        .args(["-a", "timeout", "60", BIN, "view"])
        .args(args)
        .arg("--screenshot")
        .arg(shot)
        .args(["--after-frames", "8"])
        .output()
        .unwrap()
}

/// RGBA pixels of a PNG.
fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

/// The screenshot is a real picture holding every agent's colour (egui hands screenshots over
/// as RGBA whatever the surface format, Bgra8Unorm included, so the order is checked exactly).
fn check_screenshot(shot: &Path, colors: &[[u8; 3]]) {
    assert!(shot.is_file(), "no screenshot at {}", shot.display());
    // Kept under the target directory and named in the log even when the test passes (the
    // harness captures print macros, not writes to the stderr handle).
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "viewer_{}",
        shot.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("screenshot.png")
    ));
    std::fs::copy(shot, &kept).unwrap();
    let _ = writeln!(std::io::stderr(), "screenshot artifact: {}", kept.display());
    let (w, h, pixels) = decode(shot);
    assert!(w >= 400 && h >= 300, "screenshot of {w}x{h}");
    let distinct: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(
        distinct.len() >= 50,
        "the screenshot looks blank: {} distinct colours",
        distinct.len()
    );
    let near = |a: [u8; 3], b: [u8; 3]| (0..3).all(|i| a[i].abs_diff(b[i]) <= 3);
    for (slot, &c) in colors.iter().enumerate() {
        let count = pixels.iter().filter(|&&p| near(p, c)).count();
        assert!(
            count >= 20,
            "agent {slot}'s colour {c:?} is not in the screenshot ({count} pixels)"
        );
    }
}

fn layout_colors(rollout: &Path) -> Vec<[u8; 3]> {
    let r = Rollout::load(rollout).unwrap();
    palette(&rollout_layout(&r).unwrap())
}

#[test]
fn replay_window_shows_the_grid_and_every_agent() {
    if !xvfb_available() {
        return;
    }
    let dir = temp_dir("replay");
    let rollout = record(&dir);
    let shot = dir.join("shot.png");
    let out = view_under_xvfb(&[rollout.as_os_str()], &shot);
    assert!(out.status.success(), "view failed: {}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&shot.display().to_string()),
        "view did not print the screenshot's path: {}",
        show(&out)
    );
    check_screenshot(&shot, &layout_colors(&rollout));
}

fn tiny_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    let cfg = RunConfig {
        scenario: Some(SCENARIO.into()),
        device: Device::Cpu,
        arenas: 8,
        rollout: 8,
        total_steps: 8 * 8 * 4,
        network: NetworkConfig {
            hidden: 16,
            layers: 1,
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
        ..Default::default()
    };
    train(&cfg, &run, &TrainOptions::default()).unwrap();
    run
}

#[test]
fn live_window_plays_a_trained_run() {
    if !xvfb_available() {
        return;
    }
    let dir = temp_dir("live");
    let run = tiny_run(&dir);
    // The same scenario's colours, from a recording of it.
    let colors = layout_colors(&record(&dir));
    let shot = dir.join("live.png");
    let out = view_under_xvfb(
        &[
            "--run".as_ref(),
            run.as_os_str(),
            "--agent".as_ref(),
            "0".as_ref(),
        ],
        &shot,
    );
    assert!(out.status.success(), "view --run failed: {}", show(&out));
    check_screenshot(&shot, &colors);
}

#[test]
fn without_a_display_view_points_to_render() {
    let dir = temp_dir("nodisplay");
    let rollout = record(&dir);
    let out = Command::new(BIN)
        .arg("view")
        .arg(&rollout)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success(), "view succeeded without a display");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no display"), "{}", show(&out));
    assert!(err.contains("gridarena render"), "{}", show(&out));
}

#[test]
fn a_rollout_of_another_version_is_refused_clearly() {
    let dir = temp_dir("version");
    let rollout = record(&dir);
    let text = std::fs::read_to_string(&rollout).unwrap();
    assert!(text.contains("version: 1,"), "{text:.200}");
    let old = dir.join("old.ron");
    std::fs::write(&old, text.replacen("version: 1,", "version: 99,", 1)).unwrap();
    let out = Command::new(BIN)
        .arg("view")
        .arg(&old)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("99") && err.contains("version"),
        "{}",
        show(&out)
    );
    assert!(
        !err.contains("no display"),
        "the file must be checked first: {}",
        show(&out)
    );
}

#[test]
fn a_scenario_that_does_not_fit_the_checkpoint_is_refused_clearly() {
    let dir = temp_dir("mismatch");
    let run = tiny_run(&dir);
    // The default Pursuit scenario has other observation and learner counts than pursuit_3.
    let out = Command::new(BIN)
        .arg("view")
        .arg("--run")
        .arg(&run)
        .args(["--scenario", "assets/scenarios/pursuit.ron"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not fit"), "{}", show(&out));
    assert!(!err.contains("no display"), "{}", show(&out));

    // A configuration whose networks are smaller than the checkpoint's.
    let config = run.join("config.ron");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("hidden: 16,"), "{text}");
    std::fs::write(&config, text.replacen("hidden: 16,", "hidden: 8,", 1)).unwrap();
    let out = Command::new(BIN)
        .arg("view")
        .arg("--run")
        .arg(&run)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("checkpoint") && err.contains("does not fit"),
        "{}",
        show(&out)
    );
}

/// In replay mode the panel rebuilds observations from recorded frames: for every scenario
/// asset they match what the learners saw live (avatar substrates: the window; their extras
/// depend on cooldowns a frame does not record).
#[test]
fn observations_rebuilt_from_frames_match_the_live_ones() {
    use gridarena::engine::EnvBatch;
    use gridarena::layout::{AVATAR_CELL_BYTES, Rules};
    use gridarena::scenario::Scenario;
    use gridarena::viewer::source::{rebuild_observations, validate_frame};

    let mut checked = 0;
    for entry in std::fs::read_dir("assets/scenarios").unwrap() {
        let path = entry.unwrap().path();
        let loaded = Scenario::load(&path).unwrap();
        let mut batch = EnvBatch::new(&loaded, 1, 7).unwrap();
        let layout = batch.layout().clone();
        let compared = match &layout.rules {
            Rules::Gift(gridarena::substrate::gift::Gift { avatar: a, .. })
            | Rules::Chemistry(gridarena::substrate::chemistry::Chemistry { avatar: a, .. })
            | Rules::Harvest(gridarena::substrate::harvest::Harvest { avatar: a, .. })
            | Rules::CleanUp(gridarena::substrate::cleanup::CleanUp { avatar: a, .. }) => {
                a.window.width() * a.window.depth() * AVATAR_CELL_BYTES
            }
            _ => layout.obs_len,
        };
        let mut policy = gridarena::policy::RandomPolicy::new(3, 1, layout.actions);
        let mut actions = vec![0u8; batch.actions_mut().len()];
        for step in 0..40 {
            let frame = batch.snapshot(0);
            validate_frame(&layout, step, &frame).unwrap();
            let rebuilt = rebuild_observations(&layout, &frame)
                .unwrap_or_else(|| panic!("{}: step {step}: no observations", path.display()));
            let live = &batch.buffers().obs;
            assert_eq!(rebuilt.len(), live.len());
            for (l, (a, b)) in rebuilt
                .chunks_exact(layout.obs_len)
                .zip(live.chunks_exact(layout.obs_len))
                .enumerate()
            {
                assert_eq!(
                    a[..compared],
                    b[..compared],
                    "{}: step {step}, learner {l}",
                    path.display()
                );
            }
            policy.act(&mut actions);
            batch.actions_mut().copy_from_slice(&actions);
            batch.step().unwrap();
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} scenarios");
}

/// Pixels of `shot` within 3 of `c` in every channel.
fn count_color(shot: &Path, c: [u8; 3]) -> usize {
    let (_, _, pixels) = decode(shot);
    let near = |a: [u8; 3]| (0..3).all(|i| a[i].abs_diff(c[i]) <= 3);
    pixels.iter().filter(|&&p| near(p)).count()
}

/// A `view --watch` window under Xvfb, its stdout read line by line.
struct Watched {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    transcript: Vec<String>,
    stderr: std::sync::Arc<Mutex<String>>,
}

impl Watched {
    fn start(args: &[&std::ffi::OsStr]) -> Watched {
        use std::io::{BufRead as _, Read as _};
        use std::os::unix::process::CommandExt as _;
        let mut child = Command::new("xvfb-run")
            .args(["-a", "timeout", "180", BIN, "view"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // Its own process group, so the window, timeout and Xvfb end together.
            .process_group(0)
            .spawn()
            .unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(Mutex::new(String::new()));
        let (mut err, sink) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Watched {
            child,
            lines,
            transcript: Vec::new(),
            stderr,
        }
    }

    /// The first stdout line passing `want`, waiting at most a minute (a guard, not a timing
    /// requirement).
    fn wait_for(&mut self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.transcript.push(line.clone());
                    if want(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {what} from view --watch\n--- stdout\n{}\n--- stderr\n{}",
                    self.transcript.join("\n"),
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    /// Waits for the screenshot `name` to be written and keeps it as a test artifact.
    fn shot(&mut self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        let want = format!("wrote {}", path.display());
        self.wait_for(&want, |l| l == want);
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("viewer_watch_{name}"));
        std::fs::copy(&path, &kept).unwrap();
        let _ = writeln!(std::io::stderr(), "screenshot artifact: {}", kept.display());
        path
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

/// The authoring loop: `view --scenario S --watch` reloads a valid edit (the new walls are
/// drawn), shows an invalid edit's file:line:column in the panel while the last good version
/// keeps running, and recovers when the file is fixed.
#[test]
fn watched_scenario_reloads_shows_errors_and_recovers() {
    if !xvfb_available() {
        return;
    }
    let dir = temp_dir("watch");
    let shots = dir.join("shots");
    let scenario = dir.join("arena.ron");
    let original = std::fs::read_to_string(SCENARIO).unwrap();
    // Four more walls on row 3 (file line 20), then that row one cell short.
    let walled = original.replacen("\"***#***\",", "\"*#####*\",", 1);
    let ragged = walled.replacen("\"*#####*\",", "\"*#####\",", 1);
    assert!(walled != original && ragged != walled);
    std::fs::write(&scenario, &original).unwrap();

    // Where `gridarena check` locates the broken edit.
    let broken = dir.join("broken.ron");
    std::fs::write(&broken, &ragged).unwrap();
    let out = Command::new(BIN)
        .arg("check")
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let at = format!("{}:20:", broken.display());
    assert!(
        err.contains(&at),
        "check did not locate the ragged row: {}",
        show(&out)
    );
    let at = format!("{}:20:", scenario.display());

    let _one = XVFB.lock().unwrap_or_else(|e| e.into_inner());
    let mut view = Watched::start(&[
        "--scenario".as_ref(),
        scenario.as_os_str(),
        "--watch".as_ref(),
        "--reload-shots".as_ref(),
        shots.as_os_str(),
        "--fps".as_ref(),
        "30".as_ref(),
    ]);
    view.wait_for("watching", |l| l.starts_with("watching "));
    let start = view.shot(&shots, "00_start.png");
    let colors = palette(&gridarena::layout::Layout::derive(
        &gridarena::scenario::Scenario::load(&scenario).unwrap(),
    ));
    check_screenshot(&start, &colors);

    // A valid edit: the arena restarts with nine walls instead of five.
    std::fs::write(&scenario, &walled).unwrap();
    view.wait_for("reloaded", |l| l.starts_with("reloaded "));
    let reloaded = view.shot(&shots, "01_reloaded.png");
    // The renderer's wall colour (render::draw::WALL).
    let walls = |p: &Path| count_color(p, [52, 56, 64]);
    let (w0, w1) = (walls(&start), walls(&reloaded));
    assert!(
        w1 * 10 > w0 * 15,
        "the new walls are not drawn: {w0} wall pixels before, {w1} after"
    );
    assert_eq!(count_color(&reloaded, [200, 40, 40]), 0);

    // A broken edit: the error with its position, in the panel; the walled arena runs on.
    std::fs::write(&scenario, &ragged).unwrap();
    let line = view.wait_for("an invalid edit", |l| l.starts_with("invalid edit"));
    assert!(
        line.contains(&at),
        "the error is not located at {at}: {line}"
    );
    let error = view.shot(&shots, "02_error.png");
    let red = count_color(&error, [200, 40, 40]);
    assert!(red >= 200, "no error box in the panel ({red} red pixels)");
    let w2 = walls(&error);
    assert!(
        w2.abs_diff(w1) * 20 <= w1,
        "the last good version is not shown: {w1} wall pixels before the broken edit, {w2} after"
    );

    // The fix: back to the original map, and the error is gone.
    std::fs::write(&scenario, &original).unwrap();
    view.wait_for("recovered", |l| l.starts_with("recovered "));
    let recovered = view.shot(&shots, "03_recovered.png");
    assert_eq!(
        count_color(&recovered, [200, 40, 40]),
        0,
        "the error box stayed"
    );
    let w3 = walls(&recovered);
    assert!(
        w3.abs_diff(w0) * 20 <= w0,
        "the fixed version is not drawn: {w0} wall pixels at start, {w3} now"
    );
    check_screenshot(&recovered, &colors);
}
