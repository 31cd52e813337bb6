//! The receiver's HTTP side: axum's router served by `crate::serve` (TLS with rustls when
//! asked), the upload endpoints that check an upload within the memory budget, make it
//! durable in the queue and answer 202, and the queue's record of an upload.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use super::form::{Reject, Upload, UploadLimits};
use super::metrics::Metrics;
use super::queue::{Queue, QueueError, RecordId};
use crate::budget::{Budget, Reservation};

crate::error::message_error! {
    /// Why the TLS certificate or key could not be used.
    TlsError
}

/// How long a sender may take to send its headers (or less, with a shorter read timeout).
pub(super) const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// What an upload holds of the memory budget before its body arrives (`BODY_COPIES` times
/// this): the rest is charged as the bytes come.
pub(super) const FIRST_CHARGE: u64 = 64 << 10;
/// What an upload is charged for each byte of its body that arrived: the queue's record it is
/// written into, the multipart reader's buffer the parts are cut from, a large part's pieces
/// joined into one, and the network's read buffer. With three, senders of large parts that
/// hang up took the receiver past its budget (docs/details.md, "Measured choices").
pub(super) const BODY_COPIES: u64 = 4;
/// A body this small (as its Content-Length states) may use the budget's lane kept for
/// small uploads: dd-trace's are tens to hundreds of KB.
pub(super) const SMALL_BODY: u64 = 1 << 20;
/// What a 503 or 507 tells the client to wait, seconds.
const RETRY_AFTER: &str = "5";

pub(super) struct Job {
    pub(super) id: RecordId,
    pub(super) upload: Upload,
    pub(super) headers: Vec<(String, String)>,
    pub(super) received: jiff::Timestamp,
    /// What the upload holds of the memory budget until it is stored.
    pub(super) held: Reservation,
    /// Put in the forward spool already (a store tried again does not forward it twice).
    pub(super) forwarded: bool,
}

pub(super) struct State {
    pub(super) queue: Queue,
    pub(super) jobs: mpsc::Sender<Job>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) endpoints: Vec<String>,
    pub(super) limits: UploadLimits,
    pub(super) budget: Budget,
    pub(super) body_limit: u64,
    pub(super) body_timeout: Duration,
    /// Where uploads are stored and queued: below `min_free` bytes free on either, new
    /// uploads get 507.
    pub(super) disks: Vec<PathBuf>,
    pub(super) min_free: u64,
}

/// The headers kept with an upload: the client's own (`DD-EVP-ORIGIN`,
/// `DD-EVP-ORIGIN-VERSION`, `Datadog-Container-ID`, `User-Agent` …), never credentials.
pub(super) fn kept_headers(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            (k.starts_with("dd-") || k.starts_with("datadog-") || k == "user-agent")
                && k != "dd-api-key"
                && k != "dd-application-key"
        })
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// The head of the queue's record of an upload: one JSON line (content type, kept headers,
/// when it was received); the body follows as it came. `room` more bytes are reserved for
/// it.
pub(super) fn record_head(
    content_type: &str,
    headers: &[(String, String)],
    at: jiff::Timestamp,
    room: usize,
) -> Vec<u8> {
    let head = serde_json::json!({"content_type": content_type, "headers": headers,
        "received": at.as_nanosecond().to_string()});
    let head = serde_json::to_vec(&head).unwrap_or_default();
    let mut out = Vec::with_capacity(head.len() + 1 + room);
    out.extend_from_slice(&head);
    out.push(b'\n');
    out
}

type Parsed = (String, Vec<(String, String)>, jiff::Timestamp, Bytes);

pub(super) fn unrecord(payload: Vec<u8>) -> Option<Parsed> {
    let nl = payload.iter().position(|&b| b == b'\n')?;
    let head: serde_json::Value = serde_json::from_slice(&payload[..nl]).ok()?;
    let ct = head["content_type"].as_str()?.to_string();
    let headers = serde_json::from_value(head["headers"].clone()).ok()?;
    let at = head["received"]
        .as_str()?
        .parse::<i128>()
        .ok()
        .and_then(|n| jiff::Timestamp::from_nanosecond(n).ok())?;
    let mut payload = payload;
    let body = Bytes::from(payload.split_off(nl + 1));
    Some((ct, headers, at, body))
}

/// A refused upload: counted by its reason, answered with its status and words (a 503 with
/// Retry-After).
pub(super) fn refuse(m: &Metrics, r: Reject) -> Response<Body> {
    m.reject(r.reason());
    let busy = r.status() == 503;
    let mut a = answer(r.status(), r.to_string());
    if busy {
        a.headers_mut()
            .insert("retry-after", http::HeaderValue::from_static(RETRY_AFTER));
    }
    a
}

pub(super) fn answer(code: u16, text: String) -> Response<Body> {
    let body = serde_json::json!({ "error": text }).to_string();
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap_or_default()
}

/// 507 when a disk uploads go to has less than `min_free` bytes free: an upload that could
/// not be stored is not acknowledged.
pub(super) fn disk_full(state: &State) -> Option<Response<Body>> {
    for d in &state.disks {
        if let Some(free) = free_bytes(d)
            && free < state.min_free
        {
            state.metrics.reject("disk_full");
            let mut a = answer(
                507,
                format!(
                    "{} has {free} bytes free, under the {} the receiver keeps: uploads are \
                     refused until room is made",
                    d.display(),
                    state.min_free
                ),
            );
            a.headers_mut()
                .insert("retry-after", http::HeaderValue::from_static(RETRY_AFTER));
            return Some(a);
        }
    }
    None
}

/// Bytes free for an unprivileged writer on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

pub(super) async fn upload(state: Arc<State>, req: Request<Body>) -> Response<Body> {
    let m = &state.metrics;
    if let Some(full) = disk_full(&state) {
        return full;
    }
    let read = match read(&state, req).await {
        Ok(x) => x,
        Err(answered) => return answered,
    };
    let (parsed, held) = match super::form::checked(read.parts, &state.limits, read.held).await {
        Ok(x) => x,
        Err(r) => return refuse(m, r),
    };
    m.skipped(&parsed.skipped);
    // Made durable and handed to a worker by a task of its own: a client that goes away
    // meanwhile neither strands the upload nor has it stored twice.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let st = Arc::clone(&state);
    let (record, body_len, headers, at) = (read.record, read.body_len, read.headers, read.at);
    tokio::spawn(async move {
        let r = enqueue(&st, record, body_len, headers, at, parsed, held).await;
        let _ = tx.send(r);
    });
    rx.await
        .unwrap_or_else(|_| answer(503, "the receiver is stopping; retry".into()))
}

/// The upload's record appended to the queue (synced) and the upload given to the workers:
/// 202, or why not.
async fn enqueue(
    state: &State,
    record: Vec<u8>,
    body_len: u64,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
    upload: Upload,
    held: Reservation,
) -> Response<Body> {
    let id = match append(state, record).await {
        Ok(id) => id,
        Err(refused) => return refused,
    };
    hand_over(state, id, body_len, upload, headers, at, held).await;
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap_or_default()
}

/// The upload's record appended to the queue (synced, so durable); or the 503 that says why
/// not.
pub(super) async fn append(state: &State, record: Vec<u8>) -> Result<RecordId, Response<Body>> {
    let m = &state.metrics;
    let id = match state.queue.append(record).await {
        Ok(id) => id,
        Err(e @ QueueError::Full { .. }) => {
            m.reject("queue_full");
            return Err(refuse_busy(format!("{e}; retry later")));
        }
        Err(e) => {
            m.reject("queue_error");
            return Err(refuse_busy(e.to_string()));
        }
    };
    m.queue_depth.inc();
    m.queue_bytes.set(state.queue.used() as i64);
    Ok(id)
}

/// A record `append` made, taken back before its upload was handed over (another upload of
/// the same request was refused, and the client sends them all again): done, not counted.
pub(super) fn take_back(state: &State, id: RecordId) {
    let m = &state.metrics;
    state.queue.done(id);
    m.queue_depth.dec();
    m.queue_bytes.set(state.queue.used() as i64);
}

/// The durable upload given to the workers, and its bytes counted. Its copy waits in memory
/// within the budget (a full backlog slows the answers, so the clients wait rather than
/// agentprof's memory growing).
pub(super) async fn hand_over(
    state: &State,
    id: RecordId,
    body_len: u64,
    upload: Upload,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
    held: Reservation,
) {
    state.metrics.bytes.inc_by(body_len);
    let _ = state
        .jobs
        .send(Job {
            id,
            upload,
            headers,
            received: at,
            held,
            forwarded: false,
        })
        .await;
}

fn refuse_busy(text: String) -> Response<Body> {
    let mut a = answer(503, text);
    a.headers_mut()
        .insert("retry-after", http::HeaderValue::from_static(RETRY_AFTER));
    a
}

/// An upload as it was read: the queue's record of it (head and body), its parts, the
/// headers kept, when it came, and what it holds of the memory budget.
struct Read {
    record: Vec<u8>,
    body_len: u64,
    parts: Vec<super::form::Field>,
    headers: Vec<(String, String)>,
    at: jiff::Timestamp,
    held: Reservation,
}

/// An upload read within the size limit, the body timeout and the memory budget, its parts
/// cut as the body arrives (the body is reserved as it comes, [`BODY_COPIES`] times; an
/// event part past its limit is refused before the rest is sent); else the answer that
/// refuses it.
async fn read(state: &State, req: Request<Body>) -> Result<Read, Response<Body>> {
    let m = &state.metrics;
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(String::from)
        .unwrap_or_default();
    let boundary = super::form::boundary(Some(ct.as_str()).filter(|c| !c.is_empty()))
        .map_err(|r| refuse(m, r))?;
    let declared = req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > state.body_limit) {
        return Err(too_large(state, req.into_body(), n).await);
    }
    let Some(held) = first_charge(state, declared) else {
        return Err(refuse(m, super::form::busy()));
    };
    let headers = kept_headers(req.headers());
    let at = jiff::Timestamp::now();
    // The record's room is what the sender states, up to 8 MiB (pages the body never fills
    // are never touched), so it seldom moves as it grows.
    let room = declared.unwrap_or(0).min(8 << 20) as usize;
    let record = record_head(&ct, &headers, at, room);
    let tap = Arc::new(std::sync::Mutex::new(Tap {
        head: record.len(),
        record,
        opening: format!("--{boundary}").into_bytes(),
        body_len: 0,
        held: Some(held),
        failure: None,
    }));
    let started = tokio::time::Instant::now();
    let body = Arc::new(tokio::sync::Mutex::new(Some(req.into_body())));
    let stream = tapped(Arc::clone(&body), state.body_limit, Arc::clone(&tap));
    let parts =
        tokio::time::timeout(state.body_timeout, super::form::fields(stream, boundary)).await;
    if let Ok(Err(super::form::FieldsError::Body(_))) = &parts
        && let Some(rest) = body.lock().await.take()
    {
        // Refused for what it holds (an event part past its limit): what it held is given
        // back, and the rest is read and dropped, charged nothing, so the client reads why
        // instead of a broken pipe.
        {
            let mut t = crate::sync::lock(&tap);
            t.held = None;
            t.record = Vec::new();
        }
        let left = state.body_timeout.saturating_sub(started.elapsed());
        drain(rest, state.body_limit, left).await;
    }
    // After the multipart close the body is still read to its end: a framing error there (a
    // chunk shorter than its size, a chunk without its CRLF) makes the request a broken one,
    // refused whole with nothing stored, as any HTTP server would refuse it.
    let mut rest = Ok(());
    if let Ok(Ok(_)) = &parts {
        use futures_util::TryStreamExt;
        let left = state.body_timeout.saturating_sub(started.elapsed());
        let tail = tapped(Arc::clone(&body), state.body_limit, Arc::clone(&tap));
        rest = match tokio::time::timeout(left, tail.try_for_each(|_| async { Ok(()) })).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(false),
            Err(_) => Err(true),
        };
    }
    let mut t = crate::sync::lock(&tap);
    match parts {
        Err(_) => Err(slow(state)),
        Ok(Ok(_)) if rest == Err(true) => Err(slow(state)),
        Ok(Ok(_)) if rest == Err(false) => Err(refuse(
            m,
            t.failure.take().unwrap_or_else(|| {
                Reject::Malformed("the body was cut after its last part".into())
            }),
        )),
        Ok(Err(super::form::FieldsError::Body(r))) => Err(refuse(m, r)),
        Ok(Err(super::form::FieldsError::Stream)) => Err(refuse(
            m,
            t.failure
                .take()
                .unwrap_or_else(|| Reject::Malformed("the body was cut".into())),
        )),
        Ok(Ok(parts)) => match t.held.take() {
            Some(held) => Ok(Read {
                record: std::mem::take(&mut t.record),
                body_len: t.body_len,
                parts,
                headers,
                at,
                held,
            }),
            None => Err(refuse(m, super::form::busy())),
        },
    }
}

/// What a request holds of the budget before its body arrives: what arrives is charged as
/// it arrives, so a sender that states 100 MB and sends 6 KB holds 4 × 64 KiB, not 400 MB;
/// one that states a small body may use the lane kept for small ones.
pub(super) fn first_charge(state: &State, declared: Option<u64>) -> Option<Reservation> {
    let first = declared.unwrap_or(FIRST_CHARGE).min(FIRST_CHARGE);
    if declared.is_some_and(|n| n <= SMALL_BODY) {
        state.budget.try_reserve(BODY_COPIES * first)
    } else {
        state.budget.try_reserve_large(BODY_COPIES * first)
    }
}

/// The 408 of a body that did not arrive within the body timeout, counted.
pub(super) fn slow(state: &State) -> Response<Body> {
    state.metrics.reject("slow_sender");
    answer(
        408,
        format!(
            "the body did not arrive within {:?} (read_timeout_s)",
            state.body_timeout
        ),
    )
}

/// The 413 of a body that states more than the limit: read and dropped first (up to 4 × the
/// limit, within the body timeout), so the client finishes sending and reads it instead of a
/// broken pipe.
pub(super) async fn too_large(state: &State, body: Body, declared: u64) -> Response<Body> {
    if declared <= 4 * state.body_limit {
        drain(body, 4 * state.body_limit, state.body_timeout).await;
    }
    refuse(
        &state.metrics,
        Reject::TooLarge(format!(
            "{declared} bytes is over the {}-byte limit (body_size_limit_mb)",
            state.body_limit
        )),
    )
}

/// What the body's stream keeps as it passes: the queue's record, the bytes so far, the
/// reservation they are charged to, and why the stream stopped when it is the body's fault.
pub(super) struct Tap {
    pub(super) record: Vec<u8>,
    /// Where the body starts in the record.
    pub(super) head: usize,
    /// What the body must begin with: `--` and the boundary (no preamble).
    pub(super) opening: Vec<u8>,
    pub(super) body_len: u64,
    pub(super) held: Option<Reservation>,
    pub(super) failure: Option<Reject>,
}

impl Tap {
    /// `chunk` charged ([`BODY_COPIES`] times all that arrived) and kept in the record; else
    /// why not.
    fn take(&mut self, chunk: &[u8], limit: u64) -> Result<(), Reject> {
        self.body_len += chunk.len() as u64;
        if self.body_len > limit {
            return Err(Reject::TooLarge(format!(
                "the body is over the {limit}-byte limit (body_size_limit_mb)"
            )));
        }
        let want = BODY_COPIES * self.body_len;
        let Some(held) = self.held.as_mut() else {
            return Err(super::form::busy());
        };
        if want > held.bytes() && !held.grow(want - held.bytes()) {
            return Err(super::form::busy());
        }
        self.record.extend_from_slice(chunk);
        // A body that does not begin with its boundary is refused at once, before the
        // multipart reader holds all of it looking for one: every client writes none
        // (curl, Go's mime/multipart, urllib3, OkHttp, dd-trace's).
        let body = &self.record[self.head..];
        let n = body.len().min(self.opening.len());
        if body[..n] != self.opening[..n] {
            return Err(Reject::Malformed(
                "the body does not begin with `--` and the boundary of its Content-Type".into(),
            ));
        }
        Ok(())
    }
}

/// The body as a stream of chunks for the multipart reader, each one first charged and kept
/// by the tap; the stream fails (the tap saying why) when the body is cut, too large or over
/// the budget. The body stays where the reader of the stream can take it back.
pub(super) fn tapped(
    body: Arc<tokio::sync::Mutex<Option<Body>>>,
    limit: u64,
    tap: Arc<std::sync::Mutex<Tap>>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    futures_util::stream::unfold(body, move |body| {
        let tap = Arc::clone(&tap);
        async move {
            let failed = |r: Reject| {
                crate::sync::lock(&tap).failure = Some(r);
                Err(std::io::Error::other("the body stopped"))
            };
            let item = {
                let mut guard = body.lock().await;
                let b = guard.as_mut()?;
                loop {
                    match b.frame().await {
                        None => {
                            guard.take();
                            return None;
                        }
                        Some(Err(e)) => {
                            guard.take();
                            break failed(Reject::Malformed(format!("the body was cut: {e}")));
                        }
                        Some(Ok(frame)) => {
                            let Ok(chunk) = frame.into_data() else {
                                continue;
                            };
                            let took = crate::sync::lock(&tap).take(&chunk, limit);
                            break match took {
                                Ok(()) => Ok(chunk),
                                Err(r) => {
                                    guard.take();
                                    failed(r)
                                }
                            };
                        }
                    }
                }
            };
            Some((item, body))
        }
    })
}

/// The rest of a refused body read and dropped (at most `limit` bytes, within `deadline`).
async fn drain(mut body: Body, limit: u64, deadline: Duration) {
    let _ = tokio::time::timeout(deadline, async {
        let mut read = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, |d| d.len() as u64);
            if read > limit {
                break;
            }
        }
    })
    .await;
}

/// The TLS settings of `--tls-cert`/`--tls-key` (PEM), checked now.
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    crate::http::tls();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(TlsError(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map(Arc::new)
        .map_err(|e| TlsError(format!("--tls-cert/--tls-key: {e}")))
}
