//! `agentprof k8s` and `agentprof k8s targets`: the rules of conf.d/profile.yaml, the node,
//! the API server; then the collector, or the report of what it would collect.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::{K8sAction, K8sArgs, K8sCommon, K8sTargetsArgs};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::k8s::config::K8sConfig;
use crate::k8s::targets::{PodReport, evaluate};
use agentprof_k8s::{Cluster, Connect};

use super::{Outcome, confd_options};

/// What every k8s command starts from.
pub struct Setup {
    pub agent: AgentConfig,
    pub rules: K8sConfig,
    /// The static targets (`instances:`), collected beside the rules' pods.
    pub statics: Vec<crate::pull::Target>,
    pub profile_yaml: PathBuf,
    pub node: String,
    pub cluster_name: String,
    pub connect: Connect,
}

fn setup(c: &K8sCommon) -> anyhow::Result<Setup> {
    let agent = AgentConfig::load(&confd_options(&c.config))?;
    let path = crate::config::CheckConf::find(&agent.confd_path, "profile").ok_or_else(|| {
        UsageError::config(
            &agent.confd_path,
            format!(
                "no profile.yaml here: its `kubernetes:` rules say what to collect; {}",
                crate::config::start_from_example(&agent.confd_path, "profile")
            ),
        )
    })?;
    let text = crate::config::read_config_text(&path)?;
    let rules = K8sConfig::parse(&path, &text)?.ok_or_else(|| {
        UsageError::config(
            &path,
            format!(
                "no `kubernetes:` rules: add at least one (as in {})",
                agent.confd_path.join("profile.yaml.example").display()
            ),
        )
    })?;
    let statics = super::pull::static_targets(&path, &text)?;
    let node = match c.node.clone() {
        Some(n) => n,
        None => std::env::var("NODE_NAME").unwrap_or_default(),
    };
    if node.is_empty() {
        return Err(UsageError::flag(
            "--node",
            "which node's pods? give --node NAME or set $NODE_NAME (in a DaemonSet, from the \
             downward API's spec.nodeName)",
        )
        .into());
    }
    if !agentprof_k8s::is_dns_subdomain(&node) {
        return Err(UsageError::flag("--node", format!("{node:?} is not a node name")).into());
    }
    let cluster_name = rules
        .cluster_name
        .clone()
        .or_else(|| std::env::var("CLUSTER_NAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "default".into());
    Ok(Setup {
        agent,
        rules,
        statics,
        profile_yaml: path,
        node,
        cluster_name,
        connect: Connect {
            kubeconfig: c.kubeconfig.clone(),
            context: c.context.clone(),
        },
    })
}

/// A runtime for the commands that talk to the API server.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(crate::serve::runtime(crate::serve::Runtime::Waiter)?)
}

pub fn run(args: K8sArgs) -> anyhow::Result<Outcome> {
    match args.action {
        Some(K8sAction::Targets(t)) => targets(t),
        None => collect(args),
    }
}

fn collect(args: K8sArgs) -> anyhow::Result<Outcome> {
    let s = setup(&args.common)?;
    let flag = UsageError::flag;
    let upload = match args.upload.as_deref() {
        Some(u) => Some(super::pull::parse_upload(u).map_err(|e| flag("--upload", e))?),
        None => s.rules.upload_url.clone(),
    };
    let metrics_listen = args
        .metrics_listen
        .as_deref()
        .map(|a| super::socket_addr("--metrics-listen", a, "0.0.0.0:9090"))
        .transpose()?;
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::duration::parse(d, 1.0).map_err(|e| UsageError::flag("--duration", e)))
        .transpose()?;
    // An out_dir from profile.yaml that cannot be made is that file's error, not --out's.
    if args.out.is_none()
        && let Some(dir) = &s.rules.out_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return Err(UsageError::config(
            &s.profile_yaml,
            format!("init_config.out_dir: {}: {e}", dir.display()),
        )
        .into());
    }
    let opts = crate::k8s::run::RunOptions {
        out: args.out.clone().or_else(|| s.rules.out_dir.clone()),
        upload,
        otlp: match super::pull::otlp_target(
            args.otlp.as_deref(),
            &args.otlp_headers,
            args.otlp_original_payload,
            "--otlp",
        )? {
            Some(t) => Some(t),
            None => s.rules.otlp.clone(),
        },
        spool: args
            .spool
            .clone()
            .unwrap_or_else(|| crate::config::state_dir().join("upload-spool")),
        upload_timeout: super::pull::upload_timeout(&args.upload_timeout, "--upload-timeout")?,
        metrics_listen,
        duration,
        json: args.json,
        hostname: s.agent.hostname.clone(),
        rules: s.rules,
        statics: s.statics,
        node: s.node,
        cluster_name: s.cluster_name,
        connect: s.connect,
    };
    crate::signal::install();
    let rt = runtime()?;
    rt.block_on(crate::k8s::run::run(opts)).map_err(stopped)
}

/// A usage error stays one (exit 2); the rest stopped the collector (exit 3).
fn stopped(e: crate::k8s::K8sError) -> anyhow::Error {
    match e {
        crate::k8s::K8sError::Usage(u) => u.into(),
        other => other.into(),
    }
}

/// The report of `k8s targets --json` (docs/json.md).
#[derive(serde::Serialize)]
struct TargetsReport<'a> {
    node: &'a str,
    cluster_name: &'a str,
    api_server: &'a str,
    rules: usize,
    pods: &'a [PodReport],
    targets: usize,
    /// The `instances:` URLs (redacted), collected beside the pods.
    static_targets: Vec<String>,
    api_requests: std::collections::BTreeMap<&'static str, u64>,
}

/// One row per target and per reason a pod or container is not one (a target's own notes,
/// not ready or dropped tags, under it).
fn targets_table(reports: &[PodReport]) -> comfy_table::Table {
    let style = crate::render::Style::detect(false);
    let mut t = crate::render::table::table(
        style,
        &["POD", "CONTAINER", "RULE", "STATUS", "ENDPOINT / WHY"],
    );
    for r in reports {
        let pod = format!("{}/{}", r.namespace, r.pod);
        for f in &r.targets {
            t.add_row(vec![
                pod.clone(),
                f.container.clone(),
                f.rule.to_string(),
                if f.ready { "target" } else { "waiting" }.to_string(),
                f.endpoint.clone(),
            ]);
        }
        for k in &r.skipped {
            t.add_row(vec![
                pod.clone(),
                k.container.clone().unwrap_or_else(|| "-".into()),
                k.rule.map_or_else(|| "-".into(), |i| i.to_string()),
                k.reason.as_str().to_string(),
                k.detail.clone(),
            ]);
        }
    }
    t
}

fn targets(args: K8sTargetsArgs) -> anyhow::Result<Outcome> {
    let s = setup(&args.common)?;
    crate::signal::install();
    let rt = runtime()?;
    let (cluster, pods): (Cluster, _) = rt.block_on(async {
        let cluster = agentprof_k8s::connect(&s.connect)
            .await
            .map_err(|e| stopped(e.into()))?;
        let listed = tokio::select! {
            r = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                agentprof_k8s::list_node_pods(&cluster.client, &s.node),
            ) => r.map_err(|_| String::from("no answer within 60s")).and_then(|r| r.map_err(|e| e.to_string())),
            () = crate::serve::stopped() => Err(String::from("stopped by a signal")),
        };
        let pods = listed.map_err(|e| {
            anyhow::anyhow!(
                "cannot list the pods of node {} from {}: {e}",
                s.node,
                cluster.server
            )
        })?;
        anyhow::Ok((cluster, pods))
    })?;
    let reports: Vec<PodReport> = pods
        .iter()
        .map(|p| evaluate(&s.rules.rules, p, &s.cluster_name, &s.node))
        .collect();
    let n_targets: usize = reports.iter().map(|r| r.targets.len()).sum();
    let statics: Vec<String> = s
        .statics
        .iter()
        .map(|t| crate::pull::fetch::redact(&t.url))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = TargetsReport {
            node: &s.node,
            cluster_name: &s.cluster_name,
            api_server: &cluster.server,
            rules: s.rules.rules.len(),
            pods: &reports,
            targets: n_targets,
            static_targets: statics.clone(),
            api_requests: cluster.api.by_verb(),
        };
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(Outcome::Success);
    }
    let t = targets_table(&reports);
    writeln!(
        out,
        "node {} ({} pods, {} rules, cluster {}): {n_targets} target(s)",
        s.node,
        reports.len(),
        s.rules.rules.len(),
        s.cluster_name
    )?;
    if !reports.is_empty() {
        writeln!(out, "{t}")?;
    }
    for u in &statics {
        writeln!(out, "static target (instances:): {u}")?;
    }
    Ok(Outcome::Success)
}
