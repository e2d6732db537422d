//! The team loss against central finite differences of an f64 reference.

use super::team_loss;

fn reference(out: &[f64], (n, a): (usize, usize), taken: &[u32], targets: &[f64]) -> f64 {
    let teams = targets.len();
    (0..teams)
        .map(|p| {
            let q: f64 = (0..n)
                .map(|i| out[(p * n + i) * a + taken[p * n + i] as usize])
                .sum();
            0.5 * (q - targets[p]).powi(2)
        })
        .sum::<f64>()
        / teams as f64
}

#[test]
fn the_team_loss_gradient_matches_finite_differences() {
    let (teams, n, a) = (5, 3, 4);
    let mut s = 7u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let out: Vec<f64> = (0..teams * n * a).map(|_| next()).collect();
    let taken: Vec<u32> = (0..teams * n)
        .map(|_| ((next() + 1.0) * 2.0) as u32 % a as u32)
        .collect();
    let targets: Vec<f64> = (0..teams).map(|_| 3.0 * next()).collect();
    let f32s = |x: &[f64]| x.iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let mut d = vec![0.0f32; out.len()];
    let loss = team_loss(&f32s(&out), (n, a), &taken, &f32s(&targets), &mut d);
    let want = reference(&out, (n, a), &taken, &targets);
    assert!((loss as f64 - want).abs() < 1e-5, "{loss} vs {want}");
    let h = 1e-6;
    for k in 0..out.len() {
        let mut x = out.clone();
        x[k] += h;
        let up = reference(&x, (n, a), &taken, &targets);
        x[k] -= 2.0 * h;
        let fd = (up - reference(&x, (n, a), &taken, &targets)) / (2.0 * h);
        assert!(
            (d[k] as f64 - fd).abs() < 1e-5 + 1e-4 * fd.abs(),
            "output {k}: {} vs {fd}",
            d[k]
        );
    }
    // Only the chosen actions' outputs carry gradient, and every learner of a team the same.
    assert_eq!(d.iter().filter(|g| **g != 0.0).count(), teams * n);
}
