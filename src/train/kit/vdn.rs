//! Value decomposition by sum (VDN, Sunehag et al., 2018): a team's value is the sum of its
//! learners' values, `Q_tot(s, a) = sum_i Q_i(o_i, a_i)`, trained on the team's return; each
//! learner still acts greedily on its own `Q_i`, and the sum's maximum is the sum of the maxima.

/// The team loss `mean_p 0.5 (sum_i Q_i(o_i, a_i) - G_p)^2` of a minibatch of P team rows, each
/// `n` learner rows of network outputs `out` (`[P x n, A]`), with the actions `taken` (`[P x
/// n]`) and the team targets `targets` (`[P]`); writes dL/d out into `d_out` (non-zero only on
/// the chosen actions).
pub(crate) fn team_loss(
    out: &[f32],
    (n, a): (usize, usize),
    taken: &[u32],
    targets: &[f32],
    d_out: &mut [f32],
) -> f32 {
    d_out.fill(0.0);
    let teams = targets.len();
    let inv = 1.0 / teams.max(1) as f32;
    let mut loss = 0.0f64;
    for (p, &g) in targets.iter().enumerate() {
        let chosen = |i: usize| (p * n + i) * a + taken[p * n + i] as usize;
        let q_tot: f32 = (0..n).map(|i| out[chosen(i)]).sum();
        let e = q_tot - g;
        loss += (0.5 * e * e * inv) as f64;
        for i in 0..n {
            d_out[chosen(i)] = e * inv;
        }
    }
    loss as f32
}

#[cfg(test)]
mod tests;
