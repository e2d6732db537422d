//! The viewer window: the grid (drawn by the renderer's pipeline through a paint callback) and a
//! side panel with playback controls, the timeline, the selected agent's observation,
//! Q-values and opponent predictions, and everyone's rewards.
//!
//! This file holds the window's state, its start-up, the pass that runs every frame, playback
//! (keys, stepping, restarts), reloading a watched scenario and the grid. The side panel is
//! drawn in `panel`, and screenshots are requested and written in `screenshot`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use eframe::egui::{self, Color32, Key, Modifiers, Sense};
use eframe::egui_wgpu;

use super::paint::{GridCallback, install};
use super::source::Source;
use super::watch::Watch;
use crate::render::scene::palette;
use crate::scenario::Scenario;

mod panel;
mod screenshot;

/// How the window ended, when that matters to the caller: the screenshot written (or why not),
/// or a live-mode failure.
pub type Outcome = Arc<Mutex<Option<Result<PathBuf, String>>>>;

/// Locks a mutex, taking the data even if another thread panicked holding it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Start-up options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Write a screenshot here after `after_frames` frames, then close.
    pub screenshot: Option<PathBuf>,
    /// Frames to show before the screenshot.
    pub after_frames: u64,
    /// Playback speed, frames per second.
    pub fps: f32,
    /// Agent selected at start.
    pub agent: Option<usize>,
    /// Reload this scenario file whenever it changes (`--watch`).
    pub watch: Option<PathBuf>,
    /// With `watch`: write a screenshot into this folder at start and after every reload.
    pub reload_shots: Option<PathBuf>,
}

/// A screenshot being taken.
struct ShotRequest {
    path: PathBuf,
    close: bool,
}

/// Errors in the panel (tests look for this colour in screenshots).
pub const ERROR_RED: Color32 = Color32::from_rgb(200, 40, 40);

const MIN_FPS: f32 = 0.5;
const MAX_FPS: f32 = 60.0;

/// The eframe application.
pub struct ViewerApp {
    source: Source,
    colors: Vec<[u8; 3]>,
    cursor: usize,
    playing: bool,
    fps: f32,
    last_advance: Instant,
    selected: Option<usize>,
    auto_shot: Option<PathBuf>,
    after_frames: u64,
    auto_requested: bool,
    shown: u64,
    last_drawn: Option<usize>,
    /// Where the grid was drawn last, and its pixels per cell.
    grid_rect: Option<(egui::Rect, f32)>,
    image: Arc<Mutex<Option<Arc<egui::ColorImage>>>>,
    in_flight: Option<ShotRequest>,
    status: String,
    error: Option<String>,
    outcome: Outcome,
    /// The watched scenario file (`--watch`).
    watch: Option<Watch>,
    /// The located error of the newest version of the watched file, while it is invalid.
    scenario_error: Option<String>,
    /// `--reload-shots`: the folder and the screenshots written so far.
    reload_shots: Option<(PathBuf, u32)>,
    /// A reload screenshot waiting for the new state to be drawn: its path and the passes to
    /// wait.
    pending_shot: Option<(PathBuf, u32)>,
}

impl ViewerApp {
    /// Sets up the grid renderer on the window's device.
    pub fn new(
        cc: &eframe::CreationContext<'_>,
        source: Source,
        opts: Options,
        outcome: Outcome,
    ) -> Result<ViewerApp, String> {
        let rs = cc
            .wgpu_render_state
            .as_ref()
            .ok_or("the window has no wgpu renderer")?;
        install(rs);
        let watch = match &opts.watch {
            Some(path) => {
                let ctx = cc.egui_ctx.clone();
                let w =
                    Watch::start(path, move || ctx.request_repaint()).map_err(|e| e.to_string())?;
                println!("watching {} (save it to reload)", path.display());
                Some(w)
            }
            None => None,
        };
        if let Some(dir) = &opts.reload_shots {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--reload-shots {}: {e}", dir.display()))?;
        }
        let mut app = ViewerApp::with_source(source, opts, outcome);
        app.watch = watch;
        app.schedule_shot("start");
        Ok(app)
    }

    /// The viewer's state, without touching any GPU (the grid renderer is installed by
    /// [`ViewerApp::new`]).
    pub fn with_source(source: Source, opts: Options, outcome: Outcome) -> ViewerApp {
        let colors = palette(source.layout());
        let auto = opts.screenshot.is_some();
        ViewerApp {
            source,
            colors,
            cursor: 0,
            playing: true,
            fps: opts.fps.clamp(MIN_FPS, MAX_FPS),
            last_advance: Instant::now(),
            selected: opts.agent,
            auto_shot: opts.screenshot,
            after_frames: opts.after_frames,
            auto_requested: false,
            shown: 0,
            last_drawn: None,
            grid_rect: None,
            image: Arc::default(),
            in_flight: None,
            status: if auto {
                "taking a screenshot".into()
            } else {
                String::new()
            },
            error: None,
            outcome,
            watch: None,
            scenario_error: None,
            reload_shots: opts.reload_shots.map(|dir| (dir, 0)),
            pending_shot: None,
        }
    }

    /// Reloads the watched scenario when its file changed: a valid version restarts the arena
    /// with it; an invalid one is reported (panel and stdout) and the last good one runs on.
    fn poll_watch(&mut self, ctx: &egui::Context) {
        let Some(watch) = &mut self.watch else {
            return;
        };
        if !watch.changed() {
            if let Some(due) = watch.pending() {
                ctx.request_repaint_after(due);
            }
            return;
        }
        let path = watch.path().to_path_buf();
        let reloaded = Scenario::load(&path)
            .map_err(|e| e.to_string())
            .and_then(|loaded| self.source.reload(loaded).map_err(|e| e.to_string()));
        match reloaded {
            Ok(()) => {
                let recovered = self.scenario_error.take().is_some();
                self.colors = palette(self.source.layout());
                let agents = self.source.layout().agents;
                self.selected = self.selected.filter(|&s| s < agents);
                self.cursor = 0;
                self.last_drawn = None;
                self.error = None;
                self.last_advance = Instant::now();
                if self.auto_shot.is_none() {
                    self.playing = true;
                }
                let what = if recovered { "recovered" } else { "reloaded" };
                println!("{what} {}: {}", path.display(), self.source.describe());
                if let Source::Live(l) = &self.source
                    && let Some(n) = &l.notice
                {
                    println!("note: {n}");
                }
                self.status = format!("{what} {}", path.display());
                self.schedule_shot(what);
            }
            Err(e) => {
                println!("invalid edit, the last good version keeps running: {e}");
                self.scenario_error = Some(e);
                self.schedule_shot("error");
            }
        }
    }

    /// One pass of the whole window.
    pub fn frame_ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.save_screenshot(&ctx);
        self.poll_watch(&ctx);
        self.keys(&ctx);
        self.advance(&ctx);
        egui::Panel::left("controls")
            .default_size(340.0)
            .resizable(true)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.panel(ui, &ctx));
            });
        egui::CentralPanel::default().show(ui, |ui| self.grid(ui));
        self.after_draw(&ctx);
    }

    /// The absolute number of the frame shown (live histories drop their oldest frames).
    fn frame_number(&self) -> usize {
        self.source.dropped() + self.cursor
    }

    /// Moves one frame forward, stepping the live arena at the end of its history. False at
    /// the end of a recording or on failure.
    fn step_forward(&mut self, ctx: &egui::Context) -> bool {
        if self.cursor + 1 < self.source.frames() {
            self.cursor += 1;
            return true;
        }
        if !self.source.is_live() {
            return false;
        }
        match self.source.extend() {
            Ok(dropped) => {
                self.cursor = self.cursor.saturating_sub(dropped) + 1;
                self.cursor = self.cursor.min(self.source.frames().saturating_sub(1));
                true
            }
            Err(e) => {
                self.fail(ctx, e.to_string());
                false
            }
        }
    }

    fn step_back(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    fn restart(&mut self, ctx: &egui::Context) {
        if let Source::Live(l) = &self.source {
            let seed = l.seed.wrapping_add(1);
            match self.source.restart(seed) {
                Ok(()) => self.status = format!("restarted with seed {seed}"),
                Err(e) => self.fail(ctx, e.to_string()),
            }
        }
        self.cursor = 0;
        self.last_advance = Instant::now();
    }

    fn fail(&mut self, ctx: &egui::Context, e: String) {
        self.playing = false;
        if self.auto_shot.is_some() {
            *lock(&self.outcome) = Some(Err(e.clone()));
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        self.error = Some(e);
    }

    fn keys(&mut self, ctx: &egui::Context) {
        let none = Modifiers::NONE;
        let (space, right, left, home, faster, slower, f12) = ctx.input_mut(|i| {
            (
                i.consume_key(none, Key::Space),
                i.consume_key(none, Key::ArrowRight),
                i.consume_key(none, Key::ArrowLeft),
                i.consume_key(none, Key::Home),
                // Both, not short-circuited: `+` arrives as Plus or as Shift+Equals.
                i.consume_key(none, Key::Plus) | i.consume_key(none, Key::Equals),
                i.consume_key(none, Key::Minus),
                i.consume_key(none, Key::F12),
            )
        });
        if space {
            self.playing = !self.playing;
            self.last_advance = Instant::now();
        }
        if right {
            self.playing = false;
            self.step_forward(ctx);
        }
        if left {
            self.playing = false;
            self.step_back();
        }
        if home {
            self.restart(ctx);
        }
        if faster {
            self.fps = (self.fps * 1.5).min(MAX_FPS);
        }
        if slower {
            self.fps = (self.fps / 1.5).max(MIN_FPS);
        }
        if f12 {
            let path = PathBuf::from(format!("gridarena_screenshot_{}.png", self.frame_number()));
            self.request_shot(ctx, path, false);
        }
    }

    /// Playback: one frame per period while playing; with `--screenshot`, one frame per pass
    /// until the screenshot is requested.
    fn advance(&mut self, ctx: &egui::Context) {
        if self.auto_shot.is_some() {
            // One frame per rendered frame: a pass egui re-runs (discarded) must not step.
            if !self.auto_requested
                && self.last_drawn.is_some()
                && self.error.is_none()
                && ctx.current_pass_index() == 0
            {
                self.step_forward(ctx);
            }
            ctx.request_repaint();
            return;
        }
        if !self.playing {
            return;
        }
        let period = Duration::from_secs_f32(1.0 / self.fps.clamp(MIN_FPS, MAX_FPS));
        if self.last_advance.elapsed() >= period {
            self.last_advance = Instant::now();
            if !self.step_forward(ctx) {
                self.playing = false;
                return;
            }
        }
        ctx.request_repaint_after(period.saturating_sub(self.last_advance.elapsed()));
    }

    fn grid(&mut self, ui: &mut egui::Ui) {
        let avail = ui.available_size();
        let (area, response) = ui.allocate_exact_size(avail, Sense::click());
        let layout = self.source.layout();
        let (w, h) = (layout.width.max(1) as f32, layout.height.max(1) as f32);
        let scale = (area.width() / w).min(area.height() / h).max(1.0);
        let rect = egui::Rect::from_center_size(area.center(), egui::vec2(w * scale, h * scale));
        self.grid_rect = Some((rect, scale));
        if response.clicked()
            && let Some(p) = response.interact_pointer_pos()
        {
            self.selected = if rect.contains(p) {
                let (x, y) = (
                    ((p.x - rect.min.x) / scale).floor() as i32,
                    ((p.y - rect.min.y) / scale).floor() as i32,
                );
                // Agents on the clicked cell, topmost (drawn last) first; clicking again
                // selects the next one down.
                let here: Vec<usize> = self.source.frame(self.cursor).map_or_else(Vec::new, |f| {
                    (0..f.positions.len().min(f.alive.len()))
                        .rev()
                        .filter(|&s| {
                            let (ax, ay) = f.positions[s];
                            f.alive[s] && ax as i32 == x && ay as i32 == y
                        })
                        .collect()
                });
                match self
                    .selected
                    .and_then(|s| here.iter().position(|&h| h == s))
                {
                    Some(i) => here.get((i + 1) % here.len()).copied(),
                    None => here.first().copied(),
                }
            } else {
                None
            };
        }
        let Some(scene) = self.source.scene(self.cursor, self.selected) else {
            return;
        };
        ui.painter().add(egui_wgpu::Callback::new_paint_callback(
            rect,
            GridCallback { scene },
        ));
        let n = self.frame_number();
        if self.last_drawn != Some(n) {
            self.last_drawn = Some(n);
            self.shown += 1;
        }
    }
}

impl eframe::App for ViewerApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.frame_ui(ui);
    }
}

#[cfg(test)]
mod tests;
