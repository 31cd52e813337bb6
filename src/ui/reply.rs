//! How the page's server answers: a query read or refused with what is wrong, CPU work
//! off the runtime's threads, JSON, and bodies gzip-compressed for clients that take it.

use axum::extract::Query;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::state::Problem;

/// inferno's SVG carries its own script and style (search, zoom), inline; nothing else; only
/// the page itself may frame it.
const SVG_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; frame-ancestors 'self'";
/// And it is sandboxed whoever opens it: in the page's frame by the frame's own `sandbox`
/// attribute, anywhere else (a user at its URL, a link) by this, so its script runs in an
/// origin of its own and cannot act on the page's (no requests with its origin, no reading
/// of the profiles); it may ask with a dialog (its search button and Ctrl+F).
pub const SVG_CSP_SANDBOXED: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox allow-scripts allow-modals";

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

/// A flamegraph drawn for one request, with the page's in-place search.
pub fn svg(body: Vec<u8>, gzip: bool) -> Response {
    svg_headers(encoded(super::svg::with_search(body), gzip))
}

/// A drawn flamegraph, in the form the client takes (compressed once, then kept).
pub fn drawn_svg(d: &super::svg::Svg, gzip: bool) -> Response {
    let mut r = svg_headers(if gzip && d.plain.len() > 4096 {
        gzip_response(d.gzipped())
    } else {
        d.plain.clone().into_response()
    });
    if d.folded > 0 {
        r.headers_mut()
            .insert("x-agentprof-folded", HeaderValue::from(d.folded));
    }
    r
}

fn svg_headers(mut r: Response) -> Response {
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
