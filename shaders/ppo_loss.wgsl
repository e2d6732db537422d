// ppo_loss: PPO's losses per row and their gradients with respect to the network outputs
// (src/critic/ppo_loss.rs is the CPU reference).
//   mode 0, the policy: `out` holds [R, A] logits, `data` [R, 2] (old log-probability,
//     advantage), `mask` [R, A] (1 legal, 0 not; read when has_mask is 1). Per row: the clipped
//     surrogate minus ent_coef x the entropy over the legal actions, its gradient into d_out,
//     and terms [R, 4]: surrogate, entropy, approximate KL, clipped (each over R).
//   mode 1, the value: `out` holds [R] values, `data` [R, 2] (old value, return). Per row:
//     vf_coef x 0.5 (V - G)^2, or its clipped form when clip_value is 1, its gradient into
//     d_out, the loss in terms[4 r].
//
// Bindings (group 0):
//   0 uniform  PpoParams
//   1 storage  out: array<f32>
//   2 storage  actions: array<u32>     [R] (mode 0)
//   3 storage  data: array<f32>        [R, 2]
//   4 storage  mask: array<f32>        [R, A] (mode 0 with has_mask)
//   5 storage  d_out: array<f32> read_write
//   6 storage  terms: array<f32> read_write [R, 4]
// Workgroup 64 threads, one row each. Dispatch: ceil(R / 64) folded into (x, y).

struct PpoParams {
    rows: u32,
    width: u32,
    mode: u32,
    has_mask: u32,
    clip: f32,
    ent_coef: f32,
    vf_coef: f32,
    clip_value: u32,
    inv_rows: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: PpoParams;
@group(0) @binding(1) var<storage, read> out: array<f32>;
@group(0) @binding(2) var<storage, read> actions: array<u32>;
@group(0) @binding(3) var<storage, read> data: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> d_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> terms: array<f32>;

fn legal(i: u32) -> bool {
    return P.has_mask == 0u || mask[i] != 0.0;
}

fn value_row(r: u32) {
    let v = out[r];
    let old = data[2u * r];
    let g = data[2u * r + 1u];
    let e = v - g;
    var l = 0.5 * e * e;
    var grad = e;
    if (P.clip_value == 1u) {
        let delta = clamp(v - old, -P.clip, P.clip);
        let ec = old + delta - g;
        let inside = abs(v - old) < P.clip;
        if (e * e < ec * ec) {
            l = 0.5 * ec * ec;
            grad = select(0.0, ec, inside);
        }
    }
    d_out[r] = P.vf_coef * grad * P.inv_rows;
    terms[4u * r] = P.vf_coef * l * P.inv_rows;
    terms[4u * r + 1u] = 0.0;
    terms[4u * r + 2u] = 0.0;
    terms[4u * r + 3u] = 0.0;
}

fn policy_row(r: u32) {
    let w = P.width;
    let base = r * w;
    var m = -3.4028235e38;
    for (var j = 0u; j < w; j = j + 1u) {
        if (legal(base + j)) {
            m = max(m, out[base + j]);
        }
    }
    var sum = 0.0;
    for (var j = 0u; j < w; j = j + 1u) {
        if (legal(base + j)) {
            sum = sum + exp(out[base + j] - m);
        }
    }
    let log_sum = m + log(sum);
    var entropy = 0.0;
    for (var j = 0u; j < w; j = j + 1u) {
        if (legal(base + j)) {
            let l = out[base + j] - log_sum;
            entropy = entropy - exp(l) * l;
        }
    }
    let a = actions[r];
    let logp_a = out[base + a] - log_sum;
    let log_ratio = logp_a - data[2u * r];
    let ratio = exp(log_ratio);
    let adv = data[2u * r + 1u];
    let unclipped = ratio * adv;
    let clipped = clamp(ratio, 1.0 - P.clip, 1.0 + P.clip) * adv;
    var d_logp_a = 0.0;
    if (unclipped <= clipped) {
        d_logp_a = -unclipped;
    }
    let inv = P.inv_rows;
    for (var j = 0u; j < w; j = j + 1u) {
        if (!legal(base + j)) {
            d_out[base + j] = 0.0;
            continue;
        }
        let l = out[base + j] - log_sum;
        let p = exp(l);
        let surrogate = d_logp_a * (select(0.0, 1.0, j == a) - p);
        let bonus = P.ent_coef * p * (l + entropy);
        d_out[base + j] = (surrogate + bonus) * inv;
    }
    let outside = ratio < 1.0 - P.clip || ratio > 1.0 + P.clip;
    terms[4u * r] = -min(unclipped, clipped) * inv;
    terms[4u * r + 1u] = entropy * inv;
    terms[4u * r + 2u] = ((ratio - 1.0) - log_ratio) * inv;
    terms[4u * r + 3u] = select(0.0, 1.0, outside) * inv;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x + gid.y * 65535u * 64u;
    if (r >= P.rows) {
        return;
    }
    if (P.mode == 0u) {
        policy_row(r);
    } else {
        value_row(r);
    }
}
