// gru_forward: the GRU cell's recurrence over T steps of one sequence per workgroup (PyTorch's
// convention, gate rows r, z, n):
//   h_in  = 0 where the row is reset, else h0 (t = 0) or the previous step's h_out
//   gh    = W_hh h_in + b_hh                       (the recurrent product, per step)
//   r     = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n)
//   h_out = (1 - z) * n + z * h_in
// where gi = W_ih u + b_ih was computed over all rows beforehand (linear_forward). Keeps h_in,
// the gates and gh_n for gru_backward.
//
// Bindings (group 0):
//   0 uniform  GruParams               (hidden, steps, per_net, w_off/b_off of W_hh/b_hh, seqs)
//   1 storage  seqs: array<vec4<u32>>  (net, row of step 0, row stride between steps, caller
//                                        sequence) per sequence, grouped by network
//   2 storage  params: array<f32>
//   3 storage  h0: array<f32>          [B, g] caller order
//   4 storage  reset: array<u32>       [R] sorted rows, 1 where the hidden state entering is 0
//   5 storage  gi: array<f32>          [R, 3g] input-side gate pre-activations
//   6 storage  h_in: array<f32> read_write   [R, g] hidden state entering each step
//   7 storage  gates: array<f32> read_write  [R, 4g] r | z | n | gh_n
//   8 storage  h_out: array<f32> read_write  [R, g] hidden state leaving each step
// Workgroup 64 threads: one sequence, threads over the hidden units; the steps run in order
// with storage barriers between the phases. Dispatch: sequences folded into (x, y).

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
@group(0) @binding(3) var<storage, read> h0: array<f32>;
@group(0) @binding(4) var<storage, read> reset: array<u32>;
@group(0) @binding(5) var<storage, read> gi: array<f32>;
@group(0) @binding(6) var<storage, read_write> h_in: array<f32>;
@group(0) @binding(7) var<storage, read_write> gates: array<f32>;
@group(0) @binding(8) var<storage, read_write> h_out: array<f32>;

const WG: u32 = 64u;

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}

// tanh without overflow for large |x|.
fn tanh_(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let index = wg.x + wg.y * 65535u;
    if (index >= P.seqs) {
        return;
    }
    let s = seqs[index];
    let base = s.x * P.per_net;
    let g = P.hidden;
    for (var t = 0u; t < P.steps; t++) {
        let row = s.y + t * s.z;
        for (var j = lid.x; j < g; j += WG) {
            var h = 0.0;
            if (reset[row] == 0u) {
                if (t == 0u) {
                    h = h0[s.w * g + j];
                } else {
                    h = h_out[(row - s.z) * g + j];
                }
            }
            h_in[row * g + j] = h;
        }
        storageBarrier();
        for (var j = lid.x; j < g; j += WG) {
            let b = base + P.b_off;
            var ar = params[b + j];
            var az = params[b + g + j];
            var an = params[b + 2u * g + j];
            let w = base + P.w_off;
            for (var k = 0u; k < g; k++) {
                let hk = h_in[row * g + k];
                ar += params[w + j * g + k] * hk;
                az += params[w + (g + j) * g + k] * hk;
                an += params[w + (2u * g + j) * g + k] * hk;
            }
            let i = row * 3u * g;
            let r = sigmoid(gi[i + j] + ar);
            let z = sigmoid(gi[i + g + j] + az);
            let n = tanh_(gi[i + 2u * g + j] + r * an);
            h_out[row * g + j] = (1.0 - z) * n + z * h_in[row * g + j];
            let o = row * 4u * g;
            gates[o + j] = r;
            gates[o + g + j] = z;
            gates[o + 2u * g + j] = n;
            gates[o + 3u * g + j] = an;
        }
        storageBarrier();
    }
}
