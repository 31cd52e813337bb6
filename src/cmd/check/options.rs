//! `agentprof check`'s options: its flags validated once into [`CheckOptions`], and the
//! checks of a flag against the check it is given (kind, instances, terminal).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::checks::{CheckKind, Registry};
use crate::cli::CheckArgs;
use crate::config::LoadOptions;
use crate::error::UsageError;

use super::super::load_options;

/// `agentprof check` options, validated once, free of clap types.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub name: String,
    pub load: LoadOptions,
    pub profile: bool,
    /// `--profile=cprofile` (or `--pstats`): a Python check traced by cProfile, not sampled.
    pub cprofile: bool,
    pub times: u32,
    pub pause: Duration,
    pub json: bool,
    pub bordered: bool,
    pub top: usize,
    /// `--frequency`; None: the kind's default ([`CheckOptions::frequency_for`]).
    pub frequency_hz: Option<u32>,
    pub flamegraph: Option<PathBuf>,
    pub pprof: Option<PathBuf>,
    pub pstats: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub instance: Option<usize>,
    pub memory: bool,
    /// `--profile-first-run`: no warm-up run before a Python check's profiled runs.
    pub profile_first_run: bool,
    /// `--log-level`: the check's log records kept with each run, from this level up
    /// (Python's numbers: 10 debug … 50 critical; above 50 none).
    pub log_level: u8,
    /// `--run-timeout`: every instance's run deadline.
    pub run_timeout: Option<Duration>,
    /// `--delay`: a wait after the runs, before the report.
    pub delay: Duration,
    /// `--m-frames`, `--m-limit`, `--m-sort`, `--m-filters`.
    pub memory_options: crate::checks::MemoryOptions,
    /// `--instance-filter`.
    pub instance_filter: Option<crate::checks::InstanceFilter>,
    /// `--breakpoint`: the line of a Python check's file to stop at in pdb.
    pub breakpoint: Option<i32>,
    /// `--flare`: the report also written, scrubbed, to a file.
    pub flare: bool,
}

/// Built-in checks run for microseconds: at 1000 Hz the 200 samples of a profile took 0.2 s
/// of repeated runs, at 4999 Hz 40 ms. Python checks run for milliseconds.
const BUILTIN_HZ: u32 = 4999;
const PYTHON_HZ: u32 = 1000;

impl CheckOptions {
    /// The sampling frequency for a check of `kind`: `--frequency`, else its kind's default.
    pub fn frequency_for(&self, kind: CheckKind) -> u32 {
        self.frequency_hz.unwrap_or(match kind {
            CheckKind::Builtin => BUILTIN_HZ,
            _ => PYTHON_HZ,
        })
    }

    // long: one line or check per flag of `check`, in the order `--help` lists them
    pub fn from_args(a: CheckArgs) -> Result<CheckOptions, UsageError> {
        let mut pause = match &a.pause {
            Some(p) => {
                crate::duration::parse(p, 1e-3).map_err(|e| UsageError::flag("--pause", e))?
            }
            None => Duration::ZERO,
        };
        let mut times = a.times;
        if a.rate {
            // As the Agent's `check -r`: two runs, one second apart, so rates have a value;
            // like it, -t and --pause give way, and it says so.
            if times > 2 {
                eprintln!(
                    "agentprof: note: --check-rate runs the check twice, as the Agent's: --check-times {times} is overridden to 2"
                );
            }
            if a.pause.is_some() && pause != Duration::from_secs(1) {
                eprintln!(
                    "agentprof: note: --check-rate pauses 1000 ms between its two runs, as the Agent's: --pause {} is overridden",
                    a.pause.as_deref().unwrap_or_default()
                );
            }
            times = 2;
            pause = Duration::from_secs(1);
        }
        for (flag, set) in [
            ("--discovery-timeout", a.discovery_timeout.is_some()),
            (
                "--discovery-retry-interval",
                a.discovery_retry_interval.is_some(),
            ),
            (
                "--discovery-min-instances",
                a.discovery_min_instances.is_some(),
            ),
        ] {
            if set {
                eprintln!(
                    "agentprof: note: {flag} is accepted for `agent check` users and changes nothing: agentprof has no Autodiscovery; it reads the check's files in conf.d"
                );
            }
        }
        let delay = match &a.delay {
            Some(d) => {
                crate::duration::parse(d, 1e-3).map_err(|e| UsageError::flag("--delay", e))?
            }
            None => Duration::ZERO,
        };
        let instance_filter = match &a.instance_filter {
            Some(f) => Some(
                crate::checks::InstanceFilter::parse(f)
                    .map_err(|e| UsageError::flag("--instance-filter", e))?,
            ),
            None => None,
        };
        let defaults = crate::checks::MemoryOptions::default();
        let memory_options = crate::checks::MemoryOptions {
            frames: a.m_frames.unwrap_or(defaults.frames),
            limit: a.m_limit.unwrap_or(defaults.limit),
            sort: a.m_sort.clone().unwrap_or(defaults.sort),
            filters: a
                .m_filters
                .as_deref()
                .map(|f| {
                    f.split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        };
        for (flag, path) in [
            ("--flamegraph", &a.flamegraph),
            ("--pprof", &a.pprof),
            ("--pstats", &a.pstats),
            ("--log", &a.log),
        ] {
            if let Some(p) = path {
                writable_parent(flag, p)?;
            }
        }
        Ok(CheckOptions {
            load: load_options(&a.config),
            name: a.name,
            profile: a.profile.is_some()
                || a.flamegraph.is_some()
                || a.pprof.is_some()
                || a.pstats.is_some(),
            cprofile: a.profile == Some(crate::cli::ProfileHow::Cprofile) || a.pstats.is_some(),
            times,
            pause,
            json: a.json,
            bordered: a.table,
            top: a.top as usize,
            frequency_hz: a.frequency,
            flamegraph: a.flamegraph,
            pprof: a.pprof,
            pstats: a.pstats,
            log: a.log,
            instance: a.instance,
            memory: a.memory,
            profile_first_run: a.profile_first_run,
            run_timeout: match a.run_timeout.as_deref() {
                Some(t) => {
                    let d = crate::duration::parse(t, 1.0)
                        .map_err(|e| UsageError::flag("--run-timeout", e))?;
                    if d.is_zero() {
                        return Err(UsageError::flag("--run-timeout", "must be above 0"));
                    }
                    Some(d)
                }
                None => None,
            },
            log_level: python_log_level(a.log_level.as_deref())?,
            delay,
            memory_options,
            instance_filter,
            breakpoint: a.breakpoint,
            flare: a.flare,
        })
    }
}

/// `--log-level`'s name (the Agent's: trace … critical, off) as Python's logging level.
fn python_log_level(level: Option<&str>) -> Result<u8, UsageError> {
    Ok(match level.map(str::to_ascii_lowercase).as_deref() {
        None | Some("warn" | "warning") => 30,
        Some("trace" | "debug") => 10,
        Some("info") => 20,
        Some("error") => 40,
        Some("critical") => 50,
        Some("off") => 60,
        Some(other) => {
            return Err(UsageError::flag(
                "--log-level",
                format!(
                    "`{other}` is not trace, debug, info, warn, warning, error, critical or off"
                ),
            ));
        }
    })
}

/// Profile outputs that the kind of check cannot produce are refused before any run.
pub(super) fn check_profile_flags(
    opts: &CheckOptions,
    name: &str,
    kind: CheckKind,
) -> Result<(), UsageError> {
    let refuse = |flag: &str, why: String| Err(UsageError::flag(flag, why));
    if kind != CheckKind::Python {
        let only_python = [
            (
                "--profile-first-run",
                opts.profile_first_run,
                "only a Python check's profile leaves out a warm-up run",
            ),
            (
                "--breakpoint",
                opts.breakpoint.is_some(),
                "pdb stops only in Python code",
            ),
        ];
        for (flag, set, why) in only_python {
            if set {
                return refuse(flag, format!("{name} is not a Python check: {why}"));
            }
        }
    }
    if opts.breakpoint.is_some()
        && let Err(e) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
    {
        return refuse(
            "--breakpoint",
            format!("pdb needs a terminal, and /dev/tty cannot be opened here: {e}"),
        );
    }
    if opts.memory && kind != CheckKind::Python {
        return refuse(
            "--memory",
            format!(
                "{name} is not a Python check: --memory traces Python allocations (tracemalloc); the cost table already shows RSS, VMS and peak RSS of every run"
            ),
        );
    }
    profile_outputs_fit(opts, name, kind)
}

/// The profile files asked for are ones the kind of check writes: none for an exec plugin,
/// pstats for a Python check, pprof for a built-in.
fn profile_outputs_fit(opts: &CheckOptions, name: &str, kind: CheckKind) -> Result<(), UsageError> {
    let refuse = |flag: &str, why: String| Err(UsageError::flag(flag, why));
    match kind {
        CheckKind::Exec => {
            for (flag, set) in [
                ("--pprof", opts.pprof.is_some()),
                ("--flamegraph", opts.flamegraph.is_some()),
                ("--pstats", opts.pstats.is_some()),
            ] {
                if set {
                    return refuse(
                        flag,
                        format!(
                            "{name} is an exec plugin: agentprof measures its process's cost but cannot sample its calls"
                        ),
                    );
                }
            }
        }
        CheckKind::Python if opts.cprofile && opts.frequency_hz.is_some() => {
            return refuse(
                "--frequency",
                format!(
                    "{name}'s runs are traced by cProfile here (--profile=cprofile or --pstats), which times every call and samples nothing"
                ),
            );
        }
        CheckKind::Python if opts.cprofile && opts.pprof.is_some() => {
            return refuse(
                "--pprof",
                format!(
                    "{name}'s runs are traced by cProfile here (--profile=cprofile or --pstats), which records calls, not stacks; drop those for the sampled profile --pprof writes"
                ),
            );
        }
        CheckKind::Builtin if opts.pstats.is_some() => {
            return refuse(
                "--pstats",
                format!(
                    "{name} is a built-in check: its calls are sampled natively; write them with --pprof FILE"
                ),
            );
        }
        CheckKind::Builtin if opts.cprofile => {
            return refuse(
                "--profile",
                format!(
                    "{name} is a built-in check: cProfile traces Python checks only; --profile samples it"
                ),
            );
        }
        _ => {}
    }
    Ok(())
}

/// Fails before any run when an output file could not be written anyway.
fn writable_parent(flag: &str, path: &Path) -> Result<(), UsageError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(UsageError::flag(
            flag,
            format!("directory {} does not exist", parent.display()),
        ));
    }
    if path.is_dir() {
        return Err(UsageError::flag(
            flag,
            format!("{} is a directory; give a file name", path.display()),
        ));
    }
    Ok(())
}

/// `--instance N` names one of the check's instances.
pub(super) fn check_instance_flag(
    opts: &CheckOptions,
    loaded: &crate::checks::LoadedCheck,
) -> Result<(), UsageError> {
    let count = loaded.instances.len();
    match opts.instance {
        Some(i) if i >= count => Err(UsageError::flag(
            "--instance",
            format!(
                "{} has {count} instance{} (0..{}); there is no instances[{i}]",
                loaded.source,
                if count == 1 { "" } else { "s" },
                count.saturating_sub(1)
            ),
        )),
        _ => Ok(()),
    }
}

/// The instances `--instance-filter` selects, by index; none selected is an error that
/// shows what the instances hold.
pub(super) fn selected_instances(
    registry: &Registry,
    name: &str,
    filter: &crate::checks::InstanceFilter,
) -> Result<Vec<usize>, UsageError> {
    let instances = registry.instance_values(name)?;
    let keep: Vec<usize> = instances
        .iter()
        .enumerate()
        .filter(|(_, v)| filter.matches(v))
        .map(|(i, _)| i)
        .collect();
    if keep.is_empty() {
        return Err(UsageError::flag(
            "--instance-filter",
            format!(
                "selects none of {name}'s {} instance{}",
                instances.len(),
                if instances.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(keep)
}
