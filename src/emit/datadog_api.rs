//! The Datadog HTTP API: series (v2, gzip), service checks (v1 check_run, gzip) and events
//! (v1 events, one per request as that endpoint takes them), sent from a
//! thread of their own so a slow or failing intake never stalls the agent. A bounded queue
//! holds batches; when it is full the oldest are dropped and counted. 5xx answers and network
//! errors are retried with backoff; other 4xx answers are dropped with a message. The API key
//! is only ever in the DD-API-KEY header: never in a URL, a message, a log line or `--json`.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

use crate::metrics::MetricType;

use super::{Batch, Forwarder};

/// Batches waiting to be sent, at most.
const QUEUE: usize = 256;
/// Attempts per payload.
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest a 429's or 503's Retry-After is waited; a longer one ends the attempts.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// The series intake's documented limits on one payload: compressed and decompressed bytes.
const MAX_COMPRESSED: usize = 512_000;
const MAX_DECOMPRESSED: usize = 5_242_880;

/// What the sender thread reports.
#[derive(Debug, Default)]
pub struct ApiStats {
    pub sent: AtomicU64,
    pub retried: AtomicU64,
    pub dropped: AtomicU64,
    pub failed: AtomicU64,
}

struct Payload {
    path: &'static str,
    body: Vec<u8>,
    gzip: bool,
}

struct Shared {
    queue: Mutex<(VecDeque<Payload>, bool)>,
    ready: Condvar,
    stats: ApiStats,
}

pub struct DatadogApi {
    base: String,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `https://api.SITE`, or `dd_url` as given.
pub fn base_url(site: &str, dd_url: Option<&str>) -> String {
    match dd_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => format!("https://api.{site}"),
    }
}

fn gzip(v: &Value) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    let _ = serde_json::to_writer(&mut gz, v);
    gz.finish().unwrap_or_default()
}

/// One series of the v2 body, written straight from the batch's metric (no JSON tree): type
/// 1 count, 2 rate, 3 gauge.
#[derive(serde::Serialize)]
struct SeriesItem<'a> {
    metric: &'a str,
    #[serde(rename = "type")]
    kind: u8,
    points: [Point; 1],
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<[Resource<'a>; 1]>,
}

#[derive(serde::Serialize)]
struct Point {
    timestamp: i64,
    value: f64,
}

#[derive(serde::Serialize)]
struct Resource<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

fn series_item(m: &crate::metrics::Metric) -> SeriesItem<'_> {
    let kind = match m.mtype {
        MetricType::Count | MetricType::MonotonicCount => 1,
        MetricType::Rate => 2,
        _ => 3,
    };
    SeriesItem {
        metric: &m.metric,
        kind,
        points: [Point {
            timestamp: m.timestamp as i64,
            value: m.value,
        }],
        tags: &m.tags,
        resources: (!m.host.is_empty()).then_some([Resource {
            name: &m.host,
            kind: "host",
        }]),
    }
}

const SERIES_OPEN: &[u8] = b"{\"series\":[";
const SERIES_CLOSE: &[u8] = b"]}";

/// The batch's series as gzipped v2 bodies each within the intake's limits (512,000 bytes
/// compressed, 5,242,880 decompressed): a run of 60,000 series goes as several payloads
/// instead of one the intake refuses with 413. Each series is written once into the body
/// being filled, so the memory this takes is one body's text, whatever the run's size.
pub(crate) fn series_payloads(batch: &Batch<'_>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    // Where each series starts and ends in `text`.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut item: Vec<u8> = Vec::with_capacity(256);
    for m in batch.metrics.iter().filter(|m| m.sketch.is_none()) {
        item.clear();
        if serde_json::to_writer(&mut item, &series_item(m)).is_err() {
            continue;
        }
        let grown = text.len().max(SERIES_OPEN.len()) + 1 + item.len() + SERIES_CLOSE.len();
        if !spans.is_empty() && grown > MAX_DECOMPRESSED {
            split_compressed(&text, &spans, &mut out);
            text.clear();
            spans.clear();
        }
        if spans.is_empty() {
            text.extend_from_slice(SERIES_OPEN);
        } else {
            text.push(b',');
        }
        spans.push((text.len(), text.len() + item.len()));
        text.extend_from_slice(&item);
    }
    if !spans.is_empty() {
        split_compressed(&text, &spans, &mut out);
    }
    out
}

/// The series at `spans` of `text` as one gzipped body, or halves of them until each
/// compresses within `MAX_COMPRESSED` (a single series larger than that goes alone, and the
/// intake says why).
fn split_compressed(text: &[u8], spans: &[(usize, usize)], out: &mut Vec<Vec<u8>>) {
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return;
    };
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    let _ = gz.write_all(SERIES_OPEN);
    let _ = gz.write_all(&text[first.0..last.1]);
    let _ = gz.write_all(SERIES_CLOSE);
    let body = gz.finish().unwrap_or_default();
    if body.len() <= MAX_COMPRESSED || spans.len() == 1 {
        out.push(body);
        return;
    }
    let (a, b) = spans.split_at(spans.len() / 2);
    split_compressed(text, a, out);
    split_compressed(text, b, out);
}

/// Values one distribution sends at most: past it, each bin's count is scaled down (every bin
/// keeps at least one value), so a distribution of millions of values stays one small body.
const DISTRIBUTION_VALUES: f64 = 50_000.0;

/// The v1 distribution points body: each distribution's sketch as values (a bin's value as
/// many times as the bin holds), which the intake makes into its own sketch; None when the
/// batch has no distribution.
pub fn distribution_points(batch: &Batch<'_>) -> Option<Value> {
    let series: Vec<Value> = batch
        .metrics
        .iter()
        .filter_map(|m| {
            let sketch = m.sketch.as_ref()?;
            let scale = (DISTRIBUTION_VALUES / sketch.count()).min(1.0);
            let values: Vec<f64> = sketch
                .bins()
                .flat_map(|(v, n)| std::iter::repeat_n(v, ((n * scale).round() as usize).max(1)))
                .collect();
            let mut s = json!({
                "metric": m.metric,
                "type": "distribution",
                "points": [[m.timestamp as i64, values]],
                "tags": m.tags,
            });
            if !m.host.is_empty() {
                s["host"] = json!(m.host);
            }
            Some(s)
        })
        .collect();
    (!series.is_empty()).then(|| json!({ "series": series }))
}

/// One v1 event: title and text cut to the API's limits (100 and 4000 characters).
fn event(e: &crate::metrics::Event) -> Value {
    let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    let mut v = json!({
        "title": cut(&e.title, 100),
        "text": cut(&e.text, 4000),
        "date_happened": e.timestamp as i64,
        "priority": e.priority,
        "alert_type": e.alert_type,
        "tags": e.tags,
    });
    if !e.host.is_empty() {
        v["host"] = json!(e.host);
    }
    if let Some(k) = &e.aggregation_key {
        v["aggregation_key"] = json!(cut(k, 100));
    }
    if let Some(s) = &e.source_type_name {
        v["source_type_name"] = json!(s);
    }
    v
}

fn check_runs(batch: &Batch<'_>) -> Value {
    Value::Array(
        batch
            .service_checks
            .iter()
            .map(|sc| {
                json!({
                    "check": sc.name,
                    "host_name": sc.host,
                    "status": sc.status as u8,
                    "timestamp": std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0),
                    "message": sc.message,
                    "tags": sc.tags,
                })
            })
            .collect(),
    )
}

/// Why the API forwarder cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot start the sender: {0}")]
    Thread(#[source] std::io::Error),
}

impl DatadogApi {
    pub fn start(api_key: String, base: String) -> Result<DatadogApi, StartError> {
        let client = crate::http::blocking(Duration::from_secs(10))
            .build()
            .map_err(StartError::Client)?;
        let shared = Arc::new(Shared {
            queue: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
            stats: ApiStats::default(),
        });
        let (s, url) = (Arc::clone(&shared), base.clone());
        // Messages name the intake without the credentials a dd_url may carry.
        let thread = std::thread::Builder::new()
            .name("datadog-api".into())
            .spawn(move || sender(client, api_key, url, s))
            .map_err(StartError::Thread)?;
        Ok(DatadogApi {
            base,
            shared,
            thread: Some(thread),
        })
    }

    fn push(&self, p: Payload) {
        let mut q = crate::sync::lock(&self.shared.queue);
        if q.0.len() >= QUEUE {
            q.0.pop_front();
            self.shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.0.push_back(p);
        self.shared.ready.notify_one();
    }
}

fn sender_shown(base: &str) -> String {
    crate::redact::url_text(base)
}

/// The next payload to send, waiting for one; None once the queue is closed and empty.
fn next_payload(shared: &Shared) -> Option<Payload> {
    let mut q = crate::sync::lock(&shared.queue);
    loop {
        if let Some(p) = q.0.pop_front() {
            return Some(p);
        }
        if q.1 {
            return None;
        }
        q = shared.ready.wait(q).ok()?;
    }
}

/// One post of `p`: whether to try again, and after how long the server asked (its
/// Retry-After); what failed for good is counted and said.
fn post_once(
    client: &reqwest::blocking::Client,
    key: &str,
    base: &str,
    p: &Payload,
    shared: &Shared,
    last: bool,
) -> (bool, Option<Duration>) {
    let shown = || format!("{}{}", sender_shown(base).trim_end_matches('/'), p.path);
    let mut req = client
        .post(format!("{base}{}", p.path))
        .header("DD-API-KEY", key)
        .header("Content-Type", "application/json")
        .header(
            "User-Agent",
            concat!("agentprof/", env!("CARGO_PKG_VERSION")),
        );
    if p.gzip {
        req = req.header("Content-Encoding", "gzip");
    }
    match req.body(p.body.clone()).send() {
        Ok(r) if r.status().is_success() => {
            shared.stats.sent.fetch_add(1, Ordering::Relaxed);
            (false, None)
        }
        Ok(r) if r.status().is_server_error() || r.status().as_u16() == 429 => {
            let wait = crate::http::retry_after(r.headers());
            if let Some(w) = wait.filter(|w| *w > MAX_RETRY_AFTER) {
                shared.stats.failed.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "agentprof: datadog api {}: {} asks to wait {} s, over the {} s agentprof waits (not retried)",
                    shown(),
                    r.status(),
                    w.as_secs(),
                    MAX_RETRY_AFTER.as_secs()
                );
                return (false, None);
            }
            (true, wait)
        }
        Ok(r) => {
            shared.stats.failed.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "agentprof: datadog api {}: {} (not retried)",
                shown(),
                r.status()
            );
            (false, None)
        }
        Err(e) => {
            if last {
                eprintln!("agentprof: datadog api {}: {}", shown(), e.without_url());
            }
            (true, None)
        }
    }
}

fn sender(client: reqwest::blocking::Client, key: String, base: String, shared: Arc<Shared>) {
    while let Some(p) = next_payload(&shared) {
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let (retry, wait) = post_once(&client, &key, &base, &p, &shared, attempt == ATTEMPTS);
            if !retry {
                break;
            }
            if attempt == ATTEMPTS {
                shared.stats.failed.fetch_add(1, Ordering::Relaxed);
                break;
            }
            // Stopping: no more retries; what was not delivered is counted as dropped.
            if shared.closing() {
                shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
                break;
            }
            shared.stats.retried.fetch_add(1, Ordering::Relaxed);
            // The server's Retry-After when it gave one, else the backoff; a stop ends the wait.
            let q = crate::sync::lock(&shared.queue);
            let _ = shared
                .ready
                .wait_timeout_while(q, wait.unwrap_or(backoff), |q| !q.1);
            backoff *= 2;
        }
    }
}

impl Shared {
    fn closing(&self) -> bool {
        crate::sync::lock(&self.queue).1
    }
}

impl Forwarder for DatadogApi {
    fn name(&self) -> String {
        format!("datadog api {}", crate::redact::url_text(&self.base))
    }

    fn delivery(&self) -> super::Delivery {
        let s = &self.shared.stats;
        super::Delivery {
            forwarder: self.name(),
            unit: "payloads",
            sent: s.sent.load(Ordering::Relaxed),
            retried: s.retried.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
        }
    }

    fn send(&mut self, batch: &Batch<'_>) -> std::io::Result<()> {
        for body in series_payloads(batch) {
            self.push(Payload {
                path: "/api/v2/series",
                body,
                gzip: true,
            });
        }
        if let Some(points) = distribution_points(batch) {
            self.push(Payload {
                path: "/api/v1/distribution_points",
                body: gzip(&points),
                gzip: true,
            });
        }
        if !batch.service_checks.is_empty() {
            self.push(Payload {
                path: "/api/v1/check_run",
                body: gzip(&check_runs(batch)),
                gzip: true,
            });
        }
        for e in batch.events {
            self.push(Payload {
                path: "/api/v1/events",
                body: serde_json::to_vec(&event(e)).unwrap_or_default(),
                gzip: false,
            });
        }
        Ok(())
    }

    /// Waits (at most 1.5 s) for the queue to drain, then stops the sender, waiting at most
    /// another 1.5 s for a request in flight: an intake that hangs cannot hold the stop (the
    /// request in flight is counted as dropped and its thread left to its own timeout).
    fn flush(&mut self) -> std::io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < deadline {
            let empty = crate::sync::lock(&self.shared.queue).0.is_empty();
            if empty {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        {
            let mut q = crate::sync::lock(&self.shared.queue);
            let left = q.0.len() as u64;
            q.0.clear();
            q.1 = true;
            self.shared.stats.dropped.fetch_add(left, Ordering::Relaxed);
        }
        self.shared.ready.notify_all();
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_millis(1500);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                self.shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metric;

    fn gauge(name: &str, tags: Vec<String>, host: &str) -> Metric {
        Metric {
            metric: name.into(),
            mtype: MetricType::Gauge,
            value: 1.5,
            tags,
            host: host.into(),
            timestamp: 1_700_000_000.7,
            run: 1,
            sketch: None,
        }
    }

    fn decoded(body: &[u8]) -> Value {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(body), &mut text).unwrap();
        assert!(text.len() <= MAX_DECOMPRESSED, "{} bytes", text.len());
        serde_json::from_str(&text).unwrap()
    }

    fn payloads_of(metrics: &[Metric]) -> Vec<Vec<u8>> {
        series_payloads(&Batch {
            metrics,
            service_checks: &[],
            events: &[],
        })
    }

    #[test]
    fn a_series_is_written_as_the_v2_intake_reads_it() {
        let m = [
            gauge("a.b", vec!["env:x".into(), "q:\"\\".into()], "box"),
            Metric {
                mtype: MetricType::Rate,
                ..gauge("c", vec![], "")
            },
        ];
        let p = payloads_of(&m);
        assert_eq!(p.len(), 1);
        let doc = decoded(&p[0]);
        assert_eq!(
            doc,
            json!({"series": [
                {"metric": "a.b", "type": 3, "points": [{"timestamp": 1_700_000_000i64, "value": 1.5}],
                 "tags": ["env:x", "q:\"\\"], "resources": [{"name": "box", "type": "host"}]},
                {"metric": "c", "type": 2, "points": [{"timestamp": 1_700_000_000i64, "value": 1.5}],
                 "tags": []},
            ]})
        );
        assert!(payloads_of(&[]).is_empty());
    }

    /// Every series exactly once, in order, over bodies within both limits: a compressible
    /// run is cut at the decompressed limit, an incompressible one halved until it compresses
    /// within the compressed limit.
    #[test]
    fn big_runs_are_cut_within_both_limits_every_series_once() {
        for incompressible in [false, true] {
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            let metrics: Vec<Metric> = (0..20_000)
                .map(|i| {
                    let tag = if incompressible {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let y = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
                        format!("r:{x:016x}{y:016x}{:016x}", x ^ y.rotate_left(29))
                    } else {
                        format!("team:{}", "observability".repeat(20))
                    };
                    gauge("many.series", vec![format!("shard:{i}"), tag], "box")
                })
                .collect();
            let p = payloads_of(&metrics);
            assert!(
                p.len() >= 2,
                "{} payloads, incompressible: {incompressible}",
                p.len()
            );
            let mut next = 0;
            for body in &p {
                assert!(
                    body.len() <= MAX_COMPRESSED,
                    "{} bytes compressed",
                    body.len()
                );
                for s in decoded(body)["series"].as_array().unwrap() {
                    assert_eq!(s["tags"][0], format!("shard:{next}"));
                    next += 1;
                }
            }
            assert_eq!(next, 20_000, "incompressible: {incompressible}");
        }
    }
}
