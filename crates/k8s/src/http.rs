//! What every HTTP client and server of agentprof shares, here in the lowest crate that speaks
//! HTTP: rustls with ring (no OpenSSL, no aws-lc), chosen once for the process, and the
//! reading of a Retry-After header.

use std::time::Duration;

/// Chooses rustls' ring provider for the process (the first call does; the rest find it
/// chosen). Every TLS client and server of agentprof calls it before it builds its config.
pub fn tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A Retry-After header's wait (429, 503): seconds, or an HTTP date. Every client of
/// agentprof reads it here.
pub fn retry_after(h: &http::HeaderMap) -> Option<Duration> {
    let v = h.get(http::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = jiff::fmt::rfc2822::parse(v).ok()?.timestamp();
    Some(Duration::try_from(at.duration_since(jiff::Timestamp::now())).unwrap_or(Duration::ZERO))
}
