//! Fetching profiles from a service's `net/http/pprof` endpoints: the URL's path is a prefix
//! (a bare host means `/debug/pprof`), no redirect is followed, no proxy is taken from the
//! environment, the body is read up to the size limit and no further, and a body that is not
//! a profile (an HTML login page, JSON, Go's `X-Go-Pprof` error texts) is refused with the
//! reason. Credentials in a URL never appear in a message.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;

use crate::pprof::proto::Profile;
use crate::pprof::{Limits, decode_raw, decompress, describe_non_profile};

/// The profile types `net/http/pprof` serves.
pub const TYPES: &[&str] = &[
    "cpu",
    "heap",
    "allocs",
    "goroutine",
    "mutex",
    "block",
    "threadcreate",
];

/// TLS settings for https targets.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_verify: bool,
}

pub use crate::redact::url as redact;

/// What is wrong with a target URL (never echoing it: it may hold credentials).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("not a URL ({0})")]
    NotAUrl(String),
    #[error("scheme {0}: use http or https")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
}

/// Parses a target URL; `http://host:6060` alone means `/debug/pprof`.
pub fn parse_target(text: &str) -> Result<Url, TargetError> {
    let with_scheme = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|e| TargetError::NotAUrl(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        s => return Err(TargetError::Scheme(s.to_string())),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(TargetError::NoHost);
    }
    if url.path() == "/" || url.path().is_empty() {
        url.set_path("/debug/pprof");
    }
    url.set_query(None);
    url.set_fragment(None);
    Ok(url)
}

/// The endpoint of `kind` under `base`: cpu is `profile?seconds=N`, the others their name.
pub fn endpoint(base: &Url, kind: &str, seconds: u64) -> Url {
    let mut u = base.clone();
    let name = if kind == "cpu" { "profile" } else { kind };
    let path = format!("{}/{name}", base.path().trim_end_matches('/'));
    u.set_path(&path);
    if kind == "cpu" {
        u.set_query(Some(&format!("seconds={seconds}")));
    }
    u
}

/// What is wrong with the TLS files of a target or a rule. `key()` names the flag or config
/// key at fault; the message is what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{message}")]
    Read { key: &'static str, message: String },
    #[error("{}: {message}", .path.display())]
    Certificates {
        key: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{}: no certificate in it", .path.display())]
    NoCertificate { key: &'static str, path: PathBuf },
    #[error("with {key_file}: {message}")]
    Identity {
        key: &'static str,
        key_file: &'static str,
        message: String,
    },
    #[error("goes together with {key_file}")]
    Unpaired {
        key: &'static str,
        key_file: &'static str,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl TlsError {
    /// The flag or configuration key at fault.
    pub fn key(&self) -> &'static str {
        match self {
            TlsError::Read { key, .. }
            | TlsError::Certificates { key, .. }
            | TlsError::NoCertificate { key, .. }
            | TlsError::Identity { key, .. }
            | TlsError::Unpaired { key, .. } => key,
            TlsError::Client(_) => "tls",
        }
    }
}

/// A PEM file of certificates or a key: a few KiB; 1 MiB is more than any bundle.
fn read_pem(path: &std::path::Path, key: &'static str) -> Result<Vec<u8>, TlsError> {
    crate::config::read_limited(path, 1 << 20, "").map_err(|e| TlsError::Read {
        key,
        message: e.to_string(),
    })
}

pub fn client(timeout: Duration, tls: &Tls) -> Result<reqwest::blocking::Client, TlsError> {
    builder(timeout, tls, ["--tls-ca", "--tls-cert", "--tls-key"])?
        .build()
        .map_err(TlsError::Client)
}

/// A client shared by the captures of many endpoints (a Kubernetes rule's pods): the
/// connection of a capture serves its profile types, then closes within a few seconds
/// instead of idling until the endpoint's next capture.
pub fn shared_client(timeout: Duration, tls: &Tls) -> Result<reqwest::blocking::Client, TlsError> {
    builder(timeout, tls, RULE_TLS_KEYS)?
        .pool_idle_timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(1)
        .build()
        .map_err(TlsError::Client)
}

const RULE_TLS_KEYS: [&str; 3] = ["tls_ca", "tls_cert", "tls_key"];

/// A rule's TLS files read and parsed as `shared_client` will, at load: the key that is
/// wrong and why.
pub fn check_tls(tls: &Tls) -> Result<(), TlsError> {
    builder(Duration::from_secs(1), tls, RULE_TLS_KEYS).map(|_| ())
}

/// `names` are the CA's, certificate's and key's names in errors (flags or config keys).
fn builder(
    timeout: Duration,
    tls: &Tls,
    [ca_name, cert_name, key_name]: [&'static str; 3],
) -> Result<reqwest::blocking::ClientBuilder, TlsError> {
    let mut b = crate::http::blocking(timeout);
    if let Some(ca) = &tls.ca {
        let pem = read_pem(ca, ca_name)?;
        let certs =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| TlsError::Certificates {
                key: ca_name,
                path: ca.clone(),
                message: e.to_string(),
            })?;
        if certs.is_empty() {
            return Err(TlsError::NoCertificate {
                key: ca_name,
                path: ca.clone(),
            });
        }
        b = b.tls_certs_merge(certs);
    }
    match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let mut pem = read_pem(cert, cert_name)?;
            pem.push(b'\n');
            pem.extend(read_pem(key, key_name)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| TlsError::Identity {
                key: cert_name,
                key_file: key_name,
                message: e.to_string(),
            })?;
            b = b.identity(id);
        }
        (None, None) => {}
        _ => {
            return Err(TlsError::Unpaired {
                key: cert_name,
                key_file: key_name,
            });
        }
    }
    if tls.insecure_skip_verify {
        b = b.danger_accept_invalid_certs(true);
    }
    Ok(b)
}

/// What stops a fetch early: SIGINT/SIGTERM always, and for a job that can be cancelled (a
/// pod that went away) its own flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl Cancel {
    /// A cancel of its own, for a job another thread may stop.
    pub fn new() -> Cancel {
        Cancel(Some(Default::default()))
    }

    pub fn cancel(&self) {
        if let Some(f) = &self.0 {
            f.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Cancelled by its owner (not by a signal).
    pub fn cancelled(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
    }

    pub fn is_set(&self) -> bool {
        crate::signal::requested() || self.cancelled()
    }

    fn message(&self) -> &'static str {
        if self.cancelled() { CANCELLED } else { STOPPED }
    }
}

/// Why a fetch failed, worded for the user (the URL is redacted).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    /// The server could not be reached or never answered: a network failure (exit 3).
    #[error("{url}: {message}")]
    Network { url: String, message: String },
    #[error("{url}: {source}")]
    Profile {
        url: String,
        #[source]
        source: crate::pprof::Error,
    },
}

/// A fetched, decoded profile: the bytes as received and uncompressed.
pub struct Fetched {
    pub profile: Profile,
    pub bytes: Vec<u8>,
    pub raw: Vec<u8>,
}

/// GETs `url` and decodes the body within `limits`. `timeout` (`--http-timeout`, which a
/// CPU profile's duration is within) bounds the whole exchange: connect, headers and every
/// byte of the body, however slowly a server trickles it.
pub fn fetch(
    client: &reqwest::blocking::Client,
    url: &Url,
    limits: &Limits,
    (timeout, setting): (Duration, &str),
    cancel: &Cancel,
) -> Result<Fetched, FetchError> {
    let deadline = std::time::Instant::now() + timeout;
    let shown = redact(url);
    let http = |message: String| FetchError::Http {
        url: shown.clone(),
        message,
    };
    let network = |message: String| FetchError::Network {
        url: shown.clone(),
        message,
    };
    let resp = send_interruptible(client, url, deadline, cancel).map_err(|e| match e {
        Sent::Signal => http(cancel.message().into()),
        Sent::Deadline => network(format!(
            "no answer within {setting} {} (it must exceed the profile duration)",
            crate::duration::human(timeout)
        )),
        Sent::Failed(e) if (e.is_connect() && !tls_refused(&e)) || e.is_timeout() => {
            network(describe_send_error(&e.without_url(), timeout, setting))
        }
        Sent::Failed(e) => http(describe_send_error(&e.without_url(), timeout, setting)),
    })?;
    let status = resp.status();
    if status.is_redirection() {
        return Err(http(redirected(&resp, url)));
    }
    let go_error = resp.headers().contains_key("x-go-pprof");
    if let Some(len) = resp.content_length()
        && len > limits.body
    {
        return Err(too_large(shown, len, limits.body));
    }
    let expected = resp.content_length();
    let bytes = read_body(resp, limits.body + 1, deadline, cancel).map_err(|(got, why)| {
        let of = expected.map_or_else(String::new, |n| format!(" of {n}"));
        http(match why {
            BodyEnd::Deadline => format!(
                "the body did not arrive within {setting} {}: {got} bytes{of} arrived",
                crate::duration::human(timeout)
            ),
            BodyEnd::Cut(e) => format!("the body was cut after {got} bytes{of}: {e}"),
            BodyEnd::Signal => cancel.message().into(),
        })
    })?;
    if bytes.len() as u64 > limits.body {
        return Err(too_large(shown, bytes.len() as u64, limits.body));
    }
    if !status.is_success() {
        return Err(http(format!(
            "HTTP {status}: {}",
            what_came(&bytes, go_error)
        )));
    }
    if go_error {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]);
        return Err(http(format!(
            "the service says: {}",
            crate::redact::printable(text.trim())
        )));
    }
    let bad = |source| FetchError::Profile {
        url: shown.clone(),
        source,
    };
    let raw = decompress(&bytes, limits).map_err(bad)?;
    let profile = decode_raw(&raw, limits).map_err(bad)?;
    Ok(Fetched {
        profile,
        bytes,
        raw,
    })
}

/// A body of `size` bytes from `url`, over the `limit`.
fn too_large(url: String, size: u64, limit: u64) -> FetchError {
    FetchError::Profile {
        url,
        source: crate::pprof::Error::TooLarge { size, limit },
    }
}

/// A redirect's message: where to (redacted), and that it is not followed.
fn redirected(resp: &reqwest::blocking::Response, url: &Url) -> String {
    let to = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| url.join(l).ok())
        .map(|u| redact(&u))
        .unwrap_or_else(|| "elsewhere".into());
    format!(
        "HTTP {}: redirects to {to}, which is not followed (give the real pprof path)",
        resp.status()
    )
}

/// What an error answer's body was: the service's own words (net/http/pprof marks them),
/// nothing, what kind of document it is, or binary.
fn what_came(bytes: &[u8], go_error: bool) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]);
    // The server's words reach a terminal: its control characters are shown escaped.
    let text = crate::redact::printable(text.trim());
    let text = text.as_ref();
    if go_error {
        format!("the service says: {text}")
    } else if text.is_empty() {
        "no body".to_string()
    } else {
        describe_non_profile(bytes).unwrap_or_else(|| "a binary body".into())
    }
}

enum BodyEnd {
    Deadline,
    Cut(String),
    Signal,
}

/// A fetch stopped by SIGINT or SIGTERM.
pub const STOPPED: &str = "stopped by a signal before the profile arrived";

/// A fetch whose target went away (its pod deleted, or its IP, UID or rule changed).
pub const CANCELLED: &str = "cancelled: the target went away before the profile arrived";

/// How often a waiting fetch looks at the signal flag.
const POLL: Duration = Duration::from_millis(100);

enum Sent {
    Signal,
    Deadline,
    Failed(reqwest::Error),
}

/// Sends the request on a thread of its own and waits for the answer's headers until
/// `deadline`, looking at the signal flag every `POLL`, so Ctrl-C stops a pull at once.
fn send_interruptible(
    client: &reqwest::blocking::Client,
    url: &Url,
    deadline: std::time::Instant,
    cancel: &Cancel,
) -> Result<reqwest::blocking::Response, Sent> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let req = client.get(url.clone());
    std::thread::Builder::new()
        .name("pull-request".into())
        .spawn(move || {
            let _ = tx.send(req.send());
        })
        .map_err(|_| Sent::Deadline)?;
    loop {
        if cancel.is_set() {
            return Err(Sent::Signal);
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(Sent::Deadline);
        }
        match rx.recv_timeout(left.min(POLL)) {
            Ok(r) => return r.map_err(Sent::Failed),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(Sent::Deadline),
        }
    }
}

/// The connection failed in its TLS handshake (a certificate refused, a protocol mismatch):
/// the server was reached, so this is the configuration's to fix, not the network's. The
/// TLS stack's error reaches here only as the cause's text.
fn tls_refused(e: &reqwest::Error) -> bool {
    let text = crate::http::root_cause(e).to_ascii_lowercase();
    [
        "certificate",
        "handshake",
        "alert",
        "invalidcontenttype",
        "corrupt message",
        "tls",
    ]
    .iter()
    .any(|w| text.contains(w))
}

fn describe_send_error(e: &reqwest::Error, timeout: Duration, setting: &str) -> String {
    let cause = crate::http::root_cause(e);
    // rustls reading a plain-HTTP answer as a TLS record.
    if cause.contains("InvalidContentType") || cause.contains("corrupt message") {
        return "the server answered plain HTTP on an https URL (use http://, or its TLS port)"
            .into();
    }
    if e.is_timeout() {
        format!(
            "no answer within {setting} {} (it must exceed the profile duration)",
            crate::duration::human(timeout)
        )
    } else if e.is_connect() {
        format!("cannot connect: {}", crate::http::root_cause(e))
    } else {
        crate::http::root_cause(e)
    }
}

/// Reads at most `max` bytes of `r` before `deadline`. The reads run on a thread of their own
/// and the deadline is kept here, so a server that trickles its body or stops sending cannot
/// hold the pull past it (the reader thread ends at the client's own read timeout).
fn read_body(
    mut r: impl Read + Send + 'static,
    max: u64,
    deadline: std::time::Instant,
    cancel: &Cancel,
) -> Result<Vec<u8>, (usize, BodyEnd)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(4);
    let spawned = std::thread::Builder::new()
        .name("pull-body".into())
        .spawn(move || {
            let mut left = max;
            while left > 0 {
                let mut chunk = vec![0u8; (64u64 << 10).min(left) as usize];
                match r.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        chunk.truncate(n);
                        left -= n as u64;
                        if tx.send(Ok(chunk)).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        return Err((0, BodyEnd::Cut(format!("cannot start the reader: {e}"))));
    }
    let mut bytes = Vec::new();
    loop {
        if cancel.is_set() {
            return Err((bytes.len(), BodyEnd::Signal));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err((bytes.len(), BodyEnd::Deadline));
        }
        match rx.recv_timeout(left.min(POLL)) {
            Ok(Ok(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(Err(e)) => return Err((bytes.len(), BodyEnd::Cut(crate::http::root_cause(&e)))),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(bytes),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_a_prefix_and_a_bare_host_means_debug_pprof() {
        let bare = parse_target("http://h:6060").expect("url");
        assert_eq!(
            endpoint(&bare, "cpu", 10).as_str(),
            "http://h:6060/debug/pprof/profile?seconds=10"
        );
        let custom = parse_target("http://h:6060/custom/pprof/").expect("url");
        assert_eq!(
            endpoint(&custom, "heap", 10).as_str(),
            "http://h:6060/custom/pprof/heap"
        );
        assert_eq!(
            endpoint(&parse_target("h:6060").expect("url"), "goroutine", 1).as_str(),
            "http://h:6060/debug/pprof/goroutine"
        );
    }

    #[test]
    fn credentials_never_show() {
        let u = parse_target("https://bob:hunter2@h:6060/debug/pprof").expect("url");
        let shown = redact(&endpoint(&u, "heap", 1));
        assert!(
            !shown.contains("hunter2") && !shown.contains("bob"),
            "{shown}"
        );
        let e = parse_target("ftp://bob:hunter2@h").unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
