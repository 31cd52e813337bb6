//! The receiver's routes: dd-trace's upload endpoints (`http.rs`) and the other profilers'
//! APIs, read whole and made into dd-trace uploads (`ingest/`): Pyroscope's `/ingest` and
//! push, OTLP's `/v1development/profiles`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use bytes::Bytes;

use super::form::Reject;
use super::http::{
    State, Tap, answer, disk_full, first_charge, kept_headers, record_head, refuse, slow, tapped,
    too_large, upload,
};
use crate::budget::Reservation;

pub(super) fn router(state: Arc<State>) -> axum::Router {
    let mut app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok\n" }));
    for e in &state.endpoints {
        let s = Arc::clone(&state);
        app = app.route(
            e,
            axum::routing::post(move |req: Request<Body>| upload(Arc::clone(&s), req)),
        );
    }
    // Pyroscope's and OTLP's ingest, beside the dd-trace endpoints.
    for (path, kind) in [
        ("/ingest", Ingest::Pyroscope),
        ("/push.v1.PusherService/Push", Ingest::Push),
        (otlp::PATH, Ingest::Otlp),
    ] {
        if state.endpoints.iter().any(|e| e == path) {
            continue;
        }
        let s = Arc::clone(&state);
        app = app.route(
            path,
            axum::routing::post(move |req: Request<Body>| ingest(Arc::clone(&s), req, kind)),
        );
    }
    app
}

/// Which other profilers' API a request came to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ingest {
    /// Pyroscope's `POST /ingest`.
    Pyroscope,
    /// OTLP/HTTP's `POST /v1development/profiles`.
    Otlp,
    /// Pyroscope's push API (`POST /push.v1.PusherService/Push`).
    Push,
}

/// A body read whole (not multipart-streamed): what it is, what it holds of the budget.
struct Whole {
    body: Bytes,
    content_type: String,
    gzip: bool,
    query: String,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
    held: Reservation,
}

/// A body read whole within the size limit, the body timeout and the memory budget (charged
/// [`BODY_COPIES`] times as it arrives, as an upload's is); else the answer that refuses it.
async fn read_whole(state: &State, req: Request<Body>) -> Result<Whole, Response<Body>> {
    let m = &state.metrics;
    let header = |h: &HeaderMap, n: &str| {
        h.get(n)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.trim().to_ascii_lowercase())
    };
    let content_type = header(req.headers(), "content-type").unwrap_or_default();
    let encoding = header(req.headers(), "content-encoding");
    let gzip = encoding.as_deref() == Some("gzip");
    if let Some(e) = encoding.filter(|e| e != "gzip" && e != "identity") {
        return Err(refuse(
            m,
            Reject::Unsupported(format!(
                "Content-Encoding {e}: agentprof takes gzip or none"
            )),
        ));
    }
    let query = req.uri().query().unwrap_or_default().to_string();
    let declared = header(req.headers(), "content-length").and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > state.body_limit) {
        return Err(too_large(state, req.into_body(), n).await);
    }
    let Some(held) = first_charge(state, declared) else {
        return Err(refuse(m, super::form::busy()));
    };
    let headers = kept_headers(req.headers());
    let room = declared.unwrap_or(0).min(8 << 20) as usize;
    let tap = Arc::new(std::sync::Mutex::new(Tap {
        head: 0,
        record: Vec::with_capacity(room),
        opening: Vec::new(),
        body_len: 0,
        held: Some(held),
        failure: None,
    }));
    let body = Arc::new(tokio::sync::Mutex::new(Some(req.into_body())));
    let stream = tapped(body, state.body_limit, Arc::clone(&tap));
    let read = tokio::time::timeout(state.body_timeout, async move {
        use futures_util::StreamExt;
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            item?;
        }
        Ok::<(), std::io::Error>(())
    })
    .await;
    let mut t = crate::sync::lock(&tap);
    match read {
        Err(_) => Err(slow(state)),
        Ok(Err(_)) => Err(refuse(
            m,
            t.failure
                .take()
                .unwrap_or_else(|| Reject::Invalid("the body was cut".into())),
        )),
        Ok(Ok(())) => match t.held.take() {
            Some(held) => Ok(Whole {
                body: Bytes::from(std::mem::take(&mut t.record)),
                content_type,
                gzip,
                query,
                headers,
                at: jiff::Timestamp::now(),
                held,
            }),
            None => Err(refuse(m, super::form::busy())),
        },
    }
}

/// A Pyroscope or OTLP request: read whole, made into dd-trace uploads (on the blocking
/// pool), each checked as an upload is and made durable in the queue; 200 when all are
/// (with OTLP's empty answer, in the request's encoding), else why not.
async fn ingest(state: Arc<State>, req: Request<Body>, kind: Ingest) -> Response<Body> {
    let m = &state.metrics;
    if let Some(full) = disk_full(&state) {
        return full;
    }
    let w = match read_whole(&state, req).await {
        Ok(w) => w,
        Err(answered) => return answered,
    };
    let fields = match multipart_fields(kind, &w).await {
        Ok(f) => f,
        Err(r) => return refuse(m, r),
    };
    let (headers, at) = (w.headers.clone(), w.at);
    let (uploads, json) = match convert(&state, kind, w, fields).await {
        Ok(x) => x,
        Err(answered) => return answered,
    };
    if let Err(answered) = durable(&state, uploads, headers, at).await {
        return answered;
    }
    let (ctype, body) = match (kind, json) {
        (Ingest::Otlp, false) => ("application/x-protobuf", Vec::new()),
        (Ingest::Push, false) => ("application/proto", Vec::new()),
        _ => ("application/json", b"{}".to_vec()),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", ctype)
        .body(Body::from(body))
        .unwrap_or_default()
}

/// The parts of a Pyroscope request's multipart body (None for any other body).
async fn multipart_fields(
    kind: Ingest,
    w: &Whole,
) -> Result<Option<Vec<super::form::Field>>, Reject> {
    if kind != Ingest::Pyroscope || !w.content_type.starts_with("multipart/") {
        return Ok(None);
    }
    let b = super::form::boundary(Some(&w.content_type))?;
    let body = w.body.clone();
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    match super::form::fields(stream, b).await {
        Ok(f) => Ok(Some(f)),
        Err(super::form::FieldsError::Body(r)) => Err(r),
        Err(super::form::FieldsError::Stream) => Err(Reject::Malformed("the body was cut".into())),
    }
}

/// The request made into dd-trace uploads, on the blocking pool within what it holds of
/// the budget (given back when it is done); and whether it was JSON.
async fn convert(
    state: &State,
    kind: Ingest,
    w: Whole,
    fields: Option<Vec<super::form::Field>>,
) -> Result<(Vec<crate::pull::upload::Upload>, bool), Response<Body>> {
    let limits = state.limits;
    let Whole {
        body,
        content_type: ctype,
        query,
        gzip,
        at,
        mut held,
        ..
    } = w;
    let made = tokio::task::spawn_blocking(move || match kind {
        Ingest::Pyroscope => {
            super::ingest::pyroscope::pyroscope(&query, &body, fields, &limits, at, &mut held)
                .map(|u| (vec![u], false))
        }
        Ingest::Otlp => super::ingest::otlp::otlp(&ctype, gzip, &body, &limits, at, &mut held),
        Ingest::Push => super::ingest::push::push(&ctype, gzip, &body, &limits, at, &mut held),
    })
    .await;
    match made {
        Ok(Ok(x)) => Ok(x),
        Ok(Err(r)) => Err(refuse(&state.metrics, r)),
        Err(e) => Err(answer(500, format!("the conversion failed: {e}"))),
    }
}

/// One upload of a request, checked and durable, not yet handed to the workers.
struct Durable {
    id: super::queue::RecordId,
    body_len: u64,
    upload: super::form::Upload,
    held: crate::budget::Reservation,
}

/// A request's converted uploads, each checked as a dd-trace upload is and made durable in
/// the queue, as `upload` does; all or none: when one is refused (the queue or the budget is
/// full), the ones before it are taken back, so the client's retry of the whole request
/// stores each once. Err is the answer when they could not be.
async fn durable(
    state: &Arc<State>,
    uploads: Vec<crate::pull::upload::Upload>,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
) -> Result<(), Response<Body>> {
    // Made durable by a task of its own, as an upload is: a client that goes away meanwhile
    // neither strands them nor has them stored twice.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let st = Arc::clone(state);
    tokio::spawn(async move {
        let _ = tx.send(durable_all(&st, uploads, headers, at).await.err());
    });
    match rx.await {
        Ok(None) => Ok(()),
        Ok(Some(answered)) => Err(answered),
        Err(_) => Err(answer(503, "the receiver is stopping; retry".into())),
    }
}

async fn durable_all(
    state: &Arc<State>,
    uploads: Vec<crate::pull::upload::Upload>,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
) -> Result<(), Response<Body>> {
    // Each is held until all are queued (twice its body: the record and the parsed copy).
    let bodies: Vec<(Vec<u8>, String)> = uploads.into_iter().map(|u| u.body()).collect();
    let mut done: Vec<Durable> = Vec::with_capacity(bodies.len());
    let mut refused = None;
    for (body, ct) in bodies {
        match durable_one(state, body, ct, &headers, at).await {
            Ok(d) => done.push(d),
            Err(answered) => {
                refused = Some(answered);
                break;
            }
        }
    }
    if let Some(answered) = refused {
        for d in done {
            super::http::take_back(state, d.id);
        }
        return Err(answered);
    }
    for d in done {
        super::http::hand_over(
            state,
            d.id,
            d.body_len,
            d.upload,
            headers.clone(),
            at,
            d.held,
        )
        .await;
    }
    Ok(())
}

/// One upload (its body and content type) checked and its record appended to the queue.
async fn durable_one(
    state: &Arc<State>,
    body: Vec<u8>,
    ct: String,
    headers: &[(String, String)],
    at: jiff::Timestamp,
) -> Result<Durable, Response<Body>> {
    let m = &state.metrics;
    let charge = 2 * body.len() as u64;
    let Some(held) = state.budget.try_reserve_large(charge) else {
        return Err(refuse(m, super::form::busy()));
    };
    let mut record = record_head(&ct, headers, at, body.len());
    record.extend_from_slice(&body);
    let body_len = body.len() as u64;
    let (upload, held) =
        match super::form::parse(Some(&ct), Bytes::from(body), &state.limits, held).await {
            Ok(x) => x,
            Err(r) => return Err(refuse(m, r)),
        };
    let id = super::http::append(state, record).await?;
    Ok(Durable {
        id,
        body_len,
        upload,
        held,
    })
}
