//! Pyroscope's query API (`querier.v1.QuerierService`, Connect's unary protocol: a POST of
//! the request message as `application/proto` or `application/json`, the answer in the
//! same encoding, an error as `{"code", "message"}`), on the ui's listener and behind its
//! Host checks, so Grafana's Pyroscope data source and `profilecli` read agentprof's
//! captures: ProfileTypes, LabelNames, LabelValues, Series, SelectSeries,
//! SelectMergeStacktraces, SelectMergeProfile and Diff. A capture's labels are
//! `service_name`, `__name__` and its tags (namespace, pod, container, cause, the record's
//! tags); merges are the ui's own (go tool pprof's merge), within its memory budget.

pub mod proto;
mod query;
mod series;
mod tree;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::index::Entry;
use super::reply::blocking;
use super::select::{LabelMatcher, Selection, instant, labels_of, pyroscope_name};
use super::state::{Loaded, Problem, Ui};
use query::Invalid;

type Shared = Arc<Ui>;

/// Nodes of a flamegraph when the request names none (Pyroscope's default), and the most
/// one may ask for.
const DEFAULT_NODES: usize = 8192;
const MAX_NODES: i64 = 1 << 20;
/// Points of one series at most (Prometheus's bound on a range query).
pub(super) const MAX_POINTS: f64 = 11_000.0;
/// A request's body at most, inflated.
const MAX_REQUEST: usize = 1 << 20;

/// The routes, added to the ui's router.
pub fn routes() -> axum::Router<Shared> {
    axum::Router::new().route(
        "/querier.v1.QuerierService/{method}",
        axum::routing::post(call),
    )
}

/// A Connect error: its code (which gives the HTTP status) and what is wrong.
#[derive(Debug)]
pub struct Failed {
    code: &'static str,
    message: String,
}

impl Failed {
    pub(super) fn invalid(message: impl Into<String>) -> Failed {
        Failed {
            code: "invalid_argument",
            message: message.into(),
        }
    }

    pub(super) fn unimplemented(message: impl Into<String>) -> Failed {
        Failed {
            code: "unimplemented",
            message: message.into(),
        }
    }
}

impl From<Invalid> for Failed {
    fn from(e: Invalid) -> Failed {
        Failed::invalid(e.0)
    }
}

impl From<Problem> for Failed {
    fn from(p: Problem) -> Failed {
        let code = match p.status.as_u16() {
            400 | 413 | 422 => "invalid_argument",
            404 => "not_found",
            429 | 503 => "unavailable",
            _ => "internal",
        };
        Failed {
            code,
            message: p.message,
        }
    }
}

impl IntoResponse for Failed {
    fn into_response(self) -> Response {
        let status = match self.code {
            "invalid_argument" => StatusCode::BAD_REQUEST,
            "not_found" => StatusCode::NOT_FOUND,
            "unimplemented" => StatusCode::NOT_IMPLEMENTED,
            "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = serde_json::json!({"code": self.code, "message": self.message}).to_string();
        (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Codec {
    Proto,
    Json,
}

/// The request's encoding, from its Content-Type; anything else (a form a web page could
/// post across sites, Connect's streaming types) is refused.
fn codec(headers: &HeaderMap) -> Result<Codec, Failed> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let base = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match base.as_str() {
        "application/proto" | "application/protobuf" | "application/x-protobuf" => Ok(Codec::Proto),
        "application/json" => Ok(Codec::Json),
        _ => Err(Failed::invalid(format!(
            "Content-Type {ct:?}: Connect's unary application/proto or application/json"
        ))),
    }
}

/// The body as sent, inflated when it says gzip, within `MAX_REQUEST`.
fn body_of(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, Failed> {
    let enc = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let raw = match enc.as_str() {
        "identity" | "" => body.to_vec(),
        "gzip" => {
            use std::io::Read;
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .take(MAX_REQUEST as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| Failed::invalid(format!("the gzip body: {e}")))?;
            out
        }
        other => {
            return Err(Failed::unimplemented(format!(
                "Content-Encoding {other}: identity or gzip"
            )));
        }
    };
    if raw.len() > MAX_REQUEST {
        return Err(Failed::invalid(format!(
            "the request is over {MAX_REQUEST} bytes"
        )));
    }
    Ok(raw)
}

fn decode<T: prost::Message + Default + DeserializeOwned>(
    codec: Codec,
    body: &[u8],
) -> Result<T, Failed> {
    match codec {
        Codec::Proto => {
            T::decode(body).map_err(|e| Failed::invalid(format!("the request message: {e}")))
        }
        Codec::Json if body.iter().all(u8::is_ascii_whitespace) => Ok(T::default()),
        Codec::Json => serde_json::from_slice(body)
            .map_err(|e| Failed::invalid(format!("the request message: {e}"))),
    }
}

fn answer<T: prost::Message + Serialize>(codec: Codec, m: &T) -> Response {
    match codec {
        Codec::Proto => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/proto"),
            )],
            m.encode_to_vec(),
        )
            .into_response(),
        Codec::Json => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            serde_json::to_vec(m).unwrap_or_default(),
        )
            .into_response(),
    }
}

async fn call(
    State(ui): State<Shared>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let run = move || -> Result<Response, Problem> {
        Ok(match dispatch(&ui, &method, &headers, &body) {
            Ok(r) => r,
            Err(f) => f.into_response(),
        })
    };
    match blocking(run).await {
        Ok(r) => r,
        Err(p) => Failed::from(p).into_response(),
    }
}

fn dispatch(ui: &Ui, method: &str, headers: &HeaderMap, body: &[u8]) -> Result<Response, Failed> {
    ui.touch();
    let c = codec(headers)?;
    let body = body_of(headers, body)?;
    match method {
        "ProfileTypes" => Ok(answer(c, &profile_types(ui, decode(c, &body)?)?)),
        "LabelNames" => Ok(answer(c, &label_names(ui, decode(c, &body)?)?)),
        "LabelValues" => Ok(answer(c, &label_values(ui, decode(c, &body)?)?)),
        "Series" => Ok(answer(c, &series(ui, decode(c, &body)?)?)),
        "SelectSeries" => Ok(answer(c, &series::select_series(ui, decode(c, &body)?)?)),
        "SelectMergeStacktraces" => Ok(answer(c, &merge_stacktraces(ui, decode(c, &body)?)?)),
        "SelectMergeProfile" => {
            let p = merge_profile(ui, decode(c, &body)?)?;
            Ok(match c {
                Codec::Proto => (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/proto"),
                    )],
                    prost::Message::encode_to_vec(&p),
                )
                    .into_response(),
                Codec::Json => (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    proto::profile_json(&p).to_string(),
                )
                    .into_response(),
            })
        }
        "Diff" => Ok(answer(c, &diff(ui, decode(c, &body)?)?)),
        "SelectMergeSpanProfile" | "SelectHeatmap" | "GetProfileStats" | "AnalyzeQuery" => {
            Err(Failed::unimplemented(format!(
                "{method}: agentprof keeps no spans, heatmaps or stats"
            )))
        }
        other => Err(Failed::unimplemented(format!(
            "querier.v1.QuerierService/{other}: no such method"
        ))),
    }
}

/// Whether a capture's time is in `start..=end` (ms; 0 is open).
fn in_range(e: &Entry, (from, to): (Option<jiff::Timestamp>, Option<jiff::Timestamp>)) -> bool {
    if from.is_none() && to.is_none() {
        return true;
    }
    instant(&e.time).is_some_and(|t| from.is_none_or(|f| t >= f) && to.is_none_or(|to| t <= to))
}

/// The listed pprof captures in the range that any of the selectors takes (all when none).
fn matching<'a>(
    entries: &'a [Entry],
    selectors: &[Vec<LabelMatcher>],
    range: (Option<jiff::Timestamp>, Option<jiff::Timestamp>),
) -> impl Iterator<Item = (&'a Entry, Vec<(String, String)>)> {
    let selectors = selectors.to_vec();
    entries
        .iter()
        .filter(move |e| e.kind == "pprof" && in_range(e, range))
        .filter_map(move |e| {
            let labels = labels_of(e);
            (selectors.is_empty()
                || selectors
                    .iter()
                    .any(|s| s.iter().all(|m| m.matches(&labels))))
            .then_some((e, labels))
        })
}

fn profile_types(
    ui: &Ui,
    req: proto::ProfileTypesRequest,
) -> Result<proto::ProfileTypesResponse, Failed> {
    let range = query::range(req.start, req.end)?;
    let listing = ui.listing();
    // The latest capture of each type says its sample types and period.
    let mut latest: std::collections::BTreeMap<&str, &Entry> = std::collections::BTreeMap::new();
    for (e, _) in matching(&listing.entries, &[], range) {
        let t = latest.entry(e.profile_type.as_str()).or_insert(e);
        if e.time > t.time {
            *t = e;
        }
    }
    let mut out = Vec::new();
    for (t, e) in latest {
        // A capture that cannot be read names nothing (the listing shows it).
        let Ok(p) = ui.profile(&e.id) else { continue };
        let (pt, pu) = p
            .proto
            .period_type
            .map(|v| (p.str(v.r#type).to_string(), p.str(v.unit).to_string()))
            .unwrap_or_default();
        let name = pyroscope_name(t);
        for (st, su) in p.sample_types() {
            out.push(proto::ProfileType {
                id: format!("{name}:{st}:{su}:{pt}:{pu}"),
                name: name.clone(),
                sample_type: st.to_string(),
                sample_unit: su.to_string(),
                period_type: pt.clone(),
                period_unit: pu.clone(),
            });
        }
    }
    Ok(proto::ProfileTypesResponse { profile_types: out })
}

fn label_names(ui: &Ui, req: proto::LabelNamesRequest) -> Result<proto::Names, Failed> {
    let selectors = query::matchers_of(&req.matchers)?;
    let range = query::range(req.start, req.end)?;
    let listing = ui.listing();
    let mut names = std::collections::BTreeSet::new();
    for (_, labels) in matching(&listing.entries, &selectors, range) {
        names.extend(labels.into_iter().map(|(k, _)| k));
    }
    Ok(proto::Names {
        names: names.into_iter().collect(),
    })
}

fn label_values(ui: &Ui, req: proto::LabelValuesRequest) -> Result<proto::Names, Failed> {
    if req.name.is_empty() {
        return Err(Failed::invalid("name: the label whose values to list"));
    }
    let selectors = query::matchers_of(&req.matchers)?;
    let range = query::range(req.start, req.end)?;
    let listing = ui.listing();
    let mut values = std::collections::BTreeSet::new();
    for (_, labels) in matching(&listing.entries, &selectors, range) {
        values.extend(
            labels
                .into_iter()
                .filter(|(k, _)| *k == req.name)
                .map(|(_, v)| v),
        );
    }
    Ok(proto::Names {
        names: values.into_iter().collect(),
    })
}

fn series(ui: &Ui, req: proto::SeriesRequest) -> Result<proto::SeriesResponse, Failed> {
    let selectors = query::matchers_of(&req.matchers)?;
    let range = query::range(req.start, req.end)?;
    let listing = ui.listing();
    let mut sets = std::collections::BTreeSet::new();
    for (_, mut labels) in matching(&listing.entries, &selectors, range) {
        if !req.label_names.is_empty() {
            labels.retain(|(k, _)| req.label_names.contains(k));
        }
        labels.sort();
        sets.insert(labels);
    }
    Ok(proto::SeriesResponse {
        labels_set: sets
            .into_iter()
            .map(|l| proto::Labels {
                labels: l
                    .into_iter()
                    .map(|(name, value)| proto::LabelPair { name, value })
                    .collect(),
            })
            .collect(),
    })
}

/// The nodes a flamegraph request asks for, checked.
fn max_nodes(n: Option<i64>) -> Result<usize, Failed> {
    match n {
        None | Some(0) => Ok(DEFAULT_NODES),
        Some(n) if (1..=MAX_NODES).contains(&n) => Ok(n as usize),
        Some(n) => Err(Failed::invalid(format!(
            "max_nodes {n}: between 1 and {MAX_NODES}"
        ))),
    }
}

/// Profile ids select single profiles Pyroscope stored; agentprof's captures have none.
fn no_profile_ids(ids: &[String]) -> Result<(), Failed> {
    if ids.is_empty() {
        return Ok(());
    }
    Err(Failed::unimplemented(
        "profile_id_selector: agentprof's captures have no profile ids; select them by labels and time",
    ))
}

/// A stack trace selector's call site (root first); Go PGO's selector is not answered.
fn call_site(s: &Option<proto::StackTraceSelector>) -> Result<Vec<String>, Failed> {
    match s {
        None => Ok(Vec::new()),
        Some(s) if s.go_pgo.is_some() => Err(Failed::unimplemented(
            "stack_trace_selector.go_pgo: agentprof selects by call site only",
        )),
        Some(s) => Ok(s.call_site.iter().map(|l| l.name.clone()).collect()),
    }
}

/// A profile type no listed capture has is a mistake of the query (an empty answer would
/// look like no data in the range).
pub(super) fn known_type(entries: &[Entry], sel: &Selection, id: &str) -> Result<(), Failed> {
    if entries
        .iter()
        .any(|e| e.kind == "pprof" && e.profile_type == sel.profile_type)
    {
        return Ok(());
    }
    Err(Failed::invalid(format!(
        "profile_typeID {id:?}: no listed capture is of type {} (ProfileTypes lists those there are)",
        sel.profile_type
    )))
}

/// The merged captures of a selection (None: no capture is in it) and the index of
/// `sample_type` in it.
fn merged(
    ui: &Ui,
    sel: &Selection,
    tid: &query::TypeId,
) -> Result<Option<(Arc<Loaded>, usize)>, Failed> {
    let sample_type = tid.sample_type.as_str();
    let listing = ui.listing();
    known_type(&listing.entries, sel, &tid.id)?;
    if sel.captures(&listing.entries).is_empty() {
        return Ok(None);
    }
    drop(listing);
    let id = format!("pyroscope:{sel:?}");
    let p = ui.merged(&id, sel, 0)?;
    let types = p.sample_types();
    let Some(i) = types.iter().position(|(t, _)| *t == sample_type) else {
        let have: Vec<&str> = types.iter().map(|(t, _)| *t).collect();
        return Err(Failed::invalid(format!(
            "sample type {sample_type:?} is not in the {} captures: they hold {}",
            sel.profile_type,
            have.join(", ")
        )));
    };
    Ok(Some((p, i)))
}

fn merge_stacktraces(
    ui: &Ui,
    req: proto::SelectMergeStacktracesRequest,
) -> Result<proto::SelectMergeStacktracesResponse, Failed> {
    if req.format == 2 {
        return Err(Failed::unimplemented(
            "format PROFILE_FORMAT_TREE: agentprof answers the flamegraph format",
        ));
    }
    no_profile_ids(&req.profile_id_selector)?;
    let tid = query::type_id(&req.profile_type_id)?;
    let sel = query::selection(&tid.profile_type, &req.label_selector, req.start, req.end)?;
    let nodes = max_nodes(req.max_nodes)?;
    let site = call_site(&req.stack_trace_selector)?;
    let mut t = tree::Tree::new();
    if let Some((p, i)) = merged(ui, &sel, &tid)? {
        t.add(&p, i, 0, &site);
    }
    Ok(proto::SelectMergeStacktracesResponse {
        flamegraph: Some(t.flamegraph(nodes)),
        tree: Vec::new(),
    })
}

fn merge_profile(
    ui: &Ui,
    req: proto::SelectMergeProfileRequest,
) -> Result<crate::pprof::proto::Profile, Failed> {
    no_profile_ids(&req.profile_id_selector)?;
    let tid = query::type_id(&req.profile_type_id)?;
    let sel = query::selection(&tid.profile_type, &req.label_selector, req.start, req.end)?;
    let nodes = match req.max_nodes {
        None | Some(0) => None,
        n => Some(max_nodes(n)?),
    };
    let site = call_site(&req.stack_trace_selector)?;
    Ok(match merged(ui, &sel, &tid)? {
        Some((p, i)) => tree::one_type(&p, i, &site, nodes),
        None => crate::pprof::proto::Profile::default(),
    })
}

fn diff(ui: &Ui, req: proto::DiffRequest) -> Result<proto::DiffResponse, Failed> {
    let (Some(left), Some(right)) = (req.left, req.right) else {
        return Err(Failed::invalid(
            "left and right: the two selections to compare",
        ));
    };
    let mut t = tree::Tree::new();
    let mut nodes = DEFAULT_NODES;
    let mut sample_types = Vec::new();
    for (side, r) in [left, right].into_iter().enumerate() {
        no_profile_ids(&r.profile_id_selector)?;
        let tid = query::type_id(&r.profile_type_id)?;
        let sel = query::selection(&tid.profile_type, &r.label_selector, r.start, r.end)?;
        nodes = nodes.max(max_nodes(r.max_nodes)?);
        let site = call_site(&r.stack_trace_selector)?;
        if let Some((p, i)) = merged(ui, &sel, &tid)? {
            t.add(&p, i, side, &site);
        }
        sample_types.push((tid.sample_type, tid.sample_unit));
    }
    if sample_types[0] != sample_types[1] {
        return Err(Failed::invalid(format!(
            "left is {}:{}, right {}:{}: a diff compares one sample type",
            sample_types[0].0, sample_types[0].1, sample_types[1].0, sample_types[1].1
        )));
    }
    Ok(proto::DiffResponse {
        flamegraph: Some(t.diff(nodes)),
    })
}
