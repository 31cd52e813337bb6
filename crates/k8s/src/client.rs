//! The Kubernetes API client: kube's, reached in-cluster (the service account's token and CA)
//! or through a kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, with
//! `--context`), with a layer of agentprof's own under it (`api.rs`): the request budget,
//! deadlines, the server's Retry-After honoured within a cap, and the count of requests by
//! verb, resource and outcome. kube's own retries are off: every caller retries on its own
//! schedule (the watcher with its backoff, the lease on its period), so no call waits on a
//! server that asked for an hour.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

pub use super::api::ApiStats;
use crate::Error;

/// Where the API server is, as the user asked for it.
#[derive(Debug, Clone, Default)]
pub struct Connect {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// Where the service account's files are in a pod.
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A socket that delivers nothing for this long is given up: longer than a watch's own
/// timeout (kube's watcher asks for 290 s), so a quiet watch ends by the server's hand and
/// is resumed, not cut. The API server's health does not wait on it: the lease's calls
/// have deadlines of their own (5 s) and every other call `api::CALL_DEADLINE`.
const READ_TIMEOUT: Duration = Duration::from_secs(295);

/// A connected client and what came with its configuration.
pub struct Cluster {
    pub client: kube::Client,
    /// The configuration the client was made from: the kubelet's client is made from it too,
    /// so it is sent the same credentials, re-read as they rotate.
    pub config: kube::Config,
    /// The namespace the Lease lives in: the pod's own in a cluster, the context's outside.
    pub namespace: String,
    /// `in-cluster` or the kubeconfig's path, for messages.
    pub source: String,
    /// The API server's address, for messages.
    pub server: String,
    pub api: Arc<ApiStats>,
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

/// The configuration as the user asked: a kubeconfig's context, or the pod's service
/// account (whose token file kube re-reads every minute, as client-go does).
async fn config(c: &Connect) -> Result<(kube::Config, String), Error> {
    let (mut config, source) = match kubeconfig_path(c) {
        Some(path) => {
            let shown = path.display().to_string();
            let kc = read_kubeconfig(&path)?;
            let opts = KubeConfigOptions {
                context: c.context.clone(),
                ..Default::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| Error::setting("--kubeconfig", format!("{shown}: {e}")))?;
            (config, shown)
        }
        None => {
            if c.context.is_some() {
                return Err(Error::setting(
                    "--context",
                    "no kubeconfig to take it from (give --kubeconfig, or set $KUBECONFIG)",
                ));
            }
            let config = kube::Config::incluster().map_err(|e| {
                Error::setting(
                    "--kubeconfig",
                    format!(
                        "not in a cluster ({e}) and no kubeconfig: give --kubeconfig, set \
                         $KUBECONFIG or create ~/.kube/config"
                    ),
                )
            })?;
            (config, "in-cluster".to_string())
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
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(Duration::from_secs(30));
    config.default_retry = false;
    Ok((config, source))
}

/// A kube client from `config`, under agentprof's API layer.
pub fn client(config: kube::Config, api: &Arc<ApiStats>) -> Result<kube::Client, kube::Error> {
    crate::http::tls();
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&super::api::ApiLayer::new(Arc::clone(api)))
        .build())
}

/// Connects as the user asked: a kubeconfig's context, or the pod's service account.
pub async fn connect(c: &Connect) -> Result<Cluster, Error> {
    let (config, source) = config(c).await?;
    let namespace = config.default_namespace.clone();
    let server = agentprof_checks::redact::url_text(&config.cluster_url.to_string());
    let api = Arc::new(ApiStats::default());
    let client = client(config.clone(), &api)
        .map_err(|e| Error::setting("--kubeconfig", format!("{source}: {e}")))?;
    Ok(Cluster {
        client,
        config,
        namespace,
        source,
        server,
        api,
    })
}

/// What a client made from `config` sends to authenticate, in words (never the secret).
pub fn credentials(config: &kube::Config) -> String {
    let a = &config.auth_info;
    if let Some(f) = &a.token_file {
        format!("the bearer token in {f} (re-read every minute)")
    } else if a.token.is_some() {
        "the kubeconfig user's bearer token".into()
    } else if let Some(e) = &a.exec {
        format!(
            "a token from the exec credential plugin {}",
            e.command.as_deref().unwrap_or("?")
        )
    } else if a.client_certificate.is_some() || a.client_certificate_data.is_some() {
        "a client certificate".into()
    } else if a.username.is_some() {
        "basic auth".into()
    } else if a.auth_provider.is_some() {
        "the kubeconfig's auth provider".into()
    } else {
        "no credentials".into()
    }
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, Error> {
    let text = agentprof_checks::config::read_limited(path, 4 << 20, "")
        .map_err(|e| Error::setting("--kubeconfig", e.to_string()))?;
    let text = String::from_utf8(text)
        .map_err(|_| Error::setting("--kubeconfig", format!("{}: not UTF-8", path.display())))?;
    Kubeconfig::from_yaml(&text)
        .map_err(|e| Error::setting("--kubeconfig", format!("{}: {e}", path.display())))
}

/// A small file's trimmed text (a namespace), if it is there.
fn read_small(path: &Path) -> Option<String> {
    let b = agentprof_checks::config::read_limited(path, 64 << 10, "").ok()?;
    let s = String::from_utf8(b).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}
