//! Turns one run's submissions into emitted values with the Datadog Agent's check-sampler
//! rules, one flush per run:
//! - gauge: the last value of the run; count: the sum of the run's values;
//! - rate: the change between the last two submissions over the time between *their own*
//!   timestamps (the last one of an earlier run when this run submitted once); nothing on the
//!   first submission, for two at the same instant, or when the counter went back;
//! - monotonic_count: the sum of the increases between consecutive submissions, a decrease
//!   adding nothing (0 is still emitted); the first submission waits unless
//!   `flush_first_value`, which also takes a decrease as a reset from zero;
//! - histogram: the run's values as the configured aggregates and percentiles;
//! - historate: a histogram of the per-second rates between consecutive submissions; a flush
//!   that emitted starts over, so with one submission a run it emits every other run, as the
//!   Agent's does;
//! - set: the number of distinct values of the run, as a gauge.

/// The maps keyed by metric contexts hash with foldhash (randomly seeded per process): std's
/// SipHash was a large share of a cold `check disk` (figures: docs/details.md, "Measured
/// choices").
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use crate::config::HistogramConfig;

use super::sink::{Sink, Submission, SubmittedServiceCheck};
use super::{Event, Metric, MetricType, ServiceCheck, validate_tag};

/// A metric's identity: name, sorted tags and host.
type Context = (String, Vec<String>, String);

/// What one run emitted, ready for rendering and forwarding.
#[derive(Debug, Default)]
pub struct Flushed {
    pub metrics: Vec<Metric>,
    pub service_checks: Vec<ServiceCheck>,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    pub logs: Vec<super::sink::LogLine>,
    /// Values that will appear from the next run on (rates, monotonic counts, deltas).
    pub awaiting_previous: u32,
}

/// Aggregation state of one check instance across its runs.
#[derive(Debug)]
pub struct Aggregator {
    hostname: String,
    /// Instance tags then global tags, appended to everything the instance submits.
    extra_tags: Vec<String>,
    histogram: HistogramConfig,
    rates: HashMap<Context, RateState>,
    monotonic: HashMap<Context, MonotonicState>,
    historates: HashMap<Context, HistorateState>,
}

/// A rate's last two submissions: (value, timestamp).
#[derive(Debug, Default)]
struct RateState {
    previous: Option<(f64, f64)>,
    current: Option<(f64, f64)>,
}

impl RateState {
    fn add(&mut self, value: f64, ts: f64) {
        if self.current.is_some() {
            self.previous = self.current;
        }
        self.current = Some((value, ts));
    }

    /// The per-second change, if one can be computed; the current sample becomes the previous.
    fn flush(&mut self) -> Option<f64> {
        let (Some((v0, t0)), Some((v1, t1))) = (self.previous, self.current) else {
            return None;
        };
        self.previous = self.current.take();
        if t1 == t0 {
            return None;
        }
        Some((v1 - v0) / (t1 - t0)).filter(|r| *r >= 0.0)
    }
}

#[derive(Debug, Default)]
struct MonotonicState {
    previous: f64,
    current: f64,
    sampled_since_flush: bool,
    has_previous: bool,
    value: f64,
    flush_first_value: bool,
}

impl MonotonicState {
    fn add(&mut self, v: f64, flush_first_value: bool) {
        if self.sampled_since_flush {
            self.previous = self.current;
            self.has_previous = true;
        } else {
            self.sampled_since_flush = true;
        }
        self.current = v;
        self.flush_first_value = flush_first_value;
        let diff = self.current - self.previous;
        if (self.has_previous || flush_first_value) && diff >= 0.0 {
            self.value += diff;
        } else if flush_first_value {
            // A decrease with flush_first_value: the counter was reset and counts from zero.
            self.value = self.current;
        }
    }

    fn flush(&mut self) -> Option<f64> {
        if !self.sampled_since_flush || !(self.has_previous || self.flush_first_value) {
            return None;
        }
        let value = self.value;
        self.previous = self.current;
        self.current = 0.0;
        self.value = 0.0;
        self.has_previous = true;
        self.sampled_since_flush = false;
        self.flush_first_value = false;
        Some(value)
    }
}

#[derive(Debug, Default)]
struct HistorateState {
    previous: Option<(f64, f64)>,
    rates: Vec<f64>,
}

impl HistorateState {
    fn add(&mut self, value: f64, ts: f64) {
        if let Some((v0, t0)) = self.previous {
            let rate = (value - v0) / (ts - t0);
            // Two submissions at one instant have no rate (the Agent would histogram an Inf).
            if rate.is_finite() {
                self.rates.push(rate);
            }
        }
        self.previous = Some((value, ts));
    }

    /// The rates to histogram; after an emitting flush the next submission starts over.
    fn flush(&mut self) -> Option<Vec<f64>> {
        if self.rates.is_empty() {
            return None;
        }
        self.previous = None;
        Some(std::mem::take(&mut self.rates))
    }
}

/// One run's values by context; a map per type so a check submitting thousands of contexts
/// stays linear.
#[derive(Default)]
struct RunState {
    gauges: HashMap<Context, f64>,
    counts: HashMap<Context, (f64, MetricType)>,
    rates: HashMap<Context, f64>,
    histograms: HashMap<Context, Vec<f64>>,
    distributions: HashMap<Context, super::sketch::Sketch>,
    sets: HashMap<Context, HashSet<u64>>,
    /// Stateful contexts this run submitted to, flushed once at the end of the run.
    touched_rates: HashSet<Context>,
    touched_monotonic: HashSet<Context>,
    touched_historates: HashSet<Context>,
}

impl Aggregator {
    pub fn new(
        hostname: String,
        instance_tags: &[String],
        global_tags: &[String],
        histogram: HistogramConfig,
    ) -> Self {
        let mut extra_tags: Vec<String> = instance_tags.to_vec();
        extra_tags.extend(global_tags.iter().cloned());
        Aggregator {
            hostname,
            extra_tags,
            histogram,
            rates: HashMap::default(),
            monotonic: HashMap::default(),
            historates: HashMap::default(),
        }
    }

    /// A submission's tags, its own vector reused: the invalid ones dropped (with a warning),
    /// the instance's and global tags added, sorted and deduplicated.
    fn tags(&self, mut tags: Vec<String>, warnings: &mut Vec<String>, what: &str) -> Vec<String> {
        tags.retain(|t| match validate_tag(t) {
            Ok(()) => true,
            Err(why) => {
                warnings.push(format!("{what}: tag {t:?} dropped: {why}"));
                false
            }
        });
        tags.extend(self.extra_tags.iter().cloned());
        tags.sort_unstable();
        tags.dedup();
        tags
    }

    /// Flushes one run's submissions taken at `timestamp` (Unix seconds).
    pub fn flush(&mut self, sink: Sink, timestamp: f64, run: u32) -> Flushed {
        let mut out = Flushed {
            warnings: sink.warnings,
            logs: sink.logs,
            awaiting_previous: sink.awaiting_previous,
            ..Flushed::default()
        };
        if sink.dropped > 0 {
            out.warnings.push(format!(
                "{} metric submissions past the limit of {} a run were dropped",
                sink.dropped,
                super::sink::MAX_SUBMISSIONS
            ));
        }
        // Most submissions are gauges of distinct contexts: room for all of them at once.
        let mut state = RunState {
            gauges: HashMap::with_capacity_and_hasher(sink.metrics.len(), Default::default()),
            ..RunState::default()
        };
        for sub in sink.metrics {
            self.take(sub, timestamp, &mut state, &mut out);
        }
        self.finish_stateful(&mut state);
        let mut metrics = Vec::with_capacity(state.gauges.len());
        let mut emit = |ctx: Context, mtype, value: f64| {
            let (metric, tags, host) = ctx;
            metrics.push(Metric {
                metric,
                mtype,
                value,
                tags,
                host,
                timestamp,
                run,
                sketch: None,
            });
        };
        for (ctx, v) in state.gauges {
            emit(ctx, MetricType::Gauge, v);
        }
        for (ctx, (v, t)) in state.counts {
            emit(ctx, t, v);
        }
        // The Agent's check sampler sends a rate's per-second value as a gauge.
        for (ctx, v) in state.rates {
            emit(ctx, MetricType::Gauge, v);
        }
        for (ctx, values) in state.sets {
            emit(ctx, MetricType::Gauge, values.len() as f64);
        }
        for (ctx, values) in state.histograms {
            self.histogram_metrics(ctx, values, &mut emit);
        }
        // A distribution is emitted as its sketch (the Agent sends sketches, and the backend
        // computes the aggregates and percentiles from them); its value is the count.
        for ((metric, tags, host), sketch) in state.distributions {
            metrics.push(Metric {
                metric,
                mtype: MetricType::Distribution,
                value: sketch.count(),
                tags,
                host,
                timestamp,
                run,
                sketch: Some(Box::new(sketch)),
            });
        }
        out.metrics = metrics;
        out.metrics.sort_by(|a, b| {
            a.metric
                .cmp(&b.metric)
                .then_with(|| a.tags.cmp(&b.tags))
                .then_with(|| a.host.cmp(&b.host))
        });
        self.service_checks_and_events(sink.service_checks, sink.events, timestamp, run, &mut out);
        out
    }

    /// The run's values of the kinds that keep state between runs (rates, monotonic counts,
    /// historates), now that every submission is in.
    fn finish_stateful(&mut self, state: &mut RunState) {
        for ctx in std::mem::take(&mut state.touched_rates) {
            if let Some(r) = self.rates.get_mut(&ctx).and_then(RateState::flush) {
                state.rates.insert(ctx, r);
            }
        }
        for ctx in std::mem::take(&mut state.touched_monotonic) {
            if let Some(v) = self.monotonic.get_mut(&ctx).and_then(MonotonicState::flush) {
                add_count(&mut state.counts, ctx, v);
            }
        }
        for ctx in std::mem::take(&mut state.touched_historates) {
            if let Some(rates) = self
                .historates
                .get_mut(&ctx)
                .and_then(HistorateState::flush)
            {
                state.histograms.entry(ctx).or_default().extend(rates);
            }
        }
    }

    /// A histogram's aggregates and percentiles, as the Agent names and types them.
    fn histogram_metrics(
        &self,
        (name, tags, host): Context,
        mut values: Vec<f64>,
        emit: &mut impl FnMut(Context, MetricType, f64),
    ) {
        values.sort_by(f64::total_cmp);
        for agg in &self.histogram.aggregates {
            let (suffix, mtype, v) = match agg.as_str() {
                "max" => ("max", MetricType::Gauge, values[values.len() - 1]),
                "min" => ("min", MetricType::Gauge, values[0]),
                "median" => ("median", MetricType::Gauge, nearest_rank(&values, 0.5)),
                "avg" => (
                    "avg",
                    MetricType::Gauge,
                    values.iter().sum::<f64>() / values.len() as f64,
                ),
                "sum" => ("sum", MetricType::Gauge, values.iter().sum()),
                // The Agent sends `.count` as a rate over the check's flush interval of 1.
                "count" => ("count", MetricType::Rate, values.len() as f64),
                _ => continue,
            };
            emit(
                (format!("{name}.{suffix}"), tags.clone(), host.clone()),
                mtype,
                v,
            );
        }
        for p in &self.histogram.percentiles {
            let label = format!("{name}.{}percentile", (p * 100.0).round() as u32);
            emit(
                (label, tags.clone(), host.clone()),
                MetricType::Gauge,
                nearest_rank(&values, *p),
            );
        }
    }

    /// Service checks and events with the configured tags and host, the run's time and number.
    fn service_checks_and_events(
        &self,
        service_checks: Vec<SubmittedServiceCheck>,
        events: Vec<Event>,
        timestamp: f64,
        run: u32,
        out: &mut Flushed,
    ) {
        for sc in service_checks {
            let tags = self.tags(sc.tags, &mut out.warnings, &sc.name);
            out.service_checks.push(ServiceCheck {
                name: sc.name,
                status: sc.status,
                tags,
                message: sc.message,
                host: sc.hostname.unwrap_or_else(|| self.hostname.clone()),
                run,
            });
        }
        for mut ev in events {
            ev.tags.extend(self.extra_tags.iter().cloned());
            ev.tags.sort_unstable();
            ev.tags.dedup();
            if ev.host.is_empty() {
                ev.host = self.hostname.clone();
            }
            if ev.timestamp == 0.0 {
                ev.timestamp = timestamp;
            }
            ev.run = run;
            out.events.push(ev);
        }
    }

    fn take(&mut self, sub: Submission, ts: f64, state: &mut RunState, out: &mut Flushed) {
        if !sub.value.is_finite() {
            out.warnings.push(format!(
                "{}: value {} is not a finite number, dropped",
                sub.name, sub.value
            ));
            return;
        }
        let tags = self.tags(sub.tags, &mut out.warnings, &sub.name);
        let host = sub.hostname.unwrap_or_else(|| self.hostname.clone());
        let at = if sub.timestamp > 0.0 {
            sub.timestamp
        } else {
            ts
        };
        let ctx: Context = (sub.name, tags, host);
        match sub.mtype {
            MetricType::Gauge => {
                state.gauges.insert(ctx, sub.value);
            }
            MetricType::Count => add_count(&mut state.counts, ctx, sub.value),
            MetricType::Rate => {
                let st = self.rates.entry(ctx.clone()).or_default();
                if st.previous.is_none() && st.current.is_none() {
                    out.awaiting_previous += 1;
                }
                st.add(sub.value, at);
                state.touched_rates.insert(ctx);
            }
            MetricType::MonotonicCount => {
                let st = self.monotonic.entry(ctx.clone()).or_default();
                if !st.has_previous && !st.sampled_since_flush && !sub.flush_first_value {
                    out.awaiting_previous += 1;
                }
                st.add(sub.value, sub.flush_first_value);
                state.touched_monotonic.insert(ctx);
            }
            MetricType::Histogram => {
                state.histograms.entry(ctx).or_default().push(sub.value);
            }
            MetricType::Distribution => {
                let weight = if sub.weight > 0.0 { sub.weight } else { 1.0 };
                state
                    .distributions
                    .entry(ctx)
                    .or_default()
                    .add(sub.value, weight);
            }
            MetricType::Historate => {
                let st = self.historates.entry(ctx.clone()).or_default();
                if st.previous.is_none() {
                    out.awaiting_previous += 1;
                }
                st.add(sub.value, at);
                state.touched_historates.insert(ctx);
            }
            MetricType::Set => {
                state
                    .sets
                    .entry(ctx)
                    .or_default()
                    .insert(sub.value.to_bits());
            }
        }
    }
}

fn add_count(counts: &mut HashMap<Context, (f64, MetricType)>, ctx: Context, value: f64) {
    counts.entry(ctx).or_insert((0.0, MetricType::Count)).0 += value;
}

/// Nearest-rank percentile of sorted, non-empty `values`: the index the Agent picks,
/// `(p·n − 1) div 100` for p in percent.
fn nearest_rank(values: &[f64], p: f64) -> f64 {
    let rank = (p * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agg() -> Aggregator {
        Aggregator::new(
            "host1".into(),
            &["inst:1".to_string()],
            &["env:test".to_string()],
            HistogramConfig::default(),
        )
    }

    fn value(f: &Flushed, name: &str) -> Option<f64> {
        f.metrics.iter().find(|m| m.metric == name).map(|m| m.value)
    }

    /// A run's submissions of one metric, each at its own timestamp.
    fn run_of(mtype: MetricType, name: &str, at: &[(f64, f64)], ffv: bool) -> Sink {
        let mut s = Sink::default();
        for &(value, timestamp) in at {
            s.metrics.push(Submission {
                name: name.into(),
                mtype,
                value,
                tags: Vec::new(),
                hostname: None,
                flush_first_value: ffv,
                timestamp,
                weight: 1.0,
            });
        }
        s
    }

    #[test]
    fn rate_is_per_second_between_the_submissions_own_timestamps() {
        let mut a = agg();
        // A counter growing exactly 10/s, submitted 0.3 s into run 1 (a slow import) and 0.05 s
        // into run 2: the runs' start times are 1.25 s apart, the submissions 1 s.
        let f1 = a.flush(
            run_of(MetricType::Rate, "r", &[(100.0, 1000.3)], false),
            1000.0,
            1,
        );
        assert_eq!(value(&f1, "r"), None);
        assert_eq!(f1.awaiting_previous, 1);
        let f2 = a.flush(
            run_of(MetricType::Rate, "r", &[(110.0, 1001.3)], false),
            1001.25,
            2,
        );
        assert_eq!(value(&f2, "r"), Some(10.0));
        assert_eq!(
            f2.metrics[0].mtype,
            MetricType::Gauge,
            "sent as the Agent sends it"
        );
        // A counter that went back emits nothing rather than a negative rate.
        let f3 = a.flush(
            run_of(MetricType::Rate, "r", &[(10.0, 1002.3)], false),
            1002.0,
            3,
        );
        assert_eq!(value(&f3, "r"), None);
        // Two submissions in one run: the rate between them.
        let two = run_of(
            MetricType::Rate,
            "r",
            &[(20.0, 1003.0), (40.0, 1003.5)],
            false,
        );
        assert_eq!(value(&a.flush(two, 1003.0, 4), "r"), Some(40.0));
        // Two at the same instant: no rate.
        let same = run_of(
            MetricType::Rate,
            "r",
            &[(50.0, 1004.0), (60.0, 1004.0)],
            false,
        );
        assert_eq!(value(&a.flush(same, 1004.0, 5), "r"), None);
        // A run without the metric keeps the last sample for the next.
        a.flush(Sink::default(), 1005.0, 6);
        let f = a.flush(
            run_of(MetricType::Rate, "r", &[(80.0, 1006.0)], false),
            1006.0,
            7,
        );
        assert_eq!(value(&f, "r"), Some(10.0));
    }

    #[test]
    fn monotonic_count_follows_the_agents_rules() {
        let mut a = agg();
        let mut flush = |at: &[f64], ffv: bool, n: u32| {
            let pts: Vec<(f64, f64)> = at.iter().map(|v| (*v, n as f64)).collect();
            value(
                &a.flush(
                    run_of(MetricType::MonotonicCount, "m", &pts, ffv),
                    n as f64,
                    n,
                ),
                "m",
            )
        };
        // The Agent's own example: 2, 3, 6, 7 flush 5; then 10, 11 flush 4.
        assert_eq!(flush(&[2.0, 3.0, 6.0, 7.0], false, 1), Some(5.0));
        assert_eq!(flush(&[10.0, 11.0], false, 2), Some(4.0));
        // A decrease adds nothing, and 0 is still emitted; the next increase counts on.
        assert_eq!(flush(&[3.0], false, 3), Some(0.0));
        assert_eq!(flush(&[7.0], false, 4), Some(4.0));
        // No submission, no value.
        assert_eq!(flush(&[], false, 5), None);
    }

    #[test]
    fn monotonic_count_first_value_waits_unless_flush_first_value() {
        let mut a = agg();
        let f = a.flush(
            run_of(MetricType::MonotonicCount, "m", &[(10.0, 1.0)], false),
            1.0,
            1,
        );
        assert_eq!((value(&f, "m"), f.awaiting_previous), (None, 1));
        let mut b = agg();
        let f = b.flush(
            run_of(MetricType::MonotonicCount, "m", &[(10.0, 1.0)], true),
            1.0,
            1,
        );
        assert_eq!(value(&f, "m"), Some(10.0));
        // With flush_first_value a decrease is a reset from zero: the new value counts.
        let f = b.flush(
            run_of(MetricType::MonotonicCount, "m", &[(4.0, 2.0)], true),
            2.0,
            2,
        );
        assert_eq!(value(&f, "m"), Some(4.0));
    }

    #[test]
    fn historate_histograms_rates_between_submissions_and_starts_over_after_a_flush() {
        let mut a = agg();
        let mut emitted = Vec::new();
        // A 10/s counter, one submission a run, runs 1.2 s apart but submissions 1 s apart.
        for run in 1..=4u32 {
            let (v, ts) = (10.0 * run as f64, 1000.0 + run as f64);
            let sink = run_of(MetricType::Historate, "h", &[(v, ts)], false);
            let f = a.flush(sink, 1000.0 + 1.2 * run as f64, run);
            emitted.push((value(&f, "h.max"), value(&f, "h.count")));
        }
        assert_eq!(
            emitted,
            vec![
                (None, None),
                (Some(10.0), Some(1.0)),
                (None, None),
                (Some(10.0), Some(1.0))
            ]
        );
        // Several submissions in one run: the rates between them.
        let pts = [(0.0, 10.0), (5.0, 11.0), (25.0, 12.0)];
        let f = a.flush(run_of(MetricType::Historate, "g", &pts, false), 2.0, 5);
        assert_eq!(
            (value(&f, "g.avg"), value(&f, "g.max")),
            (Some(12.5), Some(20.0))
        );
    }

    #[test]
    fn gauges_keep_the_last_value_counts_sum_sets_count_distinct() {
        let mut a = agg();
        let mut s = run_of(MetricType::Gauge, "g", &[(1.0, 1.0), (3.0, 1.1)], false);
        s.metrics
            .extend(run_of(MetricType::Count, "c", &[(1.0, 1.0), (2.5, 1.1)], false).metrics);
        s.metrics.extend(
            run_of(
                MetricType::Set,
                "s",
                &[(7.0, 1.0), (7.0, 1.0), (8.0, 1.0)],
                false,
            )
            .metrics,
        );
        let f = a.flush(s, 1.0, 1);
        assert_eq!(value(&f, "g"), Some(3.0));
        assert_eq!(value(&f, "c"), Some(3.5));
        assert_eq!(value(&f, "s"), Some(2.0));
        // None of them carries over.
        assert!(a.flush(Sink::default(), 2.0, 2).metrics.is_empty());
    }

    #[test]
    fn histogram_flushes_aggregates_per_run() {
        let mut a = agg();
        let mut s = Sink::default();
        for v in 1..=100 {
            s.histogram("h", v as f64, &[]);
        }
        let f = a.flush(s, 1.0, 1);
        assert_eq!(value(&f, "h.max"), Some(100.0));
        assert_eq!(value(&f, "h.median"), Some(50.0));
        assert_eq!(value(&f, "h.avg"), Some(50.5));
        assert_eq!(value(&f, "h.count"), Some(100.0));
        let count = f.metrics.iter().find(|m| m.metric == "h.count").unwrap();
        assert_eq!(count.mtype, MetricType::Rate);
        assert_eq!(value(&f, "h.95percentile"), Some(95.0));
        // Nothing carries over to the next run.
        assert!(a.flush(Sink::default(), 2.0, 2).metrics.is_empty());
    }

    #[test]
    fn gauge_keeps_last_count_sums_and_tags_are_applied() {
        let mut a = agg();
        let mut s = Sink::default();
        s.gauge("g", 1.0, &["b:2".into(), "a:1".into()]);
        s.gauge("g", 2.0, &["a:1".into(), "b:2".into()]);
        s.count("c", 2.0, &[]);
        s.count("c", 3.0, &[]);
        s.gauge("bad", 1.0, &["x,y".into()]);
        let f = a.flush(s, 1.0, 1);
        let g = f.metrics.iter().find(|m| m.metric == "g").unwrap();
        assert_eq!(g.value, 2.0);
        assert_eq!(g.tags, vec!["a:1", "b:2", "env:test", "inst:1"]);
        assert_eq!(g.host, "host1");
        assert_eq!(value(&f, "c"), Some(5.0));
        assert!(f.warnings.iter().any(|w| w.contains("\"x,y\" dropped")));
    }

    #[test]
    fn service_checks_and_events_get_host_and_tags() {
        use crate::metrics::{Event, ServiceCheckStatus};
        let mut a = agg();
        let mut s = Sink::default();
        s.service_check(
            "disk.up",
            ServiceCheckStatus::Critical,
            &["x:1".into()],
            "full",
        );
        s.event(Event {
            title: "disk full".into(),
            tags: vec!["x:1".into()],
            ..Default::default()
        });
        let f = a.flush(s, 42.0, 3);
        let sc = &f.service_checks[0];
        assert_eq!((sc.status as u8, sc.host.as_str(), sc.run), (2, "host1", 3));
        assert_eq!(sc.tags, vec!["env:test", "inst:1", "x:1"]);
        let ev = &f.events[0];
        assert_eq!((ev.host.as_str(), ev.timestamp, ev.run), ("host1", 42.0, 3));
        assert_eq!(ev.tags, vec!["env:test", "inst:1", "x:1"]);
    }
}
