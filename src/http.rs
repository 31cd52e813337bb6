//! The one way agentprof talks HTTP(S) to other servers: rustls with ring (no OpenSSL, no
//! aws-lc), chosen once for the process; no proxy taken from the environment, no redirect
//! followed, a deadline on every request and on every connection, agentprof's user agent.

use std::time::Duration;

// The process's TLS provider and the Retry-After reading live with the cluster's client, the
// lowest crate that speaks HTTP; every client and server of agentprof uses them from here.
pub use agentprof_k8s::http::{retry_after, tls};

/// A blocking client builder with agentprof's rules; `timeout` bounds each request whole,
/// and connecting takes at most 10 s of it.
pub fn blocking(timeout: Duration) -> reqwest::blocking::ClientBuilder {
    tls();
    reqwest::blocking::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("agentprof/", env!("CARGO_PKG_VERSION")))
}

/// The innermost error of a chain: what actually went wrong ("connection refused", "operation
/// timed out") rather than reqwest's "error sending request".
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Why a request of a client built with `timeout` got no answer, in words a log reader can
/// act on (no URL: the caller names the target, redacted).
pub fn send_failure(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!(
            "timed out: no answer within {}",
            crate::duration::human(timeout)
        )
    } else if e.is_connect() {
        format!("cannot connect: {}", root_cause(e))
    } else {
        root_cause(e)
    }
}
