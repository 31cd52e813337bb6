//! The one HTTP stack of agentprof's servers — `start --metrics-listen`, `receive` (and its
//! `--metrics-listen`), `k8s`'s health and metrics, `ui` — and the one place a tokio runtime
//! is built: axum's router on hyper on tokio, behind one accept loop that bounds what a
//! client can hold: a connection cap; a time to send each request's headers (which is also
//! how long a kept-alive connection may idle); a lifetime per connection; and, where asked,
//! the Host names accepted. At the cap a connection is closed to make room — one whose client
//! hung up, else an idle one (no request in progress, nothing unread) of the peer address that
//! holds the most, else one whose request body, at the rate it comes, would not arrive within
//! the body's deadline (the furthest from it first), else the slowest sender (under 1 KiB/s
//! after 2 s) — and when every one is busy and quick, new connections wait in the kernel's
//! backlog rather than being reset, so sockets that send nothing, almost nothing, or too
//! little to ever finish cannot lock honest clients out (docs/details.md states the rule). The clients are reqwest (kube for the API server).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use axum::routing::get;

mod table;

use table::{Activity, Table};

/// What a runtime is for: how many threads run it.
#[derive(Debug, Clone, Copy)]
pub enum Runtime {
    /// A server of many connections (`receive`, `ui`): two workers, this many threads for
    /// the blocking work (files, decoding, drawing).
    Server { blocking: usize },
    /// One thread that waits on the network (`k8s` and its API server), with a blocking
    /// pool for the collections it starts.
    Waiter,
}

/// The runtime for `what`.
pub fn runtime(what: Runtime) -> std::io::Result<tokio::runtime::Runtime> {
    match what {
        Runtime::Server { blocking } => {
            // A server's large buffers go back to the system when its requests end.
            crate::procstat::return_large_frees();
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .max_blocking_threads(blocking)
                .enable_all()
                .build()
        }
        Runtime::Waiter => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(64)
            .build(),
    }
}

/// What one server lets its clients hold.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Time a client has to send a request's headers (and finish a TLS handshake); a
    /// kept-alive connection that sends nothing for this long is closed too.
    pub header_timeout: Duration,
    /// Connections open at once (and so file descriptors). At the cap one is closed to make
    /// room (see the module's note); when none can be, new connections wait to be accepted.
    pub max_connections: usize,
    /// A connection is asked to close after this long, and closed 5 s later.
    pub max_connection_age: Duration,
    /// The Host header values answered (the rest get 421); None answers any.
    pub hosts: Option<Vec<String>>,
    /// The time a request's body has to arrive: at the cap, a request whose body, at the
    /// rate it comes, would not arrive within it is closed first (see `make_room`).
    pub body_deadline: Duration,
}

impl Bounds {
    /// A `/metrics` endpoint: a scraper or two, a few probes.
    pub fn metrics() -> Bounds {
        Bounds {
            header_timeout: Duration::from_secs(10),
            max_connections: 64,
            max_connection_age: Duration::from_secs(300),
            hosts: None,
            body_deadline: Duration::from_secs(10),
        }
    }
}

/// Counts of one server, for its /metrics.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub accepted: AtomicU64,
    /// Times the accept loop waited because `max_connections` were open, every one busy and
    /// quick (new connections wait in the kernel's backlog meanwhile).
    pub waits_at_cap: AtomicU64,
    /// Connections closed to make room at the cap: hung up, idle, or the slowest senders.
    pub evicted_idle: AtomicU64,
    /// Requests answered 421 for a Host not served.
    pub wrong_host: AtomicU64,
    pub open: AtomicU64,
}

/// Resolves when the server should stop: a watch that turns true.
pub type Stop = tokio::sync::watch::Receiver<bool>;

/// A stop that never comes, for servers that live as long as the process.
pub fn never() -> Stop {
    let (tx, rx) = tokio::sync::watch::channel(false);
    // The sender lives as long as the process, so `changed` never resolves with an error.
    std::mem::forget(tx);
    rx
}

/// Serves `app` on `listener` until `stop` turns true, each connection on its own task
/// within `bounds`; with `tls`, over TLS. Open connections are given 5 s to finish at stop.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    bounds: Bounds,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: Stop,
    stats: Arc<ServerStats>,
) {
    let table = Arc::new(Table::default());
    let hosts: Option<Arc<[String]>> = bounds.hosts.clone().map(Into::into);
    let mut conns = tokio::task::JoinSet::new();
    let mut waiting = false;
    loop {
        // Room first: at the cap a connection is closed to make room (see `make_room`), or the
        // loop waits — new connections wait in the kernel's backlog — until one ends.
        if table.len() >= bounds.max_connections.max(1)
            && !table.make_room(&stats, bounds.body_deadline)
        {
            if !waiting {
                waiting = true;
                stats.waits_at_cap.fetch_add(1, Ordering::Relaxed);
            }
            tokio::select! {
                () = table.freed.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.changed() => break,
            }
            while conns.try_join_next().is_some() {}
            continue;
        }
        waiting = false;
        tokio::select! {
            a = listener.accept() => {
                let Ok((tcp, peer)) = a else {
                    // EMFILE and the like: wait a moment rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                stats.accepted.fetch_add(1, Ordering::Relaxed);
                let fd = std::os::fd::AsRawFd::as_raw_fd(&tcp);
                let slot = table.admit(peer.ip(), fd);
                let conn = Conn {
                    app: app.clone(),
                    bounds: bounds.clone(),
                    hosts: hosts.clone(),
                    stop: stop.clone(),
                    stats: Arc::clone(&stats),
                };
                let tls = tls.clone();
                let table = Arc::clone(&table);
                conns.spawn(async move {
                    let stats = Arc::clone(&conn.stats);
                    stats.open.fetch_add(1, Ordering::Relaxed);
                    let activity = Arc::clone(&slot.activity);
                    let tcp = Counted { io: tcp, activity: Arc::clone(&activity) };
                    match tls {
                        None => conn.run(tcp, activity).await,
                        Some(acc) => {
                            let t = conn.bounds.header_timeout;
                            let handshake = tokio::time::timeout(t, acc.accept(tcp));
                            tokio::select! {
                                r = handshake => if let Ok(Ok(io)) = r {
                                    conn.run(io, activity).await;
                                },
                                () = activity.close.notified() => {}
                            }
                        }
                    }
                    table.remove(slot.id);
                    stats.open.fetch_sub(1, Ordering::Relaxed);
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

/// A connection's socket, counting the bytes it carries (for `make_room`'s slowest).
struct Counted<I> {
    io: I,
    activity: Arc<Activity>,
}

impl<I: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Counted<I> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.activity.bytes.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

impl<I: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counted<I> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.io).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &r {
            self.activity.bytes.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// One accepted connection and what it is served with.
struct Conn {
    app: Router,
    bounds: Bounds,
    hosts: Option<Arc<[String]>>,
    stop: Stop,
    stats: Arc<ServerStats>,
}

impl Conn {
    /// HTTP/1 with the header timeout, closed gracefully (5 s) at stop or at its age limit;
    /// closed at once when the accept loop evicts it while it has no request in progress.
    async fn run<I>(mut self, io: I, activity: Arc<Activity>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (app, hosts, stats) = (
            self.app.clone(),
            self.hosts.clone(),
            Arc::clone(&self.stats),
        );
        let act = Arc::clone(&activity);
        let svc = tower::service_fn(move |req: Request<hyper::body::Incoming>| {
            let (app, hosts, stats) = (app.clone(), hosts.clone(), Arc::clone(&stats));
            let declared = req
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            let busy = Busy::start(Arc::clone(&act), declared);
            async move {
                let req = req.map(Body::new);
                if let Some(allowed) = hosts.as_deref()
                    && !host_allowed(&req, allowed)
                {
                    stats.wrong_host.fetch_add(1, Ordering::Relaxed);
                    return Ok::<_, std::convert::Infallible>(misdirected());
                }
                use tower::ServiceExt;
                let resp = app.oneshot(req).await?;
                // Busy until the answer's last byte is handed to hyper.
                Ok(resp.map(|body| Body::new(Sending { body, _busy: busy })))
            }
        });
        let svc = hyper_util::service::TowerToHyperService::new(svc);
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.bounds.header_timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(io), svc);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = self.stop.changed() => {}
            () = tokio::time::sleep(self.bounds.max_connection_age) => {}
            () = activity.close.notified() => {
                if activity.dropped.load(Ordering::Acquire)
                    || activity.in_flight.load(Ordering::Acquire) == 0
                {
                    return;
                }
            }
        }
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
    }
}

/// A request in progress on a connection, from when hyper hands it over until its answer is
/// made: the connection is not idle meanwhile.
struct Busy(Arc<Activity>);

impl Busy {
    /// A request begins, with the body length it states (None: chunked, or none said).
    fn start(activity: Arc<Activity>, declared: Option<u64>) -> Busy {
        activity.begin_request(declared);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let a = &self.0;
        a.idle_since_ms
            .store(a.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        a.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body, which keeps its connection busy until it is all sent (or dropped).
struct Sending {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Sending {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Whether the request is addressed to a name served: its Host, and in HTTP/1 an absolute-
/// form target's authority (`GET http://name/… HTTP/1.1`), which replaces Host for the
/// server (RFC 9112 §3.2.2) — so both, where both are given, must be served.
fn host_allowed(req: &Request<Body>, allowed: &[String]) -> bool {
    // Two Host headers: which one a proxy or a cache keyed on is anyone's guess.
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return false;
    }
    let served = |h: &str| allowed.iter().any(|a| a.eq_ignore_ascii_case(h));
    let host = req.headers().get(header::HOST).map(|h| h.to_str().ok());
    let authority = req.uri().authority().map(|a| a.as_str());
    match (host, authority) {
        (None, None) => false,
        (Some(h), a) => h.is_some_and(served) && a.is_none_or(served),
        (None, Some(a)) => served(a),
    }
}

fn misdirected() -> Response<Body> {
    Response::builder()
        .status(StatusCode::MISDIRECTED_REQUEST)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            r#"{"error":"this server answers only requests addressed to the address it listens on, or to a name given with --allow-host NAME (one Host header)"}"#,
        ))
        .unwrap_or_default()
}

/// The Host values a server bound to `bound` answers: the address itself, and for a
/// loopback or unspecified address `localhost`, `127.0.0.1` and `[::1]` on its port; plus
/// `extra` names (each `NAME` or `NAME:PORT`).
pub fn local_hosts(bound: SocketAddr, extra: &[String]) -> Vec<String> {
    let port = bound.port();
    let mut v = vec![bound.to_string()];
    if bound.ip().is_loopback() || bound.ip().is_unspecified() {
        for h in ["localhost", "127.0.0.1", "[::1]"] {
            v.push(format!("{h}:{port}"));
        }
    }
    for e in extra {
        let has_port = !e.ends_with(']')
            && e.rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
        if has_port {
            v.push(e.clone());
        } else {
            v.push(format!("{e}:{port}"));
        }
    }
    v
}

/// The content type of OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `/metrics` (what `render` gives, as OpenMetrics text) and `/healthz`; anything else is a
/// 404 that says what is served.
pub fn metrics_router(render: impl Fn() -> String + Send + Sync + 'static) -> Router {
    let render = Arc::new(render);
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let render = Arc::clone(&render);
                async move { ([(header::CONTENT_TYPE, OPENMETRICS)], render()) }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "not here: GET /metrics (and /healthz) is what this server answers\n",
            )
        })
}

/// Serves `app` on `listener` from a thread of its own (for the commands that are not async
/// themselves: `start`), until the process ends.
pub fn on_thread(
    listener: std::net::TcpListener,
    app: Router,
    bounds: Bounds,
    name: &str,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            rt.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => serve(l, app, bounds, None, never(), Arc::default()).await,
                    Err(e) => eprintln!("agentprof: cannot serve: {e}"),
                }
            })
        })?;
    Ok(())
}

/// Serves `app` on `listener` as a task of the current runtime, until the process ends.
pub fn spawn(listener: tokio::net::TcpListener, app: Router, bounds: Bounds) {
    tokio::spawn(serve(listener, app, bounds, None, never(), Arc::default()));
}

/// Resolves when SIGINT or SIGTERM arrives (the flag the handlers set is looked at every
/// 100 ms).
pub async fn stopped() {
    while !crate::signal::requested() {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_server_answers_its_own_names_only() {
        let bound: SocketAddr = "127.0.0.1:7070".parse().expect("addr");
        let hosts = local_hosts(bound, &["box.lan".into(), "proxy:8443".into()]);
        for h in [
            "127.0.0.1:7070",
            "localhost:7070",
            "[::1]:7070",
            "box.lan:7070",
            "proxy:8443",
        ] {
            assert!(hosts.iter().any(|x| x == h), "{h} in {hosts:?}");
        }
        let req = |h: &str| {
            Request::get("/api/profiles")
                .header(header::HOST, h)
                .body(Body::empty())
                .expect("request")
        };
        assert!(host_allowed(&req("LOCALHOST:7070"), &hosts));
        assert!(!host_allowed(&req("attacker.example:7070"), &hosts));
        assert!(!host_allowed(&req("localhost:7071"), &hosts));
        // Two Host headers, the good one first: refused.
        let two = Request::get("/api/profiles")
            .header(header::HOST, "localhost:7070")
            .header(header::HOST, "attacker.example:7070")
            .body(Body::empty())
            .expect("request");
        assert!(!host_allowed(&two, &hosts));
        assert!(!host_allowed(
            &Request::get("/").body(Body::empty()).expect("request"),
            &hosts
        ));
        // An absolute-form target names the server, whatever Host says.
        let absolute = |target: &str, h: &str| {
            Request::get(target)
                .header(header::HOST, h)
                .body(Body::empty())
                .expect("request")
        };
        assert!(!host_allowed(
            &absolute("http://evil.example/api/profiles", "localhost:7070"),
            &hosts
        ));
        assert!(host_allowed(
            &absolute("http://localhost:7070/api/profiles", "localhost:7070"),
            &hosts
        ));
        assert!(host_allowed(
            &Request::get("http://localhost:7070/")
                .body(Body::empty())
                .expect("request"),
            &hosts
        ));
    }
}
