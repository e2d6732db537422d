// linear_backward_weight: dW[net, j, i] = sum over the network's rows p of dY[p, j] * X[p, i],
// and db[net, j] = sum_p dY[p, j] (the extra column tile i = ceil(fan_in / 16)).
//
// Bindings (group 0):
//   0 uniform  LinearParams            (fan_in, fan_out, mode, per_net, w_off, b_off)
//   1 storage  starts: array<u32>      K + 1 sorted-row boundaries per network
//   2 storage  dy: array<f32>          [R, fan_out]
//   3 storage  input_words: array<u32> u8 input (mode 0)
//   4 storage  input_f32: array<f32>   f32 input (mode 1)
//   5 storage  order: array<u32>       caller row per sorted row (modes 0, 1)
//   6 storage  x: array<f32>           [R, fan_in] previous activation (mode 2)
//   7 storage  grads: array<f32> read_write
// Workgroup 16 x 16: one 16-output x 16-input tile of one network, reducing over its rows in
// blocks of 16 through shared memory. Dispatch: (ceil(fan_in / 16) + 1, ceil(fan_out / 16), K).

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
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> input_words: array<u32>;
@group(0) @binding(4) var<storage, read> input_f32: array<f32>;
@group(0) @binding(5) var<storage, read> order: array<u32>;
@group(0) @binding(6) var<storage, read> x: array<f32>;
@group(0) @binding(7) var<storage, read_write> grads: array<f32>;

const TILE: u32 = 16u;
var<workgroup> gs: array<array<f32, 17>, 16>;
var<workgroup> xs: array<array<f32, 17>, 16>;
var<workgroup> bounds: vec2<u32>;

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
    let net = wg.z;
    if (lid.x == 0u && lid.y == 0u) {
        bounds = vec2<u32>(starts[net], starts[net + 1u]);
    }
    let b = workgroupUniformLoad(&bounds);
    let bias_tile = wg.x * TILE >= P.fan_in;
    let i = wg.x * TILE + lid.x;
    let j = wg.y * TILE + lid.y;
    let j_load = wg.y * TILE + lid.x;
    var acc = 0.0;
    for (var p0 = b.x; p0 < b.y; p0 += TILE) {
        let p = p0 + lid.y;
        var gv = 0.0;
        if (p < b.y && j_load < P.fan_out) {
            gv = dy[p * P.fan_out + j_load];
        }
        gs[lid.y][lid.x] = gv;
        var xv = 1.0;
        if (!bias_tile) {
            xv = 0.0;
            if (p < b.y && i < P.fan_in) {
                xv = load_x(p, i);
            }
        }
        xs[lid.y][lid.x] = xv;
        workgroupBarrier();
        for (var pp = 0u; pp < TILE; pp++) {
            acc += gs[pp][lid.y] * xs[pp][lid.x];
        }
        workgroupBarrier();
    }
    let base = net * P.per_net;
    if (j < P.fan_out) {
        if (bias_tile) {
            if (lid.x == 0u) {
                grads[base + P.b_off + j] = acc;
            }
        } else if (i < P.fan_in) {
            grads[base + P.w_off + j * P.fan_in + i] = acc;
        }
    }
}
