//! What `agentprof k8s` tells Prometheus (`--metrics-listen`): targets, discoveries, skips by
//! reason, collections by cause and status with their durations, the delta cache, kubelet
//! rounds, API requests by verb, resource and outcome, the server's Retry-After and its
//! short watches, scheduled captures late or missed; and `/healthz` and `/readyz` for the
//! DaemonSet's probes: ready while this instance leads, the pod cache has synced and the API
//! server answers; else `/readyz` names the first real cause.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use agentprof_k8s::ApiStats;

type Labels = Vec<(&'static str, String)>;

pub struct Metrics {
    registry: Registry,
    pub targets: Gauge,
    pub discoveries: Family<Labels, Counter>,
    pub skipped: Family<Labels, Counter>,
    pub collections: Family<Labels, Counter>,
    pub collection_seconds: Family<Labels, Counter<f64, std::sync::atomic::AtomicU64>>,
    pub delta_cache_bytes: Gauge,
    pub delta_cache_entries: Gauge,
    pub kubelet_rounds: Family<Labels, Counter>,
    pub lease_held: Gauge,
    api_requests: Family<Labels, Counter>,
    api_held: Counter,
    api_short_watches: Counter,
    pub scheduled_late: Counter,
    /// Files deleted to keep out_dir within retention_mb / retention_days.
    pub retention_deleted: Counter,
    pub scheduled_missed: Counter,
    api: Arc<ApiStats>,
    api_seen:
        std::sync::Mutex<std::collections::HashMap<(&'static str, &'static str, String), u64>>,
    held_seen: std::sync::atomic::AtomicU64,
    short_seen: std::sync::atomic::AtomicU64,
    pub synced: AtomicBool,
    /// Why the pod watcher's last (re)list failed (the reason `/readyz` gives), until one
    /// succeeds: an answer the HTTP
    /// layer counted as 200 may still not be a pod list (a proxy's page, a cut body).
    list_failing: std::sync::Mutex<Option<String>>,
    /// Whether this instance leads, stands by (and for whom), or has not heard yet.
    role: std::sync::Mutex<Role>,
    /// The skips by reason, for the summary at stop.
    skips: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

impl Metrics {
    // long: one registration per series with its help text, in the order /metrics lists them
    pub fn new(api: Arc<ApiStats>) -> Metrics {
        let mut registry = Registry::with_prefix("agentprof_k8s");
        let targets = Gauge::default();
        registry.register("targets", "Endpoints being collected", targets.clone());
        let discoveries = Family::<Labels, Counter>::default();
        registry.register(
            "discoveries",
            "Targets found (event=added) or gone (event=removed)",
            discoveries.clone(),
        );
        let skipped = Family::<Labels, Counter>::default();
        registry.register(
            "skipped",
            "Pods, containers or collections skipped, by reason",
            skipped.clone(),
        );
        let collections = Family::<Labels, Counter>::default();
        registry.register(
            "collections",
            "Collections by cause (scheduled, resource_threshold) and status (ok, error, cancelled)",
            collections.clone(),
        );
        let collection_seconds = Family::<Labels, Counter<f64, _>>::default();
        registry.register(
            "collection_seconds",
            "Seconds spent collecting, by cause",
            collection_seconds.clone(),
        );
        let delta_cache_bytes = Gauge::default();
        registry.register(
            "delta_cache_bytes",
            "Bytes the delta baselines take (compressed, with the per-entry overhead)",
            delta_cache_bytes.clone(),
        );
        let delta_cache_entries = Gauge::default();
        registry.register(
            "delta_cache_entries",
            "Delta baselines kept",
            delta_cache_entries.clone(),
        );
        let kubelet_rounds = Family::<Labels, Counter>::default();
        registry.register(
            "kubelet_rounds",
            "Kubelet /stats/summary queries by status",
            kubelet_rounds.clone(),
        );
        let lease_held = Gauge::default();
        registry.register(
            "lease_held",
            "1 while this instance holds the node's lease and collects",
            lease_held.clone(),
        );
        let api_requests = Family::<Labels, Counter>::default();
        registry.register(
            "api_requests",
            "Requests to the Kubernetes API server by verb, resource and code (an HTTP status, \
             error: no answer, timeout: none within the call's deadline)",
            api_requests.clone(),
        );
        let api_held = Counter::default();
        registry.register(
            "api_retry_after",
            "Answers of the API server (429, 503) with a Retry-After, honoured by holding the \
             next requests (at most 30 s)",
            api_held.clone(),
        );
        let api_short_watches = Counter::default();
        registry.register(
            "api_short_watches",
            "Watches the API server ended at once with no event (taken as errors: the watch \
             backs off)",
            api_short_watches.clone(),
        );
        let scheduled_late = Counter::default();
        registry.register(
            "scheduled_late",
            "Scheduled captures that waited for a concurrency slot before they started",
            scheduled_late.clone(),
        );
        let scheduled_missed = Counter::default();
        registry.register(
            "scheduled_missed",
            "Scheduled captures that did not start within one interval of their due time",
            scheduled_missed.clone(),
        );
        let retention_deleted = Counter::default();
        registry.register(
            "retention_deleted_files",
            "Files deleted to keep out_dir within retention_mb / retention_days",
            retention_deleted.clone(),
        );
        Metrics {
            registry,
            targets,
            discoveries,
            skipped,
            collections,
            collection_seconds,
            delta_cache_bytes,
            delta_cache_entries,
            kubelet_rounds,
            lease_held,
            api_requests,
            api_held,
            api_short_watches,
            scheduled_late,
            scheduled_missed,
            retention_deleted,
            api,
            api_seen: Default::default(),
            held_seen: Default::default(),
            short_seen: Default::default(),
            synced: AtomicBool::new(false),
            list_failing: Default::default(),
            role: Default::default(),
            skips: Default::default(),
        }
    }

    pub fn skip(&self, reason: &str) {
        self.skipped
            .get_or_create(&vec![("reason", reason.to_string())])
            .inc();
        *crate::sync::lock(&self.skips)
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// Skips so far by reason.
    pub fn skips(&self) -> std::collections::BTreeMap<String, u64> {
        crate::sync::lock(&self.skips).clone()
    }

    pub fn render(&self) -> String {
        // API counts live in the client's layer: bring the counters up to them.
        {
            let mut seen = crate::sync::lock(&self.api_seen);
            for (verb, resource, code, n) in self.api.snapshot() {
                let labels = vec![
                    ("verb", verb.to_string()),
                    ("resource", resource.to_string()),
                    ("code", code.clone()),
                ];
                let before = seen.insert((verb, resource, code), n).unwrap_or(0);
                self.api_requests
                    .get_or_create(&labels)
                    .inc_by(n.saturating_sub(before));
            }
        }
        let catch_up = |c: &Counter, now: u64, seen: &std::sync::atomic::AtomicU64| {
            c.inc_by(now.saturating_sub(seen.swap(now, Ordering::Relaxed)));
        };
        catch_up(
            &self.api_held,
            self.api.retry_afters.load(Ordering::Relaxed),
            &self.held_seen,
        );
        catch_up(
            &self.api_short_watches,
            self.api.short_watches.load(Ordering::Relaxed),
            &self.short_seen,
        );
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// None when ready; else the first real cause: standing by (and who holds the lease),
    /// the API server refusing agentprof's credentials (which request), unreachable (since
    /// when), the pod list failing, the pod cache not synced yet.
    pub fn not_ready(&self) -> Option<String> {
        let role = crate::sync::lock(&self.role).clone();
        if let Role::Standby {
            lease,
            holder: Some(h),
        } = &role
        {
            return Some(format!(
                "standby: this node's lease {lease} is held by {h}; this instance takes over when it expires"
            ));
        }
        if let Some(why) = self.api.unhealthy() {
            return Some(why);
        }
        match &role {
            Role::Standby { lease, .. } => {
                return Some(format!("standby: waiting for this node's lease {lease}"));
            }
            Role::Starting => return Some("waiting for this node's lease".into()),
            Role::Leading => {}
        }
        if let Some(why) = crate::sync::lock(&self.list_failing).as_ref() {
            return Some(why.clone());
        }
        if !self.synced.load(Ordering::Relaxed) {
            return Some("the pod cache has not synced".into());
        }
        None
    }

    /// What this instance is now, for `/readyz`.
    pub fn set_role(&self, role: Role) {
        *crate::sync::lock(&self.role) = role;
    }

    /// The pod watcher's list failed (`Some`), or a list succeeded (`None`).
    pub fn set_list_failing(&self, why: Option<String>) {
        let mut w = crate::sync::lock(&self.list_failing);
        if w.is_some() || why.is_some() {
            *w = why;
        }
    }
}

/// Whether this instance collects.
#[derive(Debug, Default, Clone, PartialEq)]
pub enum Role {
    /// The lease's first answer has not come.
    #[default]
    Starting,
    /// Another instance holds the node's lease (`holder`, when the answer named it).
    Standby {
        lease: String,
        holder: Option<String>,
    },
    Leading,
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` until the runtime ends.
pub async fn serve(addr: SocketAddr, m: Arc<Metrics>) -> std::io::Result<SocketAddr> {
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let (a, b) = (Arc::clone(&m), Arc::clone(&m));
    let app = crate::serve::metrics_router(move || a.render()).route(
        "/readyz",
        get(move || {
            let m = Arc::clone(&b);
            async move {
                match m.not_ready() {
                    None => (axum::http::StatusCode::OK, "ready\n".to_string()),
                    Some(why) => (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        format!("not ready: {why}\n"),
                    ),
                }
            }
        }),
    );
    crate::serve::spawn(listener, app, crate::serve::Bounds::metrics());
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/readyz` names the first real cause, in this order: a standby (and who holds the
    /// lease); the API server refusing the credentials, or unreachable; a standby that does
    /// not know the holder; the pod list failing; the pod cache not synced.
    #[test]
    fn readiness_names_the_first_real_cause() {
        let api = Arc::new(ApiStats::default());
        let m = Metrics::new(Arc::clone(&api));
        assert_eq!(
            m.not_ready().as_deref(),
            Some("the API server has not answered yet")
        );
        api.record("get", "leases", "200", true);
        assert_eq!(
            m.not_ready().as_deref(),
            Some("waiting for this node's lease")
        );
        m.set_role(Role::Standby {
            lease: "agentprof-n1".into(),
            holder: Some("agentprof-abc".into()),
        });
        api.record("list", "pods", "401", false);
        let why = m.not_ready().expect("standby");
        assert!(
            why.starts_with("standby: this node's lease agentprof-n1 is held by agentprof-abc"),
            "{why}"
        );
        m.set_role(Role::Leading);
        let why = m.not_ready().expect("unauthorized");
        assert!(
            why.starts_with("unauthorized: the API server answered 401 to list pods"),
            "{why}"
        );
        api.record("get", "leases", "200", true);
        m.set_list_failing(Some("the pod list fails: a cut body".into()));
        assert_eq!(
            m.not_ready().as_deref(),
            Some("the pod list fails: a cut body")
        );
        m.set_list_failing(None);
        assert_eq!(
            m.not_ready().as_deref(),
            Some("the pod cache has not synced")
        );
        m.synced.store(true, Ordering::Relaxed);
        assert_eq!(m.not_ready(), None);
        m.set_role(Role::Standby {
            lease: "agentprof-n1".into(),
            holder: None,
        });
        api.record("get", "leases", "error", false);
        let why = m.not_ready().expect("unreachable");
        assert!(
            why.starts_with("the API server is unreachable since"),
            "{why}"
        );
    }
}
