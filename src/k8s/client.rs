//! The Kubernetes API client: kube's, reached in-cluster (the service account's token and CA)
//! or through a kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, with
//! `--context`), with two layers of agentprof's own under it: a count of requests by verb
//! (for `/metrics` and the summary) and the client's budget of 50 requests a second with a
//! burst of 50.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use secrecy::ExposeSecret;

use crate::error::UsageError;

/// Where the API server is, as the user asked for it.
#[derive(Debug, Clone, Default)]
pub struct Connect {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// Where the service account's files are in a pod.
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A connected client and what came with its configuration.
pub struct Cluster {
    pub client: kube::Client,
    /// The namespace the Lease lives in: the pod's own in a cluster, the context's outside.
    pub namespace: String,
    /// The bearer token the kubelet takes: the service account's, or the kubeconfig user's.
    pub token: Option<String>,
    /// `in-cluster` or the kubeconfig's path, for messages.
    pub source: String,
    /// The API server's address, for messages.
    pub server: String,
    pub counts: Arc<ApiCounts>,
}

/// Requests to the API server by verb.
#[derive(Debug, Default)]
pub struct ApiCounts {
    counts: [AtomicU64; VERBS.len()],
}

/// The verbs counted, as Kubernetes names them.
pub const VERBS: [&str; 8] = [
    "list", "watch", "get", "create", "update", "patch", "delete", "other",
];

impl ApiCounts {
    pub fn add(&self, verb: &str) {
        let i = VERBS.iter().position(|v| *v == verb).unwrap_or(7);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, verb: &str) -> u64 {
        VERBS
            .iter()
            .position(|v| *v == verb)
            .map_or(0, |i| self.counts[i].load(Ordering::Relaxed))
    }

    /// `(verb, count)` of every verb seen.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        VERBS
            .iter()
            .zip(&self.counts)
            .map(|(v, c)| (*v, c.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The verb of a request, from its method and path (`/api/v1/pods` is a list,
/// `/api/v1/namespaces/ns/pods/name` a get, `?watch=true` a watch).
pub fn verb(method: &http::Method, uri: &http::Uri) -> &'static str {
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let path: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    // After /api/v1 or /apis/group/version.
    let rest = match path.first() {
        Some(&"api") => path.get(2..),
        Some(&"apis") => path.get(3..),
        _ => None,
    }
    .unwrap_or_default();
    let resource = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if resource.len() == 1 => "list",
        http::Method::GET if resource.len() > 1 => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// A token bucket: `rate` tokens a second, at most `burst` saved.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    at: tokio::time::Instant,
}

impl Bucket {
    /// Takes a token, or says how long until one is there.
    fn take(&mut self) -> Result<(), Duration> {
        let now = tokio::time::Instant::now();
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

/// The client's request budget (50 QPS, burst 50, as DataKit's client has) and the count of
/// requests by verb.
#[derive(Clone)]
pub struct BudgetLayer {
    counts: Arc<ApiCounts>,
    qps: f64,
    burst: f64,
}

impl<S> tower::Layer<S> for BudgetLayer {
    type Service = Budget<S>;
    fn layer(&self, inner: S) -> Budget<S> {
        Budget {
            inner,
            counts: Arc::clone(&self.counts),
            bucket: Bucket {
                tokens: self.burst,
                rate: self.qps,
                burst: self.burst,
                at: tokio::time::Instant::now(),
            },
            wait: None,
            has_token: false,
        }
    }
}

pub struct Budget<S> {
    inner: S,
    counts: Arc<ApiCounts>,
    bucket: Bucket,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    has_token: bool,
}

impl<S, B> tower::Service<http::Request<B>> for Budget<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.has_token {
            if let Some(w) = self.wait.as_mut() {
                if w.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.wait = None;
            }
            match self.bucket.take() {
                Ok(()) => self.has_token = true,
                Err(d) => self.wait = Some(Box::pin(tokio::time::sleep(d))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.has_token = false;
        self.counts.add(verb(req.method(), req.uri()));
        self.inner.call(req)
    }
}

/// The kubeconfig to read: `--kubeconfig`, else `$KUBECONFIG` (its first file), else
/// `~/.kube/config` when it exists; None means in-cluster.
fn kubeconfig_path(c: &Connect) -> Option<PathBuf> {
    if let Some(p) = &c.kubeconfig {
        return Some(p.clone());
    }
    if let Some(v) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        return std::env::split_paths(&v).next();
    }
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".kube/config");
    p.is_file().then_some(p)
}

/// Connects as the user asked: a kubeconfig's context, or the pod's service account.
pub async fn connect(c: &Connect) -> Result<Cluster, UsageError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut config, source, token) = match kubeconfig_path(c) {
        Some(path) => {
            let shown = path.display().to_string();
            let kc = read_kubeconfig(&path)?;
            let opts = KubeConfigOptions {
                context: c.context.clone(),
                ..Default::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| UsageError::flag("--kubeconfig", format!("{shown}: {e}")))?;
            let token = config
                .auth_info
                .token
                .as_ref()
                .map(|t| t.expose_secret().to_string());
            (config, shown, token)
        }
        None => {
            if c.context.is_some() {
                return Err(UsageError::flag(
                    "--context",
                    "no kubeconfig to take it from (give --kubeconfig, or set $KUBECONFIG)",
                ));
            }
            let config = kube::Config::incluster().map_err(|e| {
                UsageError::flag(
                    "--kubeconfig",
                    format!(
                        "not in a cluster ({e}) and no kubeconfig: give --kubeconfig, set \
                         $KUBECONFIG or create ~/.kube/config"
                    ),
                )
            })?;
            let token = read_small(&Path::new(SA_DIR).join("token"));
            (config, "in-cluster".to_string(), token)
        }
    };
    if source == "in-cluster"
        && let Some(ns) = read_small(&Path::new(SA_DIR).join("namespace"))
    {
        config.default_namespace = ns;
    }
    if let Ok(ns) = std::env::var("POD_NAMESPACE")
        && !ns.is_empty()
    {
        config.default_namespace = ns;
    }
    config.connect_timeout = Some(Duration::from_secs(10));
    let namespace = config.default_namespace.clone();
    let server = crate::redact::url_text(&config.cluster_url.to_string());
    let counts = Arc::new(ApiCounts::default());
    let layer = BudgetLayer {
        counts: Arc::clone(&counts),
        qps: 50.0,
        burst: 50.0,
    };
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| UsageError::flag("--kubeconfig", format!("{source}: {e}")))?
        .with_layer(&layer)
        .build();
    Ok(Cluster {
        client,
        namespace,
        token,
        source,
        server,
        counts,
    })
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, UsageError> {
    let text = crate::config::read_limited(path, 4 << 20, "")
        .map_err(|e| UsageError::flag("--kubeconfig", e.to_string()))?;
    let text = String::from_utf8(text)
        .map_err(|_| UsageError::flag("--kubeconfig", format!("{}: not UTF-8", path.display())))?;
    Kubeconfig::from_yaml(&text)
        .map_err(|e| UsageError::flag("--kubeconfig", format!("{}: {e}", path.display())))
}

/// A small file's trimmed text (a token, a namespace), if it is there.
fn read_small(path: &Path) -> Option<String> {
    let b = crate::config::read_limited(path, 64 << 10, "").ok()?;
    let s = String::from_utf8(b).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_named_from_method_and_path() {
        let get = http::Method::GET;
        let v = |m: &http::Method, u: &str| verb(m, &u.parse().expect("uri"));
        assert_eq!(v(&get, "/api/v1/pods?limit=50"), "list");
        assert_eq!(
            v(&get, "/api/v1/pods?watch=true&resourceVersion=7"),
            "watch"
        );
        assert_eq!(v(&get, "/api/v1/namespaces/shop/pods"), "list");
        assert_eq!(v(&get, "/api/v1/namespaces/shop/pods/web-1"), "get");
        assert_eq!(v(&get, "/api/v1/namespaces/shop"), "get");
        assert_eq!(
            v(
                &http::Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/k/leases/x"
            ),
            "update"
        );
        assert_eq!(
            v(
                &get,
                "/apis/coordination.k8s.io/v1/namespaces/k/leases/agentprof-n1"
            ),
            "get"
        );
        assert_eq!(v(&get, "/version"), "other");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_budget_is_a_burst_of_50_then_50_a_second() {
        let mut b = Bucket {
            tokens: 50.0,
            rate: 50.0,
            burst: 50.0,
            at: tokio::time::Instant::now(),
        };
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
}
