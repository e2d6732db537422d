// qmix_mixer: QMIX's monotonic mixing of every row (src/critic/mixer.rs is the CPU reference),
//   Q_tot = |w2|^T ELU(q^T |W1| + b1) + v,
// where a row of hypernetwork outputs is [W1: N x E (learner-major), b1: E, w2: E, v: 1].
// Mode 0 writes Q_tot only. Mode 1 also takes the loss mean_r 0.5 (Q_tot - y)^2 (each row's
// share into row_loss) and its gradients with respect to q and the hypernetwork outputs.
//
// Bindings (group 0):
//   0 uniform  MixParams
//   1 storage  q: array<f32>          [R, N] the learners' chosen values
//   2 storage  hyper: array<f32>      [R, N E + 2 E + 1]
//   3 storage  y: array<f32>          [R] targets (mode 1)
//   4 storage  tot: array<f32>        [R] Q_tot, read_write
//   5 storage  d_q: array<f32>        [R, N] read_write (mode 1)
//   6 storage  d_hyper: array<f32>    [R, N E + 2 E + 1] read_write (mode 1)
//   7 storage  row_loss: array<f32>   [R] read_write (mode 1)
// Workgroup 64 threads, one row each. Dispatch: ceil(R / 64) folded into (x, y).

struct MixParams {
    rows: u32,
    agents: u32,
    embed: u32,
    mode: u32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: MixParams;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> hyper: array<f32>;
@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> tot: array<f32>;
@group(0) @binding(5) var<storage, read_write> d_q: array<f32>;
@group(0) @binding(6) var<storage, read_write> d_hyper: array<f32>;
@group(0) @binding(7) var<storage, read_write> row_loss: array<f32>;

fn elu(z: f32) -> f32 {
    if (z > 0.0) {
        return z;
    }
    return exp(z) - 1.0;
}

// The mixing layer's pre-activation k of row r (its hypernetwork block starts at h).
fn pre(r: u32, h: u32, k: u32) -> f32 {
    let n = P.agents;
    let e = P.embed;
    var s = hyper[h + n * e + k];
    for (var i = 0u; i < n; i = i + 1u) {
        s = s + q[r * n + i] * abs(hyper[h + i * e + k]);
    }
    return s;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x + gid.y * 65535u * 64u;
    if (r >= P.rows) {
        return;
    }
    let n = P.agents;
    let e = P.embed;
    let h = r * (n * e + 2u * e + 1u);
    let b1 = h + n * e;
    let w2 = b1 + e;
    let v = w2 + e;
    var total = hyper[v];
    for (var k = 0u; k < e; k = k + 1u) {
        total = total + elu(pre(r, h, k)) * abs(hyper[w2 + k]);
    }
    tot[r] = total;
    if (P.mode == 0u) {
        return;
    }
    let err = total - y[r];
    row_loss[r] = 0.5 * err * err * P.inv_rows;
    let d = err * P.inv_rows;
    for (var i = 0u; i < n; i = i + 1u) {
        d_q[r * n + i] = 0.0;
    }
    for (var k = 0u; k < e; k = k + 1u) {
        let z = pre(r, h, k);
        let a = elu(z);
        d_hyper[w2 + k] = d * a * sign(hyper[w2 + k]);
        let dz = d * abs(hyper[w2 + k]) * select(a + 1.0, 1.0, z > 0.0);
        d_hyper[b1 + k] = dz;
        for (var i = 0u; i < n; i = i + 1u) {
            let w = hyper[h + i * e + k];
            d_hyper[h + i * e + k] = dz * q[r * n + i] * sign(w);
            d_q[r * n + i] = d_q[r * n + i] + dz * abs(w);
        }
    }
    d_hyper[v] = d;
}
