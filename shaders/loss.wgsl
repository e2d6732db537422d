// loss: per sorted row, the loss contribution and dL/d output of the head.
//   kind 0: masked MSE on the chosen action, 1: masked Huber (delta), 2: softmax cross-entropy
//   over `groups` groups of head / groups logits. `scale` is 1 / (sum of mask) for 0 and 1,
//   1 / (sum of mask * groups) for 2, computed on the host.
//
// Bindings (group 0):
//   0 uniform  LossParams
//   1 storage  order: array<u32>       caller row per sorted row
//   2 storage  out: array<f32>         [R, head] sorted
//   3 storage  actions: array<u32>     [R] caller order (kinds 0, 1) or labels [R, groups] (2)
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
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> P: LossParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> out: array<f32>;
@group(0) @binding(3) var<storage, read> actions: array<u32>;
@group(0) @binding(4) var<storage, read> targets: array<f32>;
@group(0) @binding(5) var<storage, read> mask: array<f32>;
@group(0) @binding(6) var<storage, read_write> d_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> row_loss: array<f32>;

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
