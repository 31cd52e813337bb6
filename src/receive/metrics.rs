//! What `agentprof receive` tells Prometheus (`--metrics-listen`): uploads by language (a
//! fixed set: a client's tag never makes a new series) and status, bytes received,
//! rejections by reason, stores that failed and were tried again, the durable queue's depth
//! and bytes, the memory the uploads in flight hold, the forward spool.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

pub struct Metrics {
    registry: Registry,
    pub uploads: Family<Labels, Counter>,
    pub bytes: Counter,
    pub rejected: Family<Labels, Counter>,
    pub queue_depth: Gauge,
    pub queue_bytes: Gauge,
    pub forwards: Family<Labels, Counter>,
    pub store_failures: Counter,
    /// Uploads not stored again: their digest was stored already (exactly once).
    pub duplicates: Counter,
    pub retention_deleted: Counter,
    /// Parts of accepted uploads skipped as unknown.
    pub skipped_parts: Counter,
    skipped_logged: std::sync::atomic::AtomicBool,
    budget_bytes: Gauge,
    budget: std::sync::OnceLock<crate::budget::Budget>,
    connections_open: Gauge,
    connections_evicted: Counter,
    connections_waits: Counter,
    server: std::sync::OnceLock<std::sync::Arc<crate::serve::ServerStats>>,
    forward_pending: Gauge,
    forward_sent: Family<Labels, Counter>,
    forward: std::sync::OnceLock<std::sync::Arc<super::forward::Forwarder>>,
    /// Totals for the summary at stop.
    pub stored: std::sync::atomic::AtomicU64,
    pub refused: std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    // long: one registration per series with its help text, in the order /metrics lists them
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("agentprof_receive");
        let uploads = Family::<Labels, Counter>::default();
        registry.register(
            "uploads",
            "Uploads by language and status (stored, error)",
            uploads.clone(),
        );
        let bytes = Counter::default();
        registry.register("received_bytes", "Bytes of accepted uploads", bytes.clone());
        let rejected = Family::<Labels, Counter>::default();
        registry.register(
            "rejected",
            "Uploads refused, by reason (not_multipart, malformed_multipart, malformed_request: a Pyroscope or OTLP request, unsupported_type, bad_event, too_large, bad_attachment, slow_sender, queue_full, queue_error)",
            rejected.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_uploads",
            "Uploads acknowledged and not yet processed",
            queue_depth.clone(),
        );
        let queue_bytes = Gauge::default();
        registry.register(
            "queue_bytes",
            "Bytes of the durable queue not yet processed",
            queue_bytes.clone(),
        );
        let forwards = Family::<Labels, Counter>::default();
        registry.register(
            "forwards",
            "Uploads handed to the forwarder, by result (queued: in its spool; error)",
            forwards.clone(),
        );
        let store_failures = Counter::default();
        registry.register(
            "store_failures",
            "Stores of acknowledged uploads that failed (the upload stays in the queue and is \
             stored again later)",
            store_failures.clone(),
        );
        let duplicates = Counter::default();
        registry.register(
            "duplicates",
            "Uploads acknowledged and not stored again: one with the same digest was stored \
             (a replay after a kill -9, or a client's retry of an upload whose answer was lost)",
            duplicates.clone(),
        );
        let retention_deleted = Counter::default();
        registry.register(
            "retention_deleted_files",
            "Stored files deleted to keep out_dir within receive.retention_mb / retention_days",
            retention_deleted.clone(),
        );
        let skipped_parts = Counter::default();
        registry.register(
            "skipped_parts",
            "Parts of uploads skipped because they are neither a profile, metrics.json, a file \
             event.json lists, nor a field of the older form",
            skipped_parts.clone(),
        );
        let budget_bytes = Gauge::default();
        registry.register(
            "memory_in_flight_bytes",
            "Bytes the uploads in flight hold of the memory budget (receive.memory_limit_mb)",
            budget_bytes.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "Connections open now (at most max_connections)",
            connections_open.clone(),
        );
        let connections_evicted = Counter::default();
        registry.register(
            "connections_evicted_idle",
            "Connections closed to make room at the cap: hung up, idle (of the peer holding \
             the most first), or sending under 1 KiB/s",
            connections_evicted.clone(),
        );
        let connections_waits = Counter::default();
        registry.register(
            "connections_waits_at_cap",
            "Times new connections waited (in the kernel's backlog) because max_connections \
             were open, every one busy and quick",
            connections_waits.clone(),
        );
        let forward_pending = Gauge::default();
        registry.register(
            "forward_spool_uploads",
            "Uploads in the forward spools waiting to be sent (--forward, --forward-otlp)",
            forward_pending.clone(),
        );
        let forward_sent = Family::<Labels, Counter>::default();
        registry.register(
            "forward_sends",
            "What the forwarder did with spooled uploads, by result (sent, retried, refused: \
             for good, dropped: to keep the spool within its size) and target (ddtrace: \
             --forward, otlp: --forward-otlp)",
            forward_sent.clone(),
        );
        Metrics {
            forward_pending,
            forward_sent,
            forward: std::sync::OnceLock::new(),
            connections_open,
            connections_evicted,
            connections_waits,
            server: std::sync::OnceLock::new(),
            forwards,
            store_failures,
            duplicates,
            retention_deleted,
            skipped_parts,
            skipped_logged: Default::default(),
            budget_bytes,
            budget: std::sync::OnceLock::new(),
            registry,
            uploads,
            bytes,
            rejected,
            queue_depth,
            queue_bytes,
            stored: Default::default(),
            refused: Default::default(),
        }
    }

    pub fn reject(&self, reason: &'static str) {
        self.rejected
            .get_or_create(&vec![("reason", reason.to_string())])
            .inc();
        *crate::sync::lock(&self.refused).entry(reason).or_default() += 1;
    }

    /// Counts the parts an upload skipped, and says so on stderr the first time.
    pub fn skipped(&self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        self.skipped_parts.inc_by(names.len() as u64);
        if !self
            .skipped_logged
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            let shown: Vec<String> = names
                .iter()
                .take(4)
                .map(|n| {
                    let short: String = n.chars().take(64).collect();
                    format!("`{}`", crate::redact::printable(&short))
                })
                .collect();
            eprintln!(
                "agentprof receive: skipped part{} {} of an upload: neither a profile, \
                 metrics.json, nor a file its event.json lists (counted in \
                 agentprof_receive_skipped_parts_total; said once)",
                if names.len() == 1 { "" } else { "s" },
                shown.join(", ")
            );
        }
    }

    /// The budget whose use /metrics shows.
    pub fn set_budget(&self, b: crate::budget::Budget) {
        let _ = self.budget.set(b);
    }

    /// The HTTP server whose connections /metrics shows.
    pub fn set_server(&self, s: std::sync::Arc<crate::serve::ServerStats>) {
        let _ = self.server.set(s);
    }

    /// The forwarder whose spool /metrics shows.
    pub fn set_forward(&self, f: std::sync::Arc<super::forward::Forwarder>) {
        let _ = self.forward.set(f);
    }

    pub fn render(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let catch_up = |c: &Counter, to: u64| c.inc_by(to.saturating_sub(c.get()));
        if let Some(b) = self.budget.get() {
            self.budget_bytes.set(b.used() as i64);
        }
        if let Some(f) = self.forward.get() {
            self.forward_pending.set(f.pending() as i64);
            for (target, st) in f.stats() {
                for (result, n) in [
                    ("sent", &st.sent),
                    ("retried", &st.retried),
                    ("refused", &st.refused),
                    ("dropped", &st.dropped),
                ] {
                    let c = self
                        .forward_sent
                        .get_or_create(&vec![("result", result.into()), ("target", target.into())]);
                    catch_up(&c, n.load(Relaxed));
                }
            }
        }
        if let Some(s) = self.server.get() {
            self.connections_open.set(s.open.load(Relaxed) as i64);
            catch_up(&self.connections_evicted, s.evicted_idle.load(Relaxed));
            catch_up(&self.connections_waits, s.waits_at_cap.load(Relaxed));
        }
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// The runtimes dd-trace profilers exist for; any other language is `other` in /metrics.
const LANGUAGES: &[&str] = &["go", "python", "java", "nodejs", "dotnet", "ruby", "php"];

/// The language label of an upload in /metrics.
pub fn language_label(language: &str) -> &'static str {
    LANGUAGES
        .iter()
        .find(|l| **l == language)
        .copied()
        .unwrap_or("other")
}
