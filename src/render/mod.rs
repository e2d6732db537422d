//! Rendering: [`scene`] extracts what to draw from an arena (a rollout frame or a live batch),
//! [`gpu`] draws it with one wgpu pipeline on a window surface or offscreen, [`cpu`] rasterizes
//! the same shapes without an adapter, [`canvas`] picks one, [`output`] writes animated GIFs
//! and PNG frames (`gridarena render`).

pub mod canvas;
pub mod cpu;
pub(crate) mod draw;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "gpu")]
pub mod output;
pub mod scene;

pub use canvas::Canvas;
pub use scene::{Instance, Scene, extract};
