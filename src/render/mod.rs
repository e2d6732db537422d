//! Rendering: [`scene`] extracts what to draw from an arena (a rollout frame or a live batch),
//! [`gpu`] draws it with one wgpu pipeline on a window surface or offscreen, [`output`] writes
//! animated GIFs and PNG frames (`gridarena render`).

pub(crate) mod draw;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "gpu")]
pub mod output;
pub mod scene;

pub use scene::{Instance, Scene, extract};
