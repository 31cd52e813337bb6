//! Resource triggers of one target: each monitoring round's usage against the rule's
//! thresholds. Normal thresholds use a sliding window — a trigger fires once the violating
//! samples within the latest `trigger_window` reach `trigger_window / monitor_interval`;
//! dips age out and do not reset it, a round without data adds nothing (no synthetic
//! samples) and keeps the history. Emergency thresholds fire in the round that sees them. A
//! target that fired cannot fire again during `cooldown`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::config::{Rule, Thresholds};
use agentprof_k8s::Usage;

/// A container's limits from its pod spec: percentages need them, and are ignored without.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub cpu_millicores: Option<f64>,
    pub mem_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Normal,
    Emergency,
}

/// What fired, in the words the capture's tags carry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fired {
    pub level: Level,
    /// `cpu` or `memory`.
    pub metric: &'static str,
    pub value: f64,
    pub threshold: f64,
    /// `percent` (of the container's limit), `millicores` or `bytes`.
    pub unit: &'static str,
    /// Where the value came from.
    pub source: &'static str,
    /// The violating samples in the window when it fired, and how many fire it (1 and 1 for
    /// an emergency): a normal trigger fires the round the first reaches the second.
    pub samples: usize,
    pub needed: usize,
}

/// The first threshold `usage` crosses, in the order cpu %, memory %, cpu, memory.
fn crossed(usage: &Usage, limits: &Limits, t: &Thresholds, level: Level) -> Option<Fired> {
    let fired = |metric, value, threshold, unit| Fired {
        level,
        metric,
        value,
        threshold,
        unit,
        source: "kubelet_stats_summary",
        samples: 1,
        needed: 1,
    };
    if let (Some(th), Some(v), Some(l)) = (t.cpu_pct, usage.cpu_millicores, limits.cpu_millicores)
        && l > 0.0
        && v / l * 100.0 >= th
    {
        return Some(fired("cpu", v / l * 100.0, th, "percent"));
    }
    if let (Some(th), Some(v), Some(l)) = (t.mem_pct, usage.mem_bytes, limits.mem_bytes)
        && l > 0
        && v as f64 / l as f64 * 100.0 >= th
    {
        return Some(fired("memory", v as f64 / l as f64 * 100.0, th, "percent"));
    }
    if let (Some(th), Some(v)) = (t.cpu_millicores, usage.cpu_millicores)
        && v >= th
    {
        return Some(fired("cpu", v, th, "millicores"));
    }
    if let (Some(th), Some(v)) = (t.mem_bytes, usage.mem_bytes)
        && v >= th
    {
        return Some(fired("memory", v as f64, th as f64, "bytes"));
    }
    None
}

/// One target's monitoring state.
#[derive(Debug, Clone)]
pub struct Monitor {
    normal: Thresholds,
    emergency: Thresholds,
    window: Duration,
    needed: usize,
    cooldown: Duration,
    /// Rounds with data, oldest first: when, and what crossed (if anything).
    samples: VecDeque<(Instant, Option<Fired>)>,
    last_fired: Option<Instant>,
}

impl Monitor {
    pub fn new(rule: &Rule) -> Monitor {
        let needed = (rule.trigger_window.as_millis() / rule.monitor_interval.as_millis().max(1))
            .max(1) as usize;
        Monitor {
            normal: rule.normal,
            emergency: rule.emergency,
            window: rule.trigger_window,
            needed,
            cooldown: rule.cooldown,
            samples: VecDeque::with_capacity(needed + 1),
            last_fired: None,
        }
    }

    /// How many violating samples within the window fire a normal trigger.
    #[cfg(test)]
    pub fn needed(&self) -> usize {
        self.needed
    }

    pub fn in_cooldown(&self, now: Instant) -> bool {
        self.last_fired
            .is_some_and(|t| now.saturating_duration_since(t) < self.cooldown)
    }

    /// Whether `usage` crosses any threshold of this target (emergency or normal), whatever
    /// the window says: a round in cooldown that does is counted as a `cooldown` skip.
    pub fn crosses(&self, usage: &Usage, limits: &Limits) -> bool {
        crossed(usage, limits, &self.emergency, Level::Emergency).is_some()
            || crossed(usage, limits, &self.normal, Level::Normal).is_some()
    }

    /// One round: `usage` is `None` when the round had no data for the target (the kubelet
    /// did not answer, or did not list it). Returns what fired, if anything.
    pub fn observe(
        &mut self,
        now: Instant,
        usage: Option<&Usage>,
        limits: &Limits,
    ) -> Option<Fired> {
        while let Some((t, _)) = self.samples.front() {
            if now.saturating_duration_since(*t) >= self.window {
                self.samples.pop_front();
            } else {
                break;
            }
        }
        let usage = usage?;
        let emergency = crossed(usage, limits, &self.emergency, Level::Emergency);
        let normal = crossed(usage, limits, &self.normal, Level::Normal);
        self.samples.push_back((now, normal.clone()));
        if self.samples.len() > self.needed.max(1) * 4 + 16 {
            self.samples.pop_front();
        }
        if self.in_cooldown(now) {
            return None;
        }
        let fired = emergency.or_else(|| {
            let violating = self.samples.iter().filter(|(_, f)| f.is_some()).count();
            (violating >= self.needed)
                .then_some(normal)
                .flatten()
                .map(|f| Fired {
                    samples: violating,
                    needed: self.needed,
                    ..f
                })
        })?;
        self.last_fired = Some(now);
        self.samples.clear();
        Some(fired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::config::test_rule as rule;

    fn mem(b: u64) -> Usage {
        Usage {
            cpu_millicores: Some(1.0),
            mem_bytes: Some(b),
        }
    }

    const LIMITS: Limits = Limits {
        cpu_millicores: Some(500.0),
        mem_bytes: Some(1000),
    };

    #[test]
    fn a_normal_trigger_fires_at_exactly_the_required_count_and_dips_do_not_reset_it() {
        let r = rule(
            "    mem_usage_base_limit: 80\n    monitor_interval: 10s\n    trigger_window: 1m\n",
        );
        let mut m = Monitor::new(&r);
        assert_eq!(m.needed(), 6);
        let t0 = Instant::now();
        let at = |i: u64| t0 + Duration::from_secs(10 * i);
        for i in 0..5 {
            assert_eq!(
                m.observe(at(i), Some(&mem(850)), &LIMITS),
                None,
                "round {i}"
            );
        }
        // A dip, then a round the kubelet did not answer: no synthetic sample either way.
        assert_eq!(m.observe(at(5), Some(&mem(100)), &LIMITS), None);
        assert_eq!(m.observe(at(6), None, &LIMITS), None);
        // The dip ages out of the 60 s window; rounds 7..=12 are the 6 violating samples.
        for i in 7..12 {
            assert_eq!(
                m.observe(at(i), Some(&mem(900)), &LIMITS),
                None,
                "round {i}"
            );
        }
        let f = m
            .observe(at(12), Some(&mem(900)), &LIMITS)
            .expect("the 6th violating sample in the window");
        assert_eq!(
            (f.level, f.metric, f.unit),
            (Level::Normal, "memory", "percent")
        );
        assert_eq!((f.value, f.threshold), (90.0, 80.0));
        assert_eq!((f.samples, f.needed), (6, 6));
        // Cooldown (10m): no second trigger, however high.
        for i in 13..72 {
            assert_eq!(
                m.observe(at(i), Some(&mem(990)), &LIMITS),
                None,
                "round {i}"
            );
        }
        assert!(m.in_cooldown(at(71)));
        assert!(!m.in_cooldown(at(72)));

        // A 65 s window holds 7 rounds and needs 6: the violating samples before a dip still
        // count after it.
        let r = rule(
            "    mem_usage_base_limit: 80\n    monitor_interval: 10s\n    trigger_window: 65s\n",
        );
        let mut m = Monitor::new(&r);
        for i in 0..5 {
            assert_eq!(m.observe(at(i), Some(&mem(850)), &LIMITS), None);
        }
        assert_eq!(m.observe(at(5), Some(&mem(100)), &LIMITS), None);
        assert!(
            m.observe(at(6), Some(&mem(850)), &LIMITS).is_some(),
            "5 before the dip + 1"
        );
    }

    #[test]
    fn an_emergency_fires_in_the_round_that_sees_it() {
        let r = rule("    mem_usage_base_limit: 80\n    mem_emergency_base_limit: 95\n");
        let mut m = Monitor::new(&r);
        let t0 = Instant::now();
        assert_eq!(m.observe(t0, Some(&mem(500)), &LIMITS), None);
        let f = m
            .observe(t0 + Duration::from_secs(10), Some(&mem(960)), &LIMITS)
            .unwrap();
        assert_eq!((f.level, f.value), (Level::Emergency, 96.0));
    }

    #[test]
    fn percentages_need_a_limit_absolute_thresholds_do_not() {
        let r = rule(
            "    cpu_usage_base_limit: 50\n    cpu_emergency_millicores: 400\n    trigger_window: 10s\n",
        );
        let mut m = Monitor::new(&r);
        let t0 = Instant::now();
        let busy = Usage {
            cpu_millicores: Some(300.0),
            mem_bytes: None,
        };
        // No CPU limit in the pod spec: the percentage is ignored.
        assert_eq!(m.observe(t0, Some(&busy), &Limits::default()), None);
        let f = m
            .observe(t0 + Duration::from_secs(10), Some(&busy), &LIMITS)
            .unwrap();
        assert_eq!((f.metric, f.unit, f.value), ("cpu", "percent", 60.0));
        let mut m = Monitor::new(&r);
        let burning = Usage {
            cpu_millicores: Some(450.0),
            mem_bytes: None,
        };
        let f = m.observe(t0, Some(&burning), &Limits::default()).unwrap();
        assert_eq!(
            (f.level, f.unit, f.value, f.threshold),
            (Level::Emergency, "millicores", 450.0, 400.0)
        );
    }
}
