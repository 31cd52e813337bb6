//! The arguments of the commands that collect profiles from services or serve them: pull,
//! k8s, receive, ui.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{ConfdArgs, ProfileLimitArgs};

#[derive(Debug, Args)]
pub struct PullArgs {
    /// The service's pprof URL: http://host:6060 means /debug/pprof; a path is a prefix
    /// (http://h:6060/custom/pprof). Without it, the targets of conf.d/profile.yaml
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// Profile types, comma-separated: cpu,heap,allocs,goroutine,mutex,block,threadcreate
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "cpu,heap,goroutine,mutex,block"
    )]
    pub types: Vec<String>,
    /// How long the CPU profile records (its seconds=)
    #[arg(long, value_name = "D", default_value = "10s")]
    pub profile_duration: String,
    /// Collect again every D (at least 10s); runs until SIGINT/SIGTERM unless --count is given
    #[arg(long, value_name = "D")]
    pub interval: Option<String>,
    /// Collect once (the default without --interval)
    #[arg(long, conflicts_with = "count")]
    pub once: bool,
    /// Collect N times, --interval apart (default 60s)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Timeout of one request; must exceed the profile duration (default: duration + 10s)
    #[arg(long, value_name = "D")]
    pub http_timeout: Option<String>,
    /// Write <DIR>/<service>/<type>-<time>.pb.gz (and delta-<type>-… for cumulative types)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print each profile's top N functions (the delta when there is one)
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Also write an SVG flamegraph of each profile next to it (needs --out)
    #[arg(long, requires = "out")]
    pub flamegraph: bool,
    /// Keep --out within N MiB: after each collection the oldest files are deleted first
    #[arg(long, value_name = "N", requires = "out",
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub retention_mb: Option<u64>,
    /// Delete files under --out older than N days after each collection
    #[arg(long, value_name = "N", requires = "out",
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub retention_days: Option<u64>,
    /// Service name (default: the URL's host)
    #[arg(long)]
    pub service: Option<String>,
    /// Environment tag (env:)
    #[arg(long)]
    pub env: Option<String>,
    /// Version tag (version:)
    #[arg(long)]
    pub version: Option<String>,
    /// A tag added to uploads and figures, k:v (repeatable)
    #[arg(long = "tag", value_name = "K:V")]
    pub tags: Vec<String>,
    /// CA certificate(s) (PEM) to trust for https targets
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for https targets that ask for one
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not verify the target's certificate (not for production)
    #[arg(long)]
    pub insecure_skip_verify: bool,
    /// POST each collection here in dd-trace-go's format (DataKit: http://host:9529/profiling/v1/input)
    #[arg(long, value_name = "URL")]
    pub upload: Option<String>,
    /// Also send each collection as OTLP profiles to an OpenTelemetry Collector
    /// (http://host:4318; a URL without a path gets /v1development/profiles)
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never
    /// written to the spool)
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_headers: Vec<String>,
    /// Attach each pprof profile to its OTLP profiles as original_payload (larger requests)
    #[arg(long)]
    pub otlp_original_payload: bool,
    /// Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
    /// Longest wait for one upload request (--upload, --otlp), connecting included; a target
    /// that does not answer in time is retried, then the upload waits in the spool
    #[arg(long, value_name = "D", default_value = "30s")]
    pub upload_timeout: String,
    /// Largest response accepted (MiB); decompressed at most min(this, 8 MiB)
    #[arg(long, value_name = "MIB", default_value_t = 32,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub body_size_limit_mb: u64,
    /// Memory for delta baselines (MiB), least recently used evicted first
    #[arg(long, value_name = "MIB", default_value_t = 32,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub delta_cache_mb: u64,
    /// Print one JSON document per collection (see docs/json.md)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub config: ConfdArgs,
}

/// Where the cluster and the rules are, for `k8s` and `k8s targets`.
#[derive(Debug, Args, Clone, Default)]
pub struct K8sCommon {
    /// This node's name (default: $NODE_NAME, from the downward API's spec.nodeName)
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, else in-cluster)
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context to use (default: its current-context)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    #[command(flatten)]
    pub config: ConfdArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub action: Option<K8sAction>,
    #[command(flatten)]
    pub common: K8sCommon,
    /// Write captures under DIR/<namespace>/<pod>/<container>/ and DIR/captures.jsonl
    /// (default: profile.yaml's out_dir)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// POST each capture in dd-trace-go's format here (default: profile.yaml's upload_url)
    #[arg(long, value_name = "URL")]
    pub upload: Option<String>,
    /// Also send each capture as OTLP profiles to an OpenTelemetry Collector
    /// (http://host:4318; a URL without a path gets /v1development/profiles; default:
    /// profile.yaml's otlp_url)
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never
    /// written to the spool; default: profile.yaml's otlp_headers)
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_headers: Vec<String>,
    /// Attach each pprof profile to its OTLP profiles as original_payload (larger requests;
    /// default: profile.yaml's otlp_original_payload)
    #[arg(long)]
    pub otlp_original_payload: bool,
    /// Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
    /// Longest wait for one upload request (--upload, --otlp), connecting included; a target
    /// that does not answer in time is retried, then the capture waits in the spool
    #[arg(long, value_name = "D", default_value = "30s")]
    pub upload_timeout: String,
    /// Serve /metrics (OpenMetrics), /healthz and /readyz here, e.g. 0.0.0.0:9090
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Stop after D (default: run until SIGTERM or Ctrl-C)
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Print one JSON line per event (target found or removed, capture, skip) instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReceiveArgs {
    /// Address to listen on (default: agentprof.yaml's receive.listen, else 127.0.0.1:9529;
    /// 0.0.0.0:9529 to take uploads from other hosts)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Store uploads under DIR/<service>/ and DIR/uploads.jsonl (default: receive.out_dir,
    /// else ./profiles)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The durable queue of uploads acknowledged and not yet stored (default:
    /// receive.queue_dir, else $AGENTPROF_STATE_DIR or the XDG state dir's receive-queue)
    #[arg(long, value_name = "DIR")]
    pub queue: Option<PathBuf>,
    /// Print each profile's top N functions with its upload
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Post each upload on to URL (DataKit, a Datadog Agent, Datadog's intake with
    /// agentprof.yaml's api_key) with agentprof.yaml's tags added (default: receive.forward_url)
    #[arg(long, value_name = "URL")]
    pub forward: Option<String>,
    /// Also send each upload's pprof profiles on as OTLP profiles to an OpenTelemetry
    /// Collector (http://host:4318; a URL without a path gets /v1development/profiles;
    /// default: receive.forward_otlp_url)
    #[arg(long, value_name = "URL")]
    pub forward_otlp: Option<String>,
    /// A header of every OTLP request, NAME=VALUE (repeatable; for credentials: never
    /// written to the spool; default: receive.otlp_headers)
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_headers: Vec<String>,
    /// Attach each pprof profile to its OTLP profiles as original_payload (larger requests;
    /// default: receive.otlp_original_payload)
    #[arg(long)]
    pub otlp_original_payload: bool,
    /// Where forwards that failed wait to be sent (default: receive.spool_dir, else
    /// $AGENTPROF_STATE_DIR or the XDG state dir's receive-spool; OTLP's in otlp/ under it)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
    /// Longest wait for one forward request (--forward, --forward-otlp), connecting
    /// included; a target that does not answer in time is retried from the spool (default:
    /// receive.forward_timeout_s, else 30s)
    #[arg(long, value_name = "D")]
    pub forward_timeout: Option<String>,
    /// Listen over TLS with this certificate chain (PEM; default: receive.tls_cert)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM; default: receive.tls_key)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve /metrics (OpenMetrics) and /healthz here, e.g. 127.0.0.1:9091
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Stop after D (default: run until SIGTERM or Ctrl-C)
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Print one JSON line per upload (an uploads.jsonl line, see docs/json.md) instead of text
    #[arg(long)]
    pub json: bool,
    /// agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Directories to show (default: the output directories agentprof.yaml configures —
    /// receive.out_dir and profile_dir — else ./profiles; name k8s's --out directory here)
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Address to serve the page on (default 127.0.0.1:7070; another host's address exposes
    /// the profiles to it, and agentprof says so)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// A name the page is also reached by (NAME or NAME:PORT, repeatable): requests whose
    /// Host header is neither the listen address, localhost nor one of these get 421, so
    /// a web page on another site cannot read the profiles through DNS rebinding
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// Open the page in the desktop's browser once it is served
    #[arg(long)]
    pub open: bool,
    /// Memory the profiles being read and kept may hold together (MiB): each file's bytes,
    /// its decompressed size and its decoded model are reserved before they are held, kept
    /// profiles given back least recently used first; without room a request gets 503
    #[arg(long, value_name = "MIB", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(16..=1_048_576))]
    pub memory_mb: u64,
    /// After D without a request, the profiles and flamegraphs kept are dropped and their
    /// memory given back to the system (the next request reads them again)
    #[arg(long = "keep-idle", value_name = "D", default_value = "60s")]
    pub keep_idle: String,
    /// A directory of source files the source view may read (repeatable): a profile's file
    /// names are looked for under it as go tool pprof -source_path does, and nothing
    /// outside these directories is read. Without one, a ui on a loopback address reads
    /// the source files (.go, .py, .rs and the like) at the paths the profile records, and
    /// a ui on another address shows the lines with samples and no text
    #[arg(long = "source-path", value_name = "DIR")]
    pub source_paths: Vec<PathBuf>,
    /// Where the merges of each ended hour's captures (hourly rollups) are kept, so that a
    /// day's merge reads 24 profiles rather than every capture (default:
    /// $XDG_CACHE_HOME/agentprof/ui, else ~/.cache/agentprof/ui); the directories shown are
    /// only read
    #[arg(long = "cache-dir", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Keep no hourly rollups: every merge reads its captures
    #[arg(long = "no-cache", conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// Stop after D (default: run until SIGTERM or Ctrl-C)
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

#[derive(Debug, Subcommand)]
pub enum K8sAction {
    /// Print once every pod on the node, the rule that matched, the endpoints that would be
    /// collected, and why each other pod or container is not a target
    Targets(K8sTargetsArgs),
}

#[derive(Debug, Args)]
pub struct K8sTargetsArgs {
    #[command(flatten)]
    pub common: K8sCommon,
    /// Print one JSON document (see docs/json.md)
    #[arg(long)]
    pub json: bool,
}
