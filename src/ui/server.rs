//! The page's server: axum on the receiver's stack, read-only. Every request for a profile
//! names an id of the current listing (anything else is 404, so no path of the request
//! ever reaches the file system), and what a profile holds reaches the page as JSON the
//! page puts in as text, or as inferno's SVG (its names XML-escaped) in a sandboxed frame.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::index::{Listing, Records, scan};
use crate::pprof::decode::Limits;
use crate::pprof::model::Pprof;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const FAVICON: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">\
    <rect y=\"10\" width=\"16\" height=\"6\" fill=\"#e4572e\"/><rect x=\"2\" y=\"5\" width=\"10\" \
    height=\"5\" fill=\"#f3a712\"/><rect x=\"4\" width=\"5\" height=\"5\" fill=\"#f6d55c\"/></svg>";

/// The page's own policy: its script and style only, data from this server only.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; frame-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'";
/// inferno's SVG carries its own script and style (search, zoom), inline; nothing else.
const SVG_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'";

/// A listing is rescanned when it is older than this.
const LISTING_TTL: Duration = Duration::from_millis(1000);
/// Decoded profiles kept for the next request (the page asks for a profile's top table
/// and its flamegraph one after the other).
const CACHE: usize = 6;

/// A decoded profile with the id, mtime and length it was read at.
type Cached = (String, std::time::SystemTime, u64, Arc<Pprof>);
/// Two profiles to compare and the sample types compared.
type Pair = (Arc<Pprof>, Arc<Pprof>, (usize, usize));

pub struct Ui {
    pub roots: Vec<PathBuf>,
    pub limits: Limits,
    listing: Mutex<Option<(Instant, Arc<Listing>)>>,
    records: Mutex<Vec<Records>>,
    cache: Mutex<Vec<Cached>>,
}

impl Ui {
    pub fn new(roots: Vec<PathBuf>, limits: Limits) -> Ui {
        let records = roots.iter().map(|_| Records::default()).collect();
        Ui {
            roots,
            limits,
            listing: Mutex::new(None),
            records: Mutex::new(records),
            cache: Mutex::new(Vec::new()),
        }
    }

    /// The current listing (rescanned past its time to live).
    pub fn listing(&self) -> Arc<Listing> {
        let mut l = crate::pull::lock(&self.listing);
        if let Some((at, listing)) = l.as_ref()
            && at.elapsed() < LISTING_TTL
        {
            return Arc::clone(listing);
        }
        let mut records = crate::pull::lock(&self.records);
        let fresh = Arc::new(scan(&self.roots, &mut records));
        *l = Some((Instant::now(), Arc::clone(&fresh)));
        fresh
    }

    /// The file of a listed id, checked again: a regular file under its root.
    fn file(&self, id: &str) -> Result<PathBuf, Problem> {
        let listing = self.listing();
        if !listing.entries.iter().any(|e| e.id == id) {
            return Err(Problem::not_found(id));
        }
        let (ri, rel) = id.split_once('/').ok_or_else(|| Problem::not_found(id))?;
        let root = ri
            .parse::<usize>()
            .ok()
            .and_then(|i| self.roots.get(i))
            .ok_or_else(|| Problem::not_found(id))?;
        let path = root.join(rel);
        let real = std::fs::canonicalize(&path).map_err(|_| Problem::not_found(id))?;
        let meta = std::fs::symlink_metadata(&path).map_err(|_| Problem::not_found(id))?;
        if !real.starts_with(root) || !meta.is_file() {
            return Err(Problem::not_found(id));
        }
        Ok(real)
    }

    /// The decoded profile of a listed pprof id (from the cache while the file is unchanged).
    pub fn profile(&self, id: &str) -> Result<Arc<Pprof>, Problem> {
        let path = self.file(id)?;
        let meta = std::fs::metadata(&path).map_err(|_| Problem::not_found(id))?;
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        {
            let cache = crate::pull::lock(&self.cache);
            if let Some((_, _, _, p)) = cache
                .iter()
                .find(|(i, m, l, _)| i == id && (*m, *l) == stamp)
            {
                return Ok(Arc::clone(p));
            }
        }
        let p = crate::cmd::pprof::load(&path, &self.limits)
            .map_err(|e| Problem::unprocessable(format!("{id}: {e:#}")))?;
        let p = Arc::new(p);
        let mut cache = crate::pull::lock(&self.cache);
        cache.retain(|(i, _, _, _)| i != id);
        if cache.len() >= CACHE {
            cache.remove(0);
        }
        cache.push((id.to_string(), stamp.0, stamp.1, Arc::clone(&p)));
        Ok(p)
    }
}

/// A request that cannot be answered, as JSON with the reason.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    message: String,
}

impl Problem {
    fn not_found(id: &str) -> Problem {
        Problem {
            status: StatusCode::NOT_FOUND,
            message: format!("no profile {id:?} in the listing"),
        }
    }
    fn unprocessable(message: String) -> Problem {
        Problem {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message,
        }
    }
    fn bad(message: String) -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            message,
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}

type Shared = Arc<Ui>;

/// CPU work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Problem> + Send + 'static,
) -> Result<T, Problem> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(Problem {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: format!("the request failed: {e}"),
        })
    })
}

fn json(v: serde_json::Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
        .into_response()
}

fn svg(body: Vec<u8>) -> Response {
    let mut r = (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response();
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(SVG_CSP),
    );
    r
}

fn asset(ctype: &'static str, body: &'static str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, ctype)], body).into_response();
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    r
}

#[derive(Deserialize)]
struct One {
    id: String,
    sample_index: Option<String>,
    #[serde(default)]
    cum: bool,
    nodes: Option<usize>,
}

#[derive(Deserialize)]
struct Two {
    base: String,
    id: String,
    sample_index: Option<String>,
    #[serde(default)]
    cum: bool,
    #[serde(default)]
    normalize: bool,
    nodes: Option<usize>,
}

/// The listing, with an ETag of what it holds: the page asks every few seconds, and an
/// unchanged listing is a 304 rather than the whole list again.
async fn profiles(
    State(ui): State<Shared>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let listing = blocking(move || Ok(ui.listing())).await?;
    let tag = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for e in &listing.entries {
            (&e.id, e.bytes, &e.time, &e.cause, e.tags.len()).hash(&mut h);
        }
        listing.left_out.hash(&mut h);
        format!("\"{:016x}\"", h.finish())
    };
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == tag.as_bytes())
    {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response());
    }
    let body = serde_json::json!({
        "schema": 1,
        "entries": listing.entries,
        "left_out": listing.left_out,
    })
    .to_string();
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (header::CACHE_CONTROL, "no-cache".to_string()),
            (header::ETAG, tag),
        ],
        body,
    )
        .into_response())
}

/// `agentprof top --json`'s document for a listed profile, made by the same code.
async fn top(State(ui): State<Shared>, Query(q): Query<One>) -> Result<Response, Problem> {
    blocking(move || {
        let p = ui.profile(&q.id)?;
        let opts = crate::pprof::report::TopOptions {
            sample_index: q.sample_index.clone(),
            cum: q.cum,
            nodes: q.nodes.unwrap_or(0),
            ..Default::default()
        };
        let report = crate::pprof::report::top(&p, &opts).map_err(Problem::bad)?;
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "sample_types": p.sample_types().iter().map(|(t, u)| serde_json::json!({"type": t, "unit": u})).collect::<Vec<_>>(),
            "report": report,
        })))
    })
    .await
}

async fn flamegraph(State(ui): State<Shared>, Query(q): Query<One>) -> Result<Response, Problem> {
    blocking(move || {
        let p = ui.profile(&q.id)?;
        let index = p
            .sample_index(q.sample_index.as_deref())
            .map_err(Problem::bad)?;
        let title = format!("{} — {}", q.id, p.sample_types()[index].0);
        let mut out = Vec::new();
        crate::pprof::diff::write_flamegraph(&p, index, &title, &mut out)
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        Ok(svg(out))
    })
    .await
}

fn compared(ui: &Ui, q: &Two) -> Result<Pair, Problem> {
    let base = ui.profile(&q.base)?;
    let new = ui.profile(&q.id)?;
    let idx = crate::pprof::diff::common_index(&base, &new, q.sample_index.as_deref())
        .map_err(|e| Problem::bad(e.to_string()))?;
    Ok((base, new, idx))
}

/// `agentprof diff --json`'s document for two listed profiles.
async fn diff(State(ui): State<Shared>, Query(q): Query<Two>) -> Result<Response, Problem> {
    blocking(move || {
        let (base, new, _) = compared(&ui, &q)?;
        let mut report =
            crate::pprof::diff::diff(&base, &new, q.sample_index.as_deref(), q.normalize, q.cum)
                .map_err(|e| Problem::bad(e.to_string()))?;
        let rows_total = report.rows.len();
        if let Some(n) = q.nodes.filter(|&n| n > 0) {
            report.rows.truncate(n);
        }
        Ok(json(serde_json::json!({
            "schema": 1,
            "base": q.base,
            "new": q.id,
            "rows_total": rows_total,
            "report": report,
        })))
    })
    .await
}

async fn diff_flamegraph(
    State(ui): State<Shared>,
    Query(q): Query<Two>,
) -> Result<Response, Problem> {
    blocking(move || {
        let (base, new, idx) = compared(&ui, &q)?;
        let title = format!("{} vs {} — {}", q.base, q.id, new.sample_types()[idx.1].0);
        let mut out = Vec::new();
        crate::pprof::diff::write_diff_flamegraph(&base, &new, idx, q.normalize, &title, &mut out)
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        Ok(svg(out))
    })
    .await
}

#[derive(Deserialize)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
struct PstatsQuery {
    id: String,
    sort: Option<String>,
    nodes: Option<usize>,
}

/// A pstats dump as `agentprof check --pstats --json` gives a check's statistics, in the
/// order pstats' sort key names.
async fn pstats(
    State(ui): State<Shared>,
    Query(q): Query<PstatsQuery>,
) -> Result<Response, Problem> {
    blocking(move || {
        let path = ui.file(&q.id)?;
        let bytes = crate::config::read_limited(&path, ui.limits.body, "--max-size-mb")
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        let mut rows = super::pstats::read(&bytes)
            .map_err(|e| Problem::unprocessable(format!("{}: {e}", q.id)))?;
        let ordered = super::pstats::sort(&mut rows, q.sort.as_deref().unwrap_or("cumulative"))
            .map_err(Problem::bad)?;
        let top = q.nodes.filter(|n| *n > 0).unwrap_or(rows.len());
        let view = crate::render::pstats::PstatsView {
            report: super::pstats::report(&rows, top),
            top,
        };
        let mut doc = crate::render::pstats::json(&view);
        doc["ordered_by"] = ordered.into();
        doc["id"] = q.id.into();
        Ok(json(doc))
    })
    .await
}

/// The file as it is on disk, to save.
async fn download(State(ui): State<Shared>, Query(q): Query<Id>) -> Result<Response, Problem> {
    blocking(move || {
        let path = ui.file(&q.id)?;
        let bytes = crate::config::read_limited(&path, ui.limits.body, "--max-size-mb")
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        let name: String = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\')
            .collect();
        let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
            .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
        Ok((
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                ),
                (header::CONTENT_DISPOSITION, disposition),
            ],
            bytes,
        )
            .into_response())
    })
    .await
}

pub fn router(ui: Shared) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route(
            "/favicon.svg",
            get(|| async { asset("image/svg+xml", FAVICON) }),
        )
        .route("/api/profiles", get(profiles))
        .route("/api/top", get(top))
        .route("/api/flamegraph.svg", get(flamegraph))
        .route("/api/diff", get(diff))
        .route("/api/diff.svg", get(diff_flamegraph))
        .route("/api/pstats", get(pstats))
        .route("/file", get(download))
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(|| async {
            Problem {
                status: StatusCode::NOT_FOUND,
                message: "no such page".into(),
            }
        })
        .layer(axum::middleware::map_response(nosniff))
        .with_state(ui)
}

async fn nosniff(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}
