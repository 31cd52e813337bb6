//! Turns one run's submissions into emitted values, with state across runs: a rate is the
//! per-second change between two runs (the first run emits nothing, as in the Agent), a
//! monotonic_count is the increase between runs (a decrease is a reset and emits nothing), a
//! histogram is flushed per run as its configured aggregates.

use std::collections::HashMap;

use crate::config::HistogramConfig;

use super::sink::{Sink, Submission};
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
    rates: HashMap<Context, (f64, f64)>,
    monotonic: HashMap<Context, f64>,
}

/// One run's values by context; a map per type so a check submitting thousands of contexts
/// stays linear.
#[derive(Default)]
struct RunState {
    gauges: HashMap<Context, f64>,
    counts: HashMap<Context, (f64, MetricType)>,
    rates: HashMap<Context, f64>,
    histograms: HashMap<Context, Vec<f64>>,
    sets: HashMap<Context, std::collections::HashSet<u64>>,
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
            rates: HashMap::new(),
            monotonic: HashMap::new(),
        }
    }

    fn tags(&self, submitted: &[String], warnings: &mut Vec<String>, what: &str) -> Vec<String> {
        let mut tags: Vec<String> = Vec::with_capacity(submitted.len() + self.extra_tags.len());
        for t in submitted {
            match validate_tag(t) {
                Ok(()) => tags.push(t.clone()),
                Err(why) => warnings.push(format!("{what}: tag {t:?} dropped: {why}")),
            }
        }
        tags.extend(self.extra_tags.iter().cloned());
        tags.sort_unstable();
        tags.dedup();
        tags
    }

    /// Flushes one run's submissions taken at `timestamp` (Unix seconds).
    pub fn flush(&mut self, sink: Sink, timestamp: f64, run: u32) -> Flushed {
        let mut out = Flushed {
            warnings: sink.warnings,
            awaiting_previous: sink.awaiting_previous,
            ..Flushed::default()
        };
        let mut state = RunState::default();
        for sub in sink.metrics {
            self.take(sub, timestamp, &mut state, &mut out);
        }
        let emit = |out: &mut Flushed, (name, tags, host): Context, mtype, value: f64| {
            out.metrics.push(Metric {
                metric: name,
                mtype,
                value,
                tags,
                host,
                timestamp,
                run,
            });
        };
        for (ctx, v) in state.gauges {
            emit(&mut out, ctx, MetricType::Gauge, v);
        }
        for (ctx, (v, t)) in state.counts {
            emit(&mut out, ctx, t, v);
        }
        for (ctx, v) in state.rates {
            emit(&mut out, ctx, MetricType::Rate, v);
        }
        for (ctx, values) in state.sets {
            emit(&mut out, ctx, MetricType::Gauge, values.len() as f64);
        }
        for ((name, tags, host), mut values) in state.histograms {
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
                    &mut out,
                    (format!("{name}.{suffix}"), tags.clone(), host.clone()),
                    mtype,
                    v,
                );
            }
            for p in &self.histogram.percentiles {
                let label = format!("{name}.{}percentile", (p * 100.0).round() as u32);
                emit(
                    &mut out,
                    (label, tags.clone(), host.clone()),
                    MetricType::Gauge,
                    nearest_rank(&values, *p),
                );
            }
        }
        out.metrics.sort_by(|a, b| {
            a.metric
                .cmp(&b.metric)
                .then_with(|| a.tags.cmp(&b.tags))
                .then_with(|| a.host.cmp(&b.host))
        });
        let extra = self.extra_tags.clone();
        for sc in sink.service_checks {
            let tags = self.tags(&sc.tags, &mut out.warnings, &sc.name);
            out.service_checks.push(ServiceCheck {
                name: sc.name,
                status: sc.status,
                tags,
                message: sc.message,
                host: sc.hostname.unwrap_or_else(|| self.hostname.clone()),
                run,
            });
        }
        for mut ev in sink.events {
            ev.tags.extend(extra.iter().cloned());
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
        out
    }

    fn take(&mut self, sub: Submission, ts: f64, state: &mut RunState, out: &mut Flushed) {
        if !sub.value.is_finite() {
            out.warnings.push(format!(
                "{}: value {} is not a finite number, dropped",
                sub.name, sub.value
            ));
            return;
        }
        let tags = self.tags(&sub.tags, &mut out.warnings, &sub.name);
        let host = sub.hostname.unwrap_or_else(|| self.hostname.clone());
        let ctx: Context = (sub.name, tags, host);
        match sub.mtype {
            MetricType::Gauge => {
                state.gauges.insert(ctx, sub.value);
            }
            MetricType::Count => add_count(&mut state.counts, ctx, sub.value),
            MetricType::Rate => match self.rates.insert(ctx.clone(), (sub.value, ts)) {
                None => out.awaiting_previous += 1,
                Some((prev, prev_ts)) => {
                    let dt = ts - prev_ts;
                    let rate = (sub.value - prev) / dt;
                    // Two submissions in one run, or a counter that went back: nothing to emit.
                    if dt > 0.0 && rate >= 0.0 {
                        state.rates.insert(ctx, rate);
                    }
                }
            },
            MetricType::MonotonicCount => {
                let prev = self.monotonic.insert(ctx.clone(), sub.value);
                match prev {
                    Some(prev) if sub.value >= prev => {
                        add_count(&mut state.counts, ctx, sub.value - prev);
                    }
                    Some(_) => {} // a reset: the counter started again, emit nothing
                    None if sub.flush_first_value => add_count(&mut state.counts, ctx, sub.value),
                    None => out.awaiting_previous += 1,
                }
            }
            MetricType::Histogram | MetricType::Historate => {
                state.histograms.entry(ctx).or_default().push(sub.value);
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

    #[test]
    fn rate_needs_two_runs_and_is_per_second() {
        let mut a = agg();
        let mut s = Sink::default();
        s.rate("r", 100.0, &[]);
        let f1 = a.flush(s, 1000.0, 1);
        assert_eq!(value(&f1, "r"), None);
        assert_eq!(f1.awaiting_previous, 1);
        let mut s = Sink::default();
        s.rate("r", 150.0, &[]);
        let f2 = a.flush(s, 1002.0, 2);
        assert_eq!(value(&f2, "r"), Some(25.0));
        assert_eq!(f2.metrics[0].mtype, MetricType::Rate);
        // A counter that went back emits nothing rather than a negative rate.
        let mut s = Sink::default();
        s.rate("r", 10.0, &[]);
        assert_eq!(value(&a.flush(s, 1003.0, 3), "r"), None);
    }

    #[test]
    fn monotonic_count_is_the_increase_and_a_decrease_is_a_reset() {
        let mut a = agg();
        let run = |a: &mut Aggregator, v: f64, n: u32| {
            let mut s = Sink::default();
            s.monotonic_count("m", v, &[]);
            value(&a.flush(s, n as f64, n), "m")
        };
        assert_eq!(run(&mut a, 10.0, 1), None);
        assert_eq!(run(&mut a, 15.0, 2), Some(5.0));
        assert_eq!(run(&mut a, 3.0, 3), None);
        assert_eq!(run(&mut a, 7.0, 4), Some(4.0));
    }

    #[test]
    fn monotonic_count_within_one_run_adds_increases() {
        let mut a = agg();
        let mut s = Sink::default();
        s.monotonic_count("m", 1.0, &[]);
        a.flush(s, 1.0, 1);
        let mut s = Sink::default();
        s.monotonic_count("m", 4.0, &[]);
        s.monotonic_count("m", 6.0, &[]);
        let f = a.flush(s, 2.0, 2);
        assert_eq!(value(&f, "m"), Some(5.0));
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
