//! The one HTTP stack of agentprof's servers — `start --metrics-listen`, `receive` (and its
//! `--metrics-listen`), `k8s`'s health and metrics, `ui` — and the one place a tokio runtime
//! is built: axum on hyper on tokio. The clients are reqwest (kube for the API server).

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;

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
        Runtime::Server { blocking } => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(blocking)
            .enable_all()
            .build(),
        Runtime::Waiter => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(64)
            .build(),
    }
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
pub fn on_thread(listener: std::net::TcpListener, app: Router, name: &str) -> std::io::Result<()> {
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
                    Ok(l) => {
                        if let Err(e) = axum::serve(l, app).await {
                            eprintln!("agentprof: the server stopped: {e}");
                        }
                    }
                    Err(e) => eprintln!("agentprof: cannot serve: {e}"),
                }
            })
        })?;
    Ok(())
}

/// Serves `app` on `listener` as a task of the current runtime, until it ends.
pub fn spawn(listener: tokio::net::TcpListener, app: Router) {
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("agentprof: the server stopped: {e}");
        }
    });
}

/// Resolves when SIGINT or SIGTERM arrives (the flag the handlers set is looked at every
/// 100 ms).
pub async fn stopped() {
    while !crate::signal::requested() {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
