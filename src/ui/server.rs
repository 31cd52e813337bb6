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
use crate::pprof::report::Nodes;

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

/// A decoded profile and its report nodes, built once for its top table and its flamegraphs
/// (the page asks for both at once).
pub struct Loaded {
    pub p: Pprof,
    nodes: std::sync::OnceLock<Nodes>,
}

impl Loaded {
    pub fn nodes(&self) -> &Nodes {
        self.nodes.get_or_init(|| Nodes::new(&self.p))
    }
}

impl std::ops::Deref for Loaded {
    type Target = Pprof;
    fn deref(&self) -> &Pprof {
        &self.p
    }
}

/// A decoded profile with the id, mtime and length it was read at.
type Cached = (String, std::time::SystemTime, u64, Arc<Loaded>);
/// A flamegraph drawn: of which decoded profile, which sample type, the SVG.
type Drawn = (Arc<Loaded>, usize, Arc<Vec<u8>>);
/// Two profiles to compare and the sample types compared.
type Pair = (Arc<Loaded>, Arc<Loaded>, (usize, usize));

pub struct Ui {
    pub roots: Vec<PathBuf>,
    pub limits: Limits,
    listing: Mutex<Option<(Instant, Arc<Listing>)>>,
    /// The last few listings sent, by ETag: a page that has one is sent what changed.
    sent: Mutex<std::collections::VecDeque<(String, Arc<Listing>)>>,
    records: Mutex<Vec<Records>>,
    cache: Mutex<Vec<Cached>>,
    /// Flamegraphs drawn lately: of which decoded profile, which sample type.
    drawn: Mutex<Vec<Drawn>>,
    /// Ids being decoded, each with the lock its other askers wait on.
    loading: Mutex<std::collections::HashMap<String, Arc<Mutex<()>>>>,
}

impl Ui {
    pub fn new(roots: Vec<PathBuf>, limits: Limits) -> Ui {
        let records = roots.iter().map(|_| Records::default()).collect();
        Ui {
            roots,
            limits,
            listing: Mutex::new(None),
            sent: Mutex::new(std::collections::VecDeque::new()),
            records: Mutex::new(records),
            cache: Mutex::new(Vec::new()),
            loading: Mutex::new(std::collections::HashMap::new()),
            drawn: Mutex::new(Vec::new()),
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

    /// The bytes of a listed id's file, read within the size limit; its path too.
    fn bytes(&self, id: &str) -> Result<(PathBuf, Vec<u8>), Problem> {
        let path = self.file(id)?;
        let bytes = crate::config::read_limited(&path, self.limits.body, "--max-size-mb")
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        Ok((path, bytes))
    }

    /// What `cached` finds, else `make`'s, made by one request at a time per `key`: the
    /// page asks for a profile's table and flamegraph at once, and for the flamegraph twice
    /// (ahead, then in its frame); one does the work, the others wait for it and find it.
    fn once<T>(
        &self,
        key: String,
        cached: impl Fn() -> Option<T>,
        make: impl FnOnce() -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        if let Some(v) = cached() {
            return Ok(v);
        }
        let gate = Arc::clone(
            crate::pull::lock(&self.loading)
                .entry(key.clone())
                .or_default(),
        );
        let made = {
            let _one = crate::pull::lock(&gate);
            match cached() {
                Some(v) => Ok(v),
                None => make(),
            }
        };
        let mut loading = crate::pull::lock(&self.loading);
        if loading.get(&key).is_some_and(|g| Arc::ptr_eq(g, &gate)) {
            loading.remove(&key);
        }
        made
    }

    /// The decoded profile of a listed pprof id (from the cache while the file is unchanged).
    pub fn profile(&self, id: &str) -> Result<Arc<Loaded>, Problem> {
        let path = self.file(id)?;
        let meta = std::fs::metadata(&path).map_err(|_| Problem::not_found(id))?;
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        let cached = || {
            let cache = crate::pull::lock(&self.cache);
            cache
                .iter()
                .find(|(i, m, l, _)| i == id && (*m, *l) == stamp)
                .map(|(_, _, _, p)| Arc::clone(p))
        };
        self.once(format!("profile {id}"), cached, || {
            let p = crate::pprof::load(&path, &self.limits)
                .map_err(|e| Problem::unprocessable(format!("{id}: {e:#}")))?;
            let p = Arc::new(Loaded {
                p,
                nodes: std::sync::OnceLock::new(),
            });
            let mut cache = crate::pull::lock(&self.cache);
            cache.retain(|(i, _, _, _)| i != id);
            if cache.len() >= CACHE {
                cache.remove(0);
            }
            cache.push((id.to_string(), stamp.0, stamp.1, Arc::clone(&p)));
            Ok(p)
        })
    }

    /// The flamegraph of a listed profile's sample type (`None`: the default), from the
    /// last few drawn while the profile is unchanged.
    pub fn flamegraph(
        &self,
        id: &str,
        sample_index: Option<&str>,
    ) -> Result<Arc<Vec<u8>>, Problem> {
        let p = self.profile(id)?;
        let index = p.sample_index(sample_index).map_err(Problem::bad)?;
        let cached = || {
            crate::pull::lock(&self.drawn)
                .iter()
                .find(|(pp, i, _)| Arc::ptr_eq(pp, &p) && *i == index)
                .map(|(_, _, svg)| Arc::clone(svg))
        };
        self.once(format!("flamegraph {index} {id}"), cached, || {
            let title = format!("{id} — {}", p.sample_types()[index].0);
            let mut out = Vec::new();
            crate::pprof::diff::write_flamegraph_with(&p, p.nodes(), index, &title, &mut out)
                .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
            let out = Arc::new(out);
            let mut drawn = crate::pull::lock(&self.drawn);
            if drawn.len() >= CACHE {
                drawn.remove(0);
            }
            drawn.push((Arc::clone(&p), index, Arc::clone(&out)));
            Ok(out)
        })
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

fn svg(body: Vec<u8>, gzip: bool) -> Response {
    let mut r = encoded(body, gzip);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
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

/// Listings kept to answer `?since=` with what changed.
const SENT: usize = 4;

#[derive(serde::Deserialize)]
struct Since {
    since: Option<String>,
}

/// The listing, with an ETag of what it holds: the page asks every few seconds; an unchanged
/// listing is a 304, and a page that names the listing it has (`?since=ETAG`, one of the
/// last few) is sent only the entries added or changed and the ids removed.
async fn profiles(
    State(ui): State<Shared>,
    Query(q): Query<Since>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let listing = ui.listing();
        let tag = listing.tag();
        if headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| v.as_bytes() == tag.as_bytes())
            || q.since.as_deref() == Some(tag.as_str())
        {
            return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response());
        }
        let old = {
            let mut sent = crate::pull::lock(&ui.sent);
            if !sent.iter().any(|(t, _)| *t == tag) {
                if sent.len() == SENT {
                    sent.pop_front();
                }
                sent.push_back((tag.clone(), Arc::clone(&listing)));
            }
            q.since
                .as_ref()
                .and_then(|s| sent.iter().find(|(t, _)| t == s))
                .map(|(_, l)| Arc::clone(l))
        };
        let body = match old {
            Some(old) => {
                let (changed, removed) = listing.changes_since(&old);
                serde_json::json!({
                    "schema": 1,
                    "since": q.since,
                    "changed": changed,
                    "removed": removed,
                    "count": listing.entries.len(),
                    "left_out": listing.left_out,
                })
            }
            None => serde_json::json!({
                "schema": 1,
                "entries": listing.entries,
                "left_out": listing.left_out,
            }),
        }
        .to_string();
        let mut r = encoded(body.into_bytes(), gzip);
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-cache"),
        );
        if let Ok(v) = header::HeaderValue::from_str(&tag) {
            h.insert(header::ETAG, v);
        }
        Ok(r)
    })
    .await
}

/// The client takes gzip (`Accept-Encoding`, without `gzip;q=0`).
fn accepts_gzip(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|c| {
            let mut parts = c.split(';').map(str::trim);
            parts.next().is_some_and(|n| n.eq_ignore_ascii_case("gzip"))
                && !parts.any(|p| p.replace(' ', "") == "q=0")
        })
}

/// A body, gzip-compressed when the client takes it and it is worth it (listings and
/// flamegraphs are megabytes of repetitive text).
fn encoded(body: Vec<u8>, gzip: bool) -> Response {
    if gzip && body.len() > 4096 {
        let z = crate::pprof::gzip_fast(&body);
        let mut r = z.into_response();
        r.headers_mut().insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static("gzip"),
        );
        r.headers_mut().insert(
            header::VARY,
            header::HeaderValue::from_static("accept-encoding"),
        );
        r
    } else {
        body.into_response()
    }
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
        let report = crate::pprof::report::top_with(&p, p.nodes(), &opts).map_err(Problem::bad)?;
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "sample_types": p.sample_types().iter().map(|(t, u)| serde_json::json!({"type": t, "unit": u})).collect::<Vec<_>>(),
            "report": report,
        })))
    })
    .await
}

async fn flamegraph(
    State(ui): State<Shared>,
    Query(q): Query<One>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let out = ui.flamegraph(&q.id, q.sample_index.as_deref())?;
        Ok(svg(out.to_vec(), gzip))
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
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let (base, new, idx) = compared(&ui, &q)?;
        let title = format!("{} vs {} — {}", q.base, q.id, new.sample_types()[idx.1].0);
        let mut out = Vec::new();
        crate::pprof::diff::write_diff_flamegraph(&base, &new, idx, q.normalize, &title, &mut out)
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        Ok(svg(out, gzip))
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
        let (_, bytes) = ui.bytes(&q.id)?;
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

/// A flamegraph of a pstats dump's call tree (see [`super::pstats::call_tree`]: drawn from
/// its caller edges, which is all a dump holds).
async fn pstats_flamegraph(
    State(ui): State<Shared>,
    Query(q): Query<Id>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let (_, bytes) = ui.bytes(&q.id)?;
        let dump = super::pstats::read_dump(&bytes)
            .map_err(|e| Problem::unprocessable(format!("{}: {e}", q.id)))?;
        let lines = super::pstats::call_tree(&dump);
        if lines.is_empty() {
            return Err(Problem::unprocessable(format!(
                "{}: no time recorded: nothing to draw",
                q.id
            )));
        }
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = format!("{} — cumulative time", q.id);
        opts.count_name = "microseconds".to_string();
        opts.subtitle = Some(
            "a call tree from pstats' caller edges: each callee's time shared out by its callers' (a dump records no stacks)"
                .to_string(),
        );
        let mut out = Vec::new();
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut out)
            .map_err(|e| Problem::unprocessable(format!("cannot draw the flamegraph: {e}")))?;
        Ok(svg(out, gzip))
    })
    .await
}

/// The file as it is on disk, to save.
async fn download(State(ui): State<Shared>, Query(q): Query<Id>) -> Result<Response, Problem> {
    blocking(move || {
        let (path, bytes) = ui.bytes(&q.id)?;
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
        .route("/api/pstats.svg", get(pstats_flamegraph))
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
