//! A distribution as the Datadog Agent keeps it: a DDSketch, whose bins are logarithmic so
//! that every quantile it answers is within a relative error of the true one, in memory that
//! grows with the values' range, not their number. DogStatsD's `|d` values go into one per
//! context and run; the run shows the sketch's count, sum, min, max, average and the
//! percentiles the backend computes from it.
//!
//! The mapping: a positive value `v` falls in bin `ceil(ln v / ln γ)` with
//! `γ = (1 + α) / (1 − α)`, and a bin `k` stands for `2γᵏ / (γ + 1)`, which is within `α` of
//! every value of the bin. `α` is the Agent's, 1/128 (0.78 %). Negative values are kept in
//! bins of their magnitude; values closer to 0 than `MIN_INDEXABLE` count as 0.

use std::collections::BTreeMap;

use serde::Serialize;

/// The relative accuracy of every quantile (the Agent's sketch: 1/128).
pub const RELATIVE_ACCURACY: f64 = 1.0 / 128.0;
/// Magnitudes below this are counted as zero (the Agent's smallest indexable value).
const MIN_INDEXABLE: f64 = 1e-9;
/// Bins a sketch keeps per sign before merging its lowest ones (the Agent's limit).
const BIN_LIMIT: usize = 4096;
/// The percentiles shown for a distribution (the backend's defaults).
pub const PERCENTILES: [f64; 5] = [0.5, 0.75, 0.9, 0.95, 0.99];

/// One context's values in one run. Serialised as its [`Summary`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sketch {
    positive: BTreeMap<i32, f64>,
    negative: BTreeMap<i32, f64>,
    zero: f64,
    count: f64,
    sum: f64,
    min: f64,
    max: f64,
}

/// What a distribution's row shows, and `--json`'s `sketch` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Values added (a value sent with a sample rate `@r` counts `1/r` times).
    pub count: f64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    pub avg: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Serialize for Sketch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.summary().serialize(s)
    }
}

fn gamma() -> f64 {
    (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY)
}

fn key(magnitude: f64) -> i32 {
    (magnitude.ln() / gamma().ln()).ceil() as i32
}

fn value_of(key: i32) -> f64 {
    let g = gamma();
    2.0 * g.powi(key) / (g + 1.0)
}

impl Sketch {
    /// Adds `value`, `weight` times (a finite value; weight > 0).
    pub fn add(&mut self, value: f64, weight: f64) {
        if self.count == 0.0 {
            (self.min, self.max) = (value, value);
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.count += weight;
        self.sum += value * weight;
        let m = value.abs();
        if m < MIN_INDEXABLE {
            self.zero += weight;
            return;
        }
        let bins = if value > 0.0 {
            &mut self.positive
        } else {
            &mut self.negative
        };
        *bins.entry(key(m)).or_default() += weight;
        if bins.len() > BIN_LIMIT {
            // The lowest magnitudes merge into one bin: their quantiles lose accuracy, the
            // rest keep it.
            let mut low = bins.iter().take(2).map(|(&k, &n)| (k, n));
            if let (Some((k0, n0)), Some((k1, _))) = (low.next(), low.next()) {
                bins.remove(&k0);
                *bins.entry(k1).or_default() += n0;
            }
        }
    }

    pub fn count(&self) -> f64 {
        self.count
    }

    /// The value at quantile `q` (0..=1): the bin holding rank `q·(count − 1)`, clamped to
    /// the sketch's min and max.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0.0 {
            return f64::NAN;
        }
        if q <= 0.0 {
            return self.min;
        }
        if q >= 1.0 {
            return self.max;
        }
        let rank = q * (self.count - 1.0);
        let mut seen = 0.0;
        // Most negative first: negative bins from the largest magnitude down.
        for (&k, &n) in self.negative.iter().rev() {
            seen += n;
            if seen > rank {
                return (-value_of(k)).clamp(self.min, self.max);
            }
        }
        seen += self.zero;
        if seen > rank {
            return 0.0f64.clamp(self.min, self.max);
        }
        for (&k, &n) in &self.positive {
            seen += n;
            if seen > rank {
                return value_of(k).clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> Summary {
        let p = |q| self.quantile(q);
        Summary {
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
            avg: self.sum / self.count,
            p50: p(PERCENTILES[0]),
            p75: p(PERCENTILES[1]),
            p90: p(PERCENTILES[2]),
            p95: p(PERCENTILES[3]),
            p99: p(PERCENTILES[4]),
        }
    }

    /// Each bin as (the value it stands for, how many values it holds), lowest first: what
    /// a forwarder re-sends (DogStatsD `value|d|@1/n`).
    pub fn bins(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let neg = self.negative.iter().rev().map(|(&k, &n)| (-value_of(k), n));
        let zero = (self.zero > 0.0).then_some((0.0, self.zero));
        let pos = self.positive.iter().map(|(&k, &n)| (value_of(k), n));
        neg.chain(zero).chain(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact quantile of sorted values at rank q·(n − 1), as the sketch ranks.
    fn exact(sorted: &[f64], q: f64) -> f64 {
        sorted[(q * (sorted.len() - 1) as f64).floor() as usize]
    }

    fn within(got: f64, want: f64) -> bool {
        (got - want).abs() <= RELATIVE_ACCURACY * want.abs() + 1e-12
    }

    #[test]
    fn quantiles_of_known_values_are_within_the_relative_accuracy() {
        // 1..=1000: p50 is 500, p99 is 990 (rank 0.99·999 = 989.01 → the 990th value).
        let mut s = Sketch::default();
        for v in 1..=1000 {
            s.add(f64::from(v), 1.0);
        }
        let m = s.summary();
        assert_eq!(
            (m.count, m.sum, m.min, m.max),
            (1000.0, 500_500.0, 1.0, 1000.0)
        );
        assert_eq!(m.avg, 500.5);
        for (got, want) in [
            (m.p50, 500.0),
            (m.p75, 750.0),
            (m.p90, 900.0),
            (m.p95, 950.0),
            (m.p99, 990.0),
        ] {
            assert!(within(got, want), "{got} for {want}");
        }
        // A spread over nine decades with negatives and zeros: every percentile within α of
        // the exact one.
        let mut values = Vec::new();
        let mut s = Sketch::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let v = match i % 10 {
                0 => 0.0,
                1 | 2 => -(10f64.powf(u * 6.0 - 3.0)),
                _ => 10f64.powf(u * 9.0 - 3.0),
            };
            values.push(v);
            s.add(v, 1.0);
        }
        values.sort_by(f64::total_cmp);
        for q in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999] {
            let (got, want) = (s.quantile(q), exact(&values, q));
            assert!(within(got, want), "q {q}: {got} for {want}");
        }
        assert!(s.positive.len() + s.negative.len() < 2500, "bins");
    }

    #[test]
    fn weights_count_as_repeated_values_and_bins_give_them_back() {
        let mut s = Sketch::default();
        s.add(10.0, 4.0);
        s.add(20.0, 1.0);
        let m = s.summary();
        assert_eq!((m.count, m.sum, m.min, m.max), (5.0, 60.0, 10.0, 20.0));
        // Ranked 10, 10, 10, 10, 20: p99's rank 0.99·4 = 3.96 is the fourth value.
        assert!(within(m.p50, 10.0) && within(m.p99, 10.0), "{m:?}");
        assert_eq!(s.quantile(1.0), 20.0);
        let bins: Vec<(f64, f64)> = s.bins().collect();
        assert_eq!(bins.len(), 2);
        assert!(within(bins[0].0, 10.0) && bins[0].1 == 4.0, "{bins:?}");
    }
}
