//! Small numeric kit: sample moments, the Newey–West standard error, least-squares slope, and
//! Student's t and the normal distribution (CDF, quantile, p-value) for any degrees of
//! freedom, not just a table's. The special functions are statrs's; what is here is the
//! analysis's conventions on top (df past 1e7 is the normal, p-values clamped to [0, 1]).

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Arithmetic mean, `None` when empty.
pub(crate) fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation (n - 1 denominator), `None` below two values.
pub(crate) fn sd(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m).powi(2)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Standard error of the mean of a series that may be autocorrelated: Newey–West (Bartlett
/// kernel) with the usual automatic lag `floor(4 (n/100)^(2/9))`, at least 1. `None` below
/// three values.
pub(crate) fn newey_west_se(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let m = mean(xs)?;
    let lags = ((4.0 * (n as f64 / 100.0).powf(2.0 / 9.0)).floor() as usize).clamp(1, n - 1);
    let gamma = |lag: usize| -> f64 {
        xs[lag..]
            .iter()
            .zip(xs)
            .map(|(a, b)| (a - m) * (b - m))
            .sum::<f64>()
            / n as f64
    };
    let mut lrv = gamma(0);
    for l in 1..=lags {
        lrv += 2.0 * (1.0 - l as f64 / (lags + 1) as f64) * gamma(l);
    }
    Some((lrv.max(0.0) / n as f64).sqrt())
}

/// ln Γ(x) for x > 0.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    statrs::function::gamma::ln_gamma(x)
}

/// Above this many degrees of freedom the t distribution is taken as the normal: the two
/// differ by less than 5e-5 relative there (z = 1.96 vs t = 1.96002 at the 97.5th percentile,
/// 3.7190 vs 3.7192 at the 99.99th), and statrs's t CDF, computed through the incomplete beta
/// function near 1, loses digits past it (its 97.5th percentile is 1.95985 at 1e6 degrees of
/// freedom and 1.838 at 9e6). Block counts and pooled degrees of freedom stay far below.
const T_AS_NORMAL_DF: f64 = 1e5;

/// Student's t with `df` degrees of freedom, or `None` where the normal stands in for it (df
/// infinite or past [`T_AS_NORMAL_DF`]).
fn students_t(df: f64) -> Option<StudentsT> {
    if df.is_infinite() || df > T_AS_NORMAL_DF {
        return None;
    }
    Some(StudentsT::new(0.0, 1.0, df).unwrap_or_else(|e| panic!("t with df = {df}: {e}")))
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom (df = ∞ allowed); what the quantile
/// is checked against.
#[cfg(test)]
pub(crate) fn t_cdf(t: f64, df: f64) -> f64 {
    match students_t(df) {
        Some(d) => d.cdf(t),
        None => normal_cdf(t),
    }
}

/// The p-quantile of Student's t with `df` degrees of freedom (df = ∞ allowed).
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "t quantile of p = {p}");
    assert!(df > 0.0, "t quantile with df = {df}");
    match students_t(df) {
        Some(d) => d.inverse_cdf(p),
        None => normal_quantile(p),
    }
}

/// Two-sided p-value of a t statistic.
pub(crate) fn t_two_sided_p(t: f64, df: f64) -> f64 {
    let upper = match students_t(df) {
        Some(d) => d.sf(t.abs()),
        None => Normal::standard().sf(t.abs()),
    };
    (2.0 * upper).clamp(0.0, 1.0)
}

/// Standard normal CDF.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    Normal::standard().cdf(x)
}

/// Standard normal quantile.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "normal quantile of p = {p}");
    Normal::standard().inverse_cdf(p)
}

/// Quantile of sorted values with linear interpolation between order statistics
/// (type 7, as R's default). The reference the selection below is tested against.
#[cfg(test)]
pub(crate) fn sorted_quantile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// The same quantile as [`sorted_quantile`] of unsorted values, by selection (linear time;
/// reorders `values`).
pub(crate) fn select_quantile(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let h = (values.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let frac = h - lo as f64;
    let (_, &mut at, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let next = above.iter().copied().min_by(f64::total_cmp).unwrap_or(at);
    Some(at + frac * (next - at))
}

/// Ordinary least squares of `ys` on `xs`: slope, its standard error and the residual degrees
/// of freedom. `None` below three points or when every x is equal.
pub(crate) fn ols_slope(xs: &[f64], ys: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len();
    if n < 3 || ys.len() != n {
        return None;
    }
    let (mx, my) = (mean(xs)?, mean(ys)?);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ssr: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - intercept - slope * x).powi(2))
        .sum();
    let df = (n - 2) as f64;
    Some((slope, (ssr / df / sxx).sqrt(), df))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newey_west_is_iid_se_without_correlation_and_wider_with_it() {
        assert!(newey_west_se(&[1.0, 2.0]).is_none());
        // Alternating signs: negative autocorrelation shrinks the long-run variance.
        let alt: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let iid = sd(&alt).unwrap() / 10.0;
        assert!(newey_west_se(&alt).unwrap() < iid);
        // A slow wave: positive autocorrelation widens it.
        let wave: Vec<f64> = (0..100).map(|i| (i as f64 / 8.0).sin()).collect();
        let iid = sd(&wave).unwrap() / 10.0;
        assert!(newey_west_se(&wave).unwrap() > 1.5 * iid);
    }

    #[test]
    fn t_quantiles_match_tables() {
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (5.0, 2.571),
            (10.0, 2.228),
            (30.0, 2.042),
            (120.0, 1.980),
            (f64::INFINITY, 1.960),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 0.01, "df {df}: {got} vs {want}");
            assert!((t_quantile(0.025, df) + got).abs() < 1e-9);
        }
        // Closed forms: df 1 is Cauchy, df 2 is t = (2p - 1) / sqrt(2p(1 - p)).
        let cauchy = (std::f64::consts::PI * (0.975 - 0.5)).tan();
        assert!((t_quantile(0.975, 1.0) - cauchy).abs() < 1e-7);
        let p: f64 = 0.9;
        let df2 = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
        assert!((t_quantile(p, 2.0) - df2).abs() < 1e-7);
        assert!((t_quantile(0.995, 4.0) - 4.604).abs() < 1e-3);
        // Fractional df lies between its integer neighbours, far in the tails too; past 1e5
        // df the normal stands in, with a step of at most 5e-5 relative.
        for p in [0.6, 0.975, 0.9999] {
            let (four, half, five) = (t_quantile(p, 4.0), t_quantile(p, 4.5), t_quantile(p, 5.0));
            assert!(five < half && half < four, "p {p}: {five} {half} {four}");
            let (near, far) = (t_quantile(p, 9e4), t_quantile(p, 2e5));
            assert!(
                near > far && near - far < 5e-5 * far,
                "p {p}: {near} vs {far}"
            );
        }
        assert!((t_two_sided_p(3.0, f64::INFINITY) - 0.002_699_8).abs() < 1e-6);
        assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
    }

    #[test]
    fn t_cdf_inverts_the_quantile() {
        for df in [1.0, 3.0, 7.5, 40.0] {
            for p in [0.01, 0.2, 0.5, 0.8, 0.999] {
                assert!(
                    (t_cdf(t_quantile(p, df), df) - p).abs() < 1e-7,
                    "df {df} p {p}"
                );
            }
        }
        assert!((t_two_sided_p(2.571, 5.0) - 0.05).abs() < 1e-3);
    }

    #[test]
    fn normal_functions() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((normal_quantile(0.001) + 3.090_232).abs() < 1e-5);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-3.0) - 0.001_349_9).abs() < 1e-6);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn moments_quantiles_and_slope() {
        assert_eq!(mean(&[]), None);
        assert_eq!(sd(&[1.0]), None);
        assert!((sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138_090).abs() < 1e-6);
        assert_eq!(sorted_quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5));
        let values: Vec<f64> = (0..101).map(|i| f64::from(i * i % 101)).collect();
        let mut by_sort = values.clone();
        by_sort.sort_by(f64::total_cmp);
        for p in [0.0, 0.0024, 0.3, 0.5, 0.9976, 1.0] {
            let mut v = values.clone();
            assert_eq!(
                select_quantile(&mut v, p),
                sorted_quantile(&by_sort, p),
                "p {p}"
            );
        }
        assert_eq!(select_quantile(&mut [], 0.5), None);
        let xs = [0.0, 1.0, 2.0, 3.0];
        let (slope, se, df) = ols_slope(&xs, &[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert!((slope - 2.0).abs() < 1e-12 && se < 1e-9 && df == 2.0);
        assert_eq!(ols_slope(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
    }
}
