//! `agentprof ui`: a local, read-only web page over the profiles agentprof wrote or received.

pub mod index;
pub mod keep;
pub mod pstats;
pub mod pyroscope;
pub mod range;
pub mod reply;
pub mod rollup;
pub mod select;
pub mod server;
pub mod state;
pub mod svg;
pub mod timeline;
pub mod views;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Outcome;
use crate::pprof::Limits;

pub struct UiOptions {
    /// Canonical directories.
    pub roots: Vec<PathBuf>,
    pub listen: SocketAddr,
    pub open: bool,
    /// `--allow-host`: names answered beside the listen address and localhost.
    pub allow_hosts: Vec<String>,
    pub duration: Option<Duration>,
    pub limits: Limits,
    /// Bytes the profiles being read and kept may hold together (`--memory-mb`).
    pub memory: u64,
    /// `--source-path`: canonical directories the source view may read.
    pub sources: Vec<PathBuf>,
    /// `--keep-idle`: after this long without a request what is kept is dropped.
    pub keep_idle: Duration,
    /// `--cache-dir`: where hourly rollups are kept (None: `--no-cache`, every merge reads
    /// its captures).
    pub cache: Option<PathBuf>,
}

/// Serves the page until SIGTERM/SIGINT or `--duration`.
/// Its one error: the address cannot be listened on (`--listen`, exit 2).
pub async fn run(opts: UiOptions) -> Result<Outcome, crate::error::UsageError> {
    let listen = opts.listen;
    let refused =
        |e: std::io::Error| crate::error::UsageError::flag("--listen", format!("{listen}: {e}"));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(refused)?;
    let bound = listener.local_addr().map_err(refused)?;
    let url = format!("http://{bound}/");
    let dirs: Vec<String> = opts.roots.iter().map(|r| r.display().to_string()).collect();
    eprintln!(
        "agentprof ui: serving {url} (profiles under {})",
        dirs.join(", ")
    );
    if !bound.ip().is_loopback() {
        let names = if opts.allow_hosts.is_empty() {
            format!(
                "it answers only requests addressed to {bound}{}; others get 421 until their name is given with --allow-host NAME",
                if bound.ip().is_unspecified() {
                    " or localhost"
                } else {
                    ""
                }
            )
        } else {
            format!(
                "it answers requests addressed to {bound} and to {}",
                opts.allow_hosts.join(", ")
            )
        };
        eprintln!(
            "agentprof ui: {} is not a loopback address: anyone who reaches it under a name it answers can read these profiles ({names})",
            bound.ip()
        );
    }
    let mut ui = state::Ui::new(opts.roots, opts.limits, opts.memory);
    ui.sources = opts.sources;
    ui.rollups = opts
        .cache
        .as_deref()
        .map(|c| rollup::Rollups::new(c, &ui.roots));
    ui.local = bound.ip().is_loopback();
    let ui = Arc::new(ui);
    if opts.open {
        open_browser(&url);
    }
    tokio::spawn(release_when_idle(Arc::clone(&ui), opts.keep_idle));
    let app = server::router(ui);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let bounds = crate::serve::Bounds {
        header_timeout: Duration::from_secs(5),
        max_connections: 64,
        max_connection_age: Duration::from_secs(600),
        hosts: Some(crate::serve::local_hosts(bound, &opts.allow_hosts)),
        body_deadline: Duration::from_secs(30),
    };
    let server = tokio::spawn(crate::serve::serve(
        listener,
        app,
        bounds,
        None,
        stop_rx,
        Arc::default(),
    ));
    let d = opts.duration;
    tokio::select! {
        () = async { match d { Some(d) => tokio::time::sleep(d).await, None => std::future::pending().await } } => {}
        () = crate::serve::stopped() => {}
    }
    let _ = stop_tx.send(true);
    let _ = server.await;
    eprintln!("agentprof ui: stopped");
    Ok(Outcome::Success)
}

/// Drops what the page keeps once no request came for `keep` (looked at every `keep / 4`, at
/// most every 5 s), and gives the freed memory back to the system: a page left open over
/// lunch holds its listing, not the last profiles it showed.
async fn release_when_idle(ui: Arc<state::Ui>, keep: Duration) {
    let tick = (keep / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        tokio::time::sleep(tick).await;
        if ui.idle_for() >= keep && ui.holds_any() {
            let ui = Arc::clone(&ui);
            let _ = tokio::task::spawn_blocking(move || ui.release()).await;
        }
    }
}

/// The browser on `url`: `$BROWSER` when set (a `:`-separated list of commands, each with
/// `%s` for the URL or given it last, the first that starts is used — as xdg-open, Python's
/// webbrowser and go tool pprof read it), else xdg-open (open on macOS). A failure is said,
/// not fatal; the browser's exit is waited for on a thread of its own.
fn open_browser(url: &str) {
    let fallback = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let listed = std::env::var("BROWSER").unwrap_or_default();
    let mut tried = Vec::new();
    for cmd in listed.split(':').chain([fallback]) {
        let mut words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            continue;
        }
        if words.iter().any(|w| w.contains("%s")) {
            for w in &mut words {
                *w = w.replace("%s", url);
            }
        } else {
            words.push(url.to_string());
        }
        match std::process::Command::new(&words[0])
            .args(&words[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            Ok(mut child) => {
                let name = words[0].clone();
                std::thread::spawn(move || match child.wait() {
                    Ok(s) if !s.success() => eprintln!("agentprof ui: {name} exited with {s}"),
                    _ => {}
                });
                return;
            }
            Err(e) => tried.push(format!("{}: {e}", words[0])),
        }
    }
    eprintln!(
        "agentprof ui: cannot open a browser ({}); open {url}",
        tried.join("; ")
    );
}
