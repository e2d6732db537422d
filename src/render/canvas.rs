//! A [`Canvas`] renders scenes to RGBA bytes on whatever this machine has: the wgpu renderer
//! when an adapter exists (software ones included), the CPU rasterizer ([`super::cpu`])
//! otherwise, or when `GRIDARENA_RENDER=cpu`. `gridarena render` and Python's `render()` draw
//! through it.

use super::scene::Scene;

/// Where a canvas draws.
pub enum Canvas {
    /// The offscreen wgpu renderer.
    #[cfg(feature = "gpu")]
    Gpu(Box<super::gpu::Offscreen>),
    /// The CPU rasterizer.
    Cpu,
}

impl Canvas {
    /// The GPU renderer when an adapter exists, else the CPU rasterizer; the CPU also when
    /// the environment sets `GRIDARENA_RENDER=cpu`.
    pub fn detect() -> Canvas {
        if std::env::var("GRIDARENA_RENDER").as_deref() == Ok("cpu") {
            return Canvas::Cpu;
        }
        #[cfg(feature = "gpu")]
        if let Ok(g) = super::gpu::Offscreen::new() {
            return Canvas::Gpu(Box::new(g));
        }
        Canvas::Cpu
    }

    /// Renders `scene` at `cell` pixels per cell into `(width, height, RGBA bytes)`. A GPU
    /// failure falls back to the CPU for this and every later frame.
    pub fn render(&mut self, scene: &Scene, cell: u32) -> (u32, u32, Vec<u8>) {
        #[cfg(feature = "gpu")]
        if let Canvas::Gpu(g) = self {
            match g.render(scene, cell) {
                Ok(img) => return img,
                Err(_) => *self = Canvas::Cpu,
            }
        }
        super::cpu::render(scene, cell)
    }

    /// What draws, in words: the adapter, or `cpu`.
    pub fn backend(&self) -> String {
        match self {
            #[cfg(feature = "gpu")]
            Canvas::Gpu(g) => g.adapter.clone(),
            Canvas::Cpu => "cpu".to_string(),
        }
    }
}
