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
//!
//! [`prefetch`] is the one `unsafe` here that is not a kernel call: a cache hint, which reads
//! and writes nothing the program sees (so it has no scalar reference to test against; the
//! step's results with and without it are compared in `tests/determinism.rs`).

#[cfg(target_arch = "x86_64")]
pub(crate) mod codes;
pub(crate) mod gemm;
pub(crate) mod regrow;
#[cfg(target_arch = "x86_64")]
pub(crate) mod window;

/// Asks the CPU to bring the cache lines of `bytes` into its first-level cache ahead of their
/// use (the next arena's cell layer while this one steps): a hint, which changes no result.
/// A no-op on other architectures.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        #[expect(unsafe_code, reason = "a prefetch hint; see the safety argument")]
        // SAFETY: a prefetch never faults and neither reads nor writes anything the program
        // can observe; its address is the first byte of a chunk of a live slice (SSE, which
        // it needs, is part of every x86_64 CPU).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

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
