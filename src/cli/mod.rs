//! The command line, as clap derive types only. `completions/` and `man/` are generated from
//! `Cli::command()`; the command layer converts these types into plain option structs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod profiles;
mod services;

pub use profiles::{
    DeltaArgs, DiffArgs, FlamegraphArgs, NameFilterArgs, ProfileLimitArgs, TopArgs,
};
pub use services::{K8sAction, K8sArgs, K8sCommon, K8sTargetsArgs, PullArgs, ReceiveArgs, UiArgs};

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
    #[command(after_long_help = GATE_AFTER_HELP)]
    Gate(Box<GateArgs>),
    /// Pull pprof profiles from Go services' net/http/pprof: files, top tables, deltas, uploads
    #[command(disable_version_flag = true)]
    Pull(Box<PullArgs>),
    /// Discover the Go pprof endpoints of this node's pods and capture their profiles on a
    /// schedule and when they cross CPU or memory thresholds (run as a DaemonSet)
    #[command(disable_version_flag = true)]
    K8s(Box<K8sArgs>),
    /// Receive the uploads of dd-trace profilers (Go, Python, Java…) on DataKit's port and
    /// path, Pyroscope's SDKs (/ingest, push) and OTLP profiles (/v1development/profiles):
    /// each stored under <out>/<service>/, listed in uploads.jsonl, printed
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
    /// Write the example configurations (conf.d/*.yaml.example, agentprof.yaml.example) and
    /// the plugin checks agentprof ships (checks/) into DIR, for an installed binary
    Init(InitArgs),
}

/// What the gate's verdict on cost rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateMeasure {
    /// CPU time of each run (the default)
    Cpu,
    /// Wall time of each run (checks that wait on the network or disk)
    Wall,
    /// User-space instructions of each run, counted: deterministic
    Instructions,
}

/// What counts instructions (`--measure instructions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateCounter {
    /// The CPU's counter, through perf_event_open
    Perf,
    /// valgrind's callgrind: slower, and the report then lists the functions whose count changed
    Valgrind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateFormat {
    Table,
    Json,
    Markdown,
    Junit,
}

/// What `gate --help` ends with: the modes, the answers and the exit codes.
const GATE_AFTER_HELP: &str = "\
Modes:
  --baseline FILE          this run against a file made earlier (--update-baseline): per-process
                           medians divided by the machine's speed, one-sided Mann-Whitney U test
  --against DIR|REV        the baseline version and this one in interleaved rounds of this job:
                           paired ratios, Wilcoxon signed-rank test
  --measure instructions   counted, not timed: the CPU's counter through perf_event_open where
                           the kernel offers one, else valgrind's callgrind (with either mode)

Answers:
  no regression            the timing's 95% interval ends within the threshold
  REGRESSION               a figure failed (a timing: p < alpha and its 95% interval wholly past
                           the threshold); the verdict line names what failed first
  CANNOT TELL              the interval straddles the threshold, or the noise hid slowdowns of
                           its size: the line says the smallest it could see (\"detects ≥ +N%\")
  NEW — no baseline        --against: the baseline version has no such check

Exit status:
  0  no regression, CANNOT TELL (unless --cannot-tell fail), or a new check
  1  regression
  2  a usage or configuration error, or a check that cannot run: never read as a regression
  4  CANNOT TELL, with --cannot-tell fail

docs/ci.md has the figures behind each mode and the CI snippets.";

/// What CANNOT TELL exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CannotTellExit {
    /// Exit 0: the verdict line, the Markdown report's heading and JUnit's `<skipped>` say it
    Pass,
    /// Exit 4, its own code: the job fails (or a CI rule tells it from a regression)
    Fail,
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The check to gate (see `agentprof list`)
    #[arg(value_name = "CHECK", required_unless_present = "compare")]
    pub name: Option<String>,
    /// The baseline file: written by --update-baseline, compared with otherwise
    #[arg(long, value_name = "FILE", required_unless_present_any = ["compare", "against"])]
    pub baseline: Option<PathBuf>,
    /// A/B in this job: the baseline version's checks directory (DIR), or the checks
    /// directory as git revision REV has it, run in interleaved rounds with this one
    #[arg(long, value_name = "DIR|REV", conflicts_with_all = ["baseline", "update_baseline", "compare"])]
    pub against: Option<String>,
    /// What the verdict on cost rests on: cpu (default), wall, or instructions (counted by
    /// the CPU's counter where the kernel offers one, else by valgrind; deterministic)
    #[arg(long, value_enum)]
    pub measure: Option<GateMeasure>,
    /// Timed runs, spread evenly over the worker processes (8; more for a small --alpha),
    /// each after a warm-up run: rounded up to a multiple of them, said when it is. With
    /// --against, per side and round, at least 5 [default: 10]
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
    /// A slowdown under this percentage is never a regression [default: 10 against a
    /// baseline file, 5 with --against, 2 for instructions]
    #[arg(long, value_name = "PCT")]
    pub threshold: Option<f64>,
    /// Significance level of the timing test (one-sided: Mann-Whitney U against a baseline
    /// file, Wilcoxon signed-rank with --against) [default: 0.01]
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
    /// A metric the baseline had and this run does not fails the gate, and so do more
    /// Python calls in a change the gated measure found faster (default: warnings)
    #[arg(long)]
    pub strict: bool,
    /// With --measure instructions: what counts them [default: the CPU's counter where the
    /// kernel offers one, else valgrind; against a baseline, what counted it]
    #[arg(long, value_enum)]
    pub counter: Option<GateCounter>,
    /// Python checks: when the interpreter has no importable datadog_checks_base, gate the
    /// check on agentprof's compatible AgentCheck (default: refused, exit 2)
    #[arg(long, conflicts_with = "compare")]
    pub compat_base: bool,
    /// With --against: when the planned rounds cannot tell (the interval straddles the
    /// threshold), rounds are added until they can, or until the A/B has taken this long
    /// (0: none added) [default: 60s]
    #[arg(long, value_name = "D")]
    pub max_time: Option<String>,
    /// What CANNOT TELL exits with: pass (0) or fail (4)
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = CannotTellExit::Pass)]
    pub cannot_tell: CannotTellExit,
    /// Python checks: trace allocations (tracemalloc) and compare the bytes each run
    /// allocates and keeps; the baseline must be made with it too
    #[arg(long)]
    pub memory: bool,
    /// Write a differential flamegraph of the baseline's and this run's stacks (red: more
    /// time per run, blue: less); cProfile stacks for Python checks, sampled for built-ins;
    /// with --measure instructions counted by valgrind, instructions per run from callgrind's
    /// call graph, for every kind of check
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
    /// Directory of check configurations (NAME.yaml and NAME.d/*.yaml; profile.yaml for pull and k8s)
    #[arg(long, value_name = "DIR")]
    pub confd: Option<PathBuf>,
}

/// How `check --profile` profiles a Python check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileHow {
    /// Sampled stacks, as py-spy takes them (the default)
    Sample,
    /// cProfile's tracing: exact call counts; every call costs more
    Cprofile,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Name of the check to run (see `agentprof list`)
    pub name: String,
    /// Profile the runs and print the top calls by cumulative time. Built-in and Python
    /// checks are sampled (Python: each thread's stack, wall and CPU time, read from outside
    /// the worker where the interpreter allows); `--profile=cprofile` traces a Python check
    /// with cProfile instead (exact call counts, slower calls)
    #[arg(long, value_name = "HOW", num_args = 0..=1, require_equals = true,
          default_missing_value = "sample", value_enum)]
    pub profile: Option<ProfileHow>,
    /// Run the check N times, 1 to 1000000 (rates and deltas need at least two runs)
    #[arg(short = 't', long = "times", visible_alias = "check-times", value_name = "N",
          default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub times: u32,
    /// Run twice, one second apart, so rates and deltas have a value (as `agent check -r`,
    /// this overrides --check-times and --pause)
    #[arg(short = 'r', long, visible_alias = "check-rate")]
    pub rate: bool,
    /// Wait this long after the runs before the report (as `agent check -d`, whose
    /// aggregator takes in what a run sent in the meantime; agentprof's takes it in as the
    /// run returns, so this is only a wait)
    #[arg(short = 'd', long, value_name = "MS")]
    pub delay: Option<String>,
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
    /// Sampling frequency of the profile, in Hz [default: 4999 for built-in checks, whose
    /// runs take microseconds; 1000 for Python checks]
    #[arg(long, value_name = "HZ",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub frequency: Option<u32>,
    /// Write a flamegraph (SVG) of the sampled runs; implies --profile
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Write the sampled runs as a gzip pprof file for `go tool pprof`; implies --profile
    #[arg(long, value_name = "FILE.pb.gz")]
    pub pprof: Option<PathBuf>,
    /// Write a Python check's cProfile statistics as a pstats dump (python -m pstats,
    /// snakeviz); implies --profile=cprofile
    #[arg(long, value_name = "FILE")]
    pub pstats: Option<PathBuf>,
    /// Keep the check's own log records from this level up with each run, shown in the table
    /// and in --json (as `agent check -l`; default warning; off keeps none): a Python check's
    /// logger, a built-in's own records, an exec plugin's stderr lines (INFO unless a line
    /// starts with a level word)
    #[arg(short = 'l', long, value_name = "LEVEL",
          value_parser = ["trace", "debug", "info", "warn", "warning", "error", "critical", "off"])]
    pub log_level: Option<String>,
    /// Each run's deadline (e.g. 5s, 500ms; a bare number is seconds), for every instance,
    /// over the configuration's run_timeout (default 30s); an instance's own `timeout` is
    /// the check's
    #[arg(long, value_name = "DURATION")]
    pub run_timeout: Option<String>,
    /// Profile a Python check's first run too (by default one warm-up run of each instance,
    /// dominated by first imports, comes before the runs and is left out of the profile)
    #[arg(long)]
    pub profile_first_run: bool,
    /// Append the collector.log block of every run to FILE (overrides log_file)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Trace a Python check's allocations (tracemalloc): top allocating lines per run, and
    /// with --times the lines that grew most from the first run to the last
    #[arg(short = 'm', long, visible_alias = "profile-memory")]
    pub memory: bool,
    /// With --memory: stack frames kept per allocation (tracemalloc's nframe; default 1)
    #[arg(long, value_name = "N", requires = "memory",
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub m_frames: Option<u16>,
    /// With --memory: lines shown per run and for the growth (default 10)
    #[arg(long, value_name = "N", requires = "memory",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub m_limit: Option<u16>,
    /// With --memory: group allocations by line, by file, or by whole traceback
    #[arg(long, value_name = "KEY", requires = "memory",
          value_parser = ["lineno", "filename", "traceback"])]
    pub m_sort: Option<String>,
    /// With --memory: only allocations made in files matching these comma-separated glob
    /// patterns, by the allocating frame (e.g. '*/datadog_checks/*')
    #[arg(long, value_name = "GLOBS", requires = "memory")]
    pub m_filters: Option<String>,
    /// Run only instance N of the check's configuration (0-based, as in instances[N])
    #[arg(long, value_name = "N", conflicts_with = "instance_filter")]
    pub instance: Option<usize>,
    /// Run only the instances this jq expression selects, as `agent check --instance-filter`:
    /// paths, comparisons, and/or, `|`, `not`, `select(…)` (e.g. '.port == 8080',
    /// 'select(.tls.verify | not)'); an instance is run when the output is neither false nor
    /// null
    #[arg(long, value_name = "EXPR")]
    pub instance_filter: Option<String>,
    /// Stop a Python check in pdb at this line of its file, on the terminal (as `agent check
    /// -b`): a line of its check() method, 0 for the method's first statement, -1 for its last
    /// line; the run has no deadline then
    #[arg(short = 'b', long, value_name = "LINE", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32))]
    pub breakpoint: Option<i32>,
    /// Also write the report, with secrets scrubbed, to a file for a support case (as
    /// `agent check --flare`): checks/check_NAME_TIMESTAMP.log under the log_file's
    /// directory, else under agentprof's state directory
    #[arg(long)]
    pub flare: bool,
    /// Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)
    #[arg(long, value_name = "SECONDS")]
    pub discovery_timeout: Option<u32>,
    /// Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)
    #[arg(long, value_name = "SECONDS")]
    pub discovery_retry_interval: Option<u32>,
    /// Accepted for `agent check` users; agentprof has no Autodiscovery (it reads conf.d)
    #[arg(long, value_name = "N")]
    pub discovery_min_instances: Option<u32>,
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
pub struct InitArgs {
    /// Directory to write conf.d/, checks/ and agentprof.yaml.example into
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Overwrite files that differ from agentprof's (by default they are kept)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into
    #[arg(long, value_name = "DIR", default_value = "man")]
    pub out: PathBuf,
}
