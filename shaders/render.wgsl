// render.wgsl — draws a gridarena scene: one instanced quad per cell, item or agent, shaped in
// the fragment shader (square, disc, triangle, ring, diamond). Positions are in cell units
// (x right, y down) over a `grid` of width x height cells filling the viewport. Hard edges
// (no anti-aliasing), so pixel tests can check exact colours at cell centres.

struct View {
    grid: vec2<f32>,
    _pad: vec2<f32>,
};

@group(0) @binding(0) var<uniform> view: View;

struct Instance {
    @location(0) center: vec2<f32>,
    @location(1) half: vec2<f32>,
    @location(2) color: vec4<f32>,
    @location(3) shape: u32,
    @location(4) angle: f32,
};

struct VsOut {
    @builtin(position) position: vec4<f32>,
    @location(0) local: vec2<f32>,
    @location(1) color: vec4<f32>,
    @location(2) @interpolate(flat) shape: u32,
    @location(3) @interpolate(flat) angle: f32,
};

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, inst: Instance) -> VsOut {
    // Two triangles over the unit square's corners in [-1, 1].
    var corners = array<vec2<f32>, 6>(
        vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
        vec2(-1.0, -1.0), vec2(1.0, 1.0), vec2(-1.0, 1.0),
    );
    let c = corners[vi];
    let cell = inst.center + c * inst.half;
    let ndc = vec2(cell.x / view.grid.x * 2.0 - 1.0, 1.0 - cell.y / view.grid.y * 2.0);
    var out: VsOut;
    out.position = vec4(ndc, 0.0, 1.0);
    out.local = c;
    out.color = inst.color;
    out.shape = inst.shape;
    out.angle = inst.angle;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let p = in.local;
    let r = length(p);
    switch in.shape {
        case 1u: { // disc
            if r > 1.0 { discard; }
        }
        case 2u: { // triangle pointing along angle (0 = up, y down on screen)
            let s = sin(in.angle);
            let co = cos(in.angle);
            // Rotate into the triangle's frame: tip at (0, -1), base at y = 1.
            let q = vec2(co * p.x + s * p.y, -s * p.x + co * p.y);
            if q.y > 1.0 || abs(q.x) > (q.y + 1.0) * 0.5 { discard; }
        }
        case 3u: { // ring
            if r > 1.0 || r < 0.82 { discard; }
        }
        case 4u: { // diamond
            if abs(p.x) + abs(p.y) > 1.0 { discard; }
        }
        default: {}
    }
    return in.color;
}
