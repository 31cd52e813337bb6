//! The receiver's run: the HTTP side (`http.rs`) checks an upload, makes it durable in the
//! queue and answers 202; workers on the blocking pool store what was acknowledged. At stop
//! the listener closes, requests in flight get 5 s, the workers 10 s; what is left waits in
//! the queue for the next start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::http::{HEADER_TIMEOUT, Job, State, unrecord};
use super::intake::router;
use super::metrics::Metrics;
use super::queue::Queue;
use super::store::{StoreOptions, Stored};
use crate::error::Outcome;

/// What an upload may hold and still use the eighth of the budget kept for small ones (one
/// whose Content-Length says at most `http::SMALL_BODY`).
const SMALL_UPLOAD: u64 = 4 << 20;

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
    /// Bytes every upload in flight may hold together (`memory_limit_mb`).
    pub memory_limit: u64,
    /// Bytes one upload's attachments may take decompressed (`upload_decompressed_mb`).
    pub upload_decompressed: u64,
    /// Connections open at once (`max_connections`).
    pub max_connections: usize,
    /// Below this many bytes free where uploads are stored or queued, uploads get 507.
    pub min_free: u64,
    /// How much of `<out>` is kept (`retention_mb`, `retention_days`).
    pub retention: crate::retention::Retention,
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
    crate::emit::profiling_gauges(
        s.profiling_metrics.iter().map(|(n, v)| (*n, *v)),
        &tags,
        &host,
        at.as_millisecond() as f64 / 1000.0,
        0,
    )
}

/// Uploads checked and acknowledged that wait for a worker, in memory (the rest of the
/// backlog is on disk only until a worker reads it).
const IN_MEMORY: usize = 64;
const WORKERS: usize = 2;

/// The upload's line, appended to uploads.jsonl and synced: the upload is done only once
/// this is on disk.
fn write_line(line: &str, uploads: &std::sync::Mutex<std::fs::File>) -> std::io::Result<()> {
    crate::pull::append_record(&mut crate::sync::lock(uploads), line, true)
}

/// The line printed for a stored upload (escaped where it holds what the client sent).
fn say(stored: &Stored, line: &str, json: bool) {
    use std::io::Write;
    let text = if json {
        format!("{line}\n")
    } else {
        super::store::render(stored)
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

type Shared<T> = Arc<std::sync::Mutex<T>>;

/// How long a store that failed (the disk full, a directory that cannot be made) waits
/// before it is tried again; the upload stays in the queue meanwhile.
const RETRY: Duration = Duration::from_secs(10);

/// What stores one upload after its 202: shared by the workers.
struct Worker {
    store: StoreOptions,
    metrics: Arc<Metrics>,
    queue: Queue,
    uploads: Shared<std::fs::File>,
    forward: Option<Arc<super::forward::Forwarder>>,
    figures: Shared<Vec<Box<dyn crate::emit::Forwarder>>>,
    hostname: String,
    json: bool,
    /// The digests stored recently and being stored (exactly once).
    seen: Shared<super::dedupe::Seen>,
}

impl Worker {
    /// Stores one upload, forwards it, sends its figures, says it, and marks it done in the
    /// queue (on the blocking pool). Some(job) when it could not be stored: it is to be tried
    /// again, and stays in the queue until it is.
    fn handle(&self, job: Job) -> Option<Job> {
        let m = &self.metrics;
        let digest = super::dedupe::digest(&job.upload);
        if !crate::sync::lock(&self.seen).claim(&digest) {
            // Stored already (its line is in uploads.jsonl: a replay after a kill -9, or a
            // client's retry of an upload whose 202 was lost), or being stored now by the
            // other worker (this copy's record can go: that one's stays until it is stored).
            m.duplicates.inc();
            self.queue.done(job.id);
            m.queue_depth.dec();
            m.queue_bytes.set(self.queue.used() as i64);
            return None;
        }
        let again = self.store_claimed(job, &digest);
        crate::sync::lock(&self.seen).release(&digest, again.is_none());
        again
    }

    /// `handle` for an upload whose digest this worker claimed.
    fn store_claimed(&self, mut job: Job, digest: &str) -> Option<Job> {
        let m = &self.metrics;
        let stored = super::store::store(
            &job.upload,
            job.headers.clone(),
            job.received,
            &self.store,
            &mut job.held,
        );
        let mut stored = match stored {
            Ok(s) => s,
            Err(e) => return self.failed(job, &e.0),
        };
        if let Some(f) = &self.forward
            && !job.forwarded
        {
            let r = f.forward(&job.upload, &job.headers, digest);
            m.forwards
                .get_or_create(&vec![(
                    "result",
                    if r.is_ok() { "queued" } else { "error" }.to_string(),
                )])
                .inc();
            job.forwarded = r.is_ok();
            stored.forwarded = Some(r.is_ok());
            stored.forward_error = r.err().map(|e| e.to_string());
        }
        stored.digest = digest.to_string();
        let line = serde_json::to_string(&stored).unwrap_or_default();
        if let Err(e) = write_line(&line, &self.uploads) {
            super::store::remove_written(&stored.attachments);
            return self.failed(job, &format!("cannot write uploads.jsonl: {e}"));
        }
        self.send_figures(&stored);
        let failed = stored.attachments.iter().any(|a| a.error.is_some());
        m.uploads
            .get_or_create(&vec![
                (
                    "language",
                    super::metrics::language_label(&stored.language).into(),
                ),
                ("status", if failed { "error" } else { "stored" }.into()),
            ])
            .inc();
        m.stored.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        say(&stored, &line, self.json);
        self.queue.done(job.id);
        m.queue_depth.dec();
        m.queue_bytes.set(self.queue.used() as i64);
        None
    }

    /// A store that failed: counted, said, and the job kept to be tried again.
    fn failed(&self, job: Job, why: &str) -> Option<Job> {
        self.metrics.store_failures.inc();
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "agentprof receive: cannot store an upload ({}); it stays in the queue and is \
             tried again in {} s",
            crate::redact::printable(why),
            RETRY.as_secs()
        );
        Some(job)
    }

    fn send_figures(&self, stored: &Stored) {
        let mut fig = crate::sync::lock(&self.figures);
        if !fig.is_empty() && !stored.profiling_metrics.is_empty() {
            let metrics = figure_metrics(stored, &self.hostname);
            let batch = crate::emit::Batch {
                metrics: &metrics,
                service_checks: &[],
                events: &[],
            };
            crate::emit::send_all(&mut fig, &batch, |name, e| {
                eprintln!("agentprof receive: {name}: {e}");
            });
        }
    }

    /// Each job on the blocking pool, at most WORKERS at once, until the channel closes; a
    /// job whose store failed is tried again after `RETRY`.
    fn start(self: Arc<Self>, mut jobs: mpsc::Receiver<Job>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let permits = Arc::new(tokio::sync::Semaphore::new(WORKERS));
            let mut running = tokio::task::JoinSet::new();
            let mut again: std::collections::VecDeque<(tokio::time::Instant, Job)> =
                Default::default();
            loop {
                let due = again.front().map(|(t, _)| *t);
                let job = tokio::select! {
                    j = jobs.recv() => match j {
                        Some(j) => j,
                        None => break,
                    },
                    () = async { match due { Some(t) => tokio::time::sleep_until(t).await, None => std::future::pending().await } } => {
                        match again.pop_front() { Some((_, j)) => j, None => continue }
                    }
                    Some(r) = running.join_next(), if !running.is_empty() => {
                        if let Ok(Some(j)) = r {
                            again.push_back((tokio::time::Instant::now() + RETRY, j));
                        }
                        continue;
                    }
                };
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                    break;
                };
                let w = Arc::clone(&self);
                running.spawn_blocking(move || {
                    let _permit = permit;
                    w.handle(job)
                });
            }
            // At the stop: what is running ends; what waits to be tried again stays in the
            // queue for the next start.
            while running.join_next().await.is_some() {}
        })
    }
}

/// `--metrics-listen`: receive's own metrics, served from now on.
async fn serve_metrics(
    addr: std::net::SocketAddr,
    metrics: &Arc<Metrics>,
) -> Result<(), crate::error::UsageError> {
    let m = Arc::clone(metrics);
    let app = crate::serve::metrics_router(move || m.render());
    let refused = |e: std::io::Error| {
        crate::error::UsageError::flag("--metrics-listen", format!("{addr}: {e}"))
    };
    let l = tokio::net::TcpListener::bind(addr).await.map_err(refused)?;
    eprintln!(
        "agentprof receive: metrics on http://{}/metrics",
        l.local_addr().map_err(refused)?
    );
    crate::serve::spawn(l, app, crate::serve::Bounds::metrics());
    Ok(())
}

/// `none refused`, or `4 refused (too_large 3, rate_limited 1)`.
fn refused_words(refused: &std::collections::BTreeMap<&'static str, u64>) -> String {
    let total: u64 = refused.values().sum();
    if total == 0 {
        return "none refused".to_string();
    }
    let each: Vec<String> = refused
        .iter()
        .filter(|&(_, &n)| n > 0)
        .map(|(why, n)| format!("{why} {n}"))
        .collect();
    format!("{total} refused ({})", each.join(", "))
}

/// The last line: what was stored and refused, and what waits in the queue for the next start.
fn say_stopped(metrics: &Metrics, queue: &Queue, left: bool, queue_dir: &std::path::Path) {
    let refused = crate::sync::lock(&metrics.refused).clone();
    eprintln!(
        "agentprof receive: stopped: {} stored, {}{}",
        metrics.stored.load(std::sync::atomic::Ordering::Relaxed),
        refused_words(&refused),
        if left || queue.used() > 0 {
            format!(
                "; {} bytes wait in {} for the next start",
                queue.used(),
                queue_dir.display()
            )
        } else {
            String::new()
        }
    );
}

/// Runs until SIGTERM/SIGINT or `--duration`: the queue opened (what a previous run
/// acknowledged and did not store goes first), the workers started, the server run; at the
/// stop, the workers get 10 s, the forwarders flush, and what is left is said.
pub async fn run(opts: ReceiveOptions) -> Result<Outcome, crate::error::UsageError> {
    let flag = crate::error::UsageError::flag;
    let (queue, replay) =
        Queue::open(&opts.queue_dir, opts.capacity).map_err(|e| flag("--queue", e.to_string()))?;
    let (uploads, cut) =
        crate::pull::open_records(&opts.store.out, "uploads.jsonl", crate::pull::CutLine::Drop)?;
    if let Some(bytes) = cut {
        eprintln!(
            "agentprof receive: the last line of {} was cut short by a crash ({bytes} bytes) \
             and is taken off: its upload is still in the queue and is stored again",
            opts.store.out.join("uploads.jsonl").display()
        );
    }
    let metrics = Arc::new(Metrics::new());
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| flag("--listen", format!("{}: {e}", opts.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| flag("--listen", format!("{}: {e}", opts.listen)))?;
    if let Some(addr) = opts.metrics_listen {
        serve_metrics(addr, &metrics).await?;
    }
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>(IN_MEMORY);
    let budget = budget_for(opts.memory_limit, &metrics);
    let limits = super::form::UploadLimits {
        part: opts.store.limits,
        decompressed: opts.upload_decompressed,
    };
    let state = state_of(
        &opts,
        queue.clone(),
        jobs_tx.clone(),
        Arc::clone(&metrics),
        limits,
        budget.clone(),
    );
    let forward = opts.forward.map(Arc::new);
    if let Some(f) = &forward {
        metrics.set_forward(Arc::clone(f));
    }
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
        seen: Arc::new(std::sync::Mutex::new(super::dedupe::Seen::load(
            &opts.store.out,
        ))),
    });
    let workers = worker.start(jobs_rx);
    keep_within(opts.retention, opts.store.out.clone(), Arc::clone(&metrics));
    tokio::spawn(replay_queue(
        replay,
        queue.clone(),
        Arc::clone(&metrics),
        jobs_tx.clone(),
        limits,
        budget,
    ));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let acceptor = opts.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let bounds = server_bounds(opts.read_timeout, opts.max_connections);
    let server_stats = Arc::new(crate::serve::ServerStats::default());
    metrics.set_server(Arc::clone(&server_stats));
    let server = tokio::spawn(crate::serve::serve(
        listener,
        router(state),
        bounds,
        acceptor,
        stop_rx,
        server_stats,
    ));
    say_listening(&opts.endpoints, &opts.store.out, scheme, bound);
    until_stopped(opts.duration).await;
    let _ = stop_tx.send(true);
    let _ = server.await;
    drop(jobs_tx);
    let left = tokio::time::timeout(Duration::from_secs(10), workers)
        .await
        .is_err();
    flush_at_stop(figures, forward).await;
    say_stopped(&metrics, &queue, left, &opts.queue_dir);
    Ok(Outcome::Success)
}

/// What the server's handlers share.
fn state_of(
    opts: &ReceiveOptions,
    queue: Queue,
    jobs: mpsc::Sender<Job>,
    metrics: Arc<Metrics>,
    limits: super::form::UploadLimits,
    budget: crate::budget::Budget,
) -> Arc<State> {
    Arc::new(State {
        queue,
        jobs,
        metrics,
        endpoints: opts.endpoints.clone(),
        limits,
        budget,
        body_limit: opts.body_limit,
        body_timeout: opts.read_timeout,
        disks: vec![opts.store.out.clone(), opts.queue_dir.clone()],
        min_free: opts.min_free,
    })
}

/// The memory budget of the uploads in flight, shown in `metrics`. An eighth of it is kept
/// for uploads that state small bodies and hold at most 4 MiB (dd-trace's hold a few
/// hundred KiB): senders of large or lying bodies cannot take all of it.
fn budget_for(memory_limit: u64, metrics: &Metrics) -> crate::budget::Budget {
    let budget = crate::budget::Budget::new(memory_limit).with_lane(SMALL_UPLOAD, memory_limit / 8);
    metrics.set_budget(budget.clone());
    tokio::spawn(budget.clone().give_back_after_bursts());
    budget
}

/// The server's bounds: headers within `read_timeout` (at most `HEADER_TIMEOUT`), at most
/// `max_connections`, each living a few bodies' time.
fn server_bounds(read_timeout: Duration, max_connections: usize) -> crate::serve::Bounds {
    crate::serve::Bounds {
        header_timeout: read_timeout.min(HEADER_TIMEOUT),
        max_connections,
        // An upload's body has `read_timeout` to arrive; a connection lives a few of them.
        max_connection_age: read_timeout.saturating_mul(4).max(Duration::from_secs(60)),
        hosts: None,
        body_deadline: read_timeout,
    }
}

fn say_listening(endpoints: &[String], out: &Path, scheme: &str, bound: std::net::SocketAddr) {
    eprintln!(
        "agentprof receive: listening on {scheme}://{bound}{} (storing under {}; Pyroscope's \
         /ingest and /push.v1.PusherService/Push, OTLP's {} too)",
        endpoints.first().map(String::as_str).unwrap_or(""),
        out.display(),
        otlp::PATH
    );
}

/// Returns after `--duration`, or at SIGTERM/SIGINT.
async fn until_stopped(duration: Option<Duration>) {
    let until = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = until => {}
        () = crate::serve::stopped() => {}
    }
}

/// What a previous run acknowledged and did not store, read back one record at a time (each
/// within the memory budget, waiting for room) and given to the workers beside new uploads;
/// a record that no longer parses is dropped.
async fn replay_queue(
    replay: Vec<super::queue::Replayed>,
    queue: Queue,
    metrics: Arc<Metrics>,
    jobs: mpsc::Sender<Job>,
    limits: super::form::UploadLimits,
    budget: crate::budget::Budget,
) {
    let replayed = replay.len();
    if replayed > 0 {
        eprintln!(
            "agentprof receive: {replayed} upload(s) acknowledged by the previous run are being stored"
        );
    }
    for r in replay {
        let q = queue.clone();
        let Ok(Ok(payload)) = tokio::task::spawn_blocking(move || q.read(&r).map(|p| (r, p))).await
        else {
            continue;
        };
        let (r, payload) = payload;
        let Some((ct, headers, received, body)) = unrecord(payload) else {
            queue.done(r.id);
            continue;
        };
        let held = budget.reserve(2 * body.len() as u64).await;
        match super::form::parse(Some(&ct), body, &limits, held).await {
            Ok((upload, held)) => {
                metrics.queue_depth.inc();
                let job = Job {
                    id: r.id,
                    upload,
                    headers,
                    received,
                    held,
                    forwarded: false,
                };
                if jobs.send(job).await.is_err() {
                    return;
                }
            }
            Err(super::form::Reject::Busy(_)) => {}
            Err(_) => queue.done(r.id),
        }
    }
}

/// `<out>` kept within its retention: checked at start and every minute, the oldest uploads'
/// files deleted first, counted and said.
fn keep_within(r: crate::retention::Retention, out: PathBuf, metrics: Arc<Metrics>) {
    let shown = out.clone();
    crate::retention::keep_within(r, out, move |d| {
        metrics.retention_deleted.inc_by(d.files);
        eprintln!(
            "agentprof receive: retention: deleted the {} oldest file(s) ({} bytes) under {}",
            d.files,
            d.bytes,
            shown.display()
        );
    });
}

/// At the stop: the figures' forwarders flush (their HTTP clients are blocking ones, dropped
/// off the runtime), and the forward thread gets 2 s for the upload it is sending.
async fn flush_at_stop(
    figures: Shared<Vec<Box<dyn crate::emit::Forwarder>>>,
    forward: Option<Arc<super::forward::Forwarder>>,
) {
    let _ = tokio::task::spawn_blocking(move || {
        let mut fig = crate::sync::lock(&figures);
        for f in fig.iter_mut() {
            let _ = f.flush();
        }
        fig.clear();
    })
    .await;
    if let Some(f) = forward {
        let pending = tokio::task::spawn_blocking(move || f.stop(Duration::from_secs(2)))
            .await
            .unwrap_or(0);
        if pending > 0 {
            eprintln!(
                "agentprof receive: {pending} forward(s) wait in the spool for the next start"
            );
        }
    }
}
