// polyak: target = tau * online + (1 - tau) * target for every parameter (tau = 1 copies).
//
// Bindings (group 0):
//   0 uniform  PolyakParams
//   1 storage  params: array<f32>
//   2 storage  target_params: array<f32> read_write
// Workgroup 256 threads, one parameter each. Dispatch: ceil(P / 256) folded into (x, y).

struct PolyakParams {
    count: u32,
    tau: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> P: PolyakParams;
@group(0) @binding(1) var<storage, read> params: array<f32>;
@group(0) @binding(2) var<storage, read_write> target_params: array<f32>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i >= P.count) {
        return;
    }
    target_params[i] = P.tau * params[i] + (1.0 - P.tau) * target_params[i];
}
