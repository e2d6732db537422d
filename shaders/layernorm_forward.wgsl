// layernorm_forward: per sorted row p of a hidden layer, x-hat = (z - mean) / sqrt(var + eps),
// a = relu(gamma[net] * x-hat + beta[net]); keeps x-hat and 1/std for the backward pass.
//
// Bindings (group 0):
//   0 uniform  NormParams              (width, rows, per_net, gamma_off, beta_off)
//   1 storage  row_net: array<u32>     network of each sorted row
//   2 storage  params: array<f32>
//   3 storage  z: array<f32>           [R, width] linear output
//   4 storage  xhat: array<f32> read_write [R, width]
//   5 storage  rstd: array<f32> read_write [R]
//   6 storage  act: array<f32> read_write  [R, width]
// Workgroup 64 threads: one row, tree reductions in shared memory. Dispatch: rows folded into
// (x, y) with x at most 65535.

struct NormParams {
    width: u32,
    rows: u32,
    per_net: u32,
    gamma_off: u32,
    beta_off: u32,
    eps: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> P: NormParams;
@group(0) @binding(1) var<storage, read> row_net: array<u32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read> z: array<f32>;
@group(0) @binding(4) var<storage, read_write> xhat: array<f32>;
@group(0) @binding(5) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> act: array<f32>;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

fn reduce(v: f32, lid: u32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wg.x + wg.y * 65535u;
    if (row >= P.rows) {
        return;
    }
    let base = row * P.width;
    var s = 0.0;
    for (var j = lid; j < P.width; j += WG) {
        s += z[base + j];
    }
    let mean = reduce(s, lid) / f32(P.width);
    var q = 0.0;
    for (var j = lid; j < P.width; j += WG) {
        let d = z[base + j] - mean;
        q += d * d;
    }
    let inv = 1.0 / sqrt(reduce(q, lid) / f32(P.width) + P.eps);
    let pb = row_net[row] * P.per_net;
    for (var j = lid; j < P.width; j += WG) {
        let xh = (z[base + j] - mean) * inv;
        xhat[base + j] = xh;
        act[base + j] = max(params[pb + P.gamma_off + j] * xh + params[pb + P.beta_off + j], 0.0);
    }
    if (lid == 0u) {
        rstd[row] = inv;
    }
}
