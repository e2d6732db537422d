// adam: one Adam / RAdam step for every parameter of the networks whose `stepping` is 1 (the
// others' parameters and moments are left as they are), after clipping each network's gradient
// to its own `max_norm` (when its `clip` is 1). Each network's `step_size`, `bc2` and
// `adaptive` come from AdamConfig::schedule of its own learning rate at its own step count on
// the host; `adaptive` 0 is RAdam's momentum-only warm-up.
//
// Bindings (group 0):
//   0 uniform  AdamParams
//   1 storage  norms: array<f32>       [K] squared gradient norms from grad_norm.wgsl
//   2 storage  grads: array<f32>
//   3 storage  params: array<f32> read_write
//   4 storage  m: array<f32> read_write
//   5 storage  v: array<f32> read_write
//   6 storage  nets: array<NetScalars> [K] per-network step size, bias correction, clip, mask
// Workgroup 256 threads, one parameter each. Dispatch: ceil(P / 256) folded into (x, y).

struct AdamParams {
    count: u32,
    per_net: u32,
    _pad0: u32,
    _pad1: u32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    _pad2: u32,
}

struct NetScalars {
    step_size: f32,
    max_norm: f32,
    clip: u32,
    tau: f32,
    bc2: f32,
    adaptive: u32,
    stepping: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> P: AdamParams;
@group(0) @binding(1) var<storage, read> norms: array<f32>;
@group(0) @binding(2) var<storage, read> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<f32>;
@group(0) @binding(4) var<storage, read_write> m: array<f32>;
@group(0) @binding(5) var<storage, read_write> v: array<f32>;
@group(0) @binding(6) var<storage, read> nets: array<NetScalars>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i >= P.count) {
        return;
    }
    let k = i / P.per_net;
    let net = nets[k];
    if (net.stepping == 0u) {
        return;
    }
    var scale = 1.0;
    let norm = sqrt(norms[k]);
    if (net.clip == 1u && norm > net.max_norm) {
        scale = net.max_norm / (norm + 1e-6);
    }
    let g = grads[i] * scale;
    let mi = P.beta1 * m[i] + (1.0 - P.beta1) * g;
    let vi = P.beta2 * v[i] + (1.0 - P.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    if (net.adaptive == 1u) {
        params[i] -= net.step_size * mi / (sqrt(vi / net.bc2) + P.eps);
    } else {
        params[i] -= net.step_size * mi;
    }
}
