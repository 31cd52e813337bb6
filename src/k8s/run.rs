//! The collector: the node's pods from one watcher, their targets, scheduled captures at
//! `interval` plus the target's jitter, monitoring rounds against the kubelet, and captures
//! dispatched within the global and per-rule limits, one per endpoint at a time. Collections
//! run pull's code on the blocking pool; everything else is one task.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::Serialize;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::client::Connect;
use super::config::{K8sConfig, Rule};
use super::kubelet::{Kubelet, KubeletSettings};
use super::metrics::Metrics;
use super::schedule::{backoff, jitter};
use super::stats::{ContainerRef, Summary};
use super::targets::{Found, evaluate};
use super::trigger::{Fired, Level, Monitor};
use crate::cmd::Outcome;
use crate::pull::delta::DeltaCache;
use crate::pull::fetch::Cancel;
use crate::pull::{Collection, Job, PullOptions, lock};

/// How soon a scheduled capture looks again when its endpoint's previous task still runs.
const WAIT_FOR_OLD: Duration = Duration::from_millis(200);

/// Everything `agentprof k8s` runs with.
pub struct RunOptions {
    pub rules: K8sConfig,
    pub node: String,
    pub cluster_name: String,
    pub connect: Connect,
    pub hostname: String,
    pub out: Option<PathBuf>,
    pub upload: Option<reqwest::Url>,
    pub spool: PathBuf,
    pub metrics_listen: Option<SocketAddr>,
    pub duration: Option<Duration>,
    pub json: bool,
}

/// Why a capture was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Scheduled,
    ResourceThreshold,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Cause::Scheduled => "scheduled",
            Cause::ResourceThreshold => "resource_threshold",
        }
    }
}

struct TargetState {
    found: Found,
    /// The next capture: `grid`, or sooner while waiting for the endpoint's old task.
    next_scheduled: Instant,
    /// The target's schedule: first capture at its jitter, then every interval.
    grid: Instant,
    next_monitor: Option<Instant>,
    monitor: Option<Monitor>,
    failures: u32,
    backoff_until: Option<Instant>,
    inflight: Option<Cancel>,
    seq: u64,
}

/// A finished collection, back from the blocking pool.
struct Done {
    id: String,
    endpoint: String,
    cause: Cause,
    ok: bool,
    cancelled: bool,
    seconds: f64,
    /// Why a cumulative profile had no delta, for the skip counts (`delta_cache_evicted`…).
    no_delta: Vec<crate::pull::delta::NoDelta>,
}

/// One line of `<out>/captures.jsonl` (docs/json.md).
#[derive(Serialize)]
struct CaptureLine<'a> {
    time: &'a str,
    target: &'a str,
    namespace: &'a str,
    pod: &'a str,
    container: &'a str,
    endpoint: &'a str,
    rule: usize,
    cause: Cause,
    trigger: Option<&'a Fired>,
    tags: &'a [String],
    /// Per profile type: files, sizes, the top function.
    profiles: Vec<CaptureProfile<'a>>,
    figures: &'a crate::pull::GoFigures,
    uploaded: Option<bool>,
    upload_error: Option<&'a str>,
    /// Milliseconds from the kubelet round that fired to the capture's start.
    trigger_latency_ms: Option<f64>,
}

#[derive(Serialize)]
struct CaptureProfile<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    ok: bool,
    error: Option<&'a str>,
    bytes: usize,
    delta: bool,
    no_delta: Option<crate::pull::delta::NoDelta>,
    files: &'a [PathBuf],
    top_function: Option<&'a str>,
}

/// Shared with the collections on the blocking pool.
struct Shared {
    cache: Mutex<DeltaCache>,
    uploader: Option<Mutex<crate::pull::upload::Uploader>>,
    captures: Option<Mutex<std::fs::File>>,
    out: Option<PathBuf>,
    hostname: String,
    json: bool,
}

struct Collector {
    opts: RunOptions,
    shared: Arc<Shared>,
    metrics: Arc<Metrics>,
    global: Arc<Semaphore>,
    per_rule: Vec<Arc<Semaphore>>,
    targets: BTreeMap<String, TargetState>,
    /// Pod (namespace/name) → the target ids it gave.
    by_pod: HashMap<String, Vec<String>>,
    /// Endpoints with a collection in flight, also of targets already removed.
    busy: HashMap<String, usize>,
    done_tx: mpsc::UnboundedSender<Done>,
    captures: u64,
    failed: u64,
}

fn log(json: bool, event: &str, fields: serde_json::Value) {
    if json {
        let mut v = fields;
        v["event"] = event.into();
        v["time"] = crate::pull::upload::rfc3339_nano(jiff::Timestamp::now()).into();
        println!("{v}");
    } else {
        let text = fields
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => format!("{k}={s}"),
                        other => format!("{k}={other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        eprintln!("agentprof k8s: {event} {text}");
    }
}

impl Collector {
    fn rule(&self, i: usize) -> &Rule {
        &self.opts.rules.rules[i]
    }

    /// A pod was added or changed: its targets now, the ones gone removed.
    fn apply(&mut self, pod: &Pod, now: Instant) {
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

    fn add(&mut self, found: Found, now: Instant) {
        let rule = self.rule(found.rule).clone();
        let monitor = (rule.normal.any() || rule.emergency.any()).then(|| Monitor::new(&rule));
        let first = now + jitter(&found.id, rule.interval);
        log(
            self.opts.json,
            "discovered",
            serde_json::json!({"target": found.id, "rule": found.rule,
                "pod": format!("{}/{}", found.facts.namespace, found.facts.pod_name),
                "container": found.container, "endpoint": found.endpoint, "ready": found.ready}),
        );
        self.metrics
            .discoveries
            .get_or_create(&vec![("event", "added".into())])
            .inc();
        self.targets.insert(
            found.id.clone(),
            TargetState {
                next_monitor: monitor.as_ref().map(|_| now + rule.monitor_interval),
                monitor,
                next_scheduled: first,
                grid: first,
                failures: 0,
                backoff_until: None,
                inflight: None,
                seq: 0,
                found,
            },
        );
    }

    /// A target gone: its collection cancelled, its baselines released at once.
    fn remove(&mut self, id: &str, why: &str) {
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

    fn remove_pod(&mut self, ns: &str, name: &str) {
        if let Some(ids) = self.by_pod.remove(&format!("{ns}/{name}")) {
            for id in ids {
                self.remove(&id, "deleted");
            }
        }
    }

    /// Starts a capture of `id` if every limit allows it now; else counts why not.
    fn dispatch(
        &mut self,
        id: &str,
        cause: Cause,
        fired: Option<Fired>,
        round_at: Option<Instant>,
    ) {
        let now = Instant::now();
        let Some(t) = self.targets.get(id) else {
            return;
        };
        let json = self.opts.json;
        let skip = |m: &Metrics, reason: &str| {
            m.skip(reason);
            log(
                json,
                "capture_skipped",
                serde_json::json!({"target": id, "cause": cause.as_str(), "reason": reason}),
            );
        };
        if !t.found.ready {
            return skip(&self.metrics, "not_ready");
        }
        if t.inflight.is_some() {
            return skip(&self.metrics, "busy");
        }
        // The endpoint's previous target (a deleted pod whose address came back, a changed
        // rule) is still collecting: a scheduled capture waits for it to end.
        if self.busy.contains_key(&t.found.endpoint) {
            if cause == Cause::Scheduled
                && let Some(t) = self.targets.get_mut(id)
            {
                t.next_scheduled = now + WAIT_FOR_OLD;
                log(
                    json,
                    "capture_waiting",
                    serde_json::json!({"target": id, "why": "the endpoint's previous task is still running"}),
                );
                return;
            }
            return skip(&self.metrics, "busy");
        }
        if t.backoff_until.is_some_and(|b| now < b) {
            return skip(&self.metrics, "backoff");
        }
        let Ok(g) = Arc::clone(&self.global).try_acquire_owned() else {
            return skip(&self.metrics, "concurrency");
        };
        let Ok(r) = Arc::clone(&self.per_rule[t.found.rule]).try_acquire_owned() else {
            return skip(&self.metrics, "concurrency");
        };
        let rule = self.rule(t.found.rule).clone();
        let Some(t) = self.targets.get_mut(id) else {
            return;
        };
        let (types, duration) = match (cause, fired.as_ref().map(|f| f.level)) {
            (Cause::Scheduled, _) => (rule.scheduled_types.clone(), rule.profile_duration),
            (_, Some(Level::Emergency)) => (rule.trigger_types.clone(), rule.emergency_duration),
            _ => (rule.trigger_types.clone(), rule.profile_duration),
        };
        let tagged = super::tags::capture_tags(&rule, &t.found.facts, fired.as_ref());
        for _ in 0..tagged.invalid {
            self.metrics.skip("invalid_tag");
        }
        let Ok(url) = reqwest::Url::parse(&t.found.endpoint) else {
            return;
        };
        let cancel = Cancel::new();
        t.inflight = Some(cancel.clone());
        t.seq += 1;
        *self.busy.entry(t.found.endpoint.clone()).or_default() += 1;
        let latency_ms = round_at.map(|at| at.elapsed().as_secs_f64() * 1000.0);
        let target = crate::pull::Target {
            url,
            types,
            profile_duration: duration,
            interval: rule.interval,
            http_timeout: rule.request_timeout,
            service: tagged.service.clone(),
            env: tagged.env.clone(),
            version: tagged.version.clone(),
            tags: tagged.tags.clone(),
            tls: rule.tls.clone(),
        };
        let f = t.found.clone();
        let dir = PathBuf::from(crate::pull::safe_name(&f.facts.namespace))
            .join(crate::pull::safe_name(&f.facts.pod_name))
            .join(crate::pull::safe_name(&f.container));
        let seq = t.seq;
        let shared = Arc::clone(&self.shared);
        let done = self.done_tx.clone();
        let id = id.to_string();
        let body_limit = rule.body_size_limit_mb;
        log(
            self.opts.json,
            "capture_started",
            serde_json::json!({"target": id, "cause": cause.as_str(),
                "trigger": fired, "trigger_latency_ms": latency_ms}),
        );
        tokio::task::spawn_blocking(move || {
            let _permits = (g, r);
            let t0 = std::time::Instant::now();
            // A blocking client lives and dies on the blocking pool (it runs a runtime of its
            // own); building one per capture costs far less than the capture.
            let client = match crate::pull::fetch::client(rule.request_timeout, &rule.tls) {
                Ok(c) => c,
                Err(e) => {
                    log(json, "error", serde_json::json!({"target": id, "error": e}));
                    let _ = done.send(Done {
                        id,
                        endpoint: f.endpoint.clone(),
                        cause,
                        ok: false,
                        cancelled: false,
                        seconds: 0.0,
                        no_delta: Vec::new(),
                    });
                    return;
                }
            };
            let pull_opts = PullOptions {
                out: shared.out.clone(),
                top: 1,
                upload: shared.uploader.as_ref().map(|_| {
                    reqwest::Url::parse("http://upload.invalid/").expect("a constant URL")
                }),
                body_size_limit_mb: body_limit,
                hostname: shared.hostname.clone(),
                ..Default::default()
            };
            let job = Job {
                target: &target,
                client: &client,
                seq,
                dir,
                cache_key: id.clone(),
                cancel: &cancel,
            };
            let c = crate::pull::collect(&job, &pull_opts, &shared.cache, shared.uploader.as_ref());
            let cancelled = cancel.cancelled();
            let ok = !c.profiles.is_empty() && c.profiles.iter().all(|p| p.ok);
            if !cancelled {
                write_capture(
                    &shared,
                    &c,
                    &f,
                    &id,
                    cause,
                    fired.as_ref(),
                    &tagged.tags,
                    latency_ms,
                );
            }
            let _ = done.send(Done {
                id,
                endpoint: f.endpoint.clone(),
                cause,
                ok,
                cancelled,
                seconds: t0.elapsed().as_secs_f64(),
                no_delta: c.profiles.iter().filter_map(|p| p.no_delta).collect(),
            });
        });
    }

    fn finished(&mut self, d: Done) {
        if let Some(n) = self.busy.get_mut(&d.endpoint) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(&d.endpoint);
            }
        }
        let status = if d.cancelled {
            "cancelled"
        } else if d.ok {
            "ok"
        } else {
            "error"
        };
        log(
            self.opts.json,
            "capture_done",
            serde_json::json!({"target": d.id, "cause": d.cause.as_str(), "status": status,
                "seconds": d.seconds}),
        );
        self.metrics
            .collections
            .get_or_create(&vec![
                ("cause", d.cause.as_str().into()),
                ("status", status.into()),
            ])
            .inc();
        self.metrics
            .collection_seconds
            .get_or_create(&vec![("cause", d.cause.as_str().into())])
            .inc_by(d.seconds);
        {
            let cache = lock(&self.shared.cache);
            self.metrics.delta_cache_bytes.set(cache.used() as i64);
            self.metrics.delta_cache_entries.set(cache.len() as i64);
        }
        for nd in &d.no_delta {
            use crate::pull::delta::NoDelta;
            match nd {
                NoDelta::DeltaCacheEvicted => self.metrics.skip("delta_cache_evicted"),
                NoDelta::DeltaCacheLimit => self.metrics.skip("delta_cache_limit"),
                NoDelta::ProcessRestarted => self.metrics.skip("process_restarted"),
                NoDelta::BaselineUnusable => self.metrics.skip("baseline_unusable"),
                NoDelta::FirstCollection => {}
            }
        }
        if d.ok {
            self.captures += 1;
        } else if !d.cancelled {
            self.failed += 1;
        }
        if let Some(t) = self.targets.get_mut(&d.id) {
            t.inflight = None;
            if d.ok {
                t.failures = 0;
                t.backoff_until = None;
            } else if !d.cancelled {
                t.failures += 1;
                let wait = backoff(t.failures);
                t.backoff_until = Some(Instant::now() + wait);
            }
        }
    }

    /// Scheduled captures that are due.
    fn scheduled(&mut self, now: Instant) {
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
            }
            self.dispatch(&id, Cause::Scheduled, None, None);
        }
    }

    /// The targets whose monitoring deadline has come, their deadlines moved on.
    fn due_monitors(&mut self, now: Instant) -> Vec<String> {
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
    fn round(&mut self, due: &[String], result: Result<Summary, String>, at: Instant) {
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
                serde_json::json!({"error": e}),
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

    fn next_deadline(&self, now: Instant) -> Instant {
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

#[allow(clippy::too_many_arguments)]
fn write_capture(
    shared: &Shared,
    c: &Collection,
    f: &Found,
    id: &str,
    cause: Cause,
    fired: Option<&Fired>,
    tags: &[String],
    latency_ms: Option<f64>,
) {
    let profiles: Vec<CaptureProfile<'_>> = c
        .profiles
        .iter()
        .map(|p| CaptureProfile {
            kind: &p.kind,
            ok: p.ok,
            error: p.error.as_deref(),
            bytes: p.bytes,
            delta: p.delta,
            no_delta: p.no_delta,
            files: &p.files,
            top_function: p
                .top
                .as_ref()
                .and_then(|t| t.rows.first())
                .map(|r| r.function.as_str()),
        })
        .collect();
    let line = CaptureLine {
        time: &c.start,
        target: id,
        namespace: &f.facts.namespace,
        pod: &f.facts.pod_name,
        container: &f.container,
        endpoint: &f.endpoint,
        rule: f.rule,
        cause,
        trigger: fired,
        tags,
        profiles,
        figures: &c.figures,
        uploaded: c.uploaded,
        upload_error: c.upload_error.as_deref(),
        trigger_latency_ms: latency_ms,
    };
    let Ok(text) = serde_json::to_string(&line) else {
        return;
    };
    if let Some(file) = &shared.captures {
        use std::io::Write;
        let mut file = lock(file);
        let _ = writeln!(file, "{text}");
    }
    if shared.json {
        println!("{{\"event\":\"capture\",\"capture\":{text}}}");
    } else {
        let kinds: Vec<String> = c
            .profiles
            .iter()
            .map(|p| {
                if p.ok {
                    format!("{}({}B)", p.kind, p.bytes)
                } else {
                    format!("{}(error: {})", p.kind, p.error.as_deref().unwrap_or("?"))
                }
            })
            .collect();
        eprintln!(
            "agentprof k8s: capture target={id} cause={} {}",
            cause.as_str(),
            kinds.join(" ")
        );
    }
}

/// Runs until SIGTERM/SIGINT or `--duration`.
pub async fn run(opts: RunOptions) -> anyhow::Result<Outcome> {
    let cluster = super::client::connect(&opts.connect).await?;
    let metrics = Arc::new(Metrics::new(Arc::clone(&cluster.counts)));
    if let Some(addr) = opts.metrics_listen {
        let bound = super::metrics::serve(addr, Arc::clone(&metrics))
            .await
            .map_err(|e| {
                crate::error::UsageError::flag("--metrics-listen", format!("{addr}: {e}"))
            })?;
        log(
            opts.json,
            "listening",
            serde_json::json!({"metrics": bound.to_string()}),
        );
    }
    let kubelet = Kubelet::new(
        KubeletSettings {
            url: opts.rules.kubelet_url.clone(),
            node_ip: std::env::var("NODE_IP").ok(),
            tls_verify: opts.rules.kubelet_tls_verify,
            client_ca: opts.rules.kubelet_client_ca.as_deref(),
            token_file: opts.rules.kubelet_token_file.as_deref(),
            token: cluster.token.clone(),
        },
        &cluster.client,
        &opts.node,
    )
    .map_err(|e| crate::error::UsageError::flag("kubelet_url", e))?;
    let captures = match &opts.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                crate::error::UsageError::flag("--out", format!("{}: {e}", dir.display()))
            })?;
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("captures.jsonl"))
                .map_err(|e| {
                    crate::error::UsageError::flag("--out", format!("{}: {e}", dir.display()))
                })?;
            Some(Mutex::new(f))
        }
        None => None,
    };
    // The uploader's blocking client is made (and later dropped) on the blocking pool.
    let uploader = match opts.upload.clone() {
        Some(u) => {
            let spool = opts.spool.clone();
            let made = tokio::task::spawn_blocking(move || {
                crate::pull::upload::Uploader::new(u, spool, 64 << 20, Duration::from_secs(30))
            })
            .await?;
            Some(Mutex::new(made.map_err(|e| {
                crate::error::UsageError::flag("--upload", e)
            })?))
        }
        None => None,
    };
    let shared = Arc::new(Shared {
        cache: Mutex::new(DeltaCache::new((opts.rules.delta_cache_mb << 20) as usize)),
        uploader,
        captures,
        out: opts.out.clone(),
        hostname: opts.hostname.clone(),
        json: opts.json,
    });
    let identity = std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-{}", opts.hostname, std::process::id()));
    let mut lease =
        super::lease::NodeLease::new(&cluster.client, &cluster.namespace, &opts.node, identity);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let per_rule = opts
        .rules
        .rules
        .iter()
        .map(|r| Arc::new(Semaphore::new(r.max_concurrency.max(1))))
        .collect();
    let shortest_monitor = opts
        .rules
        .rules
        .iter()
        .map(|r| r.monitor_interval)
        .min()
        .unwrap_or(Duration::from_secs(10));
    let stats_timeout = shortest_monitor.min(Duration::from_secs(10));
    log(
        opts.json,
        "started",
        serde_json::json!({"node": opts.node, "api_server": cluster.server, "source": cluster.source,
            "rules": opts.rules.rules.len(), "kubelet": kubelet.describe(), "lease": format!("{}/{}", cluster.namespace, lease.name)}),
    );
    let end = opts.duration.map(|d| Instant::now() + d);
    let mut c = Collector {
        global: Arc::new(Semaphore::new(opts.rules.max_concurrency.max(1))),
        per_rule,
        opts,
        shared,
        metrics: Arc::clone(&metrics),
        targets: BTreeMap::new(),
        by_pod: HashMap::new(),
        busy: HashMap::new(),
        done_tx,
        captures: 0,
        failed: 0,
    };
    let kubelet = Arc::new(kubelet);
    // Standby until this instance holds the node's lease.
    let until_end = async {
        match end {
            Some(e) => tokio::time::sleep_until(e).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until_end);
    let mut announced = false;
    loop {
        match lease.try_hold().await {
            Ok(true) => break,
            Ok(false) if !announced => {
                announced = true;
                log(
                    c.opts.json,
                    "standby",
                    serde_json::json!({"lease": lease.name,
                    "why": "another agentprof holds this node's lease; taking over when it expires"}),
                );
            }
            Ok(false) => {}
            Err(e) => log(c.opts.json, "lease_error", serde_json::json!({"error": e})),
        }
        tokio::select! {
            () = tokio::time::sleep(super::lease::RENEW) => {}
            () = crate::cmd::k8s::stopped() => return Ok(finish(c, &cluster).await),
            () = &mut until_end => return Ok(finish(c, &cluster).await),
        }
    }
    metrics.lease_held.set(1);
    log(
        c.opts.json,
        "leader",
        serde_json::json!({"lease": lease.name, "identity": lease.identity}),
    );
    let api: kube::Api<Pod> = kube::Api::all(cluster.client.clone());
    let stream =
        watcher::watcher(api, super::discover::watcher_config(&c.opts.node)).default_backoff();
    tokio::pin!(stream);
    let mut renew = tokio::time::interval(super::lease::RENEW);
    renew.tick().await;
    let (stats_tx, mut stats_rx) =
        mpsc::channel::<(Vec<String>, Result<Summary, String>, Instant)>(1);
    let mut round_inflight = false;
    // Pods seen during a (re)list, to find the ones deleted while the watch was down.
    let mut relist: Option<std::collections::HashSet<String>> = None;
    let mut lost = false;
    loop {
        let now = Instant::now();
        let next = c.next_deadline(now);
        tokio::select! {
            ev = stream.next() => match ev {
                Some(Ok(Event::Init)) => relist = Some(Default::default()),
                Some(Ok(Event::InitApply(p))) => {
                    if let Some(seen) = relist.as_mut() {
                        seen.insert(pod_key(&p));
                    }
                    c.apply(&p, Instant::now());
                }
                Some(Ok(Event::InitDone)) => {
                    if let Some(seen) = relist.take() {
                        let gone: Vec<String> = c.by_pod.keys().filter(|k| !seen.contains(*k)).cloned().collect();
                        for k in gone {
                            if let Some((ns, name)) = k.split_once('/') {
                                c.remove_pod(ns, name);
                            }
                        }
                    }
                    if !metrics.synced.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        log(c.opts.json, "synced", serde_json::json!({"targets": c.targets.len()}));
                    }
                }
                Some(Ok(Event::Apply(p))) => c.apply(&p, Instant::now()),
                Some(Ok(Event::Delete(p))) => {
                    let m = &p.metadata;
                    c.remove_pod(m.namespace.as_deref().unwrap_or(""), m.name.as_deref().unwrap_or(""));
                }
                Some(Err(e)) => log(c.opts.json, "watch_error", serde_json::json!({"error": e.to_string()})),
                None => break,
            },
            Some(d) = done_rx.recv() => c.finished(d),
            Some((due, result, at)) = stats_rx.recv() => {
                round_inflight = false;
                c.round(&due, result, at);
            }
            () = tokio::time::sleep_until(next) => {
                let now = Instant::now();
                c.scheduled(now);
                if !round_inflight {
                    let due = c.due_monitors(now);
                    if !due.is_empty() {
                        round_inflight = true;
                        let (k, tx) = (Arc::clone(&kubelet), stats_tx.clone());
                        tokio::spawn(async move {
                            let r = k.summary(stats_timeout).await;
                            let _ = tx.send((due, r, Instant::now())).await;
                        });
                    }
                }
            }
            _ = renew.tick() => {
                match lease.try_hold().await {
                    Ok(true) => {}
                    Ok(false) => { lost = true; break; }
                    Err(e) => log(c.opts.json, "lease_error", serde_json::json!({"error": e})),
                }
            }
            () = crate::cmd::k8s::stopped() => break,
            () = &mut until_end => break,
        }
    }
    if lost {
        log(
            c.opts.json,
            "lease_lost",
            serde_json::json!({"lease": lease.name,
            "why": "another agentprof took this node's lease; stopping so no target is collected twice"}),
        );
    }
    // Stop: in-flight collections are told to stop, and what they fetched is kept.
    for t in c.targets.values() {
        if let Some(x) = &t.inflight {
            x.cancel();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.busy.is_empty() {
        match tokio::time::timeout_at(deadline, done_rx.recv()).await {
            Ok(Some(d)) => c.finished(d),
            _ => break,
        }
    }
    lease.release().await;
    metrics.lease_held.set(0);
    let outcome = finish(c, &cluster).await;
    // A lost lease exits 1: the DaemonSet restarts this pod, which then waits as the standby.
    Ok(if lost { Outcome::RunFailed } else { outcome })
}

/// The summary, and the collector dropped on the blocking pool (the uploader's blocking
/// client may not be dropped inside the runtime).
async fn finish(c: Collector, cluster: &super::client::Cluster) -> Outcome {
    let outcome = summary(&c, cluster);
    let _ = tokio::task::spawn_blocking(move || drop(c)).await;
    outcome
}

fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

fn summary(c: &Collector, cluster: &super::client::Cluster) -> Outcome {
    let api: BTreeMap<&str, u64> = cluster.counts.snapshot().into_iter().collect();
    log(
        c.opts.json,
        "stopped",
        serde_json::json!({"targets": c.targets.len(), "captures": c.captures,
            "failed": c.failed, "api_requests": api}),
    );
    Outcome::Success
}
