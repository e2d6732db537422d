// gru_backward: backpropagation through the GRU cell's T steps of one sequence per workgroup,
// last step first. With dh = dL/d h_out (the head's, d_h) plus what step t + 1 sent back:
//   dn = dh (1 - z)(1 - n^2), dz = dh (h_in - n) z (1 - z), dr = dn gh_n r (1 - r)
//   d_gi = (dr, dz, dn), d_gh = (dr, dz, dn r)
//   dL/d h_in = dh z + W_hh^T d_gh, sent back to step t - 1 unless step t was reset (then 0).
// The weight gradients are reductions over rows afterwards (linear_backward_weight of d_gi with
// u and of d_gh with h_in).
//
// Bindings (group 0):
//   0 uniform  GruParams               (hidden, steps, per_net, w_off/b_off of W_hh, seqs)
//   1 storage  seqs: array<vec4<u32>>  as in gru_forward
//   2 storage  params: array<f32>
//   3 storage  reset: array<u32>       [R] sorted rows
//   4 storage  gates: array<f32>       [R, 4g] r | z | n | gh_n of gru_forward
//   5 storage  h_in: array<f32>        [R, g]
//   6 storage  d_h: array<f32>         [R, g] the head's dL/d h_out
//   7 storage  d_gi: array<f32> read_write [R, 3g]
//   8 storage  d_gh: array<f32> read_write [R, 3g]
// Workgroup 64 threads: one sequence, threads over the hidden units (at most 64 x MAX_SLOTS);
// the gradient carried between steps stays in each thread's registers. Dispatch: sequences
// folded into (x, y).

struct GruParams {
    hidden: u32,
    steps: u32,
    per_net: u32,
    w_off: u32,
    b_off: u32,
    seqs: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> P: GruParams;
@group(0) @binding(1) var<storage, read> seqs: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
@group(0) @binding(3) var<storage, read> reset: array<u32>;
@group(0) @binding(4) var<storage, read> gates: array<f32>;
@group(0) @binding(5) var<storage, read> h_in: array<f32>;
@group(0) @binding(6) var<storage, read> d_h: array<f32>;
@group(0) @binding(7) var<storage, read_write> d_gi: array<f32>;
@group(0) @binding(8) var<storage, read_write> d_gh: array<f32>;

const WG: u32 = 64u;
const MAX_SLOTS: u32 = 16u;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let index = wg.x + wg.y * 65535u;
    if (index >= P.seqs) {
        return;
    }
    let s = seqs[index];
    let base = s.x * P.per_net;
    let g = P.hidden;
    // carry[c]: dL/d h_out of the step being processed, from the step after it, for unit
    // lid.x + c * WG; during the step, the direct part dh z.
    var carry: array<f32, 16>;
    for (var c = 0u; c < MAX_SLOTS; c++) {
        carry[c] = 0.0;
    }
    for (var back = 0u; back < P.steps; back++) {
        let t = P.steps - 1u - back;
        let row = s.y + t * s.z;
        let o = row * 4u * g;
        let i = row * 3u * g;
        var c = 0u;
        for (var j = lid.x; j < g; j += WG) {
            let r = gates[o + j];
            let z = gates[o + g + j];
            let n = gates[o + 2u * g + j];
            let an = gates[o + 3u * g + j];
            let dh = d_h[row * g + j] + carry[c];
            let dn = dh * (1.0 - z) * (1.0 - n * n);
            let dz = dh * (h_in[row * g + j] - n) * z * (1.0 - z);
            let dr = dn * an * r * (1.0 - r);
            d_gi[i + j] = dr;
            d_gi[i + g + j] = dz;
            d_gi[i + 2u * g + j] = dn;
            d_gh[i + j] = dr;
            d_gh[i + g + j] = dz;
            d_gh[i + 2u * g + j] = dn * r;
            carry[c] = dh * z;
            c++;
        }
        storageBarrier();
        c = 0u;
        let w = base + P.w_off;
        let keep = reset[row] == 0u;
        for (var j = lid.x; j < g; j += WG) {
            var acc = 0.0;
            for (var q = 0u; q < 3u * g; q++) {
                acc += d_gh[i + q] * params[w + q * g + j];
            }
            carry[c] = select(0.0, acc + carry[c], keep);
            c++;
        }
        storageBarrier();
    }
}
