//! The arguments of the commands that read pprof files: top, diff, delta, flamegraph, and
//! the limits every profile read is held to.

use std::path::PathBuf;

use clap::Args;

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
    #[command(flatten)]
    pub filter: NameFilterArgs,
    /// Instead of the top table: each function matching RE with its callers above and its
    /// callees below, as go tool pprof -peek
    #[arg(long, value_name = "RE", conflicts_with_all = ["list", "nodes"])]
    pub peek: Option<String>,
    /// Instead of the top table: the source lines of each function matching RE with their
    /// flat and cum, as go tool pprof -list
    #[arg(long, value_name = "RE", conflicts_with_all = ["nodes", "cum"])]
    pub list: Option<String>,
    /// With --list: where to look for source files (':'-separated; default: the working
    /// directory and its parents), as go tool pprof -source_path
    #[arg(long, value_name = "DIRS", requires = "list")]
    pub source_path: Option<String>,
    /// With --list: path prefixes to take off the profile's file names before looking for
    /// them (':'-separated), as go tool pprof -trim_path
    #[arg(long, value_name = "PATHS", requires = "list")]
    pub trim_path: Option<String>,
    /// Print one JSON document (see docs/json.md)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}

/// go tool pprof's name filters (regular expressions on function names, file names and
/// binaries); percentages stay of the whole profile.
#[derive(Debug, Args, Default, Clone)]
pub struct NameFilterArgs {
    /// Keep only samples with a frame matching RE, as go tool pprof -focus
    #[arg(long, value_name = "RE")]
    pub focus: Option<String>,
    /// Drop samples with a frame matching RE, as go tool pprof -ignore
    #[arg(long, value_name = "RE")]
    pub ignore: Option<String>,
    /// Take frames matching RE out of every stack, as go tool pprof -hide
    #[arg(long, value_name = "RE")]
    pub hide: Option<String>,
    /// Keep only frames matching RE in every stack, as go tool pprof -show
    #[arg(long, value_name = "RE")]
    pub show: Option<String>,
}

crate::error::message_error! {
    /// Why a flag's value is not a fraction from 0 to 1.
    FractionError
}

/// A fraction from 0 to 1.
fn fraction(s: &str) -> Result<f64, FractionError> {
    let v: f64 = s
        .parse()
        .map_err(|_| FractionError(format!("{s:?} is not a number (a fraction such as 0.005)")))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(FractionError(format!("{s} is outside 0 to 1")));
    }
    Ok(v)
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
    pub filter: NameFilterArgs,
    #[command(flatten)]
    pub limits: ProfileLimitArgs,
}
