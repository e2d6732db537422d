// linear_backward_input: dX[p, i] = sum_j dY[p, j] * W[net, j, i] for the sorted rows p of one
// network per row tile.
//
// Bindings (group 0):
//   0 uniform  LinearParams            (fan_in, fan_out, per_net, w_off, tiles used)
//   1 storage  tiles: array<vec4<u32>> (net, first row, end row, 0) per 16-row tile
//   2 storage  params: array<f32>
//   3 storage  dy: array<f32>          [R, fan_out]
//   4 storage  dx: array<f32> read_write [R, fan_in]
// Workgroup 16 x 16: one 16-row x 16-input tile, shared tiles of dY and W over j.
// Dispatch: (ceil(fan_in / 16), tiles folded into y and z).

struct LinearParams {
    fan_in: u32,
    fan_out: u32,
    mode: u32,
    per_net: u32,
    w_off: u32,
    b_off: u32,
    tiles: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> P: LinearParams;
@group(0) @binding(1) var<storage, read> tiles: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

const TILE: u32 = 16u;
var<workgroup> gs: array<array<f32, 16>, 16>;
var<workgroup> ws: array<array<f32, 17>, 16>;

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t_index = wg.y + wg.z * 65535u;
    if (t_index >= P.tiles) {
        return;
    }
    let t = tiles[t_index];
    let base = t.x * P.per_net;
    let row = t.y + lid.y;
    let col = wg.x * TILE + lid.x;
    let w_col = wg.x * TILE + lid.y;
    var acc = 0.0;
    for (var j0 = 0u; j0 < P.fan_out; j0 += TILE) {
        let j = j0 + lid.x;
        var gv = 0.0;
        if (row < t.z && j < P.fan_out) {
            gv = dy[row * P.fan_out + j];
        }
        gs[lid.y][lid.x] = gv;
        // ws[i][j]: W[net, j, i] for the tile's inputs i and this block's outputs j.
        var wv = 0.0;
        if (w_col < P.fan_in && j < P.fan_out) {
            wv = params[base + P.w_off + j * P.fan_in + w_col];
        }
        ws[lid.y][lid.x] = wv;
        workgroupBarrier();
        for (var jj = 0u; jj < TILE; jj++) {
            acc += gs[lid.y][jj] * ws[lid.x][jj];
        }
        workgroupBarrier();
    }
    if (row < t.z && col < P.fan_in) {
        dx[row * P.fan_in + col] = acc;
    }
}
