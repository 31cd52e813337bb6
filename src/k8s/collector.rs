//! The collector's state and decisions: targets added, suspended and removed (with their
//! baselines), scheduled and triggered captures dispatched within the global and per-rule
//! limits and one per endpoint, finished collections, monitoring rounds. `run` drives it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::capture::{Capture, Cause, Done, Shared};
use super::config::{K8sConfig, Rule};
use super::events::log;
use super::metrics::Metrics;
use super::remembered::{Memory, Remembered};
use super::schedule::{backoff, jitter};
use super::targets::{Found, evaluate};
use super::trigger::{Fired, Level, Monitor};
use crate::pull::fetch::Cancel;
use crate::sync::lock;
use agentprof_k8s::Connect;
use agentprof_k8s::{ContainerRef, Summary};

mod dispatch;

/// How soon a scheduled capture looks again when its endpoint's previous task still runs.
pub(super) const WAIT_FOR_OLD: Duration = Duration::from_millis(200);

pub(super) struct TargetState {
    pub(super) found: Found,
    /// The next capture: `grid`, or sooner while waiting for the endpoint's old task.
    pub(super) next_scheduled: Instant,
    /// The target's schedule: first capture at its jitter, then every interval.
    pub(super) grid: Instant,
    pub(super) next_monitor: Option<Instant>,
    pub(super) monitor: Option<Monitor>,
    pub(super) failures: u32,
    pub(super) backoff_until: Option<Instant>,
    pub(super) inflight: Option<Cancel>,
    pub(super) seq: u64,
    /// A scheduled capture that met a limit waits in `Collector::waiting` since then.
    pub(super) waiting_since: Option<Instant>,
}

/// Everything `agentprof k8s` runs with.
pub struct RunOptions {
    pub rules: K8sConfig,
    /// profile.yaml's `instances:`: collected by the lease holder as `pull` collects them,
    /// with the same cache, uploader and output, outside the Kubernetes concurrency budget.
    pub statics: Vec<crate::pull::Target>,
    pub node: String,
    pub cluster_name: String,
    pub connect: Connect,
    pub hostname: String,
    pub out: Option<PathBuf>,
    pub upload: Option<reqwest::Url>,
    /// `--otlp` (or profile.yaml's `otlp_url`): captures also as OTLP profiles, spooled in
    /// `spool/otlp`.
    pub otlp: Option<crate::pull::otlp::OtlpTarget>,
    pub spool: PathBuf,
    /// One upload request's longest time (`--upload-timeout`).
    pub upload_timeout: Duration,
    pub metrics_listen: Option<SocketAddr>,
    pub duration: Option<Duration>,
    pub json: bool,
}

pub(super) struct Collector {
    pub(super) opts: RunOptions,
    pub(super) shared: Arc<Shared>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) global: Arc<Semaphore>,
    pub(super) per_rule: Vec<Arc<Semaphore>>,
    /// Each rule's HTTP client (dropped on the blocking pool, with the collector).
    pub(super) clients: Vec<Arc<reqwest::blocking::Client>>,
    pub(super) targets: BTreeMap<String, TargetState>,
    /// Pod (namespace/name) → the target ids it gave.
    pub(super) by_pod: HashMap<String, Vec<String>>,
    /// Endpoints with a collection in flight, also of targets already removed.
    pub(super) busy: HashMap<String, usize>,
    pub(super) done_tx: mpsc::UnboundedSender<Done>,
    pub(super) captures: u64,
    pub(super) failed: u64,
    /// Scheduled captures that met a limit, first due first: each starts as soon as a
    /// collection ends and the limits allow it, so no target is starved by the others.
    pub(super) waiting: VecDeque<String>,
    /// Where every monitoring grid starts: targets of one interval are due together, so one
    /// kubelet read serves them all.
    pub(super) epoch: Instant,
    /// Targets dropped with the lease, kept until they are found again or their state has
    /// nothing left to say (see [`Remembered`]).
    pub(super) remembered: Memory,
}

/// What the limits say to a capture now.
enum Admit {
    Go(
        (
            tokio::sync::OwnedSemaphorePermit,
            tokio::sync::OwnedSemaphorePermit,
        ),
    ),
    /// A scheduled capture that waits for a slot.
    Wait,
    No,
}

/// The first deadline of `every`'s grid from `epoch` after `now`.
pub(super) fn grid_after(epoch: Instant, now: Instant, every: Duration) -> Instant {
    let every_ns = every.as_nanos().max(1);
    let passed = now.saturating_duration_since(epoch).as_nanos();
    let steps = passed / every_ns + 1;
    epoch + Duration::from_nanos(u64::try_from(steps * every_ns).unwrap_or(u64::MAX))
}

impl Collector {
    pub(super) fn rule(&self, i: usize) -> &Rule {
        &self.opts.rules.rules[i]
    }

    /// A pod was added or changed: its targets now, the ones gone removed.
    pub(super) fn apply(&mut self, pod: &Pod, now: Instant) {
        let report = evaluate(
            &self.opts.rules.rules,
            pod,
            &self.opts.cluster_name,
            &self.opts.node,
        );
        let key = format!("{}/{}", report.namespace, report.pod);
        for s in &report.skipped {
            self.metrics.skip(s.reason.as_str());
        }
        let new_ids: Vec<String> = report.targets.iter().map(|t| t.id.clone()).collect();
        let old = self.by_pod.remove(&key).unwrap_or_default();
        for id in old.iter().filter(|id| !new_ids.contains(id)) {
            self.remove(id, "changed");
        }
        for found in report.targets {
            let id = found.id.clone();
            match self.targets.get_mut(&id) {
                // The same UID, container and endpoint: a rule change is a new target.
                Some(t) if t.found.rule == found.rule => {
                    if t.found.ready != found.ready {
                        log(
                            self.opts.json,
                            if found.ready { "resumed" } else { "suspended" },
                            serde_json::json!({"target": id, "reason": "not_ready"}),
                        );
                    }
                    t.found = found;
                }
                Some(_) => {
                    self.remove(&id, "rule_changed");
                    self.add(found, now);
                }
                None => self.add(found, now),
            }
        }
        if !new_ids.is_empty() {
            self.by_pod.insert(key, new_ids);
        }
        self.metrics.targets.set(self.targets.len() as i64);
    }

    pub(super) fn add(&mut self, found: Found, now: Instant) {
        let rule = self.rule(found.rule).clone();
        let kept = self.remembered.take(&found.id, found.rule);
        // A target seen before keeps its schedule's phase (its next slot on the same grid),
        // so a re-taken lease captures nothing at once; a new one starts at its jitter.
        let first = match &kept {
            Some(r) if r.grid > now => r.grid,
            Some(r) => grid_after(r.grid, now, rule.interval),
            None => now + jitter(&found.id, rule.interval),
        };
        log(
            self.opts.json,
            "discovered",
            serde_json::json!({"target": found.id, "rule": found.rule,
                "pod": format!("{}/{}", found.facts.namespace, found.facts.pod_name),
                "container": found.container, "endpoint": found.endpoint, "ready": found.ready,
                "restored": kept.is_some()}),
        );
        self.metrics
            .discoveries
            .get_or_create(&vec![("event", "added".into())])
            .inc();
        let first_round = grid_after(self.epoch, now, rule.monitor_interval);
        let (monitor, failures, backoff_until, seq) = match kept {
            Some(r) => (r.monitor, r.failures, r.backoff_until, r.seq),
            None => (
                (rule.normal.any() || rule.emergency.any()).then(|| Monitor::new(&rule)),
                0,
                None,
                0,
            ),
        };
        self.targets.insert(
            found.id.clone(),
            TargetState {
                next_monitor: monitor.as_ref().map(|_| first_round),
                monitor,
                next_scheduled: first,
                grid: first,
                failures,
                backoff_until,
                inflight: None,
                seq,
                waiting_since: None,
                found,
            },
        );
    }

    /// A target gone: its collection cancelled, its baselines released at once.
    pub(super) fn remove(&mut self, id: &str, why: &str) {
        let Some(t) = self.targets.remove(id) else {
            return;
        };
        if let Some(c) = &t.inflight {
            c.cancel();
        }
        {
            let mut cache = lock(&self.shared.cache);
            for kind in super::config::TYPES {
                cache.remove(&format!("{id}|{kind}"));
            }
            self.metrics.delta_cache_bytes.set(cache.used() as i64);
            self.metrics.delta_cache_entries.set(cache.len() as i64);
        }
        log(
            self.opts.json,
            "removed",
            serde_json::json!({"target": id, "reason": why}),
        );
        self.metrics
            .discoveries
            .get_or_create(&vec![("event", "removed".into())])
            .inc();
        self.metrics.skip("removed");
        self.metrics.targets.set(self.targets.len() as i64);
    }

    /// Every target dropped (the lease is no longer this instance's): their collections
    /// cancelled, baselines released; their schedule and trigger state remembered, so that
    /// when the lease comes back and they are found again, no cooldown is bypassed and
    /// nothing is captured at once.
    pub(super) fn forget_targets(&mut self) {
        let now = Instant::now();
        for (id, t) in &self.targets {
            self.remembered.keep(
                id.clone(),
                Remembered {
                    rule: t.found.rule,
                    grid: t.grid,
                    monitor: t.monitor.clone(),
                    failures: t.failures,
                    backoff_until: t.backoff_until,
                    seq: t.seq,
                    at: now,
                },
            );
        }
        self.prune_remembered(now);
        let ids: Vec<String> = self.targets.keys().cloned().collect();
        for id in ids {
            self.remove(&id, "lease_lost");
        }
        self.by_pod.clear();
        self.waiting.clear();
        self.metrics
            .synced
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long a forgotten target's state is worth keeping: twice the longest interval,
    /// cooldown or trigger window of any rule, and at least an hour.
    fn prune_remembered(&mut self, now: Instant) {
        let horizon = self
            .opts
            .rules
            .rules
            .iter()
            .map(|r| r.interval.max(r.cooldown).max(r.trigger_window))
            .max()
            .unwrap_or_default()
            .saturating_mul(2)
            .max(Duration::from_secs(3600));
        self.remembered.prune(now, horizon);
    }

    pub(super) fn remove_pod(&mut self, ns: &str, name: &str) {
        if let Some(ids) = self.by_pod.remove(&format!("{ns}/{name}")) {
            for id in ids {
                self.remove(&id, "deleted");
            }
        }
    }

    /// Scheduled captures that are due.
    pub(super) fn scheduled(&mut self, now: Instant) {
        let due: Vec<String> = self
            .targets
            .iter()
            .filter(|(_, t)| t.next_scheduled <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(t) = self.targets.get_mut(&id) {
                let rule = &self.opts.rules.rules[t.found.rule];
                // The next deadline on the target's own grid (a wait for an old task does
                // not shift it).
                let grid = t.grid;
                let mut next = grid;
                while next <= now {
                    next += rule.interval;
                }
                t.grid = next;
                t.next_scheduled = next;
                if rule.scheduled_types.is_empty() {
                    continue;
                }
                // Still waiting for a slot since its last due time: that one is missed (the
                // capture that waits stands for this slot now).
                if t.waiting_since.is_some() {
                    t.waiting_since = Some(now);
                    self.metrics.scheduled_missed.inc();
                    log(
                        self.opts.json,
                        "capture_missed",
                        serde_json::json!({"target": id, "cause": "scheduled",
                            "why": "no concurrency slot within one interval of its due time"}),
                    );
                    continue;
                }
            }
            self.dispatch(&id, Cause::Scheduled, None, None);
        }
    }

    /// The targets whose monitoring deadline has come, their deadlines moved on.
    pub(super) fn due_monitors(&mut self, now: Instant) -> Vec<String> {
        let mut due = Vec::new();
        for (id, t) in self.targets.iter_mut() {
            if let Some(next) = t.next_monitor.as_mut()
                && *next <= now
            {
                let every = self.opts.rules.rules[t.found.rule].monitor_interval;
                while *next <= now {
                    *next += every;
                }
                due.push(id.clone());
            }
        }
        due
    }

    /// A monitoring round's answer for the targets that were due.
    pub(super) fn round(
        &mut self,
        due: &[String],
        result: Result<Summary, agentprof_k8s::Error>,
        at: Instant,
    ) {
        self.metrics
            .kubelet_rounds
            .get_or_create(&vec![(
                "status",
                if result.is_ok() { "ok" } else { "error" }.into(),
            )])
            .inc();
        if let Err(e) = &result {
            log(
                self.opts.json,
                "stats_error",
                serde_json::json!({"error": e.to_string()}),
            );
        }
        let mut fire = Vec::new();
        for id in due {
            let Some(t) = self.targets.get_mut(id) else {
                continue;
            };
            let usage = match &result {
                Ok(s) => {
                    let u = s.usage(ContainerRef {
                        namespace: &t.found.facts.namespace,
                        pod: &t.found.facts.pod_name,
                        uid: &t.found.facts.pod_uid,
                        container: &t.found.container,
                    });
                    if u.is_none() {
                        self.metrics.skip("stats_not_found");
                    }
                    u
                }
                Err(_) => {
                    self.metrics.skip("stats_error");
                    None
                }
            };
            let Some(m) = t.monitor.as_mut() else {
                continue;
            };
            let std_at = at.into_std();
            let cooling = m.in_cooldown(std_at);
            if let Some(f) = m.observe(std_at, usage.as_ref(), &t.found.limits) {
                fire.push((id.clone(), f));
            } else if cooling
                && usage
                    .as_ref()
                    .is_some_and(|u| m.crosses(u, &t.found.limits))
            {
                self.metrics.skip("cooldown");
            }
        }
        for (id, f) in fire {
            log(
                self.opts.json,
                "triggered",
                serde_json::json!({"target": id, "trigger": f}),
            );
            self.dispatch(&id, Cause::ResourceThreshold, Some(f), Some(at));
        }
    }

    pub(super) fn next_deadline(&self, now: Instant) -> Instant {
        let mut next = now + Duration::from_secs(1);
        for t in self.targets.values() {
            next = next.min(t.next_scheduled);
            if let Some(m) = t.next_monitor {
                next = next.min(m);
            }
        }
        next.max(now)
    }
}
