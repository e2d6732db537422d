//! Unit tests of the viewer app, driven headless through egui's input.

use std::path::Path;

use eframe::egui::{Event, PointerButton, Pos2, RawInput, Rect, vec2};

use super::*;
use crate::engine::EnvBatch;
use crate::policy::RandomPolicy;
use crate::rollout::Rollout;
use crate::scenario::Scenario;
use crate::viewer::source::{Live, Replay};

const SCENARIO: &str = "assets/scenarios/pursuit_3.ron";

fn rollout(steps: usize) -> Rollout {
    let loaded = Scenario::load(Path::new(SCENARIO)).unwrap();
    let mut b = EnvBatch::new(&loaded, 1, 1).unwrap();
    b.start_recording(0);
    let mut policy = RandomPolicy::new(1, 1, b.layout().actions);
    let mut a = vec![0; b.actions_mut().len()];
    for _ in 0..steps {
        policy.act(&mut a);
        b.actions_mut().copy_from_slice(&a);
        b.step().unwrap();
    }
    b.finish_recording().unwrap()
}

fn replay_app(opts: Options) -> ViewerApp {
    let r = Replay::from_rollout(rollout(30), Path::new("test.ron")).unwrap();
    ViewerApp::with_source(Source::Replay(Box::new(r)), opts, Outcome::default())
}

fn opts() -> Options {
    Options {
        screenshot: None,
        after_frames: 3,
        fps: 8.0,
        agent: None,
        watch: None,
        reload_shots: None,
    }
}

fn key(k: Key) -> Event {
    Event::Key {
        key: k,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers: Modifiers::NONE,
    }
}

fn pass(ctx: &egui::Context, app: &mut ViewerApp, events: Vec<Event>) {
    let raw = RawInput {
        screen_rect: Some(Rect::from_min_size(Pos2::ZERO, vec2(1180.0, 760.0))),
        events,
        ..Default::default()
    };
    let mut out = ctx.run_ui(raw, |ui| app.frame_ui(ui));
    // No painter applies the font textures here; debug builds insist they are handled.
    out.textures_delta.clear();
}

#[test]
fn keyboard_shortcuts_drive_playback() {
    let ctx = egui::Context::default();
    let mut app = replay_app(opts());
    pass(&ctx, &mut app, vec![key(Key::Space)]);
    assert!(!app.playing, "Space pauses");
    pass(
        &ctx,
        &mut app,
        vec![key(Key::ArrowRight), key(Key::ArrowRight)],
    );
    // Two presses of one key in a pass count once.
    assert_eq!(app.cursor, 1);
    pass(&ctx, &mut app, vec![key(Key::ArrowRight)]);
    pass(&ctx, &mut app, vec![key(Key::ArrowRight)]);
    assert_eq!(app.cursor, 3);
    pass(&ctx, &mut app, vec![key(Key::ArrowLeft)]);
    assert_eq!(app.cursor, 2);
    let fps = app.fps;
    pass(&ctx, &mut app, vec![key(Key::Plus)]);
    assert!(app.fps > fps);
    pass(&ctx, &mut app, vec![key(Key::Minus)]);
    pass(&ctx, &mut app, vec![key(Key::Minus)]);
    assert!(app.fps < fps);
    pass(&ctx, &mut app, vec![key(Key::Home)]);
    assert_eq!(app.cursor, 0);
    pass(&ctx, &mut app, vec![key(Key::F12)]);
    let shot = app.in_flight.as_ref().map(|r| (r.path.clone(), r.close));
    assert_eq!(
        shot,
        Some((PathBuf::from("gridarena_screenshot_0.png"), false))
    );
    pass(&ctx, &mut app, vec![key(Key::Space)]);
    assert!(app.playing);
    // Stepping back at the start and forward at the end stay in range.
    pass(&ctx, &mut app, vec![key(Key::ArrowLeft)]);
    assert_eq!(app.cursor, 0);
    for _ in 0..40 {
        pass(&ctx, &mut app, vec![key(Key::ArrowRight)]);
    }
    assert_eq!(app.cursor, app.source.frames() - 1);
}

#[test]
fn clicking_an_agent_selects_it() {
    let ctx = egui::Context::default();
    let mut app = replay_app(opts());
    pass(&ctx, &mut app, vec![key(Key::Space)]);
    let (rect, scale) = app.grid_rect.unwrap();
    let frame = app.source.frame(app.cursor).unwrap().clone();
    let slot = frame.alive.iter().position(|&a| a).unwrap();
    let (x, y) = frame.positions[slot];
    let p = rect.min + vec2((x as f32 + 0.5) * scale, (y as f32 + 0.5) * scale);
    let button = |pressed| Event::PointerButton {
        pos: p,
        button: PointerButton::Primary,
        pressed,
        modifiers: Modifiers::NONE,
    };
    pass(&ctx, &mut app, vec![Event::PointerMoved(p), button(true)]);
    pass(&ctx, &mut app, vec![button(false)]);
    let picked = app.selected.expect("an agent is selected");
    assert_eq!(
        frame.positions[picked],
        (x, y),
        "the agent on the clicked cell"
    );
    // A selected agent's panel draws (observation, rewards) without trouble.
    pass(&ctx, &mut app, Vec::new());
    // Clicking an empty spot outside the grid clears the selection.
    let away = rect.min - vec2(2.0, 2.0);
    let button = |pressed| Event::PointerButton {
        pos: away,
        button: PointerButton::Primary,
        pressed,
        modifiers: Modifiers::NONE,
    };
    pass(
        &ctx,
        &mut app,
        vec![Event::PointerMoved(away), button(true)],
    );
    pass(&ctx, &mut app, vec![button(false)]);
    assert_eq!(app.selected, None);
}

#[test]
fn screenshot_mode_requests_after_n_frames_and_saves_the_png() {
    let dir = std::env::temp_dir().join(format!("gridarena-viewer-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shot.png");
    let ctx = egui::Context::default();
    let mut app = replay_app(Options {
        screenshot: Some(path.clone()),
        ..opts()
    });
    for _ in 0..2 {
        pass(&ctx, &mut app, Vec::new());
    }
    assert!(app.in_flight.is_none());
    pass(&ctx, &mut app, Vec::new());
    assert_eq!(app.shown, 3);
    assert_eq!(app.cursor, 2, "one frame per pass");
    assert!(app.in_flight.as_ref().is_some_and(|r| r.close));
    // The integration hands the image over; the next pass writes it.
    *lock(&app.image) = Some(Arc::new(egui::ColorImage::new(
        [4, 3],
        vec![Color32::from_rgb(10, 20, 30); 12],
    )));
    pass(&ctx, &mut app, Vec::new());
    assert_eq!(lock(&app.outcome).clone(), Some(Ok(path.clone())));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn live_mode_steps_back_through_its_history_and_restarts_with_a_new_seed() {
    let dir = std::env::temp_dir().join(format!("gridarena-viewer-live-{}", std::process::id()));
    crate::viewer::source::tests::tiny_run(&dir, SCENARIO, Default::default());
    let live = Live::open(&dir, None, 5).unwrap();
    let ctx = egui::Context::default();
    let mut app = ViewerApp::with_source(
        Source::Live(Box::new(live)),
        Options {
            agent: Some(0),
            ..opts()
        },
        Outcome::default(),
    );
    pass(&ctx, &mut app, vec![key(Key::Space)]);
    for _ in 0..5 {
        pass(&ctx, &mut app, vec![key(Key::ArrowRight)]);
    }
    assert_eq!(app.cursor, 5);
    assert!(app.source.frames() >= 6);
    let d = app.source.details(app.cursor);
    let (n, o, a) = {
        let l = app.source.layout();
        (l.learners, l.obs_len, l.actions)
    };
    assert_eq!(d.obs.as_ref().map(Vec::len), Some(n * o));
    assert_eq!(d.q.len(), n);
    assert!(
        d.q.iter()
            .all(|q| q.len() == a && q.iter().all(|v| v.is_finite()))
    );
    pass(
        &ctx,
        &mut app,
        vec![key(Key::ArrowLeft), key(Key::ArrowLeft)],
    );
    pass(&ctx, &mut app, vec![key(Key::ArrowLeft)]);
    assert_eq!(app.cursor, 3);
    let before = app.source.frames();
    pass(&ctx, &mut app, vec![key(Key::ArrowRight)]);
    assert_eq!(app.source.frames(), before, "replays its history first");
    pass(&ctx, &mut app, vec![key(Key::Home)]);
    assert_eq!(app.cursor, 0);
    assert_eq!(app.source.frames(), 1);
    assert!(matches!(&app.source, Source::Live(l) if l.seed == 6));
    assert!(app.error.is_none(), "{:?}", app.error);
    std::fs::remove_dir_all(&dir).unwrap();
}
