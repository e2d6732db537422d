//! The grid inside the egui window: the renderer's own pipeline ([`GridRenderer`]) drawn
//! through an egui-wgpu paint callback, so the window shows exactly what `gridarena render`
//! writes.

use eframe::egui;
use eframe::egui_wgpu::{self, wgpu};

use crate::render::gpu::GridRenderer;
use crate::render::scene::Scene;

/// The renderer kept in egui-wgpu's callback resources, with how to encode colours.
pub struct GridResources {
    renderer: GridRenderer,
    /// The window target encodes sRGB itself, so colours go in linear.
    srgb_target: bool,
}

/// Creates the grid renderer for the window's target format and stores it with egui-wgpu.
pub fn install(rs: &egui_wgpu::RenderState) {
    let renderer = GridRenderer::new(&rs.device, rs.target_format);
    rs.renderer
        .write()
        .callback_resources
        .insert(GridResources {
            renderer,
            srgb_target: rs.target_format.is_srgb(),
        });
}

fn linear(v: f32) -> f32 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

/// One frame's scene, uploaded in `prepare` and drawn in `paint`.
pub struct GridCallback {
    /// What to draw.
    pub scene: Scene,
}

impl egui_wgpu::CallbackTrait for GridCallback {
    fn prepare(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        _screen_descriptor: &egui_wgpu::ScreenDescriptor,
        _egui_encoder: &mut wgpu::CommandEncoder,
        resources: &mut egui_wgpu::CallbackResources,
    ) -> Vec<wgpu::CommandBuffer> {
        if let Some(res) = resources.get_mut::<GridResources>() {
            if res.srgb_target {
                let mut scene = self.scene.clone();
                for i in &mut scene.instances {
                    for ch in &mut i.color[..3] {
                        *ch = linear(*ch);
                    }
                }
                res.renderer.prepare(device, queue, &scene);
            } else {
                res.renderer.prepare(device, queue, &self.scene);
            }
        }
        Vec::new()
    }

    fn paint(
        &self,
        _info: egui::PaintCallbackInfo,
        render_pass: &mut wgpu::RenderPass<'static>,
        resources: &egui_wgpu::CallbackResources,
    ) {
        if let Some(res) = resources.get::<GridResources>() {
            res.renderer.paint(render_pass);
        }
    }
}
