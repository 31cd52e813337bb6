//! agentprof's layer under kube's client, through which every request to the API server (and
//! to the kubelet) goes: a budget of 50 requests a second with a burst of 50 (DataKit's), a
//! deadline on every call (its answer within `CALL_DEADLINE`, and the whole body too unless
//! it is a watch), a server's `Retry-After` on 429/503 honoured by holding later requests at
//! most `MAX_RETRY_AFTER`, a watch that ends at once with no event turned into an error (so
//! the watcher backs off, as client-go does), and every request counted by verb, resource
//! and outcome — which also tells whether the API server answers (`healthy`).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use kube::client::{Body, DynBody};
use tokio::time::Instant;
use tower::BoxError;

use agentprof_checks::sync::lock;

/// The longest a call may take for its answer, and a non-watch call for its whole body.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);
/// The longest a server's Retry-After holds agentprof's requests.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// A watch that ends before this with no event is an error.
const SHORT_WATCH: Duration = Duration::from_secs(1);
/// The API server has not answered a request for this long: not healthy, whatever the last
/// answer was.
const SILENT: Duration = Duration::from_secs(30);

/// Requests by verb, resource and outcome; the server's Retry-After; whether it answers.
#[derive(Debug, Default)]
pub struct ApiStats {
    by: Mutex<BTreeMap<(&'static str, &'static str, String), u64>>,
    /// Answers (429, 503) that carried a Retry-After, honoured by holding later requests.
    pub retry_afters: AtomicU64,
    /// Watches that ended at once with no event.
    pub short_watches: AtomicU64,
    /// Requests the server answered and did (2xx, and the answers of a working server that
    /// say no: 404, 409, 410…).
    ok: AtomicU64,
    hold_until: Mutex<Option<Instant>>,
    health: Mutex<Health>,
}

#[derive(Debug, Default)]
struct Health {
    last_ok: Option<Instant>,
    /// The latest request that failed (no answer, or an answer that refuses the work: 401,
    /// 403, 429, 5xx), when no request succeeded after it.
    failing: Option<(Instant, String)>,
}

/// The wall-clock time of `at`, to the second (RFC 3339, UTC).
fn wall_time(at: Instant) -> String {
    let ago = jiff::SignedDuration::try_from(at.elapsed()).unwrap_or_default();
    let t = jiff::Timestamp::now()
        .checked_sub(ago)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    t.round(jiff::Unit::Second).unwrap_or(t).to_string()
}

/// `why` (`VERB RESOURCE: OUTCOME`, failing since `at`) as a reason an operator acts on.
fn describe_failure(at: Instant, why: &str) -> String {
    let outcome = why.rsplit(": ").next().unwrap_or(why);
    let request = why
        .strip_suffix(outcome)
        .unwrap_or(why)
        .trim_end_matches(": ");
    match outcome {
        "401" | "403" => format!(
            "unauthorized: the API server answered {outcome} to {request} (agentprof's credentials, or its RBAC, do not allow it)"
        ),
        "error" | "timeout" => format!(
            "the API server is unreachable since {} ({} s): {request} got no answer ({outcome})",
            wall_time(at),
            at.elapsed().as_secs()
        ),
        code => format!(
            "the API server refuses the work since {} ({} s): {request} answered {code}",
            wall_time(at),
            at.elapsed().as_secs()
        ),
    }
}

impl ApiStats {
    /// Counts one call: its verb, resource and outcome (a status code, `error` or
    /// `timeout`), and whether it succeeded. [`ApiLayer`] records every call it passes; a
    /// client that reaches the API server another way records its own.
    pub fn record(&self, verb: &'static str, resource: &'static str, outcome: &str, ok: bool) {
        *lock(&self.by)
            .entry((verb, resource, outcome.to_string()))
            .or_default() += 1;
        let mut h = lock(&self.health);
        let now = Instant::now();
        if ok {
            self.ok.fetch_add(1, Ordering::Relaxed);
            h.last_ok = Some(now);
            h.failing = None;
        } else if h.failing.is_none() {
            h.failing = Some((now, format!("{verb} {resource}: {outcome}")));
        }
    }

    /// `(verb, resource, outcome, count)` of every request so far.
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, String, u64)> {
        lock(&self.by)
            .iter()
            .map(|((v, r, o), n)| (*v, *r, o.clone(), *n))
            .collect()
    }

    /// Requests by verb.
    pub fn by_verb(&self) -> BTreeMap<&'static str, u64> {
        self.by_verb_where(|_| true)
    }

    /// Requests by verb whose outcome `keep` takes (`error`: no connection was made, or it
    /// broke before an answer; `timeout`; else the status code).
    pub fn by_verb_where(&self, keep: impl Fn(&str) -> bool) -> BTreeMap<&'static str, u64> {
        let mut m = BTreeMap::new();
        for ((v, _, o), n) in lock(&self.by).iter() {
            if keep(o) {
                *m.entry(*v).or_default() += n;
            }
        }
        m
    }

    /// Requests the server answered so far, of the kinds that say it works.
    pub fn get_ok(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// Whether the API server answers: its latest answer did the work, and one came within
    /// `SILENT`. None when it does; else why not, in the words an operator acts on: the
    /// credentials refused (which request), the server unreachable (since when), or
    /// refusing the work.
    pub fn unhealthy(&self) -> Option<String> {
        let h = lock(&self.health);
        if let Some((at, why)) = &h.failing {
            return Some(describe_failure(*at, why));
        }
        match h.last_ok {
            None => Some("the API server has not answered yet".into()),
            Some(at) if at.elapsed() > SILENT => Some(format!(
                "the API server is unreachable since {} ({} s without an answer)",
                wall_time(at),
                at.elapsed().as_secs()
            )),
            Some(_) => None,
        }
    }

    /// A 429 or 503 with Retry-After: later requests wait until then (at most
    /// `MAX_RETRY_AFTER` from now).
    fn hold_off(&self, wait: Duration) {
        self.retry_afters.fetch_add(1, Ordering::Relaxed);
        let until = Instant::now() + wait.min(MAX_RETRY_AFTER);
        let mut h = lock(&self.hold_until);
        if h.is_none_or(|u| u < until) {
            *h = Some(until);
        }
    }

    fn held_until(&self) -> Option<Instant> {
        let mut h = lock(&self.hold_until);
        match *h {
            Some(u) if u > Instant::now() => Some(u),
            _ => {
                *h = None;
                None
            }
        }
    }
}

/// The verb of a request, from its method and path (`/api/v1/pods` is a list,
/// `/api/v1/namespaces/ns/pods/name` a get, `?watch=true` a watch).
pub fn verb(method: &http::Method, uri: &http::Uri) -> &'static str {
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let rest = resource_path(uri);
    let resource = match rest.as_slice() {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if resource.len() == 1 => "list",
        http::Method::GET if resource.len() > 1 => "get",
        http::Method::GET if uri.path().ends_with("/stats/summary") => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// The path after `/api/v1` or `/apis/GROUP/VERSION`, in segments.
fn resource_path(uri: &http::Uri) -> Vec<&str> {
    let path: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    match path.first() {
        Some(&"api") => path.get(2..),
        Some(&"apis") => path.get(3..),
        _ => None,
    }
    .map(<[&str]>::to_vec)
    .unwrap_or_default()
}

/// The resource a request is about, as RBAC names it (`pods`, `leases`, `nodes/proxy`), or
/// what else it is (`discovery`, `stats/summary` on the kubelet itself).
pub fn resource(uri: &http::Uri) -> &'static str {
    let rest = resource_path(uri);
    let rest = match rest.as_slice() {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail.to_vec(),
        other => other.to_vec(),
    };
    match rest.as_slice() {
        ["pods", ..] => "pods",
        ["leases", ..] => "leases",
        ["nodes", _, "proxy", ..] => "nodes/proxy",
        ["nodes", ..] => "nodes",
        ["namespaces", ..] => "namespaces",
        [] if uri.path().ends_with("/stats/summary") => "stats/summary",
        [] => "discovery",
        _ => "other",
    }
}

/// A token bucket: `rate` tokens a second, at most `burst` saved.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    at: Instant,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Bucket {
        Bucket {
            tokens: burst,
            rate,
            burst,
            at: Instant::now(),
        }
    }

    /// Takes a token, or says how long until one is there.
    fn take(&mut self) -> Result<(), Duration> {
        let now = Instant::now();
        let grown = now.saturating_duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + grown).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
        }
    }
}

#[derive(Clone)]
pub struct ApiLayer {
    stats: Arc<ApiStats>,
}

impl ApiLayer {
    pub fn new(stats: Arc<ApiStats>) -> ApiLayer {
        ApiLayer { stats }
    }
}

impl<S> tower::Layer<S> for ApiLayer {
    type Service = Api<S>;
    fn layer(&self, inner: S) -> Api<S> {
        Api {
            inner,
            stats: Arc::clone(&self.stats),
            bucket: Bucket::new(50.0, 50.0),
            wait: None,
            has_token: false,
        }
    }
}

pub struct Api<S> {
    inner: S,
    stats: Arc<ApiStats>,
    bucket: Bucket,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    has_token: bool,
}

type Answer = Response<Tracked>;

impl<S> tower::Service<Request<Body>> for Api<S>
where
    S: tower::Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        loop {
            if let Some(w) = self.wait.as_mut() {
                if w.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.wait = None;
            }
            // The server asked to be left alone until then.
            if let Some(until) = self.stats.held_until() {
                self.wait = Some(Box::pin(tokio::time::sleep_until(until)));
                continue;
            }
            if self.has_token {
                break;
            }
            match self.bucket.take() {
                Ok(()) => self.has_token = true,
                Err(d) => self.wait = Some(Box::pin(tokio::time::sleep(d))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.has_token = false;
        let verb = verb(req.method(), req.uri());
        let resource = resource(req.uri());
        let stats = Arc::clone(&self.stats);
        let answer = self.inner.call(req);
        Box::pin(async move {
            let started = Instant::now();
            let resp = match tokio::time::timeout(CALL_DEADLINE, answer).await {
                Err(_) => {
                    stats.record(verb, resource, "timeout", false);
                    return Err(format!(
                        "no answer within {} s (the API server accepted the request and said nothing)",
                        CALL_DEADLINE.as_secs()
                    )
                    .into());
                }
                Ok(Err(e)) => {
                    stats.record(verb, resource, "error", false);
                    return Err(e);
                }
                Ok(Ok(r)) => r,
            };
            let code = resp.status().as_u16();
            if (code == 429 || code == 503)
                && let Some(wait) = crate::http::retry_after(resp.headers())
            {
                stats.hold_off(wait);
            }
            let refused = matches!(code, 401 | 403 | 429) || code >= 500;
            stats.record(verb, resource, &code.to_string(), !refused);
            let watch = verb == "watch" && resp.status().is_success();
            Ok(resp.map(|inner| Tracked {
                inner,
                deadline: (!watch)
                    .then(|| Box::pin(tokio::time::sleep_until(started + CALL_DEADLINE))),
                watch: watch.then_some(WatchSeen {
                    started,
                    data: false,
                }),
                stats,
            }))
        })
    }
}

struct WatchSeen {
    started: Instant,
    data: bool,
}

/// A response body under the call's deadline (watches have none), which tells the stats
/// when a watch ended at once with nothing in it.
pub struct Tracked {
    inner: Box<DynBody>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    watch: Option<WatchSeen>,
    stats: Arc<ApiStats>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(w) = this.watch.as_mut()
                    && f.data_ref().is_some_and(|d| !d.is_empty())
                {
                    w.data = true;
                }
                Poll::Ready(Some(Ok(f)))
            }
            Poll::Ready(None) => match this.watch.take() {
                Some(w) if !w.data && w.started.elapsed() < SHORT_WATCH => {
                    this.stats.short_watches.fetch_add(1, Ordering::Relaxed);
                    Poll::Ready(Some(Err(
                        "the API server ended the watch at once with no event".into(),
                    )))
                }
                _ => Poll::Ready(None),
            },
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Pending => {
                let passed = this
                    .deadline
                    .as_mut()
                    .is_some_and(|d| d.as_mut().poll(cx).is_ready());
                if !passed {
                    return Poll::Pending;
                }
                this.deadline = None;
                Poll::Ready(Some(Err(format!(
                    "the answer did not arrive whole within {} s",
                    CALL_DEADLINE.as_secs()
                )
                .into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_and_resources_are_named_from_method_and_path() {
        let get = http::Method::GET;
        let v = |m: &http::Method, u: &str| {
            let u: http::Uri = u.parse().expect("uri");
            (verb(m, &u), resource(&u))
        };
        assert_eq!(v(&get, "/api/v1/pods?limit=50"), ("list", "pods"));
        assert_eq!(
            v(&get, "/api/v1/pods?watch=true&resourceVersion=7"),
            ("watch", "pods")
        );
        assert_eq!(v(&get, "/api/v1/namespaces/shop/pods"), ("list", "pods"));
        assert_eq!(
            v(&get, "/api/v1/namespaces/shop/pods/web-1"),
            ("get", "pods")
        );
        assert_eq!(v(&get, "/api/v1/namespaces/shop"), ("get", "namespaces"));
        assert_eq!(
            v(
                &http::Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/k/leases/x"
            ),
            ("update", "leases")
        );
        assert_eq!(
            v(&get, "/api/v1/nodes/n1/proxy/stats/summary"),
            ("get", "nodes/proxy")
        );
        assert_eq!(v(&get, "/stats/summary"), ("get", "stats/summary"));
        assert_eq!(v(&get, "/version"), ("other", "discovery"));
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::RETRY_AFTER, "3600".parse().expect("value"));
        assert_eq!(
            crate::http::retry_after(&h),
            Some(Duration::from_secs(3600))
        );
        h.insert(
            http::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("value"),
        );
        assert_eq!(crate::http::retry_after(&h), Some(Duration::ZERO));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_retry_after_holds_later_requests_at_most_30_s() {
        let s = ApiStats::default();
        s.hold_off(Duration::from_secs(3600));
        let until = s.held_until().expect("held");
        assert!(until <= Instant::now() + MAX_RETRY_AFTER);
        tokio::time::advance(MAX_RETRY_AFTER + Duration::from_millis(1)).await;
        assert_eq!(s.held_until(), None);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_budget_is_a_burst_of_50_then_50_a_second() {
        let mut b = Bucket::new(50.0, 50.0);
        for _ in 0..50 {
            assert!(b.take().is_ok());
        }
        let wait = b.take().expect_err("the burst is spent");
        assert!(wait <= Duration::from_millis(20), "{wait:?}");
        tokio::time::advance(Duration::from_secs(1)).await;
        let mut n = 0;
        while b.take().is_ok() {
            n += 1;
        }
        assert_eq!(n, 50, "a second refills 50, never more than the burst");
    }

    #[test]
    fn health_follows_the_latest_answer() {
        let s = ApiStats::default();
        assert!(s.unhealthy().is_some(), "nothing answered yet");
        s.record("get", "leases", "200", true);
        assert_eq!(s.unhealthy(), None);
        s.record("update", "leases", "401", false);
        let why = s.unhealthy().expect("refused");
        assert!(
            why.starts_with("unauthorized: the API server answered 401 to update leases"),
            "{why}"
        );
        s.record("get", "leases", "200", true);
        assert_eq!(s.unhealthy(), None);
        s.record("list", "pods", "error", false);
        let why = s.unhealthy().expect("unreachable");
        assert!(
            why.starts_with("the API server is unreachable since 20")
                && why.ends_with("list pods got no answer (error)"),
            "{why}"
        );
        s.record("get", "leases", "200", true);
        s.record("get", "leases", "503", false);
        let why = s.unhealthy().expect("refusing");
        assert!(why.contains("get leases answered 503"), "{why}");
    }
}
