//! Small numeric kit: sample moments, Student's t and the normal distribution (CDF and
//! quantile), and least-squares slope. Self-contained (no statistics crate): the t CDF is the
//! regularized incomplete beta function (continued fraction), inverted by bisection, so
//! quantiles are exact to ~1e-10 for any degrees of freedom, not just a table's.

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

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Regularized incomplete beta function I_x(a, b).
pub(crate) fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Above this many degrees of freedom the t distribution is taken as the normal.
const T_AS_NORMAL_DF: f64 = 1e7;

/// P(T ≤ t) for Student's t with `df` degrees of freedom (df = ∞ allowed).
pub(crate) fn t_cdf(t: f64, df: f64) -> f64 {
    if df.is_infinite() || df > T_AS_NORMAL_DF {
        return normal_cdf(t);
    }
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The p-quantile of Student's t with `df` degrees of freedom (df = ∞ allowed).
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "t quantile of p = {p}");
    assert!(df > 0.0, "t quantile with df = {df}");
    if df.is_infinite() || df > T_AS_NORMAL_DF {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    // Closed forms for 1 and 2 degrees of freedom.
    if df == 1.0 {
        return (std::f64::consts::PI * (p - 0.5)).tan();
    }
    if df == 2.0 {
        return (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
    }
    t_quantile_newton(p, df).unwrap_or_else(|| t_quantile_bisect(p, df))
}

/// Newton's method on the CDF from the Cornish-Fisher start (a few steps for df ≥ 3; the CDF
/// is concave above 0, so steps from below approach the root from below).
fn t_quantile_newton(p: f64, df: f64) -> Option<f64> {
    let z = normal_quantile(p);
    let (z3, z5) = (z.powi(3), z.powi(5));
    let mut t = z + (z3 + z) / (4.0 * df) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df);
    let ln_norm =
        ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0) - 0.5 * (df * std::f64::consts::PI).ln();
    for _ in 0..50 {
        let pdf = (ln_norm - (df + 1.0) / 2.0 * (t * t / df).ln_1p()).exp();
        let step = (t_cdf(t, df) - p) / pdf;
        if !step.is_finite() {
            return None;
        }
        t -= step;
        if step.abs() <= 1e-12 * t.abs().max(1.0) {
            return Some(t);
        }
    }
    None
}

/// Bisection on x = df / (df + t²): the upper tail area 2(1 − p) = I_x(df/2, 1/2) rises with x.
fn t_quantile_bisect(p: f64, df: f64) -> f64 {
    let target = 2.0 * (1.0 - p);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if inc_beta(df / 2.0, 0.5, mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-17 {
            break;
        }
    }
    let x = 0.5 * (lo + hi);
    (df * (1.0 - x) / x).sqrt()
}

/// Two-sided p-value of a t statistic.
pub(crate) fn t_two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * (1.0 - t_cdf(t.abs(), df))).clamp(0.0, 1.0)
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Standard normal CDF.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "normal quantile of p = {p}");
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
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
        // Newton and bisection agree, including far in the tails and at fractional df.
        for df in [3.0, 4.5, 9.0, 60.0, 1e5] {
            for p in [0.6, 0.975, 0.9999] {
                let (newton, bisect) = (t_quantile(p, df), t_quantile_bisect(p, df));
                assert!((newton - bisect).abs() < 1e-8 * bisect, "df {df} p {p}");
            }
        }
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
