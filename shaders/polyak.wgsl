// polyak: target = tau * online + (1 - tau) * target for every parameter, with the factor of
// the parameter's network (tau = 1 copies; tau = 0 leaves the target untouched, not rewritten).
//
// Bindings (group 0):
//   0 uniform  PolyakParams
//   1 storage  params: array<f32>
//   2 storage  target_params: array<f32> read_write
//   3 storage  nets: array<NetScalars> [K] per-network Polyak factor
// Workgroup 256 threads, one parameter each. Dispatch: ceil(P / 256) folded into (x, y).

struct PolyakParams {
    count: u32,
    per_net: u32,
    _pad0: u32,
    _pad1: u32,
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

@group(0) @binding(0) var<uniform> P: PolyakParams;
@group(0) @binding(1) var<storage, read> params: array<f32>;
@group(0) @binding(2) var<storage, read_write> target_params: array<f32>;
@group(0) @binding(3) var<storage, read> nets: array<NetScalars>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i >= P.count) {
        return;
    }
    let tau = nets[i / P.per_net].tau;
    if (tau == 0.0) {
        return;
    }
    target_params[i] = tau * params[i] + (1.0 - tau) * target_params[i];
}
