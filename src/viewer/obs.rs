//! One learner's observation bytes as a small picture: one coloured cell per observation cell,
//! the channels mixed into a colour (layouts per substrate in docs/scenarios.md), with a
//! grayscale fallback for anything else.

use eframe::egui::Color32;

use crate::components::{CELL_EVADERS, CELL_OBSTACLE, CELL_PURSUERS};
use crate::layout::{AVATAR_CELL_BYTES, Layout, Rules};
use crate::render::scene::{FLOOR, TOKEN, WALL, palette};

/// An observation drawn as cells.
#[derive(Debug, Clone, PartialEq)]
pub struct ObsImage {
    /// Columns.
    pub cols: usize,
    /// Rows.
    pub rows: usize,
    /// Row-major colours.
    pub cells: Vec<Color32>,
    /// The observer's own cell (column, row), outlined.
    pub observer: Option<(usize, usize)>,
    /// What each colour means.
    pub legend: Vec<(Color32, String)>,
    /// Bytes outside the grid, in words.
    pub notes: Vec<String>,
}

fn c(rgb: [u8; 3]) -> Color32 {
    Color32::from_rgb(rgb[0], rgb[1], rgb[2])
}

/// Mixes colours by weight (floor when nothing weighs).
fn mix(parts: &[(Color32, f32)]) -> Color32 {
    let total: f32 = parts.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return c(FLOOR);
    }
    let ch = |f: fn(&Color32) -> u8| {
        (parts.iter().map(|(k, w)| f(k) as f32 * w).sum::<f32>() / total).round() as u8
    };
    Color32::from_rgb(ch(Color32::r), ch(Color32::g), ch(Color32::b))
}

/// A colour per chemistry compound (as the grid draws them).
fn compound(v: u8) -> Color32 {
    let h = (v.saturating_sub(1) as f32 * 67.0 + 90.0) % 360.0;
    let (s, val) = (0.55f32, 0.80f32);
    let ch = val * s;
    let x = ch * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = val - ch;
    let (r, g, b) = match (h / 60.0) as u32 % 6 {
        0 => (ch, x, 0.0),
        1 => (x, ch, 0.0),
        2 => (0.0, ch, x),
        3 => (0.0, x, ch),
        4 => (x, 0.0, ch),
        _ => (ch, 0.0, x),
    };
    let to = |v: f32| ((v + m) * 255.0).round() as u8;
    Color32::from_rgb(to(r), to(g), to(b))
}

/// Learner `slot`'s observation `obs` (`O` bytes) drawn for `layout`'s substrate.
pub fn obs_image(layout: &Layout, slot: usize, obs: &[u8]) -> ObsImage {
    let colors = palette(layout);
    let pursuer = c(colors
        .iter()
        .zip(&layout.slot_kind)
        .find(|(_, k)| **k == crate::scenario::RoleKind::Pursuer)
        .map_or([230, 60, 40], |(c, _)| *c));
    let evader = c(colors
        .iter()
        .zip(&layout.slot_kind)
        .find(|(_, k)| **k == crate::scenario::RoleKind::Evader)
        .map_or([40, 140, 220], |(c, _)| *c));
    match &layout.rules {
        Rules::Pursuit(p) => {
            let (side, channels) = (p.side, p.channel_offsets.len());
            if channels == 0 || obs.len() != side * side * channels {
                return grayscale(obs);
            }
            let cells = obs
                .chunks_exact(channels)
                .map(|cell| {
                    let mut parts = Vec::new();
                    for (k, &off) in p.channel_offsets.iter().enumerate() {
                        let v = cell[k];
                        if v == 0 {
                            continue;
                        }
                        match off {
                            CELL_OBSTACLE => return c(WALL),
                            CELL_PURSUERS => parts.push((pursuer, v as f32)),
                            CELL_EVADERS => parts.push((evader, v as f32)),
                            _ => parts.push((Color32::GRAY, v as f32)),
                        }
                    }
                    mix(&parts)
                })
                .collect();
            let mut legend = vec![(c(FLOOR), "empty".to_string())];
            for &off in &p.channel_offsets {
                legend.push(match off {
                    CELL_OBSTACLE => (c(WALL), "obstacle".into()),
                    CELL_PURSUERS => (pursuer, "pursuers".into()),
                    CELL_EVADERS => (evader, "evaders".into()),
                    _ => (Color32::GRAY, format!("channel {off}")),
                });
            }
            ObsImage {
                cols: side,
                rows: side,
                cells,
                observer: Some((side / 2, side / 2)),
                legend,
                notes: Vec::new(),
            }
        }
        Rules::Gift(_, avatar) | Rules::Chemistry(_, avatar) => {
            let gift = matches!(layout.rules, Rules::Gift(..));
            let w = avatar.window;
            let (cols, rows) = (w.width(), w.depth());
            let grid = cols * rows * AVATAR_CELL_BYTES;
            let extras = if gift { 4 } else { 2 };
            if obs.len() != grid + extras {
                return grayscale(obs);
            }
            let other = Color32::from_rgb(90, 70, 160);
            let cells = obs[..grid]
                .chunks_exact(AVATAR_CELL_BYTES)
                .map(|cell| {
                    if cell[0] != 0 {
                        c(WALL)
                    } else if cell[2] != 0 {
                        other
                    } else if cell[1] != 0 {
                        if gift { c(TOKEN) } else { compound(cell[1]) }
                    } else {
                        c(FLOOR)
                    }
                })
                .collect();
            let e = &obs[grid..];
            let notes = if gift {
                vec![format!(
                    "inventory (levels 1-3): {} {} {}; ready to gift: {}",
                    e[0], e[1], e[2], e[3]
                )]
            } else {
                vec![format!(
                    "vesicle compound: {} (0 empty); io ready: {}",
                    e[0], e[1]
                )]
            };
            let item = if gift {
                (c(TOKEN), "token".to_string())
            } else {
                (compound(1), "compound (hue per kind)".to_string())
            };
            ObsImage {
                cols,
                rows,
                cells,
                observer: Some((w.left as usize, w.ahead as usize)),
                legend: vec![
                    (c(FLOOR), "empty".into()),
                    (c(WALL), "wall".into()),
                    item,
                    (other, "other avatar".into()),
                ],
                notes,
            }
        }
        Rules::Coin(_) => {
            let (cols, rows) = (layout.width, layout.height);
            if obs.len() != cols * rows * 4 {
                return grayscale(obs);
            }
            let me = c(colors.get(slot).copied().unwrap_or([200, 60, 60]));
            let them = c(colors
                .get(1 - slot.min(1))
                .copied()
                .unwrap_or([60, 60, 200]));
            let my_coin = Color32::from_rgb(242, 190, 26);
            let their_coin = Color32::from_rgb(150, 150, 150);
            let cells = obs
                .chunks_exact(4)
                .map(|v| {
                    let parts: Vec<(Color32, f32)> = [me, them, my_coin, their_coin]
                        .into_iter()
                        .zip(v)
                        .filter(|(_, x)| **x != 0)
                        .map(|(k, _)| (k, 1.0))
                        .collect();
                    mix(&parts)
                })
                .collect();
            let observer = obs
                .chunks_exact(4)
                .position(|v| v[0] != 0)
                .map(|i| (i % cols, i / cols));
            ObsImage {
                cols,
                rows,
                cells,
                observer,
                legend: vec![
                    (me, "me".into()),
                    (them, "the other player".into()),
                    (my_coin, "coin of my colour".into()),
                    (their_coin, "coin of the other's colour".into()),
                ],
                notes: Vec::new(),
            }
        }
        Rules::Matrix(params) => {
            let (k, n) = (params.actions as usize, layout.agents);
            if k == 0 || obs.len() != n * k + 1 {
                return grayscale(obs);
            }
            let on = Color32::from_rgb(40, 40, 40);
            let cells = obs[..n * k]
                .iter()
                .map(|&v| if v != 0 { on } else { c(FLOOR) })
                .collect();
            ObsImage {
                cols: k,
                rows: n,
                cells,
                observer: None,
                legend: vec![(on, "previous action (row: player, column: action)".into())],
                notes: vec![format!("first step: {}", obs[n * k] != 0)],
            }
        }
    }
}

/// Any bytes as a near-square grayscale image (0 light, larger darker).
pub fn grayscale(obs: &[u8]) -> ObsImage {
    let cols = ((obs.len() as f64).sqrt().ceil() as usize).max(1);
    let rows = obs.len().div_ceil(cols).max(1);
    let mut cells: Vec<Color32> = obs
        .iter()
        .map(|&v| {
            let g = 255 - (v.min(4) as u32 * 55) as u8;
            Color32::from_gray(g)
        })
        .collect();
    cells.resize(cols * rows, Color32::from_rgb(255, 230, 230));
    ObsImage {
        cols,
        rows,
        cells,
        observer: None,
        legend: vec![(
            Color32::from_gray(35),
            "byte value (darker = larger)".into(),
        )],
        notes: vec![format!("{} bytes", obs.len())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn pursuit_observation_has_walls_and_the_observer_at_the_centre() {
        let loaded = Scenario::default_pursuit();
        let layout = Layout::derive(&loaded);
        let obs = vec![0u8; layout.obs_len];
        let img = obs_image(&layout, 0, &obs);
        assert_eq!(img.cells.len(), img.cols * img.rows);
        assert_eq!(img.observer, Some((img.cols / 2, img.rows / 2)));
        assert!(img.cells.iter().all(|&k| k == c(FLOOR)));
    }

    #[test]
    fn odd_lengths_fall_back_to_grayscale() {
        let layout = Layout::derive(&Scenario::default_pursuit());
        let img = obs_image(&layout, 0, &[1, 2, 3]);
        assert_eq!((img.cols, img.rows), (2, 2));
        assert_eq!(img.cells.len(), 4);
    }
}
