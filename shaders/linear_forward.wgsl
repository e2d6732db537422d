// linear_forward: Y[p, j] = b[net, j] + sum_i X[p, i] * W[net, j, i] for the sorted rows p of
// one network per row tile (rows are grouped by network on the host).
//
// Bindings (group 0):
//   0 uniform  LinearParams
//   1 storage  tiles: array<vec4<u32>>   (net, first row, end row, 0) per 16-row tile
//   2 storage  params: array<f32>        all networks, network-major
//   3 storage  input_words: array<u32>   [R, fan_in] u8 input packed 4 per word (mode 0)
//   4 storage  input_f32: array<f32>     [R, fan_in] f32 input (mode 1)
//   5 storage  order: array<u32>         caller row of each sorted row (modes 0, 1)
//   6 storage  x: array<f32>             [R, fan_in] previous layer's activation (mode 2)
//   7 storage  y: array<f32> read_write  [R, fan_out]
// Workgroup 16 x 16 threads: one 16-row x 16-column output tile, shared-memory tiles of X and W
// over the reduction dimension. Dispatch: (ceil(fan_out / 16), tiles folded into y and z).

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
@group(0) @binding(3) var<storage, read> input_words: array<u32>;
@group(0) @binding(4) var<storage, read> input_f32: array<f32>;
@group(0) @binding(5) var<storage, read> order: array<u32>;
@group(0) @binding(6) var<storage, read> x: array<f32>;
@group(0) @binding(7) var<storage, read_write> y: array<f32>;

const TILE: u32 = 16u;
var<workgroup> xs: array<array<f32, 16>, 16>;
var<workgroup> ws: array<array<f32, 17>, 16>;

fn load_x(row: u32, k: u32) -> f32 {
    if (P.mode == 0u) {
        let e = order[row] * P.fan_in + k;
        return f32((input_words[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
    }
    if (P.mode == 1u) {
        return input_f32[order[row] * P.fan_in + k];
    }
    return x[row * P.fan_in + k];
}

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
    let w_row = wg.x * TILE + lid.y;
    var acc = 0.0;
    for (var k0 = 0u; k0 < P.fan_in; k0 += TILE) {
        let k = k0 + lid.x;
        var xv = 0.0;
        if (row < t.z && k < P.fan_in) {
            xv = load_x(row, k);
        }
        xs[lid.y][lid.x] = xv;
        var wv = 0.0;
        if (w_row < P.fan_out && k < P.fan_in) {
            wv = params[base + P.w_off + w_row * P.fan_in + k];
        }
        ws[lid.y][lid.x] = wv;
        workgroupBarrier();
        for (var kk = 0u; kk < TILE; kk++) {
            acc += xs[lid.y][kk] * ws[lid.x][kk];
        }
        workgroupBarrier();
    }
    if (row < t.z && col < P.fan_out) {
        y[row * P.fan_out + col] = acc + params[base + P.b_off + col];
    }
}
