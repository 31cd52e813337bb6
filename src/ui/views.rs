//! The views beside a profile's flamegraph: a sandwich of one function (its callers and its
//! callees, each a flamegraph) and the call graph, of a listed profile or a merged range,
//! after the page's name filters.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;

use super::reply::{Q, accepts_gzip, blocking, svg as svg_reply};
use super::state::{Problem, Ui};

#[derive(Deserialize)]
pub struct ViewQuery {
    id: String,
    sample_index: Option<String>,
    focus: Option<String>,
    ignore: Option<String>,
    hide: Option<String>,
    show: Option<String>,
    /// The sandwich's functions (a regular expression).
    re: Option<String>,
    /// `callers` or `callees`.
    side: Option<String>,
    /// The call graph's nodes (default 40, at most 400).
    nodes: Option<usize>,
}

/// The profile a view is of, after the name filters (a filtered copy held within the
/// budget while it is drawn), with its report nodes and the sample type's index.
fn viewed(
    ui: &Ui,
    q: &ViewQuery,
    draw: impl FnOnce(
        &crate::pprof::Pprof,
        &crate::pprof::Nodes,
        usize,
        String,
    ) -> Result<Vec<u8>, Problem>,
) -> Result<Vec<u8>, Problem> {
    let filter = crate::pprof::NameFilter::new(
        q.focus.as_deref(),
        q.ignore.as_deref(),
        q.hide.as_deref(),
        q.show.as_deref(),
    )
    .map_err(|e| Problem::bad(e.to_string()))?;
    let p = ui.profile(&q.id)?;
    let index = p
        .sample_index(q.sample_index.as_deref())
        .map_err(Problem::bad)?;
    let title = format!("{} — {}", ui.label(&q.id), p.sample_types()[index].0);
    if filter.is_empty() {
        return draw(&p, p.nodes(), index, title);
    }
    let _room = ui.room_like(&p)?;
    let (kept, _) = filter.apply(&p);
    let nodes = crate::pprof::Nodes::new(&kept);
    draw(&kept, &nodes, index, format!("{title} (filtered)"))
}

/// `GET /api/sandwich.svg?id=&re=&side=callers|callees&sample_index=&focus=…`: one half of
/// the sandwich of the functions `re` matches.
pub async fn sandwich(
    State(ui): State<Arc<Ui>>,
    Q(q): Q<ViewQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        if q.nodes.is_some() {
            return Err(Problem::bad(
                "nodes= sizes the call graph (/api/graph.svg); a sandwich has no nodes to bound",
            ));
        }
        let re = crate::pprof::compile_regex("re", q.re.as_deref())
            .map_err(|e| Problem::bad(e.to_string()))?
            .ok_or_else(|| Problem::bad("re: name the function (a regular expression)"))?;
        let side = match q.side.as_deref() {
            Some("callers") | None => crate::pprof::Side::Callers,
            Some("callees") => crate::pprof::Side::Callees,
            Some(other) => {
                return Err(Problem::bad(format!("side={other:?}: callers or callees")));
            }
        };
        let svg = viewed(&ui, &q, |p, nodes, index, title| {
            let mut out = Vec::new();
            let title = format!(
                "{title} — {} of {}",
                if side == crate::pprof::Side::Callers {
                    "callers"
                } else {
                    "callees"
                },
                re.as_str()
            );
            crate::pprof::write_sandwich(p, nodes, index, &re, side, &title, &mut out).map_err(
                |e| match e {
                    crate::pprof::Error::NothingToDraw(_) => Problem {
                        status: axum::http::StatusCode::NOT_FOUND,
                        message: format!("{}: {e}", re.as_str()),
                    },
                    e => Problem::unprocessable(e.to_string()),
                },
            )?;
            Ok(out)
        })?;
        Ok(svg_reply(svg, gzip))
    })
    .await
}

/// `GET /api/graph.svg?id=&sample_index=&nodes=&focus=…`: the call graph.
pub async fn call_graph(
    State(ui): State<Arc<Ui>>,
    Q(q): Q<ViewQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        if q.re.is_some() || q.side.is_some() {
            return Err(Problem::bad(
                "re= and side= choose a sandwich (/api/sandwich.svg); the call graph has every function",
            ));
        }
        let size = crate::pprof::GraphSize {
            nodes: q.nodes.unwrap_or(40).clamp(1, 400),
            ..Default::default()
        };
        let svg = viewed(&ui, &q, |p, nodes, index, title| {
            let mut out = Vec::new();
            crate::pprof::write_call_graph(p, nodes, index, &title, size, &mut out)
                .map_err(|e| Problem::unprocessable(e.to_string()))?;
            Ok(super::svg::with_graph_navigation(out))
        })?;
        Ok(svg_reply(svg, gzip))
    })
    .await
}
