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
    /// `--log-level`: the check's log records kept with each run, from this level up
    /// (Python's numbers: 10 debug … 50 critical; above 50 none).
    pub log_level: u8,
    /// `--log-level` was given (it applies to Python checks only).
    pub log_level_set: bool,
    /// `--run-timeout`: every instance's run deadline.
    pub run_timeout: Option<Duration>,
    /// `--delay`: a wait after the runs, before the report.
    pub delay: Duration,
    /// `--m-frames`, `--m-limit`, `--m-sort`, `--m-filters`.
    pub memory_options: crate::checks::python::MemoryOptions,
    /// `--instance-filter`.
    pub instance_filter: Option<crate::checks::filter::InstanceFilter>,
    /// `--breakpoint`: the line of a Python check's file to stop at in pdb.
    pub breakpoint: Option<u32>,
    /// `--flare`: the report also written, scrubbed, to a file.
    pub flare: bool,
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
                crate::checks::filter::InstanceFilter::parse(f)
                    .map_err(|e| UsageError::flag("--instance-filter", e))?,
            ),
            None => None,
        };
        let memory_options = crate::checks::python::MemoryOptions {
            frames: a.m_frames.unwrap_or(1),
            limit: a.m_limit.unwrap_or(10),
            sort: a.m_sort.clone().unwrap_or_else(|| "lineno".into()),
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
    let selected = match &opts.instance_filter {
        Some(f) => Some(selected_instances(&registry, &opts.name, f)?),
        None => None,
    };
    let python_host = loaded.python.clone();
    if let Some(host) = &python_host {
        {
            let mut h = crate::sync::lock(host);
            h.set_memory_options(opts.memory_options.clone());
            h.set_breakpoint(opts.breakpoint);
        }
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
    let run_timeout = match opts.breakpoint {
        // A run stopped in the debugger waits for its user.
        Some(_) => Some(Duration::from_secs(24 * 3600)),
        None => opts.run_timeout,
    };
    let mut runner = Runner::new(loaded, &config, opts.instance, profile_hz, opts.memory)
        .with_log_level(opts.log_level)
        .with_run_timeout(run_timeout);
    if let Some(keep) = &selected {
        runner = runner.keep_instances(|i| keep.contains(&i));
    }
    let warmed = match &python_host {
        Some(host) if opts.profile && !opts.profile_first_run => warm_up(&mut runner, host),
        _ => false,
    };
    let mut spool = if opts.json {
        Some(render::json::Spool::new().map_err(|e| {
            anyhow::anyhow!(
                "cannot make a spool for the runs' metrics in {}: {e}",
                std::env::temp_dir().display()
            )
        })?)
    } else {
        None
    };
    let records = run_all(&mut runner, &opts, &name, spool.as_mut())?;
    if !opts.delay.is_zero() {
        std::thread::sleep(opts.delay);
    }
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
    let naming = crate::profile::naming_cost();
    if naming.addresses > 0 {
        // Naming the samples reads agentprof's own debug information (DWARF, tens of MB in
        // a release build whose crates LTO joined into few units): after the runs, outside
        // their figures, but a user timing `--profile` sees it.
        eprintln!(
            "agentprof: naming the profile's {} sampled addresses read agentprof's debug information: {:.2} s and +{} of resident memory, after the runs (their figures do not include it)",
            naming.addresses,
            naming.seconds,
            crate::render::units::bytes(Some(naming.rss_growth))
        );
    }
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
        (Some(host), true) => crate::sync::lock(host)
            .memory_growth(usize::from(opts.memory_options.limit))
            .ok(),
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
        spooled: spool.is_some(),
    };
    if let Some(spool) = &mut spool {
        let doc = render::json::render(&report);
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        spool.write(&doc, &report, &mut stdout)?;
        writeln!(stdout)?;
        stdout.flush()?;
        if opts.flare {
            let mut text = Vec::new();
            spool.write(&doc, &report, &mut text)?;
            write_flare(&config, &report.check, &String::from_utf8_lossy(&text))?;
        }
    } else {
        let text = rendered(&report, &opts)?;
        print(&text)?;
        if opts.flare {
            write_flare(&config, &report.check, &text)?;
        }
    }
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

/// Every instance, `--times` times with `--pause` between, with a progress bar. What the
/// runs sent is kept only where it is shown: with `spool` (`--json`) each run's goes to the
/// spool as it comes; in the table, only each instance's last run's is shown, so an earlier
/// run's is dropped when the next one comes. Memory then grows by a run's figures only
/// (about 1 KB), whatever `--times`.
fn run_all(
    runner: &mut Runner,
    opts: &CheckOptions,
    name: &str,
    mut spool: Option<&mut render::json::Spool>,
) -> anyhow::Result<Vec<crate::profile::RunRecord>> {
    let mut progress = Progress::new(
        u64::from(opts.times) * runner.instance_count() as u64,
        &format!("{name}:"),
    );
    let mut records: Vec<crate::profile::RunRecord> = Vec::new();
    let mut last_of: std::collections::HashMap<usize, usize> = Default::default();
    for run in 1..=opts.times {
        for pos in 0..runner.instance_count() {
            let mut record = runner.run(pos, run);
            match spool.as_deref_mut() {
                Some(s) => s
                    .take(&mut record)
                    .map_err(|e| anyhow::anyhow!("cannot spool the runs' metrics: {e}"))?,
                None => {
                    if let Some(&i) = last_of.get(&record.instance) {
                        let old = &mut records[i];
                        old.metrics = Vec::new();
                        old.service_checks = Vec::new();
                        old.events = Vec::new();
                    }
                }
            }
            last_of.insert(record.instance, records.len());
            records.push(record);
            progress.inc();
        }
        if run < opts.times && !opts.pause.is_zero() {
            std::thread::sleep(opts.pause);
        }
    }
    progress.finish();
    Ok(records)
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
/// The report as the tables print it (`--json` is written through its spool).
fn rendered(report: &CheckReport, opts: &CheckOptions) -> anyhow::Result<String> {
    Ok(render::table::render(report, Style::detect(opts.bordered)))
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// `--flare`: the report with secrets scrubbed, in `checks/check_NAME_TIMESTAMP.log` under
/// the log file's directory (as the Agent keeps it beside its logs), else under agentprof's
/// state directory.
fn write_flare(config: &AgentConfig, check: &str, text: &str) -> anyhow::Result<()> {
    let base = config
        .log_file
        .as_ref()
        .and_then(|f| f.parent())
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(crate::checks::python::state_dir);
    let dir = base.join("checks");
    let stamp = jiff::Zoned::now().strftime("%Y-%m-%d_%H-%M-%S");
    let path = dir.join(format!("check_{check}_{stamp}.log"));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, crate::redact::scrub(text).as_bytes()));
    match written {
        Ok(()) => {
            eprintln!("agentprof: wrote {} (secrets scrubbed)", path.display());
            Ok(())
        }
        Err(e) => {
            Err(UsageError::flag("--flare", format!("cannot write {}: {e}", path.display())).into())
        }
    }
}

/// The instances `--instance-filter` selects, by index; none selected is an error that
/// shows what the instances hold.
fn selected_instances(
    registry: &Registry,
    name: &str,
    filter: &crate::checks::filter::InstanceFilter,
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
