//! HL-Gauss (Imani & White 2018; Farebrother et al. 2024, "Stop Regressing"): a scalar value
//! target becomes a histogram over a fixed support, the network predicts `bins` logits, the loss
//! is the cross-entropy between them and the value is the histogram's expectation.
//!
//! Support `[v_min, v_max]` in `bins` bins of width `w = (v_max - v_min) / bins`, edges
//! `e_j = v_min + j w`, centres `c_j = v_min + (j + 0.5) w`. A target `y`, clipped to the
//! support, becomes `p_j = (Phi((e_{j+1} - y) / sigma) - Phi((e_j - y) / sigma)) / Z`, the mass
//! of a normal `N(y, sigma^2)` in bin j over its mass on the support. `Z` is computed as the sum
//! of the bins' masses, which equals `Phi((v_max - y) / sigma) - Phi((v_min - y) / sigma)` in
//! real arithmetic and makes the histogram sum to 1 to rounding. The `1/2` of
//! `Phi(x) = (1 + erf(x / sqrt 2)) / 2` cancels in the ratio, so only [`erf`] differences are
//! taken. `shaders/loss.wgsl` computes the same histogram with the same [`erf`], written
//! identically.

/// `erf(x)` by Abramowitz & Stegun 7.1.26 (absolute error at most 1.5e-7 in exact arithmetic;
/// in f32 the rounding of its few operations adds about 1e-7 more). `shaders/loss.wgsl` has the
/// same function with the same constants and operation order, so both backends build the same
/// target histograms to float rounding.
pub fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A1: f32 = 0.254_829_6;
    const A2: f32 = -0.284_496_74;
    const A3: f32 = 1.421_413_7;
    const A4: f32 = -1.453_152;
    const A5: f32 = 1.061_405_4;
    let s = x.abs();
    let t = 1.0 / (1.0 + P * s);
    let poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t;
    let y = 1.0 - poly * (-s * s).exp();
    if x < 0.0 { -y } else { y }
}

/// The support and smoothing of an HL-Gauss head: `bins` bins over `[v_min, v_max]`, the
/// target's normal of standard deviation `sigma`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Support {
    /// Bins (at least 2).
    pub bins: usize,
    /// Lower end of the support.
    pub v_min: f32,
    /// Upper end of the support (above `v_min`).
    pub v_max: f32,
    /// Standard deviation of the target's normal (positive).
    pub sigma: f32,
}

impl Support {
    /// The paper's default smoothing: `sigma = 0.75 w` for bin width `w`.
    pub fn default_sigma(bins: usize, v_min: f32, v_max: f32) -> f32 {
        0.75 * (v_max - v_min) / bins as f32
    }

    /// Why these parameters are unusable, if they are: `bins >= 2`, `v_min < v_max`,
    /// `sigma > 0`, all finite.
    pub fn problem(&self) -> Option<String> {
        if self.bins < 2 {
            return Some(format!("{} bins; at least 2", self.bins));
        }
        if !(self.v_min.is_finite() && self.v_max.is_finite() && self.v_min < self.v_max) {
            return Some(format!(
                "support [{}, {}]; finite with v_min < v_max",
                self.v_min, self.v_max
            ));
        }
        if !(self.sigma.is_finite() && self.sigma > 0.0) {
            return Some(format!("sigma {}; a positive number", self.sigma));
        }
        None
    }

    /// Bin width `w`.
    pub fn width(&self) -> f32 {
        (self.v_max - self.v_min) / self.bins as f32
    }

    /// Centre of bin `j`.
    pub fn centre(&self, j: usize) -> f32 {
        self.v_min + (j as f32 + 0.5) * self.width()
    }

    /// Writes the target histogram of `y` (clipped to the support) into `p` (`bins` values
    /// summing to 1).
    pub fn histogram(&self, y: f32, p: &mut [f32]) {
        let y = y.clamp(self.v_min, self.v_max);
        let (w, scale) = (self.width(), 1.0 / (std::f32::consts::SQRT_2 * self.sigma));
        let mut below = erf((self.v_min - y) * scale);
        let mut total = 0.0f32;
        for (j, pj) in p.iter_mut().enumerate() {
            let above = erf((self.v_min + (j + 1) as f32 * w - y) * scale);
            *pj = above - below;
            total += *pj;
            below = above;
        }
        for pj in p.iter_mut() {
            *pj /= total;
        }
    }

    /// The value of one action's `bins` logits: `sum_j softmax(z)_j c_j`.
    pub fn expectation(&self, logits: &[f32]) -> f32 {
        let max = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let (mut sum, mut weighted) = (0.0f32, 0.0f32);
        for (j, &z) in logits.iter().enumerate() {
            let e = (z - max).exp();
            sum += e;
            weighted += e * self.centre(j);
        }
        weighted / sum
    }

    /// Q-values `[R, A]` from logits `[R, A x bins]`: the expectation of each action's block.
    pub fn q_values(&self, logits: &[f32]) -> Vec<f32> {
        logits
            .chunks_exact(self.bins)
            .map(|z| self.expectation(z))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // The table's nine digits, as printed (more than an f32 holds).
    #[expect(clippy::excessive_precision)]
    fn erf_matches_known_values() {
        // erf(0.5), erf(1), erf(2) to 9 digits (Abramowitz & Stegun table 7.1).
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_878),
            (1.0, 0.842_700_793),
            (2.0, 0.995_322_265),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
            assert!((erf(-x) + want).abs() < 3e-7);
        }
    }

    #[test]
    fn the_expectation_of_a_one_hot_histogram_is_its_centre() {
        let s = Support {
            bins: 4,
            v_min: 0.0,
            v_max: 4.0,
            sigma: 0.75,
        };
        let logits = [0.0, 0.0, 60.0, 0.0];
        assert!((s.expectation(&logits) - 2.5).abs() < 1e-5);
    }
}
