//! `agentprof ui`: a local, read-only web page over the profiles agentprof wrote or received.

pub mod index;
pub mod pstats;
pub mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cmd::Outcome;
use crate::pprof::decode::Limits;

pub struct UiOptions {
    /// Canonical directories.
    pub roots: Vec<PathBuf>,
    pub listen: SocketAddr,
    pub open: bool,
    pub duration: Option<Duration>,
    pub limits: Limits,
}

/// Serves the page until SIGTERM/SIGINT or `--duration`.
pub async fn run(opts: UiOptions) -> anyhow::Result<Outcome> {
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| crate::error::UsageError::flag("--listen", format!("{}: {e}", opts.listen)))?;
    let bound = listener.local_addr()?;
    let url = format!("http://{bound}/");
    let dirs: Vec<String> = opts.roots.iter().map(|r| r.display().to_string()).collect();
    eprintln!(
        "agentprof ui: serving {url} (profiles under {})",
        dirs.join(", ")
    );
    if !bound.ip().is_loopback() {
        eprintln!(
            "agentprof ui: {} is not a loopback address: anyone who reaches it can read these profiles",
            bound.ip()
        );
    }
    let ui = Arc::new(server::Ui::new(opts.roots, opts.limits));
    if opts.open {
        open_browser(&url);
    }
    let app = server::router(ui);
    let until = async move {
        let d = opts.duration;
        tokio::select! {
            () = async { match d { Some(d) => tokio::time::sleep(d).await, None => std::future::pending().await } } => {}
            () = crate::cmd::k8s::stopped() => {}
        }
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(until)
        .await?;
    eprintln!("agentprof ui: stopped");
    Ok(Outcome::Success)
}

/// The desktop's browser on `url` (xdg-open, or open on macOS); a failure is said, not fatal.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => {}
        Err(e) => eprintln!("agentprof ui: cannot open a browser ({opener}: {e}); open {url}"),
    }
}
