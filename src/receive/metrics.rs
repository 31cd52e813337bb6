//! What `agentprof receive` tells Prometheus (`--metrics-listen`): uploads by language and
//! status, bytes received, rejections by reason, the durable queue's depth and bytes.

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
            "Uploads refused, by reason (not_multipart, malformed_multipart, bad_event, too_large, bad_attachment, slow_sender, queue_full, queue_error)",
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
            "Uploads forwarded, by result (sent, spooled)",
            forwards.clone(),
        );
        Metrics {
            forwards,
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

    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}
