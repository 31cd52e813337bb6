//! The collector: the node's pods from one watcher, their targets, scheduled captures at
//! `interval` plus the target's jitter, monitoring rounds against the kubelet, and captures
//! dispatched within the global and per-rule limits, one per endpoint at a time. Collections
//! run pull's code on the blocking pool; everything else is one task.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::client::Connect;
use super::collector::{Collector, Done, Shared, log};
use super::config::K8sConfig;
use super::kubelet::{Kubelet, KubeletSettings};
use super::metrics::Metrics;
use super::stats::Summary;
use crate::error::Outcome;
use crate::pull::delta::DeltaCache;
use crate::pull::fetch::Cancel;

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
    pub spool: PathBuf,
    pub metrics_listen: Option<SocketAddr>,
    pub duration: Option<Duration>,
    pub json: bool,
}

/// One HTTP client per rule (its timeout and TLS), made on the blocking pool: a file of the
/// rule's TLS settings that cannot be read stops the start, not each capture.
async fn rule_clients(rules: &K8sConfig) -> anyhow::Result<Vec<Arc<reqwest::blocking::Client>>> {
    let flag = crate::error::UsageError::flag;
    let specs: Vec<_> = rules
        .rules
        .iter()
        .map(|r| (r.request_timeout, r.tls.clone()))
        .collect();
    tokio::task::spawn_blocking(move || {
        specs
            .iter()
            .enumerate()
            .map(|(i, (timeout, tls))| {
                crate::pull::fetch::shared_client(*timeout, tls)
                    .map(Arc::new)
                    .map_err(|e| flag("--confd", format!("kubernetes[{i}]: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await?
    .map_err(Into::into)
}

/// The captures file, the uploader and the collector, before anything is collected.
async fn prepare(
    opts: RunOptions,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<(Collector, mpsc::UnboundedReceiver<Done>)> {
    let flag = crate::error::UsageError::flag;
    let captures = match &opts.out {
        Some(dir) => Some(Mutex::new(crate::pull::open_records(
            dir,
            "captures.jsonl",
        )?)),
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
            Some(Mutex::new(made.map_err(|e| flag("--upload", e))?))
        }
        None => None,
    };
    let clients = rule_clients(&opts.rules).await?;
    let shared = Arc::new(Shared {
        cache: Mutex::new(DeltaCache::new((opts.rules.delta_cache_mb << 20) as usize)),
        uploader,
        captures,
        out: opts.out.clone(),
        hostname: opts.hostname.clone(),
        json: opts.json,
    });
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let per_rule = opts
        .rules
        .rules
        .iter()
        .map(|r| Arc::new(Semaphore::new(r.max_concurrency.max(1))))
        .collect();
    let c = Collector {
        global: Arc::new(Semaphore::new(opts.rules.max_concurrency.max(1))),
        per_rule,
        clients,
        opts,
        shared,
        metrics: Arc::clone(metrics),
        targets: BTreeMap::new(),
        by_pod: HashMap::new(),
        busy: HashMap::new(),
        done_tx,
        captures: 0,
        failed: 0,
    };
    Ok((c, done_rx))
}

/// Waits as a standby until this instance holds the node's lease: true then, false when
/// stopped first.
async fn stand_by(
    lease: &mut super::lease::NodeLease,
    json: bool,
    mut stop: Pin<&mut impl Future<Output = ()>>,
) -> bool {
    let mut announced = false;
    loop {
        match lease.try_hold().await {
            Ok(true) => return true,
            Ok(false) if !announced => {
                announced = true;
                log(
                    json,
                    "standby",
                    serde_json::json!({"lease": lease.name,
                    "why": "another agentprof holds this node's lease; taking over when it expires"}),
                );
            }
            Ok(false) => {}
            Err(e) => log(json, "lease_error", serde_json::json!({"error": e})),
        }
        tokio::select! {
            () = tokio::time::sleep(super::lease::RENEW) => {}
            () = crate::serve::stopped() => return false,
            () = stop.as_mut() => return false,
        }
    }
}

/// One event of the pod watcher. `relist` holds the pods seen during a (re)list, so the
/// ones deleted while the watch was down are found gone when it ends.
fn on_event(
    c: &mut Collector,
    ev: Result<Event<Pod>, watcher::Error>,
    relist: &mut Option<HashSet<String>>,
) {
    match ev {
        Ok(Event::Init) => *relist = Some(HashSet::new()),
        Ok(Event::InitApply(p)) => {
            if let Some(seen) = relist.as_mut() {
                seen.insert(pod_key(&p));
            }
            c.apply(&p, Instant::now());
        }
        Ok(Event::InitDone) => {
            if let Some(seen) = relist.take() {
                let gone: Vec<String> = c
                    .by_pod
                    .keys()
                    .filter(|k| !seen.contains(*k))
                    .cloned()
                    .collect();
                for k in gone {
                    if let Some((ns, name)) = k.split_once('/') {
                        c.remove_pod(ns, name);
                    }
                }
            }
            if !c.metrics.synced.swap(true, Ordering::Relaxed) {
                log(
                    c.opts.json,
                    "synced",
                    serde_json::json!({"targets": c.targets.len()}),
                );
            }
        }
        Ok(Event::Apply(p)) => c.apply(&p, Instant::now()),
        Ok(Event::Delete(p)) => {
            let m = &p.metadata;
            c.remove_pod(
                m.namespace.as_deref().unwrap_or(""),
                m.name.as_deref().unwrap_or(""),
            );
        }
        Err(e) => log(
            c.opts.json,
            "watch_error",
            serde_json::json!({"error": e.to_string()}),
        ),
    }
}

/// At stop: in-flight collections are told to stop (what they fetched is kept), and waited
/// for at most 10 s.
async fn drain(c: &mut Collector, done_rx: &mut mpsc::UnboundedReceiver<Done>) {
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
}

type Round = (Vec<String>, Result<Summary, String>, Instant);

/// The static targets, collected as `pull` collects them (one at a time, each on its
/// interval) on a thread of the blocking pool, with the collector's delta cache, uploader
/// and output, until the cancel is set. Only the lease holder runs them, so two agentprof
/// on one node do not collect them twice.
fn start_statics(c: &mut Collector) -> Option<(Cancel, tokio::task::JoinHandle<()>)> {
    if c.opts.statics.is_empty() {
        return None;
    }
    let targets = std::mem::take(&mut c.opts.statics);
    let shared = Arc::clone(&c.shared);
    let json = c.opts.json;
    let cancel = Cancel::new();
    let stop = cancel.clone();
    log(
        json,
        "static_targets",
        serde_json::json!({"targets": targets.iter().map(|t| crate::pull::fetch::redact(&t.url)).collect::<Vec<_>>()}),
    );
    let handle = tokio::task::spawn_blocking(move || {
        let opts = shared.pull_options(32);
        let on = crate::pull::Shared {
            cache: &shared.cache,
            uploader: shared.uploader.as_ref(),
            cancel: &stop,
        };
        let by_url: HashMap<String, crate::pull::Target> = targets
            .iter()
            .map(|t| (crate::pull::fetch::redact(&t.url), t.clone()))
            .collect();
        let ran = crate::pull::run_with(targets, &opts, &on, |col| {
            if let Some(t) = by_url.get(&col.target) {
                super::capture::write_static_capture(&shared, col, t);
            }
        });
        if let Err(e) = ran {
            log(
                json,
                "error",
                serde_json::json!({"error": format!("{e:#}")}),
            );
        }
    });
    Some((cancel, handle))
}

/// Runs until SIGTERM/SIGINT or `--duration`.
pub async fn run(opts: RunOptions) -> anyhow::Result<Outcome> {
    let cluster = super::client::connect(&opts.connect).await?;
    let metrics = Arc::new(Metrics::new(Arc::clone(&cluster.counts)));
    if let Some(addr) = opts.metrics_listen {
        serve_metrics(addr, &metrics, opts.json).await?;
    }
    let kubelet = Arc::new(kubelet(&opts, &cluster)?);
    let identity = std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-{}", opts.hostname, std::process::id()));
    let mut lease =
        super::lease::NodeLease::new(&cluster.client, &cluster.namespace, &opts.node, identity);
    log(
        opts.json,
        "started",
        serde_json::json!({"node": opts.node, "api_server": cluster.server, "source": cluster.source,
            "rules": opts.rules.rules.len(), "kubelet": kubelet.describe(),
            "lease": format!("{}/{}", cluster.namespace, lease.name)}),
    );
    let end = opts.duration.map(|d| Instant::now() + d);
    let (mut c, mut done_rx) = prepare(opts, &metrics).await?;
    let until_end = async {
        match end {
            Some(e) => tokio::time::sleep_until(e).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until_end);
    if !stand_by(&mut lease, c.opts.json, until_end.as_mut()).await {
        return Ok(finish(c, &cluster).await);
    }
    metrics.lease_held.set(1);
    log(
        c.opts.json,
        "leader",
        serde_json::json!({"lease": lease.name, "identity": lease.identity}),
    );
    let statics = start_statics(&mut c);
    let kept = lead(
        &mut c,
        &cluster,
        kubelet,
        &mut lease,
        &mut done_rx,
        until_end.as_mut(),
    )
    .await;
    if !kept {
        log(
            c.opts.json,
            "lease_lost",
            serde_json::json!({"lease": lease.name,
            "why": "another agentprof took this node's lease; stopping so no target is collected twice"}),
        );
    }
    if let Some((cancel, handle)) = statics {
        cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), handle).await;
    }
    drain(&mut c, &mut done_rx).await;
    lease.release().await;
    metrics.lease_held.set(0);
    let outcome = finish(c, &cluster).await;
    // A lost lease exits 1: the DaemonSet restarts this pod, which then waits as the standby.
    Ok(if kept { outcome } else { Outcome::RunFailed })
}

/// `--metrics-listen`: the collector's own metrics, served from now on.
async fn serve_metrics(addr: SocketAddr, metrics: &Arc<Metrics>, json: bool) -> anyhow::Result<()> {
    let bound = super::metrics::serve(addr, Arc::clone(metrics))
        .await
        .map_err(|e| crate::error::UsageError::flag("--metrics-listen", format!("{addr}: {e}")))?;
    log(
        json,
        "listening",
        serde_json::json!({"metrics": bound.to_string()}),
    );
    Ok(())
}

/// The kubelet of this node, as the rules and the cluster's credentials reach it.
fn kubelet(opts: &RunOptions, cluster: &super::client::Cluster) -> anyhow::Result<Kubelet> {
    Ok(Kubelet::new(
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
    .map_err(|e| crate::error::UsageError::flag("kubelet_url", e))?)
}

/// The lease holder's loop: pod events, finished collections, monitoring rounds on the
/// kubelet's stats (one at a time), the lease renewed, until a stop or the end. False when
/// another agentprof took the lease.
async fn lead(
    c: &mut Collector,
    cluster: &super::client::Cluster,
    kubelet: Arc<Kubelet>,
    lease: &mut super::lease::NodeLease,
    done_rx: &mut mpsc::UnboundedReceiver<Done>,
    mut until_end: Pin<&mut impl Future<Output = ()>>,
) -> bool {
    // Each round waits for the kubelet at most the shortest monitoring interval, and 10 s.
    let stats_timeout = c
        .opts
        .rules
        .rules
        .iter()
        .map(|r| r.monitor_interval)
        .min()
        .unwrap_or(Duration::from_secs(10))
        .min(Duration::from_secs(10));
    let api: kube::Api<Pod> = kube::Api::all(cluster.client.clone());
    let stream =
        watcher::watcher(api, super::discover::watcher_config(&c.opts.node)).default_backoff();
    tokio::pin!(stream);
    let mut renew = tokio::time::interval(super::lease::RENEW);
    renew.tick().await;
    let (stats_tx, mut stats_rx) = mpsc::channel::<Round>(1);
    let mut round_inflight = false;
    let mut relist = None;
    loop {
        let next = c.next_deadline(Instant::now());
        tokio::select! {
            ev = stream.next() => match ev {
                Some(ev) => on_event(c, ev, &mut relist),
                None => return true,
            },
            Some(d) = done_rx.recv() => c.finished(d),
            Some((due, result, at)) = stats_rx.recv() => {
                round_inflight = false;
                c.round(&due, result, at);
            }
            () = tokio::time::sleep_until(next) => {
                let now = Instant::now();
                c.scheduled(now);
                let due = if round_inflight { Vec::new() } else { c.due_monitors(now) };
                if !due.is_empty() {
                    round_inflight = true;
                    let (k, tx) = (Arc::clone(&kubelet), stats_tx.clone());
                    tokio::spawn(async move {
                        let r = k.summary(stats_timeout).await;
                        let _ = tx.send((due, r, Instant::now())).await;
                    });
                }
            }
            _ = renew.tick() => match lease.try_hold().await {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => log(c.opts.json, "lease_error", serde_json::json!({"error": e})),
            },
            () = crate::serve::stopped() => return true,
            () = &mut until_end => return true,
        }
    }
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
            "failed": c.failed, "skipped": c.metrics.skips(), "api_requests": api}),
    );
    Outcome::Success
}
