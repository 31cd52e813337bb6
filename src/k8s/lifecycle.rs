//! What `k8s` does around its collecting: who it is in the lease, what it says when it
//! starts and when it loses the lease, its output directory's retention, when it stops, and
//! whether the API server ever answered.

use std::sync::Arc;

use tokio::time::Instant;

use super::collector::RunOptions;
use super::events::log;
use super::metrics::Metrics;
use agentprof_k8s::Kubelet;

/// Resolves at `end` (never without one), or at SIGTERM/SIGINT.
pub(super) async fn stopped_or_at(end: Option<Instant>) {
    tokio::select! {
        () = async { match end { Some(e) => tokio::time::sleep_until(e).await, None => std::future::pending().await } } => {}
        () = crate::serve::stopped() => {}
    }
}

/// What stops the collector before or after its loop: a flag, a file or a setting the
/// user must change (exit 2), or a runtime failure (exit 3): the API server never answered,
/// a thread or task of its own could not run.
#[derive(Debug, thiserror::Error)]
pub enum K8sError {
    #[error(transparent)]
    Usage(#[from] crate::error::UsageError),
    #[error(transparent)]
    NeverAnswered(#[from] NeverAnswered),
    #[error("cannot start the upload thread: {0}")]
    UploadThread(std::io::Error),
    #[error("a task of the collector's start failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The cluster failed at run time.
    #[error(transparent)]
    Cluster(agentprof_k8s::Error),
}

/// A cluster setting agentprof cannot use is a usage error (exit 2); the rest of the
/// cluster's errors stop the collector at run time.
impl From<agentprof_k8s::Error> for K8sError {
    fn from(e: agentprof_k8s::Error) -> K8sError {
        match e {
            agentprof_k8s::Error::Setting { setting, message } => {
                K8sError::Usage(crate::error::UsageError::flag(setting, message))
            }
            e => K8sError::Cluster(e),
        }
    }
}

/// The API server never answered in the whole run: where it was, and its last trouble
/// (a runtime failure, exit 3).
#[derive(Debug, thiserror::Error)]
#[error("the API server at {server} never answered: {last}")]
pub struct NeverAnswered {
    server: String,
    last: String,
}

/// An error when the API server never answered in the whole run (its last trouble said).
pub(super) fn answered_once(cluster: &agentprof_k8s::Cluster) -> Result<(), NeverAnswered> {
    if cluster.api.get_ok() == 0 {
        return Err(NeverAnswered {
            server: cluster.server.to_string(),
            last: cluster
                .api
                .unhealthy()
                .unwrap_or_else(|| "no request completed".into()),
        });
    }
    Ok(())
}

/// The lease went to `holder` (None: not renewed in time): this instance stands by, and
/// says so.
pub(super) fn say_lease_lost(
    metrics: &Metrics,
    lease_name: &str,
    identity: &str,
    holder: Option<String>,
    why: &str,
    json: bool,
) {
    metrics.set_role(super::metrics::Role::Standby {
        lease: lease_name.to_string(),
        holder: holder.clone(),
    });
    log(
        json,
        "lease_lost",
        serde_json::json!({"lease": lease_name, "identity": identity, "holder": holder, "why": why,
            "then": "collecting nothing, standing by until the lease is this instance's again"}),
    );
}

/// This instance's name in the lease: its pod's (`POD_NAME`), else the host's and the pid.
pub(super) fn identity(hostname: &str) -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{hostname}-{}", std::process::id()))
}

/// The `started` event: the node, the API server and how it is reached, the rules, the
/// kubelet and its credentials, the lease.
pub(super) fn say_started(
    opts: &RunOptions,
    cluster: &agentprof_k8s::Cluster,
    kubelet: &Kubelet,
    lease_name: &str,
) {
    log(
        opts.json,
        "started",
        serde_json::json!({"node": opts.node, "api_server": cluster.server, "source": cluster.source,
            "credentials": agentprof_k8s::credentials(&cluster.config),
            "rules": opts.rules.rules.len(), "kubelet": kubelet.describe(),
            "kubelet_credentials": kubelet.credentials(),
            "lease": format!("{}/{lease_name}", cluster.namespace)}),
    );
}

/// `--out`'s retention, kept from now on: what it deletes is counted and said.
pub(super) fn keep_out_dir(opts: &RunOptions, metrics: &Arc<Metrics>) {
    let Some(dir) = &opts.out else { return };
    let (m, json) = (Arc::clone(metrics), opts.json);
    let shown = dir.display().to_string();
    crate::retention::keep_within(opts.rules.retention, dir.clone(), move |d| {
        m.retention_deleted.inc_by(d.files);
        log(
            json,
            "retention",
            serde_json::json!({"dir": shown, "deleted_files": d.files, "deleted_bytes": d.bytes}),
        );
    });
}
