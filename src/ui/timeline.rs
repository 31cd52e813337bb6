//! The page's time views: a selection's timeline (`/api/series`), and a selection's merged
//! profile as a file to save.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::Response;

use super::reply::{accepts_gzip, blocking, encoded};
use super::select::Selection;
use super::state::{Problem, Ui};

/// A query's pairs, every repeated key kept (`tag=` and `label=` may come many times).
fn pairs(q: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(q.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// `GET /api/series?service=&type=&from=&to=&tag=K:V&label=K=V&sample_index=&group_by=`
/// (docs/json.md): per capture of the selection the total of one sample type, grouped by a
/// capture tag's key or (`label:KEY`) a sample label's.
pub async fn series(
    State(ui): State<Arc<Ui>>,
    RawQuery(q): RawQuery,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let gzip = accepts_gzip(&headers);
    blocking(move || {
        let pairs = pairs(q.as_deref());
        let sel = Selection::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(Problem::bad)?;
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| v.as_str())
        };
        let series = ui.series(&sel, get("sample_index"), get("group_by"))?;
        let body =
            serde_json::to_vec(&series).map_err(|e| Problem::unprocessable(e.to_string()))?;
        let mut r = encoded(body, gzip);
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        r.headers_mut().insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
        Ok(r)
    })
    .await
}

/// A selection's captures merged, as go tool pprof's `-proto` writes a merge: a gzip
/// profile.proto; its file name says the type and how many captures.
pub fn merged_file(ui: &Ui, sel: &Selection) -> Result<(String, Vec<u8>), Problem> {
    use prost::Message;
    let (p, _held, n) = ui.merge_selection(sel, 0)?;
    let raw = p.to_proto().encode_to_vec();
    drop(p);
    let name = format!(
        "merged-{}-{}-{n}-captures.pb.gz",
        if sel.service.is_empty() {
            "all"
        } else {
            &sel.service
        },
        sel.profile_type
    );
    Ok((name, crate::pprof::gzip_fast(&raw)))
}
