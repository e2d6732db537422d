// grad_norm: the squared L2 norm of each network's gradient (for per-network global-norm
// clipping in adam.wgsl).
//
// Bindings (group 0):
//   0 uniform  NormParams              (per_net used)
//   1 storage  grads: array<f32>
//   2 storage  norms: array<f32> read_write [K] squared norms
// Workgroup 256 threads: one network, strided partial sums and a tree reduction.
// Dispatch: (K, 1, 1).

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
@group(0) @binding(1) var<storage, read> grads: array<f32>;
@group(0) @binding(2) var<storage, read_write> norms: array<f32>;

const WG: u32 = 256u;
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let base = wg.x * P.per_net;
    var s = 0.0;
    for (var i = lid; i < P.per_net; i += WG) {
        let v = grads[base + i];
        s += v * v;
    }
    partial[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            partial[lid] += partial[lid + k];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        norms[wg.x] = partial[0];
    }
}
