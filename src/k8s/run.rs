//! The collector: the node's pods from one watcher, their targets, scheduled captures at
//! `interval` plus the target's jitter, monitoring rounds against the kubelet, and captures
//! dispatched within the global and per-rule limits, one per endpoint at a time. Collections
//! run pull's code on the blocking pool; everything else is one task.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;

use super::capture::{Done, Shared};
use super::collector::Collector;
pub use super::collector::RunOptions;
use super::config::K8sConfig;
use super::events::log;
use super::lifecycle::{
    K8sError, answered_once, identity, keep_out_dir, say_lease_lost, say_started, stopped_or_at,
};
use super::metrics::Metrics;
use crate::error::Outcome;
use crate::pull::delta::DeltaCache;
use crate::pull::fetch::Cancel;
use agentprof_k8s::Summary;
use agentprof_k8s::{Holding, Keeper};
use agentprof_k8s::{Kubelet, KubeletSettings};

/// One HTTP client per rule (its timeout and TLS), made on the blocking pool: a file of the
/// rule's TLS settings that cannot be read stops the start, not each capture.
async fn rule_clients(rules: &K8sConfig) -> Result<Vec<Arc<reqwest::blocking::Client>>, K8sError> {
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
) -> Result<(Collector, mpsc::UnboundedReceiver<Done>), K8sError> {
    let captures = match &opts.out {
        Some(dir) => Some(Mutex::new(
            crate::pull::open_records(dir, "captures.jsonl", crate::pull::CutLine::Keep)?.0,
        )),
        None => None,
    };
    // The uploaders' blocking clients are made (and later dropped) on the blocking pool.
    let pull_opts = crate::pull::PullOptions {
        upload: opts.upload.clone(),
        otlp: opts.otlp.clone(),
        spool: opts.spool.clone(),
        upload_timeout: Some(opts.upload_timeout),
        ..Default::default()
    };
    let made = tokio::task::spawn_blocking(move || crate::pull::uploaders(&pull_opts)).await??;
    let mut uploaders = Vec::with_capacity(made.len());
    for u in made {
        uploaders.push(crate::pull::upload::Background::start(u).map_err(K8sError::UploadThread)?);
    }
    let clients = rule_clients(&opts.rules).await?;
    let shared = Arc::new(Shared {
        cache: Mutex::new(DeltaCache::new((opts.rules.delta_cache_mb << 20) as usize)),
        uploaders,
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
        waiting: std::collections::VecDeque::new(),
        epoch: Instant::now(),
        remembered: Default::default(),
    };
    Ok((c, done_rx))
}

/// Waits as a standby until this instance holds the node's lease (taken by the lease's
/// own task): true then, false when stopped first.
async fn stand_by(
    lease: &mut watch::Receiver<Holding>,
    name: &str,
    json: bool,
    metrics: &Metrics,
    mut stop: Pin<&mut impl Future<Output = ()>>,
) -> bool {
    let mut announced: Option<Option<String>> = None;
    loop {
        let h = lease.borrow_and_update().clone();
        if h.held(Instant::now()) {
            return true;
        }
        if h.other {
            metrics.set_role(super::metrics::Role::Standby {
                lease: name.to_string(),
                holder: h.holder.clone(),
            });
        }
        if h.other && announced.as_ref() != Some(&h.holder) {
            announced = Some(h.holder.clone());
            log(
                json,
                "standby",
                serde_json::json!({"lease": name, "holder": h.holder,
                "why": "another agentprof holds this node's lease; taking over when it expires"}),
            );
        }
        tokio::select! {
            r = lease.changed() => if r.is_err() { return false },
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
            c.metrics.set_list_failing(None);
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
        Err(e) => {
            let why = agentprof_k8s::chain(&e);
            // A list that failed leaves the pod cache stale until one succeeds, even when
            // the server's answer was a 200 (a proxy's page, a cut body).
            if let watcher::Error::InitialListFailed(inner) = &e {
                let reason = match inner {
                    kube::Error::Api(s) if matches!(s.code, 401 | 403) => format!(
                        "unauthorized: the API server answered {} to list pods ({}; agentprof's credentials, or its RBAC, do not allow it)",
                        s.code, s.message
                    ),
                    _ => format!("the pod list fails: {why}"),
                };
                c.metrics.set_list_failing(Some(reason));
            }
            log(
                c.opts.json,
                "watch_error",
                serde_json::json!({"error": why}),
            );
        }
    }
}

/// The wait after the `n`-th pod list in a row that failed, beside kube's own 0.8 s:
/// 1, 2, 4, 8 s, then 15 s.
fn list_backoff(n: u32) -> Duration {
    super::schedule::backoff(n).min(Duration::from_secs(15))
}

/// How long in-flight collections (and the static targets' loop) are waited for at a stop
/// or when the lease is lost; what they fetched by then is kept.
const DRAIN: Duration = Duration::from_secs(5);

/// At stop: in-flight collections are told to stop (what they fetched is kept), and waited
/// for at most `DRAIN`.
async fn drain(c: &mut Collector, done_rx: &mut mpsc::UnboundedReceiver<Done>) {
    for t in c.targets.values() {
        if let Some(x) = &t.inflight {
            x.cancel();
        }
    }
    let deadline = Instant::now() + DRAIN;
    while !c.busy.is_empty() {
        match tokio::time::timeout_at(deadline, done_rx.recv()).await {
            Ok(Some(d)) => c.finished(d),
            _ => break,
        }
    }
}

type Round = (Result<Summary, agentprof_k8s::Error>, Instant);

/// The static targets, collected as `pull` collects them (one at a time, each on its
/// interval) on a thread of the blocking pool, with the collector's delta cache, uploader
/// and output, until the cancel is set. Only the lease holder runs them, so two agentprof
/// on one node do not collect them twice.
fn start_statics(c: &mut Collector) -> Option<(Cancel, tokio::task::JoinHandle<()>)> {
    if c.opts.statics.is_empty() {
        return None;
    }
    let targets = c.opts.statics.clone();
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
            uploader: (!shared.uploaders.is_empty())
                .then_some(&shared.uploaders as &dyn crate::pull::upload::Submit),
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

/// Why the lease holder's loop ended.
enum End {
    Stopped,
    /// The lease is no longer this instance's: taken by another, or not renewed in time.
    LeaseLost(&'static str),
}

/// Runs until SIGTERM/SIGINT or `--duration`. The lease is taken and renewed by a task of its
/// own; while this instance holds it, it collects; when it loses it (another instance took
/// it, or the API server could not be reached to renew it within its duration), it stops
/// collecting at once and waits as a standby again.
pub async fn run(opts: RunOptions) -> Result<Outcome, K8sError> {
    let cluster = agentprof_k8s::connect(&opts.connect).await?;
    let metrics = Arc::new(Metrics::new(Arc::clone(&cluster.api)));
    if let Some(addr) = opts.metrics_listen {
        serve_metrics(addr, &metrics, opts.json).await?;
    }
    let kubelet = Arc::new(kubelet(&opts, &cluster)?);
    let identity = identity(&opts.hostname);
    let lease = agentprof_k8s::NodeLease::new(
        &cluster.client,
        &cluster.namespace,
        &opts.node,
        identity.clone(),
    );
    let lease_name = lease.name.clone();
    say_started(&opts, &cluster, &kubelet, &lease_name);
    let end = opts.duration.map(|d| Instant::now() + d);
    keep_out_dir(&opts, &metrics);
    let (mut c, mut done_rx) = prepare(opts, &metrics).await?;
    let json = c.opts.json;
    let mut keeper = Keeper::start(lease, move |event, fields| log(json, event, fields));
    let stop = stopped_or_at(end);
    tokio::pin!(stop);
    while stand_by(
        &mut keeper.state,
        &lease_name,
        json,
        &metrics,
        stop.as_mut(),
    )
    .await
    {
        metrics.lease_held.set(1);
        metrics.set_role(super::metrics::Role::Leading);
        log(
            json,
            "leader",
            serde_json::json!({"lease": lease_name, "identity": identity}),
        );
        let statics = start_statics(&mut c);
        let ended = lead(
            &mut c,
            &cluster,
            Arc::clone(&kubelet),
            &mut keeper.state,
            &mut done_rx,
            stop.as_mut(),
        )
        .await;
        if let Some((cancel, handle)) = statics {
            cancel.cancel();
            let _ = tokio::time::timeout(DRAIN, handle).await;
        }
        drain(&mut c, &mut done_rx).await;
        metrics.lease_held.set(0);
        match ended {
            End::Stopped => break,
            End::LeaseLost(why) => {
                let holder = {
                    let h = keeper.state.borrow();
                    h.other.then(|| h.holder.clone()).flatten()
                };
                say_lease_lost(&metrics, &lease_name, &identity, holder, why, json);
                c.forget_targets();
            }
        }
    }
    keeper.stop().await;
    let outcome = finish(c, &cluster).await;
    answered_once(&cluster)?;
    Ok(outcome)
}

/// `--metrics-listen`: the collector's own metrics, served from now on.
async fn serve_metrics(
    addr: SocketAddr,
    metrics: &Arc<Metrics>,
    json: bool,
) -> Result<(), crate::error::UsageError> {
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
fn kubelet(opts: &RunOptions, cluster: &agentprof_k8s::Cluster) -> Result<Kubelet, K8sError> {
    Ok(Kubelet::new(
        KubeletSettings {
            url: opts.rules.kubelet_url.clone(),
            node_ip: std::env::var("NODE_IP").ok(),
            tls_verify: opts.rules.kubelet_tls_verify,
            client_ca: opts.rules.kubelet_client_ca.as_deref(),
            token_file: opts.rules.kubelet_token_file.as_deref(),
        },
        cluster,
        &opts.node,
    )?)
}

/// The lease holder's loop: pod events, finished collections, monitoring rounds on the
/// kubelet's stats (one read serves every target due in the round), until a stop or until
/// the lease is no longer this instance's. Nothing here waits on the API server: the watch
/// is a stream polled beside the rest, the lease is renewed by its own task.
async fn lead(
    c: &mut Collector,
    cluster: &agentprof_k8s::Cluster,
    kubelet: Arc<Kubelet>,
    lease: &mut watch::Receiver<Holding>,
    done_rx: &mut mpsc::UnboundedReceiver<Done>,
    mut stop: Pin<&mut impl Future<Output = ()>>,
) -> End {
    let stats_timeout = stats_timeout(&c.opts.rules);
    let api: kube::Api<Pod> = kube::Api::all(cluster.client.clone());
    let stream =
        watcher::watcher(api, agentprof_k8s::watcher_config(&c.opts.node)).default_backoff();
    tokio::pin!(stream);
    let (stats_tx, mut stats_rx) = mpsc::channel::<Round>(1);
    // The targets the round in flight serves (also those that came due while it ran).
    let mut round: Option<Vec<String>> = None;
    let mut relist = None;
    // Lists that failed in a row, and until when the watcher is left alone after one: kube's
    // watcher retries a failed list after 0.8 s every time, as its Init event resets its
    // backoff; a list is the heaviest request of all.
    let mut list_failures = 0u32;
    let mut hold: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let until = match held_until(&lease.borrow_and_update(), now) {
            Ok(until) => until,
            Err(lost) => return lost,
        };
        let next = c.next_deadline(now);
        tokio::select! {
            ev = stream.next(), if hold.is_none() => match ev {
                Some(ev) => {
                    match &ev {
                        Err(watcher::Error::InitialListFailed(_)) => {
                            list_failures += 1;
                            hold = Some(Instant::now() + list_backoff(list_failures));
                        }
                        Ok(Event::InitDone) => list_failures = 0,
                        _ => {}
                    }
                    on_event(c, ev, &mut relist);
                }
                None => return End::Stopped,
            },
            () = tokio::time::sleep_until(hold.unwrap_or(now)), if hold.is_some() => hold = None,
            Some(d) = done_rx.recv() => c.finished(d),
            Some((result, at)) = stats_rx.recv() => {
                let due = round.take().unwrap_or_default();
                c.round(&due, result, at);
            }
            () = tokio::time::sleep_until(next) => {
                let now = Instant::now();
                c.scheduled(now);
                let due = c.due_monitors(now);
                match round.as_mut() {
                    Some(waiting) => waiting.extend(due),
                    None if !due.is_empty() => {
                        round = Some(due);
                        let (k, tx) = (Arc::clone(&kubelet), stats_tx.clone());
                        tokio::spawn(async move {
                            let r = k.summary(stats_timeout).await;
                            let _ = tx.send((r, Instant::now())).await;
                        });
                    }
                    None => {}
                }
            }
            r = lease.changed() => if r.is_err() {
                return End::LeaseLost("the lease's task ended");
            },
            () = tokio::time::sleep_until(until) => {}
            () = stop.as_mut() => return End::Stopped,
        }
    }
}

/// How long a round waits for the kubelet at most: the shortest monitoring interval, and
/// 10 s.
fn stats_timeout(config: &K8sConfig) -> Duration {
    (config.rules.iter().map(|r| r.monitor_interval).min())
        .unwrap_or(Duration::from_secs(10))
        .min(Duration::from_secs(10))
}

/// Until when this instance holds the lease, or why it no longer does.
fn held_until(holding: &Holding, now: Instant) -> Result<Instant, End> {
    holding
        .until
        .filter(|u| now < *u)
        .ok_or(End::LeaseLost(if holding.other {
            "another agentprof took this node's lease"
        } else {
            "the lease could not be renewed within its duration (the API server did not answer)"
        }))
}

/// The summary, and the collector dropped on the blocking pool (the uploader's blocking
/// client may not be dropped inside the runtime).
async fn finish(c: Collector, cluster: &agentprof_k8s::Cluster) -> Outcome {
    let outcome = summary(&c, cluster);
    let shared = Arc::clone(&c.shared);
    let json = c.opts.json;
    let _ = tokio::task::spawn_blocking(move || {
        // The upload each sender is sending gets a moment, the same one for all; the rest is
        // on disk already.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        shared.uploaders.iter().for_each(crate::pull::upload::Background::ask_stop);
        for u in &shared.uploaders {
            let pending = u.stop_by(deadline);
            if pending > 0 {
                log(
                    json,
                    "uploads_pending",
                    serde_json::json!({"spooled": pending, "spool": u.spool.dir().display().to_string(),
                        "then": "sent by the next start"}),
                );
            }
        }
    })
    .await;
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

/// The `stopped` event: `api_requests` counts the requests that reached the API server (an
/// answer, or none within the deadline), as its audit log does; `api_errors` the attempts
/// that got no connection or lost it before an answer (`code="error"` in /metrics).
fn summary(c: &Collector, cluster: &agentprof_k8s::Cluster) -> Outcome {
    let api = cluster.api.by_verb_where(|o| o != "error");
    let errors = cluster.api.by_verb_where(|o| o == "error");
    log(
        c.opts.json,
        "stopped",
        serde_json::json!({"targets": c.targets.len(), "captures": c.captures,
            "failed": c.failed, "skipped": c.metrics.skips(), "api_requests": api,
            "api_errors": errors}),
    );
    Outcome::Success
}
