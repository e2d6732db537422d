//! Single-precision matrix products through faer's `gemm` crate, which picks its AVX-512 or
//! AVX2/FMA kernels at run time (a plain kernel elsewhere): the CPU critic's products.
//!
//! Audit: `gemm::gemm` reads its inputs and writes its output through raw pointers and the
//! strides it is given. [`product`] takes slices and, before its one `unsafe` call, asserts
//! that the shapes agree and that every element the strides reach lies inside its slice (the
//! largest offset, `(rows - 1) * row_stride + (cols - 1) * col_stride`, is below the slice's
//! length). The output is a `&mut` slice, which no input can alias. It calls with one thread:
//! the critic parallelises over blocks of rows itself, and its sums stay in a fixed order.
//! Tested against an f64 triple loop on random shapes, strides and both output modes
//! (`products_are_the_plain_loops` below).

/// A matrix read from a slice: element `(r, c)` at `data[r * row_stride + c * col_stride]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Matrix<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> Matrix<'a> {
    /// `rows x cols` stored row by row in `data` (which may be longer).
    pub(crate) fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Matrix {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transpose, reading the same elements.
    pub(crate) fn t(self) -> Self {
        Matrix {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Whether every element's offset lies inside `data`.
    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1)
                .checked_mul(self.row_stride)
                .zip((self.cols - 1).checked_mul(self.col_stride))
                .and_then(|(r, c)| r.checked_add(c))
                .is_some_and(|last| last < self.data.len())
    }
}

/// `c = a b`, or `c += a b` when `accumulate`; `c` is `a.rows x b.cols`, row-major.
///
/// # Panics
/// When `a.cols != b.rows`, `c` is shorter than the product, or a matrix's strides reach past
/// its slice.
pub(crate) fn product(a: Matrix, b: Matrix, c: &mut [f32], accumulate: bool) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(k, b.rows, "inner dimensions differ");
    assert!(c.len() >= m * n, "output holds {} of {m} x {n}", c.len());
    assert!(
        a.fits() && b.fits(),
        "a matrix's strides reach past its slice"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            c[..m * n].fill(0.0);
        }
        return;
    }
    let stride = |s: usize| isize::try_from(s).expect("a stride fits isize");
    #[expect(
        unsafe_code,
        reason = "gemm's product through raw pointers; see the audit above"
    )]
    // SAFETY: `a` and `b` reach only elements inside their slices (`fits`), with `m`, `n`, `k`
    // their checked shapes; the output's `m x n` row-major elements lie in `c` (checked above),
    // and `c` is a unique borrow, so no input aliases it. `gemm` writes nothing else, and
    // reads `c` only when `accumulate` (`read_dst`), where every element is initialised.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            stride(n),
            accumulate,
            a.data.as_ptr(),
            stride(a.col_stride),
            stride(a.row_stride),
            b.data.as_ptr(),
            stride(b.col_stride),
            stride(b.row_stride),
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `a b` by the definition, in f64.
    fn plain(a: Matrix, b: Matrix) -> Vec<f64> {
        let at = |m: &Matrix, r: usize, c: usize| m.data[r * m.row_stride + c * m.col_stride];
        let mut out = Vec::with_capacity(a.rows * b.cols);
        for r in 0..a.rows {
            for c in 0..b.cols {
                out.push(
                    (0..a.cols)
                        .map(|k| f64::from(at(&a, r, k)) * f64::from(at(&b, k, c)))
                        .sum(),
                );
            }
        }
        out
    }

    proptest! {
        /// Random shapes (with empty ones), either operand transposed, and both output modes:
        /// the product is the f64 loop's to float rounding, and nothing past the product in
        /// the output changes.
        #[test]
        fn products_are_the_plain_loops(
            (m, k, n) in (0usize..40, 0usize..70, 0usize..40),
            (a_t, b_t, accumulate) in (any::<bool>(), any::<bool>(), any::<bool>()),
            seed in any::<u32>(),
        ) {
            let value = |i: usize, salt: usize| {
                let h = (i as u32 ^ seed).wrapping_mul(2_654_435_761).wrapping_add(salt as u32);
                (h >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            };
            let a_data: Vec<f32> = (0..m * k + 3).map(|i| value(i, 1)).collect();
            let b_data: Vec<f32> = (0..k * n + 5).map(|i| value(i, 2)).collect();
            // Stored transposed when asked for, read back through `t`.
            let a = if a_t {
                Matrix::row_major(&a_data, k, m).t()
            } else {
                Matrix::row_major(&a_data, m, k)
            };
            let b = if b_t {
                Matrix::row_major(&b_data, n, k).t()
            } else {
                Matrix::row_major(&b_data, k, n)
            };
            let before: Vec<f32> = (0..m * n + 4).map(|i| value(i, 3)).collect();
            let mut c = before.clone();
            product(a, b, &mut c, accumulate);
            let expected = plain(a, b);
            for (i, &e) in expected.iter().enumerate() {
                let e = e + if accumulate { f64::from(before[i]) } else { 0.0 };
                prop_assert!((f64::from(c[i]) - e).abs() <= 1e-4 * (1.0 + k as f64), "{i}: {} against {e}", c[i]);
            }
            prop_assert_eq!(&c[m * n..], &before[m * n..]);
        }
    }

    #[test]
    #[should_panic(expected = "reach past")]
    fn strides_past_the_slice_are_refused() {
        let data = [0.0f32; 11];
        let a = Matrix::row_major(&data, 3, 4);
        let b = Matrix::row_major(&data, 4, 2);
        product(a, b, &mut [0.0; 6], false);
    }
}
