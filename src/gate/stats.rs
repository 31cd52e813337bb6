//! The statistics a performance gate needs to tell a slowdown from noise: medians, a one-sided
//! Mann-Whitney U test (is the new sample stochastically larger?), the Hodges-Lehmann ratio
//! with its exact distribution-free interval, and the Wilcoxon signed-rank test for paired
//! runs. Deterministic: the same timings always give the same verdict.

/// The median (mean of the middle two for an even count); None when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Standard normal upper tail, P(Z > z), via the complementary error function
/// (Abramowitz & Stegun 7.1.26; absolute error under 1.5e-7).
pub fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc_abs = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc_abs } else { 2.0 - erfc_abs };
    erfc / 2.0
}

/// One-sided Mann-Whitney U test that `new` tends to be larger than `base`: U of `new`, and
/// the p-value from the normal approximation with tie correction and continuity correction.
pub fn mann_whitney_greater(base: &[f64], new: &[f64]) -> Option<(f64, f64)> {
    let (n1, n2) = (base.len(), new.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // Ranks of the pooled sample, ties getting their average rank.
    let mut pooled: Vec<(f64, bool)> = base
        .iter()
        .map(|&x| (x, false))
        .chain(new.iter().map(|&x| (x, true)))
        .collect();
    if pooled.iter().any(|(x, _)| x.is_nan()) {
        return None;
    }
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pooled.len();
    let mut rank_sum_new = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        for p in &pooled[i..=j] {
            if p.1 {
                rank_sum_new += avg;
            }
        }
        i = j + 1;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u = rank_sum_new - n2f * (n2f + 1.0) / 2.0;
    let mean = n1f * n2f / 2.0;
    let nf = n as f64;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        // Every value equal: no evidence either way.
        return Some((u, 0.5));
    }
    let z = (u - mean - 0.5) / var.sqrt();
    Some((u, normal_sf(z)))
}

/// The smallest p-value [`mann_whitney_greater`] can give for samples of `n1` and `n2`
/// values: every new value above every base value, no ties. An alpha at or below it can never
/// be met, whatever the timings.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    let (a, b) = (n1 as f64, n2 as f64);
    let var = a * b / 12.0 * (a + b + 1.0);
    if var <= 0.0 {
        return 1.0;
    }
    normal_sf((a * b / 2.0 - 0.5) / var.sqrt())
}

/// Least-squares slope of `ys` against 0, 1, 2, …
pub fn slope(ys: &[f64]) -> Option<f64> {
    if ys.len() < 2 {
        return None;
    }
    let n = ys.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (y - my);
        sxx += dx * dx;
    }
    Some(sxy / sxx)
}

/// The exact null distribution of the Mann-Whitney U for samples of `n1` and `n2` values
/// without ties: how many of the C(n1+n2, n1) orderings give each U, 0..=n1·n2.
fn mann_whitney_null(n1: usize, n2: usize) -> Vec<f64> {
    // counts[j][u] for i base values and j new values, built up over i.
    let width = n1 * n2 + 1;
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut v = vec![0.0; width];
            v[0] = 1.0;
            v
        })
        .collect();
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        let mut first = vec![0.0; width];
        first[0] = 1.0;
        cur.push(first);
        for j in 1..=n2 {
            // The largest of the pooled values is a new one (U gains the i base values
            // below it) or a base one (U unchanged).
            let mut v = vec![0.0; width];
            for (u, slot) in v.iter_mut().enumerate() {
                let from_new = if u >= i { cur[j - 1][u - i] } else { 0.0 };
                *slot = from_new + prev[j][u];
            }
            cur.push(v);
        }
        prev = cur;
    }
    prev.pop().unwrap_or_default()
}

/// The exact null distribution of the Wilcoxon signed-rank W+ for `n` non-zero differences
/// without ties: how many of the 2^n sign patterns give each W+, 0..=n(n+1)/2.
fn signed_rank_null(n: usize) -> Vec<f64> {
    let top = n * (n + 1) / 2;
    let mut counts = vec![0.0; top + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for w in (rank..=top).rev() {
            counts[w] += counts[w - rank];
        }
    }
    counts
}

/// The largest c with P(X ≤ c) ≤ `tail` under `counts` (a null distribution); None when even
/// P(X ≤ 0) is above it (too few values for that level).
fn lower_critical(counts: &[f64], tail: f64) -> Option<usize> {
    let total: f64 = counts.iter().sum();
    let mut cum = 0.0;
    let mut found = None;
    for (c, n) in counts.iter().enumerate() {
        cum += n;
        if cum / total <= tail {
            found = Some(c);
        } else {
            break;
        }
    }
    found
}

/// How much larger `new` is than `base`, as a ratio: the Hodges-Lehmann estimate (the median
/// of every new/base ratio) and its distribution-free `level` interval from the exact
/// Mann-Whitney distribution. The interval is None when the samples are too small for that
/// level (it would be the whole line, not a number anyone can use).
pub fn ratio_two_sample(
    base: &[f64],
    new: &[f64],
    level: f64,
) -> Option<(f64, Option<(f64, f64)>)> {
    if base.is_empty() || new.is_empty() || base.iter().chain(new).any(|x| x.is_nan() || *x <= 0.0)
    {
        return None;
    }
    let mut d: Vec<f64> = base
        .iter()
        .flat_map(|b| new.iter().map(move |n| (n / b).ln()))
        .collect();
    d.sort_by(f64::total_cmp);
    let est = median(&d)?.exp();
    let ci = lower_critical(
        &mann_whitney_null(base.len(), new.len()),
        (1.0 - level) / 2.0,
    )
    .map(|c| (d[c].exp(), d[d.len() - 1 - c].exp()));
    Some((est, ci))
}

/// Paired ratios (B over A, one per round): the one-sided p-value that B is larger (exact
/// Wilcoxon signed-rank on their logarithms; ratios of exactly 1 dropped, ties in size by
/// average rank with the normal approximation), the Hodges-Lehmann estimate (the median of
/// the Walsh averages) and its `level` interval from the exact distribution.
pub struct Paired {
    pub p: f64,
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
}

pub fn paired_ratios(ratios: &[f64], level: f64) -> Option<Paired> {
    if ratios.is_empty() || ratios.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    let d: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let mut walsh = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let ratio = median(&walsh)?.exp();
    let ci = lower_critical(&signed_rank_null(d.len()), (1.0 - level) / 2.0)
        .map(|c| (walsh[c].exp(), walsh[walsh.len() - 1 - c].exp()));
    Some(Paired {
        p: signed_rank_greater(&d),
        ratio,
        ci,
    })
}

/// One-sided p-value that the differences `d` are centred above 0 (Wilcoxon signed-rank).
pub fn signed_rank_greater(d: &[f64]) -> f64 {
    let mut nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    if nz.is_empty() {
        return 0.5;
    }
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let n = nz.len();
    let (mut w, mut ties, mut i) = (0.0, false, 0);
    while i < n {
        let mut j = i;
        while j + 1 < n && nz[j + 1].abs() == nz[i].abs() {
            j += 1;
        }
        ties |= j > i;
        let rank = (i + j) as f64 / 2.0 + 1.0;
        w += nz[i..=j].iter().filter(|x| **x > 0.0).count() as f64 * rank;
        i = j + 1;
    }
    if !ties && n <= 60 {
        let counts = signed_rank_null(n);
        let total: f64 = counts.iter().sum();
        let at_least: f64 = counts[(w as usize).min(counts.len() - 1)..].iter().sum();
        return at_least / total;
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0;
    normal_sf((w - mean - 0.5) / var.sqrt())
}

/// The smallest p-value the signed-rank test gives for `n` rounds: every ratio above 1.
pub fn smallest_paired_p(n: usize) -> f64 {
    0.5f64.powi(n.min(1000) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn the_normal_tail_matches_tables() {
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.158_655),
            (1.644_854, 0.05),
            (2.326_348, 0.01),
            (-1.0, 0.841_345),
        ] {
            assert!((normal_sf(z) - p).abs() < 1e-6, "{z}: {}", normal_sf(z));
        }
    }

    #[test]
    fn the_smallest_p_value_is_the_tests_own_at_its_extreme() {
        // Five against five: 0.0061, so an alpha of 0.005 could never be met with five.
        let p = smallest_p(5, 5);
        assert!((p - 0.0061).abs() < 0.0001, "{p}");
        let base = [1.0, 2.0, 3.0, 4.0, 5.0];
        let new = [6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0];
        let (_, extreme) = mann_whitney_greater(&base, &new).unwrap();
        assert!((extreme - smallest_p(5, 8)).abs() < 1e-12);
        assert!(smallest_p(8, 8) < 0.001 && smallest_p(7, 7) > 0.001);
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        // scipy 1.x: mannwhitneyu(new, base, alternative="greater", method="asymptotic")
        // gives U = 22.0, p = 0.030051402969433157 (continuity correction on).
        let base = [1.0, 2.0, 3.0, 4.0, 5.0];
        let new = [3.5, 4.5, 5.5, 6.0, 7.0];
        let (u, p) = mann_whitney_greater(&base, &new).expect("test");
        assert_eq!(u, 22.0);
        assert!((p - 0.030_051_403).abs() < 1e-6, "{p}");
        // With ties: mannwhitneyu(x, y, alternative="less") = (16.5, 0.053696694302173095),
        // so y over x has U = 64 - 16.5 and the same p.
        let x = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 5.0, 8.0];
        let y = [2.0, 3.0, 5.0, 5.0, 7.0, 9.0, 9.0, 9.0];
        let (u, p) = mann_whitney_greater(&x, &y).expect("test");
        assert_eq!(u, 47.5);
        assert!((p - 0.053_696_694).abs() < 1e-6, "{p}");
        // The same sample on both sides: nothing significant.
        let (_, p) = mann_whitney_greater(&base, &base).expect("test");
        assert!(p > 0.4, "{p}");
        // Complete separation, 10 vs 10: tiny p.
        let b: Vec<f64> = (0..10).map(f64::from).collect();
        let n: Vec<f64> = (10..20).map(f64::from).collect();
        let (u, p) = mann_whitney_greater(&b, &n).expect("test");
        assert_eq!(u, 100.0);
        // scipy: 9.133589555477501e-05
        assert!((p - 9.133_589_6e-5).abs() < 1e-7, "{p}");
        // Ties everywhere.
        assert_eq!(
            mann_whitney_greater(&[1.0; 4], &[1.0; 4]).map(|x| x.1),
            Some(0.5)
        );
    }

    #[test]
    fn slopes() {
        assert_eq!(slope(&[1.0, 3.0, 5.0, 7.0]), Some(2.0));
        assert_eq!(slope(&[5.0]), None);
    }

    #[test]
    fn exact_distributions_match_their_tables() {
        // Mann-Whitney, 5 and 5: P(U ≤ 2) = 4/252, P(U ≤ 3) = 7/252 (the tables' 0.05
        // two-sided critical value is 2).
        let mw = mann_whitney_null(5, 5);
        assert_eq!(mw.iter().sum::<f64>(), 252.0);
        assert_eq!(&mw[..4], &[1.0, 1.0, 2.0, 3.0]);
        assert_eq!(lower_critical(&mw, 0.025), Some(2));
        assert_eq!(lower_critical(&mann_whitney_null(2, 2), 0.025), None);
        // Signed rank, 10 rounds: the 0.05 two-sided critical value is 8.
        let sr = signed_rank_null(10);
        assert_eq!(sr.iter().sum::<f64>(), 1024.0);
        assert_eq!(lower_critical(&sr, 0.025), Some(8));
    }

    #[test]
    fn ratio_intervals_are_numbers_a_person_can_use() {
        let base = [1.00, 1.02, 0.98, 1.01, 0.99];
        let new: Vec<f64> = base.iter().map(|x| x * 1.5).collect();
        let (r, ci) = ratio_two_sample(&base, &new, 0.95).expect("ratio");
        let (lo, hi) = ci.expect("an interval for 5 and 5");
        assert!(
            (r - 1.5).abs() < 0.01 && lo > 1.4 && hi < 1.6,
            "{r} {lo} {hi}"
        );
        // Two values a side: no 95% interval, rather than one from 0 to infinity.
        assert_eq!(
            ratio_two_sample(&[1.0, 1.1], &[1.2, 1.3], 0.95).map(|x| x.1),
            Some(None)
        );
        // Ten paired rounds all 10% slower, with noise: p = 1/1024, interval around 1.1.
        let rounds = [
            1.09, 1.11, 1.10, 1.12, 1.08, 1.102, 1.105, 1.095, 1.115, 1.085,
        ];
        let p = paired_ratios(&rounds, 0.95).expect("paired");
        assert!((p.p - 1.0 / 1024.0).abs() < 1e-12, "{}", p.p);
        let (lo, hi) = p.ci.expect("interval");
        assert!(
            (p.ratio - 1.1).abs() < 0.005 && lo > 1.08 && hi < 1.12,
            "{lo} {hi}"
        );
        // Half above, half below: nothing.
        let flat = [1.01, 0.99, 1.02, 0.98, 1.0, 1.03, 0.97, 1.01, 0.99, 1.0];
        assert!(paired_ratios(&flat, 0.95).expect("paired").p > 0.3);
        assert_eq!(smallest_paired_p(7), 1.0 / 128.0);
    }
}
