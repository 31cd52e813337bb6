//! The page's server: axum on the receiver's stack, read-only. Every request for a profile
//! names an id of the current listing (anything else is 404, so no path of the request
//! ever reaches the file system), and what a profile holds reaches the page as JSON the
//! page puts in as text, or as inferno's SVG (its names XML-escaped) in a sandboxed frame.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::reply::{Q, SVG_CSP_SANDBOXED, accepts_gzip, blocking, drawn_svg, encoded, json, svg};
use super::state::{Pair, Problem, Ui};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const FAVICON: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">\
    <rect y=\"10\" width=\"16\" height=\"6\" fill=\"#e4572e\"/><rect x=\"2\" y=\"5\" width=\"10\" \
    height=\"5\" fill=\"#f3a712\"/><rect x=\"4\" width=\"5\" height=\"5\" fill=\"#f6d55c\"/></svg>";

/// The page's own policy: its script and style only, data from this server only.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; frame-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'";
type Shared = Arc<Ui>;

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
    /// go tool pprof's name filters, as `agentprof top --focus` etc.
    focus: Option<String>,
    ignore: Option<String>,
    hide: Option<String>,
    show: Option<String>,
    /// The functions a peek or a source view is of (a regular expression).
    re: Option<String>,
    /// A flamegraph drawn upside down (the roots at the top).
    #[serde(default)]
    icicle: bool,
    /// Frames a flamegraph draws at most (100 to 200,000; default 3,000).
    frames: Option<usize>,
}

impl One {
    fn filter(&self) -> Result<crate::pprof::NameFilter, Problem> {
        crate::pprof::NameFilter::new(
            self.focus.as_deref(),
            self.ignore.as_deref(),
            self.hide.as_deref(),
            self.show.as_deref(),
        )
        .map_err(|e| Problem::bad(e.to_string()))
    }

    fn symbol(&self) -> Result<regex::Regex, Problem> {
        crate::pprof::compile_regex("re", self.re.as_deref())
            .map_err(|e| Problem::bad(e.to_string()))?
            .ok_or_else(|| Problem::bad("re: name the functions (a regular expression)"))
    }

    fn options(&self) -> crate::pprof::TopOptions {
        crate::pprof::TopOptions {
            sample_index: self.sample_index.clone(),
            cum: self.cum,
            nodes: self.nodes.unwrap_or(0),
            ..Default::default()
        }
    }
}

/// A report that found no function: 404 with go tool pprof's words; anything else is the
/// request's fault.
fn report_refused(e: crate::pprof::Error) -> Problem {
    match e {
        crate::pprof::Error::NoMatches(_) => Problem {
            status: StatusCode::NOT_FOUND,
            message: e.to_string(),
        },
        _ => Problem::bad(e),
    }
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
    Q(q): Q<Since>,
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
            let mut sent = crate::sync::lock(&ui.sent);
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

/// `agentprof top --json`'s document for a listed profile, made by the same code.
async fn top(State(ui): State<Shared>, Q(q): Q<One>) -> Result<Response, Problem> {
    blocking(move || {
        let filter = q.filter()?;
        let p = ui.profile(&q.id)?;
        let opts = q.options();
        let (report, warnings) = if filter.is_empty() {
            let r = crate::pprof::top_with(&p, p.nodes(), &opts).map_err(Problem::bad)?;
            (r, Vec::new())
        } else {
            let _room = ui.room_like(&p)?;
            crate::pprof::top_filtered(&p, &filter, &opts).map_err(Problem::bad)?
        };
        let selection = super::select::Selection::parse_id(&q.id)
            .and_then(Result::ok)
            .map(|sel| ui.selection_figures(&sel));
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "sample_types": sample_types(&p),
            "warnings": warnings,
            "selection": selection,
            "duration_nanos": p.proto.duration_nanos,
            "report": report,
        })))
    })
    .await
}

fn sample_types(p: &crate::pprof::Pprof) -> Vec<serde_json::Value> {
    p.sample_types()
        .iter()
        .map(|(t, u)| serde_json::json!({"type": t, "unit": u}))
        .collect()
}

/// `agentprof top --peek RE --json`'s report: the callers and callees of the functions
/// matching `re`.
async fn peek(State(ui): State<Shared>, Q(q): Q<One>) -> Result<Response, Problem> {
    blocking(move || {
        let (filter, symbol) = (q.filter()?, q.symbol()?);
        let p = ui.profile(&q.id)?;
        let _room = ui.room_like(&p)?;
        let (report, warnings) =
            crate::pprof::peek(&p, &filter, &symbol, &q.options()).map_err(report_refused)?;
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "warnings": warnings,
            "report": report,
        })))
    })
    .await
}

/// A flamegraph search over the whole profile (after the view's filters), folded and
/// narrow frames included: the share `go tool pprof -focus=re` keeps, of the whole total as
/// go prints it, and how many functions matched (none: the page says nothing matched).
async fn find(State(ui): State<Shared>, Q(q): Q<One>) -> Result<Response, Problem> {
    blocking(move || {
        let (filter, re) = (q.filter()?, q.symbol()?);
        let p = ui.profile(&q.id)?;
        let index = p
            .sample_index(q.sample_index.as_deref())
            .map_err(Problem::bad)?;
        let whole = crate::pprof::find_matching(&p, &re, index);
        let found = if filter.is_empty() {
            whole
        } else {
            let _room = ui.room_like(&p)?;
            crate::pprof::find_matching(&filter.apply(&p).0, &re, index)
        };
        let share = if whole.total == 0 {
            0.0
        } else {
            found.matched as f64 / whole.total as f64
        };
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "re": re.as_str(),
            "sample_type": p.sample_types()[index].0,
            "matched": found.matched as f64,
            "total": whole.total as f64,
            "share": share,
            "functions": found.functions,
        })))
    })
    .await
}

/// `agentprof top --list RE --json`'s report: the source lines of the functions matching
/// `re`, their text read only under `ui --source-path`.
async fn source(State(ui): State<Shared>, Q(q): Q<One>) -> Result<Response, Problem> {
    blocking(move || {
        let (filter, symbol) = (q.filter()?, q.symbol()?);
        let p = ui.profile(&q.id)?;
        let _room = ui.room_like(&p)?;
        // Without --source-path, the source files at the paths the profile records (on a
        // loopback address only: a page others reach reads only what --source-path gives).
        let access = if ui.sources.is_empty() && ui.local {
            crate::pprof::SourceAccess::Recorded
        } else {
            crate::pprof::SourceAccess::Within(ui.sources.clone())
        };
        let (mut report, warnings) =
            crate::pprof::list(&p, &filter, &symbol, q.sample_index.as_deref(), &access)
                .map_err(report_refused)?;
        for r in &mut report.routines {
            if let Some(e) = r.error.take() {
                r.error = Some(ui.scrub(&e));
            }
        }
        Ok(json(serde_json::json!({
            "schema": 1,
            "id": q.id,
            "warnings": warnings,
            "sources": match (ui.sources.is_empty(), ui.local) {
                (false, _) => "source_path",
                (true, true) => "recorded",
                (true, false) => "none",
            },
            "report": report,
        })))
    })
    .await
}

async fn flamegraph(
    State(ui): State<Shared>,
    Q(q): Q<One>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let filter = q.filter()?;
        let frames = q.frames.unwrap_or(super::state::MAX_FRAMES);
        let out = if filter.is_empty() {
            ui.flamegraph(&q.id, q.sample_index.as_deref(), (q.icicle, frames))?
        } else {
            Arc::new(ui.flamegraph_filtered(
                &q.id,
                q.sample_index.as_deref(),
                &filter,
                (q.icicle, frames),
            )?)
        };
        Ok(drawn_svg(&out, gzip))
    })
    .await
}

fn compared(ui: &Ui, q: &Two) -> Result<Pair, Problem> {
    let base = ui.profile(&q.base)?;
    let new = ui.profile_beside(&q.id, base.held())?;
    let idx = crate::pprof::common_index(&base, &new, q.sample_index.as_deref())
        .map_err(|e| Problem::bad(e.to_string()))?;
    Ok((base, new, idx))
}

/// `agentprof diff --json`'s document for two listed profiles.
async fn diff(State(ui): State<Shared>, Q(q): Q<Two>) -> Result<Response, Problem> {
    blocking(move || {
        let (base, new, _) = compared(&ui, &q)?;
        let mut report = crate::pprof::diff_with(
            [(&base.p, base.nodes()), (&new.p, new.nodes())],
            q.sample_index.as_deref(),
            q.normalize,
            q.cum,
        )
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
    Q(q): Q<Two>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let (base, new, idx) = compared(&ui, &q)?;
        let title = format!(
            "{} vs {} — {}",
            ui.label(&q.base),
            ui.label(&q.id),
            new.sample_types()[idx.1].0
        );
        let mut out = Vec::new();
        crate::pprof::write_diff_flamegraph(&base, &new, idx, q.normalize, &title, &mut out)
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
async fn pstats(State(ui): State<Shared>, Q(q): Q<PstatsQuery>) -> Result<Response, Problem> {
    blocking(move || {
        let (_, bytes) = ui.bytes(&q.id)?;
        let mut rows = super::pstats::read(&bytes)
            .map_err(|e| Problem::unprocessable(format!("{}: {e}", q.id)))?;
        let ordered = super::pstats::sort(&mut rows, q.sort.as_deref().unwrap_or("cumulative"))
            .map_err(Problem::bad)?;
        let top = q.nodes.filter(|n| *n > 0).unwrap_or(rows.len());
        let view = crate::render::pstats::PstatsView {
            warm_up: false,
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
    Q(q): Q<Id>,
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
        opts.title = format!("{} — cumulative time", ui.label(&q.id));
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
async fn download(State(ui): State<Shared>, Q(q): Q<Id>) -> Result<Response, Problem> {
    blocking(move || {
        let (name, bytes) = match super::select::Selection::parse_id(&q.id) {
            Some(sel) => super::timeline::merged_file(&ui, &sel.map_err(Problem::bad)?)?,
            None => {
                let (path, bytes) = ui.bytes(&q.id)?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, bytes)
            }
        };
        let name: String = name
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
        .route("/api/series", get(super::timeline::series))
        .route("/api/sandwich.svg", get(super::views::sandwich))
        .route("/api/graph.svg", get(super::views::call_graph))
        .route("/api/flamegraph.svg", get(flamegraph))
        .route("/api/peek", get(peek))
        .route("/api/match", get(find))
        .route("/api/source", get(source))
        .route("/api/diff", get(diff))
        .route("/api/diff.svg", get(diff_flamegraph))
        .route("/api/pstats", get(pstats))
        .route("/api/pstats.svg", get(pstats_flamegraph))
        .route("/file", get(download))
        .route("/healthz", get(|| async { "ok\n" }))
        .merge(super::pyroscope::routes())
        .fallback(|| async {
            Problem {
                status: StatusCode::NOT_FOUND,
                message: "no such page".into(),
            }
        })
        .layer(axum::middleware::map_response(nosniff))
        .layer(axum::middleware::from_fn(sandbox_svgs))
        .with_state(ui)
}

/// An SVG not loaded into a frame (`Sec-Fetch-Dest` other than `iframe`, or none said) gets
/// the CSP sandbox: opened at its own URL, its script has no origin of the page's.
async fn sandbox_svgs(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let framed = req
        .headers()
        .get("sec-fetch-dest")
        .is_some_and(|v| v.as_bytes() == b"iframe");
    let mut r = next.run(req).await;
    let svg = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"image/svg+xml");
    if svg && !framed {
        r.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(SVG_CSP_SANDBOXED),
        );
    }
    r
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
