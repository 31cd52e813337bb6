//! `agentprof check NAME`: run one check once or N times, print its metrics and what each run
//! cost, and optionally its CPU profile, flamegraph, pprof file and collector.log block.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;

use crate::checks::python::PythonHost;
use crate::checks::{CheckKind, LoadedCheck, Registry, Runner};
use crate::cli::CheckArgs;
use crate::config::{AgentConfig, LoadOptions};
use crate::error::UsageError;
use crate::pprof::report::call_top;
use crate::profile::{CallProfile, write_flamegraph};
use crate::progress::Progress;
use crate::render::pstats::PstatsView;
use crate::render::{self, CheckReport, ProfileSummary, ProfileView, Style};

use super::{Outcome, load_options};

/// Fewer samples than this make a table that misleads more than it tells.
pub const MIN_PROFILE_SAMPLES: u64 = 20;

/// A built-in run too short to sample is repeated (sampled, not measured) until the profile
/// holds this many samples, or for at most `REPEAT_BUDGET`.
const REPEAT_FOR_SAMPLES: u64 = 200;
const REPEAT_BUDGET: Duration = Duration::from_secs(3);

/// `agentprof check` options, validated once, free of clap types.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub name: String,
    pub load: LoadOptions,
    pub profile: bool,
    pub times: u32,
    pub pause: Duration,
    pub json: bool,
    pub bordered: bool,
    pub top: usize,
    pub frequency_hz: u32,
    pub flamegraph: Option<PathBuf>,
    pub pprof: Option<PathBuf>,
    pub pstats: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub instance: Option<usize>,
    pub memory: bool,
    /// `--profile-first-run`: no warm-up run before a Python check's profiled runs.
    pub profile_first_run: bool,
    /// `--log-level`: the check's log records kept with each run, from this level up.
    pub log_level: crate::config::Level,
    /// `--log-level` was given (it applies to Python checks only).
    pub log_level_set: bool,
    /// `--run-timeout`: every instance's run deadline.
    pub run_timeout: Option<Duration>,
}

impl CheckOptions {
    pub fn from_args(a: CheckArgs) -> Result<CheckOptions, UsageError> {
        let mut pause = match &a.pause {
            Some(p) => {
                crate::duration::parse(p, 1e-3).map_err(|e| UsageError::flag("--pause", e))?
            }
            None => Duration::ZERO,
        };
        let mut times = a.times;
        if a.rate {
            // Like the Agent's `check -r`: two runs, one second apart, so rates have a value.
            times = times.max(2);
            pause = pause.max(Duration::from_secs(1));
        }
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
            profile: a.profile || a.flamegraph.is_some() || a.pprof.is_some() || a.pstats.is_some(),
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
            log_level_set: a.log_level.is_some(),
            log_level: match a.log_level.as_deref() {
                Some(l) => crate::config::Level::parse(l)
                    .map_err(|e| UsageError::flag("--log-level", e))?,
                None => crate::config::Level::Warning,
            },
        })
    }
}

/// `--pstats` and `--flamegraph` of a Python check, from its cProfile statistics.
fn write_python_outputs(
    opts: &CheckOptions,
    report: &CheckReport,
    host: &Arc<Mutex<PythonHost>>,
) -> anyhow::Result<()> {
    if let Some(path) = &opts.pstats {
        let written = crate::sync::lock(host).dump_pstats(path);
        match written {
            Ok(()) => eprintln!("agentprof: wrote {} (python -m pstats {0})", path.display()),
            Err(e) => {
                return Err(UsageError::flag(
                    "--pstats",
                    format!("cannot write {}: {e}", path.display()),
                )
                .into());
            }
        }
    }
    if let Some(path) = &opts.flamegraph {
        let folded = match &report.profile {
            Some(ProfileView::Pstats(v)) => v.report.folded.clone(),
            _ => Vec::new(),
        };
        if folded.is_empty() {
            eprintln!(
                "agentprof: --flamegraph: no cProfile data, so {} was not written",
                path.display()
            );
            return Ok(());
        }
        let file = std::fs::File::create(path).map_err(|e| {
            UsageError::flag(
                "--flamegraph",
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        let mut o = inferno::flamegraph::Options::default();
        o.title = format!("agentprof check {} — cProfile", report.check);
        o.count_name = "µs".into();
        inferno::flamegraph::from_lines(
            &mut o,
            folded.iter().map(String::as_str),
            std::io::BufWriter::new(file),
        )
        .map_err(|e| anyhow::anyhow!("cannot draw the flamegraph: {e}"))?;
        eprintln!("agentprof: wrote {}", path.display());
    }
    Ok(())
}

/// Profile outputs that the kind of check cannot produce are refused before any run.
fn check_profile_flags(opts: &CheckOptions, name: &str, kind: CheckKind) -> Result<(), UsageError> {
    let refuse = |flag: &str, why: String| Err(UsageError::flag(flag, why));
    if kind != CheckKind::Python {
        let only_python = [
            (
                "--log-level",
                opts.log_level_set,
                "only a Python check writes log records",
            ),
            (
                "--profile-first-run",
                opts.profile_first_run,
                "only a Python check's profile leaves out a warm-up run",
            ),
        ];
        for (flag, set, why) in only_python {
            if set {
                return refuse(flag, format!("{name} is not a Python check: {why}"));
            }
        }
    }
    if opts.memory && kind != CheckKind::Python {
        return refuse(
            "--memory",
            format!(
                "{name} is not a Python check: --memory traces Python allocations (tracemalloc); the cost table already shows RSS, VMS and peak RSS of every run"
            ),
        );
    }
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
        CheckKind::Python if opts.pprof.is_some() => {
            return refuse(
                "--pprof",
                format!(
                    "{name} is a Python check: its calls are profiled with cProfile; write them with --pstats FILE"
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

/// `agentprof check NAME`: the check loaded, each instance run `--times` times, the report
/// printed (before any file is written: what was collected is not lost), then the files.
pub fn run(opts: CheckOptions) -> anyhow::Result<Outcome> {
    let config = AgentConfig::load(&opts.load)?;
    let registry = Registry::new(&config);
    let loaded = registry.load(&opts.name)?;
    check_instance_flag(&opts, &loaded)?;
    check_profile_flags(&opts, &loaded.name, loaded.kind)?;
    let profile_hz = sampling(&opts, &loaded);
    let mut config_warnings = config.warnings.clone();
    config_warnings.extend(loaded.warnings.iter().cloned());
    for w in &config_warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let python_host = loaded.python.clone();
    if let Some(host) = &python_host {
        crate::checks::python::load(host)?;
        for f in crate::checks::python::failed_instances(host) {
            let w = format!(
                "instances[{}] did not load, the others run: {}",
                f.instance, f.error
            );
            eprintln!("agentprof: error: {w}");
            config_warnings.push(w);
        }
    }
    let (name, kind, mut version, source) = (
        loaded.name.clone(),
        loaded.kind,
        loaded.version.clone(),
        loaded.source.clone(),
    );
    let mut runner = Runner::new(loaded, &config, opts.instance, profile_hz, opts.memory)
        .with_log_level(opts.log_level)
        .with_run_timeout(opts.run_timeout);
    let warmed = match &python_host {
        Some(host) if opts.profile && !opts.profile_first_run => warm_up(&mut runner, host),
        _ => false,
    };
    let records = run_all(&mut runner, &opts, &name);
    let repeated = repeat_for_profile(
        &mut runner,
        &records,
        profile_hz.is_some() && kind == CheckKind::Builtin,
    );
    let mut python = None;
    if let Some(host) = &python_host
        && let Some(l) = &crate::sync::lock(host).loaded
    {
        version = l.version.clone();
        python = Some(l.clone());
    }
    let profile = finished_profile(&mut runner);
    runner.release_thread();
    let view = profile_view(
        &opts,
        &records,
        profile.as_ref(),
        repeated,
        python_host.as_ref(),
        warmed,
    );
    let memory_growth = match (&python_host, opts.memory && opts.times > 1) {
        (Some(host), true) => crate::sync::lock(host).memory_growth(10).ok(),
        _ => None,
    };
    let metadata = python_host
        .as_ref()
        .and_then(|h| crate::sync::lock(h).metadata().ok())
        .unwrap_or_default();
    let report = CheckReport {
        check: name,
        kind,
        version,
        source,
        records,
        profile: view,
        memory_growth,
        python,
        config_warnings,
        metadata,
    };
    print(&report, &opts)?;
    write_outputs(
        &opts,
        &config,
        &report,
        profile.as_ref(),
        python_host.as_ref(),
    )?;
    Ok(if report.failed_runs() > 0 {
        Outcome::RunFailed
    } else {
        Outcome::Success
    })
}

/// How often to sample the check's calls: `--profile`'s frequency, unless the check is an
/// exec plugin (it runs outside agentprof: its cost is measured, its calls are not sampled).
fn sampling(opts: &CheckOptions, loaded: &LoadedCheck) -> Option<u32> {
    if loaded.kind == CheckKind::Exec && opts.profile {
        eprintln!(
            "agentprof: warning: --profile: {} is an exec plugin; its cost is measured, its calls are not sampled",
            loaded.name
        );
        return None;
    }
    opts.profile.then_some(opts.frequency_hz)
}

/// The sampled profile of the runs, said when samples were lost.
fn finished_profile(runner: &mut Runner) -> Option<CallProfile> {
    runner.finish_profile().map(|(profile, dropped)| {
        if dropped > 0 {
            eprintln!(
                "agentprof: warning: {dropped} samples were lost because one run filled the sample buffer"
            );
        }
        profile
    })
}

/// `--instance N` names one of the check's instances.
fn check_instance_flag(
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

/// Every instance, `--times` times with `--pause` between, with a progress bar.
/// A Python check's first run imports what its later runs only use: one run of each
/// instance before the measured ones, its statistics dropped, so the profile shows the
/// check's steady runs. False when the worker could not forget them (then the profile
/// includes the warm-up, and the title does not say it was left out).
fn warm_up(runner: &mut Runner, host: &Arc<Mutex<crate::checks::python::PythonHost>>) -> bool {
    for pos in 0..runner.instance_count() {
        runner.run(pos, 0);
    }
    match crate::sync::lock(host).reset_stats() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("agentprof: warning: --profile: the warm-up run stays in the profile: {e}");
            false
        }
    }
}

fn run_all(runner: &mut Runner, opts: &CheckOptions, name: &str) -> Vec<crate::profile::RunRecord> {
    let mut progress = Progress::new(
        u64::from(opts.times) * runner.instance_count() as u64,
        &format!("{name}:"),
    );
    let mut records = Vec::new();
    for run in 1..=opts.times {
        for pos in 0..runner.instance_count() {
            records.push(runner.run(pos, run));
            progress.inc();
        }
        if run < opts.times && !opts.pause.is_zero() {
            std::thread::sleep(opts.pause);
        }
    }
    progress.finish();
    records
}

/// What `--profile` shows: pstats' table for a Python check, else the sampled profile's
/// top calls with how many samples it holds and how many runs would give enough.
fn profile_view(
    opts: &CheckOptions,
    records: &[crate::profile::RunRecord],
    profile: Option<&CallProfile>,
    repeated: u32,
    python_host: Option<&Arc<Mutex<crate::checks::python::PythonHost>>>,
    warmed: bool,
) -> Option<ProfileView> {
    if let (Some(host), true) = (python_host, opts.profile) {
        return match crate::sync::lock(host).pstats(opts.top, opts.flamegraph.is_some()) {
            Ok(report) => Some(ProfileView::Pstats(PstatsView {
                report,
                top: opts.top,
                warm_up: warmed,
            })),
            Err(e) => {
                eprintln!("agentprof: warning: --profile: no cProfile statistics: {e}");
                None
            }
        };
    }
    let cpu: Vec<f64> = records
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| r.cost.cpu_s())
        .collect();
    let cpu_per_run = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
    profile.map(|p| {
        ProfileView::Cpu(ProfileSummary {
            frequency_hz: p.frequency_hz,
            period_ns: p.period_ns,
            samples: p.total_samples(),
            min_samples: MIN_PROFILE_SAMPLES,
            suggested_times: ProfileSummary::suggest_times(
                MIN_PROFILE_SAMPLES,
                p.period_ns,
                records.len() as u64,
                cpu_per_run,
                p.total_samples(),
            ),
            repeated,
            top: call_top(p, opts.top),
        })
    })
}

/// The report on stdout: the table, or `--json`'s document.
fn print(report: &CheckReport, opts: &CheckOptions) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if opts.json {
        serde_json::to_writer_pretty(&mut stdout, &render::json::render(report))?;
        writeln!(stdout)?;
    } else {
        stdout.write_all(render::table::render(report, Style::detect(opts.bordered)).as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}

/// With `--profile` on a built-in whose measured runs gave too few samples, repeats its
/// first instance whose runs all succeeded (one that failed or timed out is not run again)
/// until the profile is worth a table; when a repetition fails, says why and goes on with the
/// next such instance, within the same budget. How many repetitions ran.
fn repeat_for_profile(
    runner: &mut Runner,
    records: &[crate::profile::RunRecord],
    sampled: bool,
) -> u32 {
    if !sampled {
        return 0;
    }
    let failed = |i: usize| records.iter().any(|r| r.instance == i && r.error.is_some());
    let candidates: Vec<usize> = (0..runner.instance_count())
        .filter(|&pos| !failed(runner.instance_index(pos)))
        .collect();
    let mut progress = Progress::new(REPEAT_FOR_SAMPLES, "sampling more runs:");
    let goal = (MIN_PROFILE_SAMPLES, REPEAT_FOR_SAMPLES);
    let started = std::time::Instant::now();
    let mut total = 0;
    for pos in candidates {
        let Some(budget) = REPEAT_BUDGET.checked_sub(started.elapsed()) else {
            break;
        };
        let (n, error) = runner.repeat_for_profile(pos, goal, budget, |have| {
            progress.set(have.min(REPEAT_FOR_SAMPLES))
        });
        total += n;
        let Some(e) = error else { break };
        progress.println(&format!(
            "agentprof: warning: --profile: a sampled repetition of instance {} failed (after {n} that ran): {e}",
            runner.instance_index(pos)
        ));
    }
    progress.finish();
    total
}

fn write_outputs(
    opts: &CheckOptions,
    config: &AgentConfig,
    report: &CheckReport,
    profile: Option<&CallProfile>,
    python_host: Option<&Arc<Mutex<PythonHost>>>,
) -> anyhow::Result<()> {
    if let Some(log) = opts.log.as_ref().or(config.log_file.as_ref()) {
        render::collector_log::append(log, &report.records).map_err(|e| {
            UsageError::flag("--log", format!("cannot append to {}: {e}", log.display()))
        })?;
    }
    if let Some(host) = python_host {
        return write_python_outputs(opts, report, host);
    }
    let Some(profile) = profile else {
        return Ok(());
    };
    if let Some(path) = &opts.pprof {
        let bytes = crate::pprof::encode_gzip(profile).context("encoding the pprof profile")?;
        std::fs::write(path, bytes).map_err(|e| {
            UsageError::flag("--pprof", format!("cannot write {}: {e}", path.display()))
        })?;
        eprintln!(
            "agentprof: wrote {} ({} samples)",
            path.display(),
            profile.total_samples()
        );
    }
    if let Some(path) = &opts.flamegraph {
        if profile.total_samples() == 0 {
            eprintln!(
                "agentprof: --flamegraph: no CPU samples were taken, so {} was not written; sample more runs (--times)",
                path.display()
            );
        } else {
            let file = std::fs::File::create(path).map_err(|e| {
                UsageError::flag(
                    "--flamegraph",
                    format!("cannot write {}: {e}", path.display()),
                )
            })?;
            let title = format!(
                "agentprof check {} — {} samples",
                report.check,
                profile.total_samples()
            );
            write_flamegraph(profile, &title, std::io::BufWriter::new(file))?;
            eprintln!("agentprof: wrote {}", path.display());
        }
    }
    Ok(())
}
