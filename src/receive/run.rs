//! The receiver: an HTTP/1 server (hyper with axum's router) whose upload endpoints check an
//! upload, make it durable in the queue and answer 202; workers on the blocking pool store
//! what was acknowledged. At stop the listener closes, requests in flight get 5 s, the
//! workers 10 s; what is left waits in the queue for the next start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use bytes::Bytes;
use tokio::sync::mpsc;

use super::form::{Reject, Upload};
use super::metrics::Metrics;
use super::queue::{Queue, QueueError, RecordId};
use super::store::{StoreOptions, Stored};
use crate::error::Outcome;

/// Everything `agentprof receive` runs with.
pub struct ReceiveOptions {
    pub listen: SocketAddr,
    pub endpoints: Vec<String>,
    pub store: StoreOptions,
    pub queue_dir: PathBuf,
    /// Bytes the queue may hold unprocessed (`cache_capacity_mb`).
    pub capacity: u64,
    /// Largest upload accepted (`body_size_limit_mb`).
    pub body_limit: u64,
    /// The time a sender has for an upload's body (`read_timeout_s`); for its headers, at
    /// most [`HEADER_TIMEOUT`].
    pub read_timeout: Duration,
    pub metrics_listen: Option<SocketAddr>,
    pub duration: Option<Duration>,
    pub json: bool,
    /// `--forward`: made before the runtime starts (its HTTP client is a blocking one).
    pub forward: Option<super::forward::Forwarder>,
    /// `--tls-cert`/`--tls-key`: listen over TLS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Where each upload's `profiling_metrics` go: agentprof.yaml's forwarders (DogStatsD,
    /// the Datadog API, a metrics file), as `pull` sends its figures; and the host for them.
    pub figures: Vec<Box<dyn crate::emit::Forwarder>>,
    pub hostname: String,
}

/// An upload's profiling_metrics as metrics, tagged as DataKit tags them.
fn figure_metrics(s: &Stored, hostname: &str) -> Vec<crate::metrics::Metric> {
    let mut tags = vec![
        format!("language:{}", s.language),
        format!("service:{}", s.service),
    ];
    for (k, v) in [("env", &s.env), ("version", &s.version)] {
        if let Some(v) = v {
            tags.push(format!("{k}:{v}"));
        }
    }
    let host = s.host.clone().unwrap_or_else(|| hostname.to_string());
    let at = s
        .end
        .as_deref()
        .and_then(|e| e.parse::<jiff::Timestamp>().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    s.profiling_metrics
        .iter()
        .map(|(name, value)| crate::metrics::Metric {
            metric: format!("profiling_metrics.{name}"),
            mtype: crate::metrics::MetricType::Gauge,
            value: *value,
            tags: tags.clone(),
            host: host.clone(),
            timestamp: at.as_millisecond() as f64 / 1000.0,
            run: 0,
        })
        .collect()
}

/// How long a sender may take to send its headers (or less, with a shorter read timeout).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Uploads checked and acknowledged that wait for a worker, in memory (the rest of the
/// backlog is on disk only until a worker reads it).
const IN_MEMORY: usize = 64;
const WORKERS: usize = 2;

struct Job {
    id: RecordId,
    upload: Upload,
    headers: Vec<(String, String)>,
    received: jiff::Timestamp,
}

struct State {
    queue: Queue,
    jobs: mpsc::Sender<Job>,
    metrics: Arc<Metrics>,
    endpoints: Vec<String>,
    limits: crate::pprof::decode::Limits,
    body_limit: u64,
    body_timeout: Duration,
}

/// The headers kept with an upload: the client's own (`DD-EVP-ORIGIN`,
/// `DD-EVP-ORIGIN-VERSION`, `Datadog-Container-ID`, `User-Agent` …), never credentials.
fn kept_headers(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            (k.starts_with("dd-") || k.starts_with("datadog-") || k == "user-agent")
                && k != "dd-api-key"
                && k != "dd-application-key"
        })
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// The queue's record of an upload: one JSON line (content type, kept headers, when it
/// was received), then the body as it came.
fn record(
    content_type: &str,
    headers: &[(String, String)],
    at: jiff::Timestamp,
    body: &[u8],
) -> Vec<u8> {
    let head = serde_json::json!({"content_type": content_type, "headers": headers,
        "received": at.as_nanosecond().to_string()});
    let mut out = serde_json::to_vec(&head).unwrap_or_default();
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

type Parsed = (String, Vec<(String, String)>, jiff::Timestamp, Bytes);

fn unrecord(payload: Vec<u8>) -> Option<Parsed> {
    let nl = payload.iter().position(|&b| b == b'\n')?;
    let head: serde_json::Value = serde_json::from_slice(&payload[..nl]).ok()?;
    let ct = head["content_type"].as_str()?.to_string();
    let headers = serde_json::from_value(head["headers"].clone()).ok()?;
    let at = head["received"]
        .as_str()?
        .parse::<i128>()
        .ok()
        .and_then(|n| jiff::Timestamp::from_nanosecond(n).ok())?;
    let mut payload = payload;
    let body = Bytes::from(payload.split_off(nl + 1));
    Some((ct, headers, at, body))
}

fn answer(code: u16, text: String) -> Response<Body> {
    let body = serde_json::json!({ "error": text }).to_string();
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap_or_default()
}

async fn upload(state: Arc<State>, req: Request<Body>) -> Response<Body> {
    let m = &state.metrics;
    let refuse = |r: Reject| {
        m.reject(r.reason());
        answer(r.status(), r.to_string())
    };
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    if let Err(r) = super::form::boundary(ct.as_deref()) {
        return refuse(r);
    }
    let declared = req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > state.body_limit) {
        // Read and dropped (up to 4 × the limit, within the body timeout), so the client
        // finishes sending and reads the 413 instead of a broken pipe.
        if n <= 4 * state.body_limit {
            let _ = tokio::time::timeout(state.body_timeout, async {
                use futures_util::StreamExt;
                let mut s = req.into_body().into_data_stream();
                while let Some(Ok(_)) = s.next().await {}
            })
            .await;
        }
        return refuse(Reject::TooLarge(format!(
            "{n} bytes is over the {}-byte limit (body_size_limit_mb)",
            state.body_limit
        )));
    }
    let headers = kept_headers(req.headers());
    let read = tokio::time::timeout(
        state.body_timeout,
        axum::body::to_bytes(req.into_body(), state.body_limit as usize),
    )
    .await;
    let body = match read {
        Err(_) => {
            m.reject("slow_sender");
            return answer(
                408,
                format!(
                    "the body did not arrive within {:?} (read_timeout_s)",
                    state.body_timeout
                ),
            );
        }
        Ok(Err(e)) => {
            return refuse(Reject::TooLarge(format!(
                "the body is over the {}-byte limit (body_size_limit_mb) or was cut: {e}",
                state.body_limit
            )));
        }
        Ok(Ok(b)) => b,
    };
    let ct = ct.unwrap_or_default();
    let parsed = match super::form::parse(Some(&ct), body.clone(), &state.limits).await {
        Ok(u) => u,
        Err(r) => return refuse(r),
    };
    let at = jiff::Timestamp::now();
    let rec = record(&ct, &headers, at, &body);
    let id = match state.queue.append(rec).await {
        Ok(id) => id,
        Err(e @ QueueError::Full { .. }) => {
            m.reject("queue_full");
            return answer(503, format!("{e}; retry later"));
        }
        Err(e) => {
            m.reject("queue_error");
            return answer(503, e.to_string());
        }
    };
    m.bytes.inc_by(body.len() as u64);
    m.queue_depth.inc();
    m.queue_bytes.set(state.queue.used() as i64);
    // Durable now; the worker's copy waits in memory (bounded: a full backlog slows the
    // answers, so the clients wait rather than agentprof's memory growing).
    let _ = state
        .jobs
        .send(Job {
            id,
            upload: parsed,
            headers,
            received: at,
        })
        .await;
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap_or_default()
}

fn router(state: Arc<State>) -> axum::Router {
    let mut app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok\n" }));
    for e in &state.endpoints {
        let s = Arc::clone(&state);
        app = app.route(
            e,
            axum::routing::post(move |req: Request<Body>| upload(Arc::clone(&s), req)),
        );
    }
    app
}

/// One connection: HTTP/1 with a header timeout, closed gracefully (5 s) at stop.
async fn serve_conn<I>(
    io: I,
    app: axum::Router,
    header_timeout: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper_util::service::TowerToHyperService::new(app);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(hyper_util::rt::TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

/// Serves `app` on `listener` until `stop` resolves, each connection on its own task;
/// with `tls`, over TLS (the handshake within the header timeout).
async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    header_timeout: Duration,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            a = listener.accept() => {
                let Ok((tcp, _)) = a else { continue };
                let (app, stop, tls) = (app.clone(), stop.clone(), tls.clone());
                conns.spawn(async move {
                    match tls {
                        None => serve_conn(tcp, app, header_timeout, stop).await,
                        Some(acc) => {
                            if let Ok(Ok(io)) =
                                tokio::time::timeout(header_timeout, acc.accept(tcp)).await
                            {
                                serve_conn(io, app, header_timeout, stop).await;
                            }
                        }
                    }
                });
            }
            _ = stop.changed() => break,
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(6), async {
        while conns.join_next().await.is_some() {}
    })
    .await;
}

/// The TLS settings of `--tls-cert`/`--tls-key` (PEM), checked now.
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map(Arc::new)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))
}

fn emit(stored: &Stored, json: bool, uploads: &std::sync::Mutex<std::fs::File>) {
    use std::io::Write;
    let Ok(line) = serde_json::to_string(stored) else {
        return;
    };
    {
        let mut f = crate::pull::lock(uploads);
        let _ = writeln!(f, "{line}");
    }
    if json {
        println!("{line}");
    } else {
        print!("{}", super::store::render(stored));
    }
}

type Shared<T> = Arc<std::sync::Mutex<T>>;

/// What stores one upload after its 202: shared by the workers.
struct Worker {
    store: StoreOptions,
    metrics: Arc<Metrics>,
    queue: Queue,
    uploads: Shared<std::fs::File>,
    forward: Option<Shared<super::forward::Forwarder>>,
    figures: Shared<Vec<Box<dyn crate::emit::Forwarder>>>,
    hostname: String,
    json: bool,
}

impl Worker {
    /// Stores one upload, forwards it, sends its figures, says it, and marks it done in the
    /// queue (on the blocking pool).
    fn handle(&self, job: &Job) {
        let m = &self.metrics;
        let mut stored =
            super::store::store(&job.upload, job.headers.clone(), job.received, &self.store);
        if let Some(f) = &self.forward {
            let r = crate::pull::lock(f).forward(&job.upload, &job.headers);
            m.forwards
                .get_or_create(&vec![(
                    "result",
                    if r.is_ok() { "sent" } else { "spooled" }.to_string(),
                )])
                .inc();
            stored.forwarded = Some(r.is_ok());
            stored.forward_error = r.err();
        }
        {
            let mut fig = crate::pull::lock(&self.figures);
            if !fig.is_empty() && !stored.profiling_metrics.is_empty() {
                let metrics = figure_metrics(&stored, &self.hostname);
                let batch = crate::emit::Batch {
                    metrics: &metrics,
                    service_checks: &[],
                    events: &[],
                };
                for f in fig.iter_mut() {
                    if let Err(e) = f.send(&batch) {
                        eprintln!("agentprof receive: {}: {e}", f.name());
                    }
                }
            }
        }
        let failed = stored.attachments.iter().any(|a| a.error.is_some());
        m.uploads
            .get_or_create(&vec![
                ("language", stored.language.clone()),
                ("status", if failed { "error" } else { "stored" }.into()),
            ])
            .inc();
        m.stored.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        emit(&stored, self.json, &self.uploads);
        self.queue.done(job.id);
        m.queue_depth.dec();
        m.queue_bytes.set(self.queue.used() as i64);
    }

    /// Each job on the blocking pool, at most WORKERS at once, until the channel closes.
    fn start(self: Arc<Self>, mut jobs: mpsc::Receiver<Job>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let permits = Arc::new(tokio::sync::Semaphore::new(WORKERS));
            let mut running = tokio::task::JoinSet::new();
            while let Some(job) = jobs.recv().await {
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                    break;
                };
                let w = Arc::clone(&self);
                running.spawn_blocking(move || {
                    let _permit = permit;
                    w.handle(&job);
                });
                while running.try_join_next().is_some() {}
            }
            while running.join_next().await.is_some() {}
        })
    }
}

/// Runs until SIGTERM/SIGINT or `--duration`: the queue opened (what a previous run
/// acknowledged and did not store goes first), the workers started, the server run; at the
/// stop, the workers get 10 s, the forwarders flush, and what is left is said.
pub async fn run(opts: ReceiveOptions) -> anyhow::Result<Outcome> {
    let flag = crate::error::UsageError::flag;
    let (queue, replay) =
        Queue::open(&opts.queue_dir, opts.capacity).map_err(|e| flag("--queue", e))?;
    std::fs::create_dir_all(&opts.store.out)
        .map_err(|e| flag("--out", format!("{}: {e}", opts.store.out.display())))?;
    let uploads = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(opts.store.out.join("uploads.jsonl"))
        .map_err(|e| flag("--out", format!("{}: {e}", opts.store.out.display())))?;
    let metrics = Arc::new(Metrics::new());
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| flag("--listen", format!("{}: {e}", opts.listen)))?;
    let bound = listener.local_addr()?;
    if let Some(addr) = opts.metrics_listen {
        let m = Arc::clone(&metrics);
        let app = crate::serve::metrics_router(move || m.render());
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| flag("--metrics-listen", format!("{addr}: {e}")))?;
        eprintln!(
            "agentprof receive: metrics on http://{}/metrics",
            l.local_addr()?
        );
        crate::serve::spawn(l, app);
    }
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>(IN_MEMORY);
    let state = Arc::new(State {
        queue: queue.clone(),
        jobs: jobs_tx.clone(),
        metrics: Arc::clone(&metrics),
        endpoints: opts.endpoints.clone(),
        limits: opts.store.limits,
        body_limit: opts.body_limit,
        body_timeout: opts.read_timeout,
    });
    let forward = opts.forward.map(|f| Arc::new(std::sync::Mutex::new(f)));
    let figures = Arc::new(std::sync::Mutex::new(opts.figures));
    let worker = Arc::new(Worker {
        store: opts.store.clone(),
        metrics: Arc::clone(&metrics),
        queue: queue.clone(),
        uploads: Arc::new(std::sync::Mutex::new(uploads)),
        forward: forward.clone(),
        figures: Arc::clone(&figures),
        hostname: opts.hostname.clone(),
        json: opts.json,
    });
    let workers = worker.start(jobs_rx);
    replay_queue(replay, &queue, &metrics, &jobs_tx, &opts.store.limits).await;
    if let Some(f) = forward.clone() {
        // The spool is retried every 5 s when no upload comes to carry it.
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let f = Arc::clone(&f);
                let _ = tokio::task::spawn_blocking(move || crate::pull::lock(&f).flush()).await;
            }
        });
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let acceptor = opts.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let header_timeout = opts.read_timeout.min(HEADER_TIMEOUT);
    let server = tokio::spawn(serve(
        listener,
        router(state),
        header_timeout,
        acceptor,
        stop_rx,
    ));
    eprintln!(
        "agentprof receive: listening on {scheme}://{bound}{} (storing under {})",
        opts.endpoints.first().map(String::as_str).unwrap_or(""),
        opts.store.out.display()
    );
    let until = async {
        match opts.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = until => {}
        () = crate::serve::stopped() => {}
    }
    let _ = stop_tx.send(true);
    let _ = server.await;
    drop(jobs_tx);
    let left = tokio::time::timeout(Duration::from_secs(10), workers)
        .await
        .is_err();
    flush_at_stop(figures, forward).await;
    let refused = crate::pull::lock(&metrics.refused).clone();
    eprintln!(
        "agentprof receive: stopped: {} stored, refused {:?}{}",
        metrics.stored.load(std::sync::atomic::Ordering::Relaxed),
        refused,
        if left || queue.used() > 0 {
            format!(
                "; {} bytes wait in {} for the next start",
                queue.used(),
                opts.queue_dir.display()
            )
        } else {
            String::new()
        }
    );
    Ok(Outcome::Success)
}

/// What a previous run acknowledged and did not store, read back and given to the workers
/// first; a record that no longer parses is dropped.
async fn replay_queue(
    replay: Vec<super::queue::Replayed>,
    queue: &Queue,
    metrics: &Metrics,
    jobs: &mpsc::Sender<Job>,
    limits: &crate::pprof::decode::Limits,
) {
    let replayed = replay.len();
    for r in replay {
        let Some((ct, headers, received, body)) = unrecord(r.payload) else {
            queue.done(r.id);
            continue;
        };
        match super::form::parse(Some(&ct), body, limits).await {
            Ok(upload) => {
                metrics.queue_depth.inc();
                let _ = jobs
                    .send(Job {
                        id: r.id,
                        upload,
                        headers,
                        received,
                    })
                    .await;
            }
            Err(_) => queue.done(r.id),
        }
    }
    if replayed > 0 {
        eprintln!(
            "agentprof receive: {replayed} upload(s) acknowledged by the previous run are being stored"
        );
    }
}

/// At the stop: the figures' forwarders flush, and the spool gets one more try (both
/// dropped off the runtime: their HTTP clients are blocking ones).
async fn flush_at_stop(
    figures: Shared<Vec<Box<dyn crate::emit::Forwarder>>>,
    forward: Option<Shared<super::forward::Forwarder>>,
) {
    let _ = tokio::task::spawn_blocking(move || {
        let mut fig = crate::pull::lock(&figures);
        for f in fig.iter_mut() {
            let _ = f.flush();
        }
        fig.clear();
    })
    .await;
    if let Some(f) = forward {
        let pending = tokio::task::spawn_blocking(move || {
            let mut f = crate::pull::lock(&f);
            f.flush();
            f.pending()
        })
        .await
        .unwrap_or(0);
        if pending > 0 {
            eprintln!(
                "agentprof receive: {pending} forward(s) wait in the spool for the next start"
            );
        }
    }
}
