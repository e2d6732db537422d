//! One learner's observation bytes as a small picture: one coloured cell per observation cell,
//! the channels mixed into a colour (layouts per substrate in docs/scenarios.md), with a
//! grayscale fallback for anything else.

use eframe::egui::Color32;

pub use super::obs_image::ObsImage;
use crate::layout::Layout;

/// Learner `slot`'s observation `obs` (`O` bytes) drawn for `layout`'s substrate (each
/// substrate draws its own; grayscale bytes when it cannot).
pub fn obs_image(layout: &Layout, slot: usize, obs: &[u8]) -> ObsImage {
    layout
        .rules
        .observation_image(layout, slot, obs)
        .unwrap_or_else(|| grayscale(obs))
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
    use crate::render::draw::FLOOR;
    use crate::scenario::Scenario;
    use crate::viewer::obs_image::c;

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
