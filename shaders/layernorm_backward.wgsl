// layernorm_backward: per sorted row, from g = dL/d activation to dz = dL/d linear output:
// dpre = g * (a > 0); dxhat = dpre * gamma[net];
// dz = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
//
// Bindings (group 0):
//   0 uniform  NormParams              (width, rows, per_net, gamma_off)
//   1 storage  row_net: array<u32>
//   2 storage  params: array<f32>
//   3 storage  g: array<f32>           [R, width]
//   4 storage  act: array<f32>         [R, width]
//   5 storage  xhat: array<f32>        [R, width]
//   6 storage  rstd: array<f32>        [R]
//   7 storage  dz: array<f32> read_write [R, width]
// Workgroup 64 threads: one row. Dispatch: rows folded into (x, y).

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
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read> act: array<f32>;
@group(0) @binding(5) var<storage, read> xhat: array<f32>;
@group(0) @binding(6) var<storage, read> rstd: array<f32>;
@group(0) @binding(7) var<storage, read_write> dz: array<f32>;

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
    let pb = row_net[row] * P.per_net + P.gamma_off;
    var s = 0.0;
    var sx = 0.0;
    for (var j = lid; j < P.width; j += WG) {
        var dpre = 0.0;
        if (act[base + j] > 0.0) {
            dpre = g[base + j];
        }
        let dxh = dpre * params[pb + j];
        dz[base + j] = dxh;
        s += dxh;
        sx += dxh * xhat[base + j];
    }
    let mean = reduce(s, lid) / f32(P.width);
    let mean_x = reduce(sx, lid) / f32(P.width);
    let inv = rstd[row];
    for (var j = lid; j < P.width; j += WG) {
        dz[base + j] = inv * (dz[base + j] - mean - xhat[base + j] * mean_x);
    }
}
