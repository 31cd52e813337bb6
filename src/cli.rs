//! The command line, as clap derive types only. `completions/` and `man/` are generated from
//! `Cli::command()`; the command layer converts these types into plain option structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "agentprof",
    version,
    about = "What agent checks, plugins and Go services cost: memory, I/O, threads, connections, run time and calls",
    long_about = None,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one check once (or -t N times) and print its metrics and what each run cost
    Check(CheckArgs),
    /// Run every configured check on its interval: the agent, in developer mode with --profile
    Start(StartArgs),
    /// List the checks agentprof can run, where their configuration comes from, and their instances
    List(ListArgs),
    /// Print a pprof profile's top functions, row for row as `go tool pprof -top`
    Top(TopArgs),
    /// CI performance gate: run a check N times and compare with a baseline; exit 1 on a regression
    Gate(Box<GateArgs>),
    /// Pull pprof profiles from Go services' net/http/pprof: files, top tables, deltas, uploads
    #[command(disable_version_flag = true)]
    Pull(Box<PullArgs>),
    /// Discover the Go pprof endpoints of this node's pods and capture their profiles on a
    /// schedule and when they cross CPU or memory thresholds (run as a DaemonSet)
    #[command(disable_version_flag = true)]
    K8s(Box<K8sArgs>),
    /// Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit's port and
    /// path: each stored under <out>/<service>/, listed in uploads.jsonl, printed
    Receive(Box<ReceiveArgs>),
    /// A local web page over the profiles agentprof wrote or received: lists with the cause of
    /// each capture, top tables, flamegraphs and comparisons (read-only, offline)
    Ui(UiArgs),
    /// Compare two pprof profiles: per function the change of flat and cum, biggest first
    Diff(DiffArgs),
    /// The delta of two snapshots of a cumulative profile (heap, allocs, mutex, block), as pull makes it
    Delta(DeltaArgs),
    /// Draw a pprof profile as a flamegraph (SVG)
    Flamegraph(FlamegraphArgs),
    /// Print a shell completion script to stdout
    Completions(CompletionsArgs),
    /// Write the man pages (agentprof.1 and one page per subcommand)
    Man(ManArgs),
}

/// How much a local profile file may weigh; network input always uses the strict limits.
#[derive(Debug, Args, Clone)]
pub struct ProfileLimitArgs {
    /// Largest file accepted, compressed or not (MiB)
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_size_mb: u64,
    /// Largest decompressed profile accepted (MiB); checked while inflating
    #[arg(long, value_name = "MIB", default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_decompressed_mb: u64,
    /// Most protobuf fields and packed elements accepted, counted before decoding
    #[arg(long, value_name = "N", default_value_t = 100_000_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_fields: u64,
    /// Most memory decoding may take (MiB), estimated from the profile's samples and elements before anything is allocated
    #[arg(long, value_name = "MIB", default_value_t = 2048,
          value_parser = clap::value_parser!(u64).range(1..=1048576))]
    pub max_memory_mb: u64,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// A pprof profile: gzip, zstd or raw protobuf (Go's runtime/pprof, dd-trace-go uploads, any pprof writer)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Sort by cumulative value instead of flat
    #[arg(long)]
    pub cum: bool,
    /// Which sample type to report: a name (alloc_space, inuse_space, contentions, delay, …) or
    /// an index; default: the profile's default sample type, else the last
    #[arg(long, value_name = "NAME")]
    pub sample_index: Option<String>,
    /// Show at most N rows (default: every node above 0.5% of the total)
    #[arg(short = 'n', long, value_name = "N")]
    pub nodes: Option<usize>,
    /// Leave out nodes whose cum is under this fraction of the total, as go tool pprof's
    /// -nodefraction (0 keeps every node)
    #[arg(long, value_name = "F", default_value_t = 0.005, value_parser = fraction)]
    pub node_fraction: f64,
    /// Print one JSON document (see docs/json.md)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

/// A fraction from 0 to 1.
fn fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number (a fraction such as 0.005)"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s} is outside 0 to 1"));
    }
    Ok(v)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateFormat {
    Table,
    Json,
    Markdown,
    Junit,
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The check to gate (see `agentprof list`)
    #[arg(value_name = "CHECK", required_unless_present = "compare")]
    pub name: Option<String>,
    /// The baseline file: written by --update-baseline, compared with otherwise
    #[arg(long, value_name = "FILE", required_unless_present = "compare")]
    pub baseline: Option<PathBuf>,
    /// Timed runs after one warm-up run [default: 10]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(3..=10000))]
    pub times: Option<u32>,
    /// Write the baseline from this run and exit 0
    #[arg(long)]
    pub update_baseline: bool,
    /// Compare two reports made elsewhere (baseline files, `--format json` outputs or
    /// `agentprof check --json` reports)
    #[arg(long, num_args = 2, value_names = ["BASE.json", "NEW.json"], conflicts_with_all = ["name", "update_baseline"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Thresholds from this YAML file (the keys of a check conf's `gate:` section); flags
    /// override it, it overrides the check conf's `gate:` section
    #[arg(long, value_name = "FILE")]
    pub gate_config: Option<PathBuf>,
    /// A slowdown under this percentage is never a regression [default: 10]
    #[arg(long, value_name = "PCT")]
    pub threshold: Option<f64>,
    /// Significance level of the timing test (one-sided Mann-Whitney U) [default: 0.01]
    #[arg(long, value_name = "P")]
    pub alpha: Option<f64>,
    /// A slowdown of fewer microseconds per run is never a regression [default: 50]
    #[arg(long, value_name = "US")]
    pub min_slowdown_us: Option<f64>,
    /// RSS growth per run (KiB, least-squares slope) that counts as a leak [default: 512]
    #[arg(long, value_name = "KIB")]
    pub rss_slope_kib: Option<f64>,
    /// Peak RSS growth over the baseline (percent, and at least 1 MiB) that fails [default: 25]
    #[arg(long, value_name = "PCT")]
    pub peak_rss_pct: Option<f64>,
    /// Growth of Python calls per run, in total or of a top function, that fails [default: 1]
    #[arg(long, value_name = "PCT")]
    pub calls_pct: Option<f64>,
    /// With --memory: growth of traced bytes per run (peak and kept; and at least 1 KiB) that
    /// fails [default: 1]
    #[arg(long, value_name = "PCT")]
    pub alloc_pct: Option<f64>,
    /// Growth of the metric series a run emits that fails [default: 0]
    #[arg(long, value_name = "PCT")]
    pub series_pct: Option<f64>,
    /// A metric the baseline had and this run does not fails the gate (default: a warning)
    #[arg(long)]
    pub strict: bool,
    /// Python checks: trace allocations (tracemalloc) and compare the bytes each run
    /// allocates and keeps; the baseline must be made with it too
    #[arg(long)]
    pub memory: bool,
    /// Write a differential flamegraph of the baseline's and this run's stacks (red: more
    /// time per run, blue: less); cProfile stacks for Python checks, sampled for built-ins
    #[arg(long, value_name = "OUT.svg")]
    pub flamegraph_diff: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = GateFormat::Table)]
    pub format: GateFormat,
    /// Write the report here instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Run only instances[N] (0-based; default 0)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub instance: usize,
    #[command(flatten)]
    pub config: ConfigArgs,
}

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
    /// Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
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
    /// Where uploads that failed wait to be sent (default: $AGENTPROF_STATE_DIR or the XDG state dir)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
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
    /// Where forwards that failed wait to be sent (default: receive.spool_dir, else
    /// $AGENTPROF_STATE_DIR or the XDG state dir's receive-spool)
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,
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
    /// Open the page in the desktop's browser once it is served
    #[arg(long)]
    pub open: bool,
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

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The profile before the change
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The profile after the change
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Sample type to compare (name or index); default: the new profile's default
    #[arg(long, value_name = "NAME")]
    pub sample_index: Option<String>,
    /// Sort by the change of cum instead of flat
    #[arg(long)]
    pub cum: bool,
    /// Scale the base so both totals are equal (profiles of different lengths)
    #[arg(long)]
    pub normalize: bool,
    /// Show at most N changed functions (default: 30 in the table, all in --json); 0 shows all
    #[arg(short = 'n', long, value_name = "N")]
    pub nodes: Option<usize>,
    /// Also write a differential flamegraph here (red grew, blue shrank)
    #[arg(long, value_name = "OUT.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Print one JSON document (see docs/json.md)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

#[derive(Debug, Args)]
pub struct DeltaArgs {
    /// The earlier snapshot
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The later snapshot
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Where to write the delta profile (gzip)
    #[arg(short = 'o', long, value_name = "OUT.pb.gz")]
    pub output: PathBuf,
    /// Print what was done as JSON (stacks, time taken)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// A pprof profile: gzip, zstd or raw protobuf
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the SVG
    #[arg(short = 'o', long, value_name = "OUT.svg")]
    pub output: PathBuf,
    /// Sample type to draw (name or index); default: the profile's default, else the last
    #[arg(long, value_name = "NAME")]
    pub sample_index: Option<String>,
    /// Title of the flamegraph (default: the file name and sample type)
    #[arg(long)]
    pub title: Option<String>,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

/// Where configuration comes from; shared by every command that loads checks.
#[derive(Debug, Args, Clone, Default)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub files: ConfdArgs,
    /// Directory of plugin checks
    #[arg(long, value_name = "DIR")]
    pub checks: Option<PathBuf>,
    /// Python interpreter for Python checks (a virtualenv's python works)
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
}

/// Where the configuration is: agentprof.yaml and conf.d. `pull` and `k8s` take only
/// these (they run no checks); the commands that run checks add `ConfigArgs`' two.
#[derive(Debug, Args, Clone, Default)]
pub struct ConfdArgs {
    /// agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory of check configurations (NAME.yaml or NAME.d/conf.yaml; profile.yaml for pull and k8s)
    #[arg(long, value_name = "DIR")]
    pub confd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Name of the check to run (see `agentprof list`)
    pub name: String,
    /// Sample the run's CPU and print the top calls by cumulative time
    #[arg(long)]
    pub profile: bool,
    /// Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)
    #[arg(short = 't', long = "times", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub times: u32,
    /// Run twice, one second apart, so rates and deltas have a value
    #[arg(short = 'r', long)]
    pub rate: bool,
    /// Pause between runs (e.g. 250, 500ms, 2s; a bare number is milliseconds)
    #[arg(long, value_name = "MS")]
    pub pause: Option<String>,
    /// Print one JSON document (schema in docs/json.md)
    #[arg(long, conflicts_with = "table")]
    pub json: bool,
    /// Draw bordered tables instead of plain aligned columns
    #[arg(long)]
    pub table: bool,
    /// Rows in the profile's top table
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub top: u32,
    /// Sampling frequency of the CPU profile, in Hz
    #[arg(long, value_name = "HZ", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub frequency: u32,
    /// Write a flamegraph (SVG) of the sampled runs; implies --profile
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile
    #[arg(long, value_name = "FILE.pb.gz")]
    pub pprof: Option<PathBuf>,
    /// Write a Python check's cProfile statistics as a pstats dump (python -m pstats,
    /// snakeviz); implies --profile
    #[arg(long, value_name = "FILE")]
    pub pstats: Option<PathBuf>,
    /// Append the collector.log block of every run to FILE (overrides log_file)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Trace a Python check's allocations (tracemalloc): top allocating lines per run, and
    /// with --times the lines that grew most from the first run to the last
    #[arg(long)]
    pub memory: bool,
    /// Run only instance N of the check's configuration (0-based, as in instances[N])
    #[arg(long, value_name = "N")]
    pub instance: Option<usize>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Developer mode: log each run's memory before and after and the agent's own figures
    /// (also `developer_mode: true` in agentprof.yaml)
    #[arg(long)]
    pub profile: bool,
    /// Stop by itself after this long (e.g. 30s, 10m)
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// At stop, print the summary as one JSON document (metrics then go only to the
    /// configured forwarders)
    #[arg(long)]
    pub json: bool,
    /// Write collector.log here (overrides log_file; - is stdout)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Serve the agent's own figures as OpenMetrics on http://ADDR/metrics (e.g. 127.0.0.1:9494)
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON document
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// Shell to generate the script for
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into
    #[arg(long, value_name = "DIR", default_value = "man")]
    pub out: PathBuf,
}
