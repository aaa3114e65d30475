//! Kendall's rank correlation (tau-b, which allows ties) and its two-sided p-value: how far two
//! orderings of the same items agree. Used to say whether psprobe ranks the scenarios at one
//! concurrency as a published table does.
//!
//! Must not: give a p-value from the normal approximation where the exact one is cheap (the
//! seed study ranks six scenarios: 720 orderings), or a tau where one side has no order at all.

use super::stats_math::normal_cdf;

/// Up to this many items the p-value counts every ordering (8! = 40,320).
const EXACT_UP_TO: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Kendall {
    pub tau: f64,
    /// Two-sided: the chance of a |tau| at least this large when the orderings are unrelated.
    pub p: f64,
    pub n: usize,
}

/// Concordant minus discordant pairs, and the pairs tied in x and in y.
fn pair_counts(x: &[f64], y: &[f64]) -> (i64, i64, i64) {
    let (mut score, mut tied_x, mut tied_y) = (0i64, 0i64, 0i64);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let sx = sign(x[i] - x[j]);
            let sy = sign(y[i] - y[j]);
            score += sx * sy;
            tied_x += i64::from(sx == 0);
            tied_y += i64::from(sy == 0);
        }
    }
    (score, tied_x, tied_y)
}

fn sign(d: f64) -> i64 {
    if d > 0.0 {
        1
    } else if d < 0.0 {
        -1
    } else {
        0
    }
}

fn tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as i64;
    let pairs = n * (n - 1) / 2;
    let (score, tied_x, tied_y) = pair_counts(x, y);
    let denominator = (((pairs - tied_x) * (pairs - tied_y)) as f64).sqrt();
    (denominator > 0.0).then(|| score as f64 / denominator)
}

/// Every ordering of `y` (Heap's algorithm), `visit` called with each.
fn each_permutation(y: &mut [f64], visit: &mut impl FnMut(&[f64])) {
    let n = y.len();
    let mut c = vec![0usize; n];
    visit(y);
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                y.swap(0, i);
            } else {
                y.swap(c[i], i);
            }
            visit(y);
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
}

/// Kendall's tau-b of paired values `x` and `y`; `None` when fewer than two pairs, the
/// lengths differ, or either side is all ties.
pub(crate) fn kendall(x: &[f64], y: &[f64]) -> Option<Kendall> {
    let n = x.len();
    if n < 2 || n != y.len() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let tau = tau_b(x, y)?;
    let p = if n <= EXACT_UP_TO {
        let (mut extreme, mut all) = (0u64, 0u64);
        let mut shuffled = y.to_vec();
        each_permutation(&mut shuffled, &mut |perm| {
            all += 1;
            if tau_b(x, perm).is_some_and(|t| t.abs() >= tau.abs() - 1e-12) {
                extreme += 1;
            }
        });
        extreme as f64 / all as f64
    } else {
        // The normal approximation of the score without ties (ties only make it cautious).
        let nf = n as f64;
        let (score, _, _) = pair_counts(x, y);
        let sd = (nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0).sqrt();
        (2.0 * (1.0 - normal_cdf((score as f64).abs() / sd))).min(1.0)
    };
    Some(Kendall { tau, p, n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_order_reversed_order_and_one_swap() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let same = kendall(&x, &[10.0, 20.0, 30.0, 40.0, 50.0, 60.0]).unwrap();
        assert_eq!(same.tau, 1.0);
        // Only the identity and its reverse are as extreme: 2 of 720.
        assert!((same.p - 2.0 / 720.0).abs() < 1e-12, "{same:?}");
        let reversed = kendall(&x, &[6.0, 5.0, 4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!(reversed.tau, -1.0);
        // One adjacent swap: 14 concordant, 1 discordant of 15 pairs.
        let swap = kendall(&x, &[1.0, 3.0, 2.0, 4.0, 5.0, 6.0]).unwrap();
        assert!((swap.tau - 13.0 / 15.0).abs() < 1e-12);
        // Orderings with at most one inversion or at least 14: 1 + 5 each way = 12 of 720.
        assert!((swap.p - 12.0 / 720.0).abs() < 1e-12, "{swap:?}");
    }

    #[test]
    fn ties_use_tau_b_and_no_order_gives_none() {
        // scipy.stats.kendalltau([1,2,3,4], [1,1,2,3]).statistic = 0.9128709291752769
        let t = kendall(&[1.0, 2.0, 3.0, 4.0], &[1.0, 1.0, 2.0, 3.0]).unwrap();
        assert!((t.tau - 0.912_870_929_175_276_9).abs() < 1e-12, "{t:?}");
        assert!(kendall(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]).is_none());
        assert!(kendall(&[1.0], &[1.0]).is_none());
        assert!(kendall(&[1.0, 2.0], &[1.0]).is_none());
        assert!(kendall(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn many_items_use_the_normal_approximation() {
        let x: Vec<f64> = (0..20).map(f64::from).collect();
        let t = kendall(&x, &x).unwrap();
        assert_eq!(t.tau, 1.0);
        assert!(t.p < 1e-6, "{t:?}");
        let unrelated: Vec<f64> = (0..20).map(|i| f64::from((i * 9) % 20)).collect();
        let u = kendall(&x, &unrelated).unwrap();
        // Score -2 of 190 pairs: z = 2 / sqrt(20 * 19 * 45 / 18) = 0.065, p = 0.948.
        assert!(
            (u.tau + 2.0 / 190.0).abs() < 1e-12 && (u.p - 0.948).abs() < 0.001,
            "{u:?}"
        );
    }
}
