//! `gridarena render`: a recorded rollout drawn offscreen, frame by frame, into an animated GIF
//! (exact colours through one global palette when the frames use at most 256, quantised
//! otherwise) or a directory of PNG frames. Every file is written atomically.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::gpu::RenderError;
use super::scene::extract;
use crate::layout::Layout;
use crate::rollout::Rollout;
use crate::scenario::LoadedScenario;

/// What `render` did.
#[derive(Debug, Clone)]
pub struct RenderSummary {
    /// Frames written.
    pub frames: usize,
    /// Pixels per frame.
    pub size: (u32, u32),
    /// Seconds drawing and reading back.
    pub render_seconds: f64,
    /// Seconds encoding and writing.
    pub encode_seconds: f64,
    /// Where.
    pub out: PathBuf,
    /// The adapter used.
    pub adapter: String,
}

/// The layout of a rollout's embedded scenario.
pub fn rollout_layout(r: &Rollout) -> Result<Layout, crate::error::ScenarioError> {
    let grid = r.scenario.validate()?;
    Ok(Layout::derive(&LoadedScenario {
        scenario: r.scenario.clone(),
        grid,
    }))
}

fn io(path: &Path, e: impl std::fmt::Display) -> RenderError {
    RenderError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    }
}

/// Encodes RGBA bytes as a PNG in memory.
pub fn png_bytes(w: u32, h: u32, rgba: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(rgba).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Renders frames `range` of `rollout` to `out`: a `.gif` file, or a directory (created) of
/// `frame_NNNNN.png`. `cell` pixels per grid cell, `fps` frames per second in the GIF.
pub fn render_rollout(
    rollout: &Rollout,
    out: &Path,
    cell: u32,
    fps: u32,
    limit: Option<usize>,
    progress: &indicatif::ProgressBar,
) -> Result<RenderSummary, RenderError> {
    let layout = rollout_layout(rollout).map_err(|e| io(out, e))?;
    let frames = &rollout.frames[..limit.unwrap_or(usize::MAX).min(rollout.frames.len())];
    // Every frame is checked against the layout, as the viewer does, before anything is drawn.
    for (index, frame) in frames.iter().enumerate() {
        crate::substrate::frame::check_frame(&layout, frame)
            .map_err(|reason| RenderError::BadFrame { index, reason })?;
    }
    // The GPU when there is an adapter, else the CPU rasterizer.
    let mut canvas = super::Canvas::detect();
    let gif = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gif"));
    if !gif {
        std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    }
    let (mut render_s, mut encode_s) = (0.0, 0.0);
    let mut images = Vec::with_capacity(if gif { frames.len() } else { 0 });
    let mut size = (0, 0);
    for (k, frame) in frames.iter().enumerate() {
        let t0 = std::time::Instant::now();
        let scene = extract(&layout, frame, None);
        let (w, h, rgba) = canvas.render(&scene, cell);
        render_s += t0.elapsed().as_secs_f64();
        size = (w, h);
        let t1 = std::time::Instant::now();
        if gif {
            images.push(rgba);
        } else {
            let path = out.join(format!("frame_{k:05}.png"));
            let bytes = png_bytes(w, h, &rgba).map_err(|e| io(&path, e))?;
            crate::atomic::write_atomic(&path, &bytes).map_err(|e| io(&path, e))?;
        }
        encode_s += t1.elapsed().as_secs_f64();
        progress.inc(1);
    }
    if gif {
        let t1 = std::time::Instant::now();
        let bytes = encode_gif(size.0, size.1, &mut images, fps).map_err(|e| io(out, e))?;
        crate::atomic::write_atomic(out, &bytes).map_err(|e| io(out, e))?;
        encode_s += t1.elapsed().as_secs_f64();
    }
    Ok(RenderSummary {
        frames: frames.len(),
        size,
        render_seconds: render_s,
        encode_seconds: encode_s,
        out: out.to_path_buf(),
        adapter: canvas.backend(),
    })
}

/// An animated GIF of RGBA frames, looping forever.
pub fn encode_gif(w: u32, h: u32, frames: &mut [Vec<u8>], fps: u32) -> Result<Vec<u8>, String> {
    let (gw, gh) = (
        u16::try_from(w).map_err(|_| format!("{w} px is too wide for a GIF"))?,
        u16::try_from(h).map_err(|_| format!("{h} px is too tall for a GIF"))?,
    );
    // One global palette when the frames use at most 256 colours (they usually do).
    let mut index: HashMap<[u8; 3], u8> = HashMap::new();
    let mut exact = true;
    'scan: for f in frames.iter() {
        let mut last = None;
        for px in f.chunks_exact(4) {
            let c = [px[0], px[1], px[2]];
            if last == Some(c) {
                continue;
            }
            last = Some(c);
            if !index.contains_key(&c) {
                if index.len() == 256 {
                    exact = false;
                    break 'scan;
                }
                let k = index.len() as u8;
                index.insert(c, k);
            }
        }
    }
    let delay = (100 / fps.max(1)).max(1) as u16;
    let mut out = Vec::new();
    {
        let mut palette = vec![0u8; index.len() * 3];
        for (c, &k) in &index {
            palette[k as usize * 3..k as usize * 3 + 3].copy_from_slice(c);
        }
        let global: &[u8] = if exact { &palette } else { &[] };
        let mut enc = gif::Encoder::new(&mut out, gw, gh, global).map_err(|e| e.to_string())?;
        enc.set_repeat(gif::Repeat::Infinite)
            .map_err(|e| e.to_string())?;
        for f in frames.iter_mut() {
            let mut frame = if exact {
                // Runs of one colour are the common case: look up only on a change.
                let mut last = ([0u8; 3], 0u8, false);
                let pixels: Vec<u8> = f
                    .chunks_exact(4)
                    .map(|px| {
                        let c = [px[0], px[1], px[2]];
                        if !(last.2 && last.0 == c) {
                            last = (c, index.get(&c).copied().unwrap_or(0), true);
                        }
                        last.1
                    })
                    .collect();
                gif::Frame::from_indexed_pixels(gw, gh, pixels, None)
            } else {
                gif::Frame::from_rgba_speed(gw, gh, f, 10)
            };
            frame.delay = delay;
            enc.write_frame(&frame).map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}
