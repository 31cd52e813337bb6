//! `agentprof receive`: flags over agentprof.yaml's `receive:` section over defaults.

use std::time::Duration;

use crate::cli::{ConfdArgs, ReceiveArgs};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::receive::run::ReceiveOptions;
use crate::receive::store::StoreOptions;

use super::{Outcome, confd_options};

const MIB: u64 = 1 << 20;

/// `--tls-cert` and `--tls-key` (or receive.tls_cert, receive.tls_key): both or neither.
fn tls(
    args: &ReceiveArgs,
    file: &crate::receive::config::ReceiveFile,
) -> anyhow::Result<Option<std::sync::Arc<rustls::ServerConfig>>> {
    let flag = UsageError::flag;
    Ok(
        match (
            args.tls_cert.clone().or(file.tls_cert.clone()),
            args.tls_key.clone().or(file.tls_key.clone()),
        ) {
            (Some(c), Some(k)) => {
                Some(crate::receive::http::tls_config(&c, &k).map_err(|e| flag("--tls-cert", e))?)
            }
            (None, None) => None,
            _ => {
                return Err(UsageError::flag(
                    "--tls-cert",
                    "receive.tls_cert and receive.tls_key go together",
                )
                .into());
            }
        },
    )
}

/// `--forward` (or receive.forward_url) and `--forward-otlp` (or receive.forward_otlp_url):
/// where each upload goes on, with their spool.
fn forwarder(
    args: &ReceiveArgs,
    file: &crate::receive::config::ReceiveFile,
    agent: &AgentConfig,
) -> anyhow::Result<Option<crate::receive::forward::Forwarder>> {
    let flag = UsageError::flag;
    let url = args
        .forward
        .clone()
        .or(file.forward_url.clone())
        .map(|u| super::pull::parse_upload(&u).map_err(|e| flag("--forward", e)))
        .transpose()?;
    let otlp_url = args.forward_otlp.clone().or(file.forward_otlp_url.clone());
    let headers: Vec<String> = if args.otlp_headers.is_empty() {
        file.otlp_headers
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    } else {
        args.otlp_headers.clone()
    };
    let otlp = super::pull::otlp_target(
        otlp_url.as_deref(),
        &headers,
        args.otlp_original_payload || file.otlp_original_payload.unwrap_or(false),
        "--forward-otlp",
    )?;
    if url.is_none() && otlp.is_none() {
        return Ok(None);
    }
    let spool = args
        .spool
        .clone()
        .or(file.spool_dir.clone())
        .unwrap_or_else(|| crate::config::state_dir().join("receive-spool"));
    let key = agent.api_key.as_ref().map(|k| k.0.clone());
    let timeout = match &args.forward_timeout {
        Some(t) => super::pull::upload_timeout(t, "--forward-timeout")?,
        None => file.forward_timeout_s.map_or(
            crate::pull::upload::DEFAULT_TIMEOUT,
            std::time::Duration::from_secs,
        ),
    };
    let which = if url.is_some() {
        "--forward"
    } else {
        "--forward-otlp"
    };
    Ok(Some(
        crate::receive::forward::Forwarder::new(url, otlp, spool, agent.tags.clone(), key, timeout)
            .map_err(|e| UsageError::flag(which, e))?,
    ))
}

pub fn run(args: ReceiveArgs) -> anyhow::Result<Outcome> {
    let agent = AgentConfig::load(&confd_options(&ConfdArgs {
        config: args.config.clone(),
        confd: None,
    }))?;
    let file = crate::receive::config::load(agent.source.as_deref())?;
    let listen_text = args
        .listen
        .clone()
        .or(file.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:9529".into());
    let listen = super::socket_addr("--listen", &listen_text, "0.0.0.0:9529")?;
    let metrics_listen = args
        .metrics_listen
        .as_deref()
        .map(|a| super::socket_addr("--metrics-listen", a, "127.0.0.1:9091"))
        .transpose()?;
    let duration: Option<Duration> = args
        .duration
        .as_deref()
        .map(|d| crate::duration::parse(d, 1.0).map_err(|e| UsageError::flag("--duration", e)))
        .transpose()?;
    let body_mb = file.body_size_limit_mb.unwrap_or(32);
    let tls = tls(&args, &file)?;
    let forward = forwarder(&args, &file, &agent)?;
    let opts = ReceiveOptions {
        listen,
        endpoints: file
            .endpoints
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| vec!["/profiling/v1/input".into()]),
        store: StoreOptions {
            out: args
                .out
                .clone()
                .or(file.out_dir.clone())
                .unwrap_or_else(|| "profiles".into()),
            top: args.top.or(file.top).unwrap_or(0),
            limits: crate::pprof::Limits {
                fields: file.max_profile_fields.unwrap_or(8 << 20),
                ..crate::pprof::Limits::network(body_mb)
            },
        },
        queue_dir: args
            .queue
            .clone()
            .or(file.queue_dir.clone())
            .unwrap_or_else(|| crate::config::state_dir().join("receive-queue")),
        capacity: file.cache_capacity_mb.unwrap_or(256) * MIB,
        body_limit: body_mb * MIB,
        memory_limit: file.memory_limit_mb.unwrap_or(192) * MIB,
        upload_decompressed: file.upload_decompressed_mb.unwrap_or(64) * MIB,
        max_connections: file.max_connections.unwrap_or(256) as usize,
        min_free: file.min_free_mb.unwrap_or(64) * MIB,
        retention: crate::retention::Retention {
            max_bytes: file.retention_mb.map(|m| m * MIB),
            max_age: file
                .retention_days
                .map(|d| std::time::Duration::from_secs(d * 86_400)),
        },
        read_timeout: std::time::Duration::from_secs(file.read_timeout_s.unwrap_or(60)),
        metrics_listen,
        duration,
        json: args.json,
        forward,
        tls,
        figures: crate::emit::configured(&agent)?,
        hostname: agent.hostname.clone(),
    };
    crate::signal::install();
    let rt = crate::serve::runtime(crate::serve::Runtime::Server { blocking: 16 })?;
    Ok(rt.block_on(crate::receive::run::run(opts))?)
}
