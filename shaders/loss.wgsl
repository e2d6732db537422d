// loss: per sorted row, the loss contribution and dL/d output of the head.
//   kind 0: masked MSE on the chosen action, 1: masked Huber (delta), 2: softmax cross-entropy
//   over `groups` groups of head / groups logits, 3: HL-Gauss on the chosen action's `groups`
//   (= bins) logits against the target's Gaussian histogram over [v_min, v_max] (see
//   src/critic/hl_gauss.rs; `erf` below is written identically there). `scale` is
//   1 / (sum of mask) for 0, 1 and 3, 1 / (sum of mask * groups) for 2, computed on the host.
//
// Bindings (group 0):
//   0 uniform  LossParams
//   1 storage  order: array<u32>       caller row per sorted row
//   2 storage  out: array<f32>         [R, head] sorted
//   3 storage  actions: array<u32>     [R] caller order (kinds 0, 1, 3) or labels [R, groups] (2)
//   4 storage  targets: array<f32>     [R] caller order
//   5 storage  mask: array<f32>        [R] caller order
//   6 storage  d_out: array<f32> read_write [R, head] sorted
//   7 storage  row_loss: array<f32> read_write [R] sorted, weighted by `scale`
// Workgroup 64 threads, one row each. Dispatch: ceil(R / 64) folded into (x, y).

struct LossParams {
    rows: u32,
    head: u32,
    kind: u32,
    groups: u32,
    delta: f32,
    scale: f32,
    v_min: f32,
    v_max: f32,
    sigma: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: LossParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> out: array<f32>;
@group(0) @binding(3) var<storage, read> actions: array<u32>;
@group(0) @binding(4) var<storage, read> targets: array<f32>;
@group(0) @binding(5) var<storage, read> mask: array<f32>;
@group(0) @binding(6) var<storage, read_write> d_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> row_loss: array<f32>;

// Abramowitz & Stegun 7.1.26, the same constants and operation order as `hl_gauss::erf`.
fn erf(x: f32) -> f32 {
    let s = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * s);
    let poly = ((((1.0614054 * t + -1.453152) * t + 1.4214137) * t + -0.28449674) * t + 0.2548296) * t;
    let y = 1.0 - poly * exp(-s * s);
    if (x < 0.0) {
        return -y;
    }
    return y;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let p = gid.x + gid.y * 65535u * 64u;
    if (p >= P.rows) {
        return;
    }
    let r = order[p];
    let w = mask[r] * P.scale;
    let base = p * P.head;
    for (var c = 0u; c < P.head; c++) {
        d_out[base + c] = 0.0;
    }
    if (P.kind < 2u) {
        let i = base + actions[r];
        let e = out[i] - targets[r];
        var value = 0.5 * e * e;
        var grad = e;
        if (P.kind == 1u && abs(e) > P.delta) {
            value = P.delta * (abs(e) - 0.5 * P.delta);
            grad = P.delta * sign(e);
        }
        d_out[i] = w * grad;
        row_loss[p] = w * value;
        return;
    }
    if (P.kind == 3u) {
        let bins = P.groups;
        let gb = base + actions[r] * bins;
        let y = clamp(targets[r], P.v_min, P.v_max);
        let bw = (P.v_max - P.v_min) / f32(bins);
        let k = 1.0 / (1.4142135 * P.sigma);
        var m = out[gb];
        for (var j = 1u; j < bins; j++) {
            m = max(m, out[gb + j]);
        }
        var s = 0.0;
        var z = 0.0;
        var below = erf((P.v_min - y) * k);
        for (var j = 0u; j < bins; j++) {
            s += exp(out[gb + j] - m);
            let above = erf((P.v_min + f32(j + 1u) * bw - y) * k);
            z += above - below;
            below = above;
        }
        var cross = 0.0;
        below = erf((P.v_min - y) * k);
        for (var j = 0u; j < bins; j++) {
            let above = erf((P.v_min + f32(j + 1u) * bw - y) * k);
            let pj = (above - below) / z;
            below = above;
            cross += pj * out[gb + j];
            d_out[gb + j] = w * (exp(out[gb + j] - m) / s - pj);
        }
        row_loss[p] = w * (m + log(s) - cross);
        return;
    }
    let classes = P.head / P.groups;
    var total = 0.0;
    for (var g = 0u; g < P.groups; g++) {
        let gb = base + g * classes;
        var m = out[gb];
        for (var c = 1u; c < classes; c++) {
            m = max(m, out[gb + c]);
        }
        var s = 0.0;
        for (var c = 0u; c < classes; c++) {
            s += exp(out[gb + c] - m);
        }
        let label = actions[r * P.groups + g];
        total += m + log(s) - out[gb + label];
        for (var c = 0u; c < classes; c++) {
            var onehot = 0.0;
            if (c == label) {
                onehot = 1.0;
            }
            d_out[gb + c] = w * (exp(out[gb + c] - m) / s - onehot);
        }
    }
    row_loss[p] = w * total;
}
