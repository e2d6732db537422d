//! Runtime-dispatched vector code: the crate's one module that uses `std::arch`, and the only
//! one with `unsafe` (the lint is `deny` everywhere, `expect`ed here, once per call site).
//!
//! [`gemm`] wraps faer's `gemm` crate, whose product takes raw pointers and strides: its audit
//! is in that file (every stride checked against its slice before the call). Audit, for every
//! AVX-512 kernel below:
//! - the only `unsafe` is the safe wrapper's call of its `#[target_feature]` function, made
//!   right after [`available`] confirmed those features on this CPU;
//! - every memory access is a bounds-checked slice, and vectors are loaded and stored through
//!   `bytemuck` arrays, never through pointers;
//! - a property test compares the kernel with the scalar code it replaces, on random inputs.
//!
//! CPUs without these features (and other architectures) run the scalar code.

#[cfg(target_arch = "x86_64")]
pub(crate) mod codes;
pub(crate) mod gemm;
pub(crate) mod regrow;
#[cfg(target_arch = "x86_64")]
pub(crate) mod window;

/// Whether this CPU runs the kernels: AVX-512 F and BW with byte permutes (VBMI), and POPCNT:
/// Intel Ice Lake, AMD Zen 4 and later. `std` caches the answer; the check is a load.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
        && std::arch::is_x86_feature_detected!("popcnt");
    #[cfg(not(target_arch = "x86_64"))]
    false
}
