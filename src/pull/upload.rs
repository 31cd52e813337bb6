//! Uploads in dd-trace-go's format (what DataKit's `/profiling/v1/input` and Datadog's intake
//! accept): one multipart/form-data POST per collection, a part per profile named as
//! dd-trace-go names them (`cpu.pprof`, `delta-heap.pprof`, …) and a last part `event`
//! (`event.json`, application/json) describing them. 5xx answers and network errors are
//! retried with backoff (a 429's or 503's Retry-After honoured, within a bound); what still
//! fails is spooled to disk (bounded, oldest dropped first) and sent before the next upload,
//! so nothing is lost across restarts. An upload the intake refuses for good (a 4xx) is not
//! sent again: a new one is dropped and counted, a spooled one set aside, so the spool never
//! waits behind it. `Background` sends from the spool on a thread of its own.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Url;
use serde_json::json;

use super::fetch::redact;

mod spool;

pub use spool::Spool;
use spool::read_spooled;

/// Attempts per upload before it is spooled.
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The attachment name dd-trace-go gives a profile type.
pub fn attachment_name(kind: &str, delta: bool) -> String {
    match (kind, delta) {
        ("goroutine", _) => "goroutines.pprof".into(),
        (k, true) => format!("delta-{k}.pprof"),
        (k, false) => format!("{k}.pprof"),
    }
}

/// How an upload is written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// dd-trace-go's multipart form (DataKit, the Datadog Agent and intake, agentprof receive).
    #[default]
    DdTrace,
    /// OTLP profiles, protobuf with gzip (an OpenTelemetry Collector); the pprof profile
    /// rides along as `original_payload` when `original`.
    Otlp { original: bool },
}

/// A body as it is posted: bytes, content type, and the headers that go with them (spooled
/// with the body).
pub struct Encoded {
    pub body: Vec<u8>,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
}

/// One collection's upload.
pub struct Upload {
    pub attachments: Vec<(String, Vec<u8>)>,
    /// `tags_profiler`: service, env, version, host, runtime:go, profile_seq and user tags.
    pub tags: Vec<String>,
    pub start: jiff::Timestamp,
    pub end: jiff::Timestamp,
    /// event.json's `family` (`go` for what agentprof pulls).
    pub family: String,
}

impl Upload {
    pub fn event(&self) -> serde_json::Value {
        json!({
            "attachments": self.attachments.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "tags_profiler": self.tags.join(","),
            "start": rfc3339_nano(self.start),
            "end": rfc3339_nano(self.end),
            "family": self.family,
            "version": "4",
        })
    }

    /// The body in `format`, or None when there is nothing that format carries (OTLP
    /// carries pprof profiles only).
    pub fn encode(&self, format: Format) -> Result<Option<Encoded>, UploadError> {
        match format {
            Format::DdTrace => {
                let (body, content_type) = self.body();
                Ok(Some(Encoded {
                    body,
                    content_type,
                    headers: Vec::new(),
                }))
            }
            Format::Otlp { original } => {
                let body = super::otlp::request(&self.attachments, &self.tags, original)
                    .map_err(UploadError::Encode)?;
                Ok(body.map(|body| Encoded {
                    body,
                    content_type: "application/x-protobuf".into(),
                    headers: vec![("Content-Encoding".into(), "gzip".into())],
                }))
            }
        }
    }

    /// The multipart body and its content type.
    pub fn body(&self) -> (Vec<u8>, String) {
        let boundary = format!("agentprof-{:016x}", self.end.as_nanosecond() as u64);
        let mut body = Vec::new();
        for (name, bytes) in &self.attachments {
            body.extend(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend(bytes);
            body.extend(b"\r\n");
        }
        let event = serde_json::to_vec(&self.event()).unwrap_or_default();
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"event\"; filename=\"event.json\"\r\nContent-Type: application/json\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend(event);
        body.extend(format!("\r\n--{boundary}--\r\n").as_bytes());
        (body, format!("multipart/form-data; boundary={boundary}"))
    }
}

/// RFC 3339 with nanoseconds, UTC, as Go's time.RFC3339Nano (trailing zeros dropped).
pub fn rfc3339_nano(t: jiff::Timestamp) -> String {
    let s = t.strftime("%Y-%m-%dT%H:%M:%S%.f").to_string();
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}Z")
}

/// One request's longest time when no `--upload-timeout`/`--forward-timeout` is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a 429 or 503's Retry-After is waited before the next attempt; a longer one
/// sends the upload to the spool instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// What one upload's attempts came to.
#[derive(Debug)]
enum Posted {
    Sent,
    /// Worth sending again later (network error, 408, 429, 5xx).
    Again(String),
    /// Refused for good (any other 4xx): sending it again would be refused again.
    Refused(String),
}

/// Why an upload was not delivered now.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The intake could not take it now (network, 408, 429, 5xx): it waits in the spool.
    #[error("{0} (spooled; sent before the next upload)")]
    Spooled(String),
    /// The intake refused it for good (another 4xx): dropped and counted.
    #[error("{0}: refused for good, not spooled")]
    Refused(String),
    /// It could not be written to the spool.
    #[error("cannot spool to {}: {source}", .path.display())]
    Spool {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The intake could not take it now, and the spool could not keep it.
    #[error("{sent}; {spool}")]
    Lost {
        sent: String,
        #[source]
        spool: Box<UploadError>,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot start the upload thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The upload could not be written in the target's format (a profile that does not
    /// decode, for OTLP).
    #[error("cannot encode the upload: {0}")]
    Encode(#[from] super::otlp::OtlpError),
    /// More than one target failed.
    #[error("{0}")]
    Several(String),
}

/// Counts of an uploader, shared with whoever reports them (the background sender's owner).
#[derive(Debug, Default)]
pub struct UploadStats {
    pub sent: AtomicU64,
    pub retried: AtomicU64,
    /// Refused for good: dropped (a new upload) or set aside under `refused/` (a spooled one).
    pub refused: AtomicU64,
    pub spooled: AtomicU64,
    /// Spooled uploads dropped to stay within the spool's size.
    pub dropped: AtomicU64,
    /// Retry-After waits honoured.
    pub waited: AtomicU64,
}

/// Sends uploads, spooling what cannot be delivered now.
pub struct Uploader {
    client: reqwest::blocking::Client,
    url: Url,
    pub spool: Arc<Spool>,
    pub stats: Arc<UploadStats>,
    /// Headers of every request, never spooled (the intake's API key).
    secret_headers: Vec<(String, String)>,
    format: Format,
    /// Each request's whole time (said when a target does not answer within it).
    timeout: Duration,
}

impl Uploader {
    pub fn new(
        url: Url,
        spool: PathBuf,
        spool_limit: u64,
        timeout: Duration,
    ) -> Result<Uploader, UploadError> {
        let client = crate::http::blocking(timeout)
            .build()
            .map_err(UploadError::Client)?;
        let stats = Arc::new(UploadStats::default());
        Ok(Uploader {
            client,
            url,
            spool: Arc::new(Spool::new(spool, spool_limit, Arc::clone(&stats))),
            stats,
            secret_headers: Vec::new(),
            format: Format::DdTrace,
            timeout,
        })
    }

    /// Writes uploads in `format` (dd-trace's by default).
    pub fn with_format(mut self, format: Format) -> Uploader {
        self.format = format;
        self
    }

    /// Adds headers to every request (credentials: they are never written to the spool).
    pub fn with_secret_headers(mut self, h: Vec<(String, String)>) -> Uploader {
        self.secret_headers = h;
        self
    }

    /// POSTs with retries: network errors, 408 and 5xx after a backoff, 429 and 503 after
    /// their Retry-After (at most `MAX_RETRY_AFTER`; a longer one ends the attempts).
    fn post(&self, body: &[u8], content_type: &str, headers: &[(String, String)]) -> Posted {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let mut req = self
                .client
                .post(self.url.clone())
                .header(reqwest::header::CONTENT_TYPE, content_type);
            for (k, v) in headers.iter().chain(&self.secret_headers) {
                req = req.header(k.as_str(), v.as_str());
            }
            let mut wait = backoff;
            match req.body(body.to_vec()).send() {
                Ok(r) if r.status().is_success() => return Posted::Sent,
                Ok(r) => {
                    let code = r.status().as_u16();
                    last = format!("HTTP {}", r.status());
                    if (400..500).contains(&code) && code != 408 && code != 429 {
                        return Posted::Refused(format!("{}: {last}", redact(&self.url)));
                    }
                    if let Some(ra) = crate::http::retry_after(r.headers()) {
                        if ra > MAX_RETRY_AFTER {
                            last = format!("{last}, Retry-After {} s", ra.as_secs());
                            break;
                        }
                        self.stats.waited.fetch_add(1, Ordering::Relaxed);
                        wait = ra;
                    }
                }
                Err(e) => last = crate::http::send_failure(&e, self.timeout),
            }
            if attempt == ATTEMPTS || crate::signal::requested() {
                break;
            }
            self.stats.retried.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(wait);
            backoff *= 2;
        }
        Posted::Again(format!("{}: {last}", redact(&self.url)))
    }

    /// Sends what is spooled (oldest first), then `up`; spools `up` if it cannot be sent.
    pub fn send(&mut self, up: &Upload) -> Result<(), UploadError> {
        match up.encode(self.format)? {
            Some(e) => self.send_body(&e.body, &e.content_type, &e.headers),
            None => Ok(()),
        }
    }

    /// Sends what is spooled, then this body with its headers; spools it (headers too) if
    /// it cannot be sent now, drops it (counted) if it was refused for good.
    pub fn send_body(
        &mut self,
        body: &[u8],
        ctype: &str,
        headers: &[(String, String)],
    ) -> Result<(), UploadError> {
        self.flush_spool();
        match self.post(body, ctype, headers) {
            Posted::Sent => {
                self.stats.sent.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Posted::Again(e) => match self.spool.put(body, ctype, headers) {
                Ok(()) => Err(UploadError::Spooled(e)),
                Err(s) => Err(UploadError::Lost {
                    sent: e,
                    spool: Box::new(s),
                }),
            },
            Posted::Refused(e) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                Err(UploadError::Refused(e))
            }
        }
    }

    /// Sends spooled uploads oldest first until one cannot be sent now; one refused for
    /// good is set aside (`refused/`) and the next one tried. Returns how many were sent.
    pub fn flush_spool(&mut self) -> usize {
        self.flush_until(|| false)
    }

    /// As `flush_spool`, stopping between uploads when `stop` says so.
    fn flush_until(&mut self, stop: impl Fn() -> bool) -> usize {
        let mut sent = 0;
        for f in self.spool.files() {
            if stop() {
                break;
            }
            // Sent already (a kill -9 after its key was noted, before its file went).
            if self.spool.was_sent(&f) {
                let _ = std::fs::remove_file(&f);
                self.spool.forget(&f);
                continue;
            }
            let Some((ctype, headers, body)) = read_spooled(&f) else {
                let _ = std::fs::remove_file(&f);
                self.spool.forget(&f);
                continue;
            };
            match self.post(&body, &ctype, &headers) {
                Posted::Sent => {
                    self.stats.sent.fetch_add(1, Ordering::Relaxed);
                    sent += 1;
                    self.spool.sent(&f);
                    let _ = std::fs::remove_file(&f);
                }
                Posted::Refused(e) => {
                    self.stats.refused.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "agentprof: a spooled upload was refused for good ({e}); set aside in {}",
                        self.spool.dir().join("refused").display()
                    );
                    self.spool.set_aside(&f);
                }
                Posted::Again(_) => break,
            }
        }
        sent
    }

    pub fn pending(&self) -> usize {
        self.spool.pending()
    }
}

/// Where a collection's upload goes.
pub trait Submit: Sync {
    /// Ok(true): delivered; Ok(false): on disk, sent by a sender of its own; Err: why not.
    fn submit(&self, up: &Upload) -> Result<bool, UploadError>;
}

impl Submit for std::sync::Mutex<Uploader> {
    fn submit(&self, up: &Upload) -> Result<bool, UploadError> {
        crate::sync::lock(self).send(up).map(|()| true)
    }
}

/// Every target of a run (dd-trace's upload and the OTLP export): each gets the upload;
/// delivered when every one delivered it, an error when any failed (all of theirs said).
impl<T: Submit> Submit for Vec<T> {
    fn submit(&self, up: &Upload) -> Result<bool, UploadError> {
        let mut delivered = true;
        let mut failed = Vec::new();
        for s in self {
            match s.submit(up) {
                Ok(d) => delivered &= d,
                Err(e) => failed.push(e),
            }
        }
        match failed.len() {
            0 => Ok(delivered),
            1 => Err(failed.remove(0)),
            _ => Err(UploadError::Several(
                failed
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )),
        }
    }
}

/// An uploader on a thread of its own: uploads are written to the spool at once (so a
/// collection never waits on the intake, and nothing acknowledged is lost at a stop), and
/// the thread sends them oldest first, waking when one comes and every 5 s.
pub struct Background {
    pub spool: Arc<Spool>,
    pub stats: Arc<UploadStats>,
    pub format: Format,
    wake: Arc<(std::sync::Mutex<Wake>, std::sync::Condvar)>,
    done: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

#[derive(Default)]
struct Wake {
    more: bool,
    stop: bool,
}

impl Background {
    pub fn start(mut uploader: Uploader) -> std::io::Result<Background> {
        let wake = Arc::new((
            std::sync::Mutex::new(Wake::default()),
            std::sync::Condvar::new(),
        ));
        let (spool, stats) = (Arc::clone(&uploader.spool), Arc::clone(&uploader.stats));
        let format = uploader.format;
        let (done_tx, done) = std::sync::mpsc::channel();
        let w = Arc::clone(&wake);
        std::thread::Builder::new()
            .name("agentprof-upload".into())
            .spawn(move || {
                loop {
                    let stopping = || crate::sync::lock(&w.0).stop;
                    uploader.flush_until(stopping);
                    let (m, cv) = &*w;
                    let g = crate::sync::lock(m);
                    let (mut g, _) = cv
                        .wait_timeout_while(g, Duration::from_secs(5), |s| !s.more && !s.stop)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if g.stop {
                        break;
                    }
                    g.more = false;
                }
                // The HTTP client is a blocking one: dropped here, off any async runtime.
                drop(uploader);
                let _ = done_tx.send(());
            })?;
        Ok(Background {
            spool,
            stats,
            format,
            wake,
            done: std::sync::Mutex::new(done),
        })
    }

    /// `Spool::put_keyed`, then wakes the sender.
    pub fn put(
        &self,
        key: Option<&str>,
        body: &[u8],
        ctype: &str,
        headers: &[(String, String)],
    ) -> Result<(), UploadError> {
        self.spool.put_keyed(key, body, ctype, headers)?;
        let (m, cv) = &*self.wake;
        crate::sync::lock(m).more = true;
        cv.notify_one();
        Ok(())
    }

    /// Tells the sender to stop after the upload it is sending, without waiting.
    pub fn ask_stop(&self) {
        let (m, cv) = &*self.wake;
        crate::sync::lock(m).stop = true;
        cv.notify_one();
    }

    /// Stops the sender, waiting for the upload it is sending until `deadline` at most
    /// (several senders asked first with `ask_stop` share one grace); whatever is not sent
    /// stays in the spool for the next start. Returns how many wait there.
    pub fn stop_by(&self, deadline: std::time::Instant) -> usize {
        self.ask_stop();
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let _ = crate::sync::lock(&self.done).recv_timeout(left);
        self.spool.pending()
    }
}

impl Submit for Background {
    fn submit(&self, up: &Upload) -> Result<bool, UploadError> {
        match up.encode(self.format)? {
            Some(e) => self
                .put(None, &e.body, &e.content_type, &e.headers)
                .map(|()| false),
            None => Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_event_follow_dd_trace_go() {
        assert_eq!(attachment_name("cpu", false), "cpu.pprof");
        assert_eq!(attachment_name("heap", true), "delta-heap.pprof");
        assert_eq!(attachment_name("goroutine", false), "goroutines.pprof");
        let t = jiff::Timestamp::from_nanosecond(1_700_000_000_123_400_000).expect("ts");
        assert_eq!(rfc3339_nano(t), "2023-11-14T22:13:20.1234Z");
        let up = Upload {
            attachments: vec![("cpu.pprof".into(), vec![1, 2, 3])],
            tags: vec!["service:a".into(), "runtime:go".into()],
            start: t,
            end: t,
            family: "go".into(),
        };
        let ev = up.event();
        assert_eq!(ev["attachments"][0], "cpu.pprof");
        assert_eq!(ev["tags_profiler"], "service:a,runtime:go");
        assert_eq!(
            (ev["family"].as_str(), ev["version"].as_str()),
            (Some("go"), Some("4"))
        );
        let (body, ctype) = up.body();
        let text = String::from_utf8_lossy(&body);
        let boundary = ctype.split("boundary=").nth(1).expect("boundary");
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
        assert!(
            text.contains(
                "name=\"event\"; filename=\"event.json\"\r\nContent-Type: application/json"
            )
        );
    }
}
