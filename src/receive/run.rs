//! The receiver's run: the HTTP side (`http.rs`) checks an upload, makes it durable in the
//! queue and answers 202; workers on the blocking pool store what was acknowledged. At stop
//! the listener closes, requests in flight get 5 s, the workers 10 s; what is left waits in
//! the queue for the next start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::http::{HEADER_TIMEOUT, Job, State, router, unrecord};
use super::metrics::Metrics;
use super::queue::Queue;
use super::store::{StoreOptions, Stored};
use crate::error::Outcome;

/// Connections open at once; past it a new one is closed as soon as it is accepted.
const MAX_CONNECTIONS: usize = 256;

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

fn emit(stored: &Stored, json: bool, uploads: &std::sync::Mutex<std::fs::File>) {
    use std::io::Write;
    let Ok(line) = serde_json::to_string(stored) else {
        return;
    };
    {
        let mut f = crate::sync::lock(uploads);
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
            let r = crate::sync::lock(f).forward(&job.upload, &job.headers);
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
            let mut fig = crate::sync::lock(&self.figures);
            if !fig.is_empty() && !stored.profiling_metrics.is_empty() {
                let metrics = figure_metrics(&stored, &self.hostname);
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

/// `--metrics-listen`: receive's own metrics, served from now on.
async fn serve_metrics(addr: std::net::SocketAddr, metrics: &Arc<Metrics>) -> anyhow::Result<()> {
    let m = Arc::clone(metrics);
    let app = crate::serve::metrics_router(move || m.render());
    let l = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| crate::error::UsageError::flag("--metrics-listen", format!("{addr}: {e}")))?;
    eprintln!(
        "agentprof receive: metrics on http://{}/metrics",
        l.local_addr()?
    );
    crate::serve::spawn(l, app, crate::serve::Bounds::metrics());
    Ok(())
}

/// The forwarders' spool retried every 5 s when no upload comes to carry it.
fn retry_spool(f: Shared<super::forward::Forwarder>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let f = Arc::clone(&f);
            let _ = tokio::task::spawn_blocking(move || crate::sync::lock(&f).flush()).await;
        }
    });
}

/// The last line: what was stored and refused, and what waits in the queue for the next start.
fn say_stopped(metrics: &Metrics, queue: &Queue, left: bool, queue_dir: &std::path::Path) {
    let refused = crate::sync::lock(&metrics.refused).clone();
    eprintln!(
        "agentprof receive: stopped: {} stored, refused {:?}{}",
        metrics.stored.load(std::sync::atomic::Ordering::Relaxed),
        refused,
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
pub async fn run(opts: ReceiveOptions) -> anyhow::Result<Outcome> {
    let flag = crate::error::UsageError::flag;
    let (queue, replay) =
        Queue::open(&opts.queue_dir, opts.capacity).map_err(|e| flag("--queue", e))?;
    let uploads = crate::pull::open_records(&opts.store.out, "uploads.jsonl")?;
    let metrics = Arc::new(Metrics::new());
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| flag("--listen", format!("{}: {e}", opts.listen)))?;
    let bound = listener.local_addr()?;
    if let Some(addr) = opts.metrics_listen {
        serve_metrics(addr, &metrics).await?;
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
        retry_spool(f);
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let acceptor = opts.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let bounds = crate::serve::Bounds {
        header_timeout: opts.read_timeout.min(HEADER_TIMEOUT),
        max_connections: MAX_CONNECTIONS,
        // An upload's body has `read_timeout` to arrive; a connection lives a few of them.
        max_connection_age: opts
            .read_timeout
            .saturating_mul(4)
            .max(Duration::from_secs(60)),
        hosts: None,
    };
    let server = tokio::spawn(crate::serve::serve(
        listener,
        router(state),
        bounds,
        acceptor,
        stop_rx,
        Arc::default(),
    ));
    eprintln!(
        "agentprof receive: listening on {scheme}://{bound}{} (storing under {})",
        opts.endpoints.first().map(String::as_str).unwrap_or(""),
        opts.store.out.display()
    );
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
        let mut fig = crate::sync::lock(&figures);
        for f in fig.iter_mut() {
            let _ = f.flush();
        }
        fig.clear();
    })
    .await;
    if let Some(f) = forward {
        let pending = tokio::task::spawn_blocking(move || {
            let mut f = crate::sync::lock(&f);
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
