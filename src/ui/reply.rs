//! How the page's server answers: a query read or refused with what is wrong, CPU work
//! off the runtime's threads, JSON, and bodies gzip-compressed for clients that take it.

use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::state::Problem;

/// A request's query, or a JSON 400 that says which parameter is wrong (axum's own
/// rejection is plain text).
pub struct Q<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for Q<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Problem> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(v)) => Ok(Q(v)),
            Err(e) => Err(Problem::bad(e.body_text())),
        }
    }
}

/// CPU work off the runtime's threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Problem> + Send + 'static,
) -> Result<T, Problem> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(Problem {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: format!("the request failed: {e}"),
        })
    })
}

pub fn json(v: serde_json::Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
        .into_response()
}

/// The client takes gzip (`Accept-Encoding`, without `gzip;q=0`).
pub fn accepts_gzip(headers: &axum::http::HeaderMap) -> bool {
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
pub fn encoded(body: Vec<u8>, gzip: bool) -> Response {
    if gzip && body.len() > 4096 {
        gzip_response(crate::pprof::gzip_fast(&body).into())
    } else {
        body.into_response()
    }
}

/// A gzip-compressed body, said so.
pub fn gzip_response(z: bytes::Bytes) -> Response {
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
}
