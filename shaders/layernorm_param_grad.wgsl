// layernorm_param_grad: per network and feature j, dgamma = sum_p dpre * xhat and
// dbeta = sum_p dpre over the network's sorted rows, with dpre = g * (act > 0).
//
// Bindings (group 0):
//   0 uniform  NormParams              (width, per_net, gamma_off, beta_off)
//   1 storage  starts: array<u32>      K + 1 sorted-row boundaries
//   2 storage  g: array<f32>           [R, width]
//   3 storage  act: array<f32>         [R, width]
//   4 storage  xhat: array<f32>        [R, width]
//   5 storage  grads: array<f32> read_write
// Workgroup 64 threads, one feature each. Dispatch: (ceil(width / 64), 1, K).

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
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> act: array<f32>;
@group(0) @binding(4) var<storage, read> xhat: array<f32>;
@group(0) @binding(5) var<storage, read_write> grads: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let net = gid.z;
    if (j >= P.width) {
        return;
    }
    var dgamma = 0.0;
    var dbeta = 0.0;
    for (var p = starts[net]; p < starts[net + 1u]; p++) {
        let i = p * P.width + j;
        if (act[i] > 0.0) {
            dgamma += g[i] * xhat[i];
            dbeta += g[i];
        }
    }
    let base = net * P.per_net;
    grads[base + P.gamma_off + j] = dgamma;
    grads[base + P.beta_off + j] = dbeta;
}
