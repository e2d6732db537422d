//! The optional render system: while a [`RenderWatch`] resource is present, the watched arena's
//! state is extracted after every step (and reset) into the [`RenderScene`] resource: the
//! instances the wgpu renderer draws (cells, items, agents with colours and facings). Off the
//! hot path otherwise (the system does not run).

use bevy_ecs::prelude::*;

use super::Arenas;
use super::record::frame;
use crate::render::scene::{Scene, extract};

/// Which arena to draw, and the agent to mark as selected.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderWatch {
    /// Arena index.
    pub arena: usize,
    /// Selected agent slot.
    pub selected: Option<usize>,
}

/// The watched arena's instances after the last step or reset.
#[derive(Resource, Debug, Clone, Default)]
pub struct RenderScene(pub Scene);

/// Extracts the watched arena into [`RenderScene`].
pub fn extract_render(mut arenas: Arenas, watch: Res<RenderWatch>, mut scene: ResMut<RenderScene>) {
    let (arena, selected) = (watch.arena, watch.selected);
    if let Some(s) = arenas.with_arena(arena, |layout, a| {
        extract(layout, &frame(layout, a, true), selected)
    }) {
        scene.0 = s;
    }
}
