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
    /// Print one JSON document (see docs/json.md)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

/// Where configuration comes from; shared by every command that loads checks.
#[derive(Debug, Args, Clone, Default)]
pub struct ConfigArgs {
    /// agentprof.yaml to use (else $AGENTPROF_CONFIG, ./agentprof.yaml, /etc/agentprof/agentprof.yaml)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory of check configurations (NAME.yaml or NAME.d/conf.yaml)
    #[arg(long, value_name = "DIR")]
    pub confd: Option<PathBuf>,
    /// Directory of plugin checks
    #[arg(long, value_name = "DIR")]
    pub checks: Option<PathBuf>,
    /// Python interpreter for Python checks (a virtualenv's python works)
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
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
