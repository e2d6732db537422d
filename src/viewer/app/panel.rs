//! The side panel: playback controls, the timeline, the watched file and its errors, the
//! selected agent's position, observation, Q-values, hidden-state norm and opponent
//! predictions, everyone's rewards and returns, and the keyboard shortcuts.

use std::time::Instant;

use eframe::egui::{self, Color32, RichText};

use super::{ERROR_RED, MAX_FPS, MIN_FPS, ViewerApp};
use crate::viewer::obs::obs_image;
use crate::viewer::source::Source;
use crate::viewer::widgets::{
    action_names, color, draw_obs, name, prediction_bars, q_bars, slot_label, sparkline, swatch,
};

/// Notices in the panel (a policy other than the one asked for acts).
const NOTICE_AMBER: Color32 = Color32::from_rgb(210, 140, 20);

/// The keyboard shortcuts, as listed in the panel.
const SHORTCUTS: &[(&str, &str)] = &[
    ("Space", "play / pause"),
    ("Right / Left", "step forward / back"),
    ("Home", "restart (live: new seed)"),
    ("+ / -", "faster / slower"),
    ("F12", "screenshot to gridarena_screenshot_<frame>.png"),
];

impl ViewerApp {
    pub(super) fn panel(&mut self, ui: &mut egui::Ui, ctx: &egui::Context) {
        ui.heading("gridarena viewer");
        ui.label(RichText::new(self.source.describe()).small());
        self.watch_panel(ui);
        ui.separator();

        ui.horizontal(|ui| {
            let restart = if self.source.is_live() {
                "Restart (new seed)"
            } else {
                "Restart"
            };
            if ui.button(restart).clicked() {
                self.restart(ctx);
            }
            if ui.button("< Back").clicked() {
                self.playing = false;
                self.step_back();
            }
            if ui
                .button(if self.playing { "Pause" } else { "Play" })
                .clicked()
            {
                self.playing = !self.playing;
                self.last_advance = Instant::now();
            }
            if ui.button("Step >").clicked() {
                self.playing = false;
                self.step_forward(ctx);
            }
        });
        let last = self.source.frames().saturating_sub(1);
        let mut c = self.cursor.min(last);
        let timeline = if self.source.is_live() {
            "frame (history)"
        } else {
            "frame"
        };
        if ui
            .add(egui::Slider::new(&mut c, 0..=last).text(timeline))
            .changed()
        {
            self.cursor = c;
            self.playing = false;
        }
        ui.add(
            egui::Slider::new(&mut self.fps, MIN_FPS..=MAX_FPS)
                .logarithmic(true)
                .text("frames / s"),
        );
        if let Some(f) = self.source.frame(self.cursor) {
            let end = if f.terminated {
                " (terminated)"
            } else if f.truncated {
                " (truncated)"
            } else {
                ""
            };
            ui.label(format!(
                "frame {} · episode {} · t = {}{end}",
                self.frame_number(),
                f.episode,
                f.t
            ));
        }
        if let Source::Live(l) = &self.source {
            ui.label(format!("arena seed {}", l.seed));
        }
        ui.separator();

        // Agent selection.
        let layout = self.source.layout();
        let label = |s: usize| slot_label(layout, s);
        let agents = layout.agents;
        let current = self.selected.map_or("none".to_string(), label);
        let mut selected = self.selected;
        egui::ComboBox::from_label("agent (or click it)")
            .selected_text(current)
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut selected, None, "none");
                for s in 0..agents {
                    let c = self.colors.get(s).copied().unwrap_or([128, 128, 128]);
                    let text = RichText::new(label(s)).color(color(c));
                    ui.selectable_value(&mut selected, Some(s), text);
                }
            });
        self.selected = selected;
        if let Some(s) = self.selected {
            self.agent_details(ui, s);
        }
        ui.separator();
        self.rewards_table(ui);
        ui.separator();
        ui.label(RichText::new("Keys").strong());
        egui::Grid::new("keys").num_columns(2).show(ui, |ui| {
            for (k, what) in SHORTCUTS {
                ui.label(RichText::new(*k).monospace());
                ui.label(*what);
                ui.end_row();
            }
        });
        if !self.status.is_empty() {
            ui.label(RichText::new(&self.status).weak());
        }
        if let Some(e) = &self.error {
            ui.colored_label(ERROR_RED, e);
        }
    }

    /// The watched file, its error while the newest version is invalid, and why the policy
    /// asked for is not acting.
    fn watch_panel(&self, ui: &mut egui::Ui) {
        if let Some(w) = &self.watch {
            ui.label(RichText::new(format!("watching {}", w.path().display())).small());
        }
        if let Some(e) = &self.scenario_error {
            egui::Frame::group(ui.style())
                .stroke(egui::Stroke::new(2.0, ERROR_RED))
                .show(ui, |ui| {
                    ui.label(
                        RichText::new(
                            "The scenario file has an error; the last good version keeps running:",
                        )
                        .strong()
                        .color(ERROR_RED),
                    );
                    ui.label(RichText::new(e).monospace().color(ERROR_RED));
                });
        }
        if let Source::Live(l) = &self.source
            && let Some(n) = &l.notice
        {
            ui.label(RichText::new(n).color(NOTICE_AMBER));
        }
    }

    fn agent_details(&mut self, ui: &mut egui::Ui, s: usize) {
        let details = self.source.details(self.cursor);
        let live = self.source.is_live();
        let q_label = match &self.source {
            Source::Live(l) => l.q_label,
            Source::Replay(_) => "",
        };
        let layout = self.source.layout();
        let Some(frame) = self.source.frame(self.cursor) else {
            return;
        };
        let names = action_names(layout);
        if let (Some(&(x, y)), Some(&alive)) = (frame.positions.get(s), frame.alive.get(s)) {
            let mut line = format!("at ({x}, {y})");
            if !alive {
                line.push_str(", out of the arena");
            }
            if let Some(f) = frame.facing.get(s) {
                let dir = ["north", "east", "south", "west"]
                    .get(*f as usize)
                    .copied()
                    .unwrap_or("?");
                line.push_str(&format!(", facing {dir}"));
            }
            if let Some(c) = frame.carry.get(s) {
                line.push_str(&format!(", carries {c:?}"));
            }
            ui.label(line);
        }
        if s >= layout.learners {
            ui.label("scripted agent: no observation or networks");
            return;
        }
        // Observation window.
        let o = layout.obs_len;
        match details
            .obs
            .as_ref()
            .and_then(|obs| obs.get(s * o..(s + 1) * o))
        {
            Some(bytes) => {
                let title = if details.obs_exact {
                    "observation"
                } else {
                    "observation (rebuilt from the frame)"
                };
                ui.label(RichText::new(title).strong());
                draw_obs(ui, &obs_image(layout, s, bytes));
            }
            None => {
                ui.label("observation not available");
            }
        }
        // Q-values.
        if let Some(q) = details.q.get(s).filter(|q| !q.is_empty()) {
            ui.label(RichText::new(format!("{q_label} per action")).strong());
            q_bars(ui, q, &names);
        } else if live {
            ui.label("Q-values not available for this frame");
        } else {
            ui.label(RichText::new("Q-values: live mode only (view --run RUN)").weak());
        }
        let norms = self.source.hidden_norm_history(s, self.cursor);
        if !norms.is_empty() {
            let now = norms.last().copied().unwrap_or(0.0);
            ui.label(RichText::new(format!("hidden state |h| over time (now {now:.2})")).strong());
            sparkline(ui, &norms);
        }
        let missing = match &self.source {
            Source::Replay(_) => "opponent predictions: live mode only",
            Source::Live(l) if l.has_models => "opponent predictions: not for a terminal frame",
            Source::Live(_) => "opponent model: none in this run",
        };
        prediction_bars(ui, &details, s, layout, &names, &self.colors, missing);
    }

    fn rewards_table(&mut self, ui: &mut egui::Ui) {
        let layout = self.source.layout();
        let names = action_names(layout);
        let Some(frame) = self.source.frame(self.cursor) else {
            return;
        };
        let returns = self.source.returns(self.cursor);
        ui.label(RichText::new("Rewards").strong());
        egui::Grid::new("rewards")
            .num_columns(5)
            .striped(true)
            .show(ui, |ui| {
                ui.label("agent");
                ui.label("last action");
                ui.label("last step");
                ui.label("return");
                ui.end_row();
                for s in 0..layout.agents {
                    let c = color(self.colors.get(s).copied().unwrap_or([128, 128, 128]));
                    let text = RichText::new(s.to_string()).color(c);
                    let text = if self.selected == Some(s) {
                        text.strong()
                    } else {
                        text
                    };
                    ui.horizontal(|ui| {
                        swatch(ui, c);
                        ui.label(text);
                    });
                    ui.label(
                        frame
                            .actions
                            .get(s)
                            .map_or("-".to_string(), |&a| name(&names, a as usize)),
                    );
                    ui.label(
                        frame
                            .rewards
                            .get(s)
                            .map_or("-".to_string(), |r| format!("{r:+.3}")),
                    );
                    ui.label(
                        returns
                            .get(s)
                            .map_or("-".to_string(), |r| format!("{r:+.3}")),
                    );
                    ui.end_row();
                }
            });
    }
}
