//! `agentprof check NAME`: run one check once or N times, print its metrics and what each run
//! cost, and optionally its CPU profile, flamegraph, pprof file and collector.log block.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::checks::{CheckKind, LoadedCheck, Registry, Runner};
use crate::config::AgentConfig;
use crate::progress::Progress;
use crate::render::{self, CheckReport};

use super::Outcome;

mod options;
mod outputs;
mod profile;

pub use options::CheckOptions;
use options::{check_instance_flag, check_profile_flags, selected_instances};
use outputs::{print, rendered, write_flare, write_outputs};
use profile::{finished_profile, profile_view, repeat_for_profile, sampling};

/// Fewer samples than this make a table that misleads more than it tells.
pub const MIN_PROFILE_SAMPLES: u64 = 20;

/// `agentprof check NAME`: the check loaded, each instance run `--times` times, the report
/// printed (before any file is written: what was collected is not lost), then the files.
pub fn run(opts: CheckOptions) -> anyhow::Result<Outcome> {
    let config = AgentConfig::load(&opts.load)?;
    let registry = Registry::new(&config);
    let loaded = registry.load(&opts.name)?;
    check_instance_flag(&opts, &loaded)?;
    check_profile_flags(&opts, &loaded.name, loaded.kind)?;
    let profile_hz = sampling(&opts, &loaded);
    let mut config_warnings = said_warnings(&config, &loaded);
    let selected = (opts.instance_filter.as_ref())
        .map(|f| selected_instances(&registry, &opts.name, f))
        .transpose()?;
    let python_host = loaded.python.clone();
    if let Some(host) = &python_host {
        load_python(host, &opts, &mut config_warnings)?;
    }
    let (name, kind, mut version, source) = (
        loaded.name.clone(),
        loaded.kind,
        loaded.version.clone(),
        loaded.source.clone(),
    );
    let mut runner = runner_for(loaded, &config, &opts, profile_hz, selected.as_ref());
    let warmed = match &python_host {
        Some(host) if opts.profile && !opts.profile_first_run => warm_up(&mut runner, host),
        _ => false,
    };
    let mut spool = json_spool(opts.json)?;
    let records = run_all(&mut runner, &opts, &name, spool.as_mut())?;
    // `--delay` (none by default: a sleep of zero returns at once).
    std::thread::sleep(opts.delay);
    let repeated = repeat_for_profile(
        &mut runner,
        &records,
        profile_hz.is_some() && kind == CheckKind::Builtin,
    );
    let after = python_host
        .as_ref()
        .map(|h| python_after(h, &opts))
        .unwrap_or_default();
    if let Some(l) = &after.loaded {
        version = l.version.clone();
    }
    let profile = finished_profile(&mut runner);
    say_naming_cost();
    runner.release_thread();
    let view = profile_view(
        &opts,
        &records,
        profile.as_ref(),
        repeated,
        python_host.as_ref(),
        warmed,
    );
    let report = CheckReport {
        check: name,
        kind,
        version,
        source,
        records,
        profile: view,
        memory_growth: after.memory_growth,
        python: after.loaded,
        config_warnings,
        metadata: after.metadata,
        spooled: spool.is_some(),
    };
    print_report(&report, &opts, &config, spool.as_mut())?;
    write_outputs(
        &opts,
        &config,
        &report,
        profile.as_ref(),
        python_host.as_ref(),
    )?;
    Ok(if report.failed_runs() > 0 {
        say_failed_runs(&report);
        Outcome::RunFailed
    } else {
        Outcome::Success
    })
}

/// Deliberately unlike `agent check`, which prints a run's error without failing: a run that
/// failed fails the command (exit 1), so that CI sees it. Said in one line.
fn say_failed_runs(report: &CheckReport) {
    let mut bad: Vec<usize> = report
        .records
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.instance)
        .collect();
    bad.sort_unstable();
    bad.dedup();
    let instances = bad
        .iter()
        .map(|i| format!("instances[{i}]"))
        .collect::<Vec<_>>()
        .join(", ");
    eprintln!(
        "agentprof: exit 1: {} of {} runs failed ({instances}); unlike `agent check`, which prints a run's error without failing, agentprof fails the command so that CI sees it",
        report.failed_runs(),
        report.records.len()
    );
}

/// The configuration's and the check's warnings, said on stderr; kept for the report.
fn said_warnings(config: &AgentConfig, loaded: &LoadedCheck) -> Vec<String> {
    let mut warnings = config.warnings.clone();
    warnings.extend(loaded.warnings.iter().cloned());
    for w in &warnings {
        eprintln!("agentprof: warning: {w}");
    }
    warnings
}

/// The runner of `loaded` as the flags ask: its instances (`selected`: those kept), log
/// level, sampling, memory, and run timeout (a day for a run stopped in the debugger, which
/// waits for its user).
fn runner_for(
    loaded: LoadedCheck,
    config: &AgentConfig,
    opts: &CheckOptions,
    profile_hz: Option<u32>,
    selected: Option<&Vec<usize>>,
) -> Runner {
    let run_timeout = match opts.breakpoint {
        Some(_) => Some(Duration::from_secs(24 * 3600)),
        None => opts.run_timeout,
    };
    let mut runner = Runner::new(loaded, config, opts.instance, profile_hz, opts.memory)
        .with_log_level(opts.log_level)
        .with_run_timeout(run_timeout);
    if let Some(keep) = selected {
        runner = runner.keep_instances(|i| keep.contains(&i));
    }
    runner
}

/// With `--json`, a spool for the runs' metrics (on disk: a long run's are not held in
/// memory).
fn json_spool(json: bool) -> anyhow::Result<Option<render::json::Spool>> {
    if !json {
        return Ok(None);
    }
    render::json::Spool::new().map(Some).map_err(|e| {
        anyhow::anyhow!(
            "cannot make a spool for the runs' metrics in {}: {e}",
            std::env::temp_dir().display()
        )
    })
}

/// The Python worker started with the run's memory and debugger options; each instance
/// that did not load is said and kept as a warning of the report.
fn load_python(
    host: &Arc<Mutex<crate::checks::PythonHost>>,
    opts: &CheckOptions,
    config_warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    {
        let mut h = crate::sync::lock(host);
        h.set_memory_options(opts.memory_options.clone());
        h.set_breakpoint(opts.breakpoint);
        if opts.profile && !opts.cprofile {
            h.set_profiler(crate::checks::Profiler::Sample {
                hz: opts.frequency_for(crate::checks::CheckKind::Python),
            });
        }
    }
    crate::checks::start_python(host)?;
    for f in crate::checks::failed_instances(host) {
        let w = format!(
            "instances[{}] did not load, the others run: {}",
            f.instance, f.error
        );
        eprintln!("agentprof: error: {w}");
        config_warnings.push(w);
    }
    Ok(())
}

/// The report on stdout: JSON (its runs' metrics from the spool) or the tables; and the
/// flare file with the same text when `--flare` asks for one.
fn print_report(
    report: &CheckReport,
    opts: &CheckOptions,
    config: &AgentConfig,
    spool: Option<&mut render::json::Spool>,
) -> anyhow::Result<()> {
    if let Some(spool) = spool {
        let doc = render::json::render(report);
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        spool.write(&doc, report, &mut stdout)?;
        writeln!(stdout)?;
        stdout.flush()?;
        if opts.flare {
            let mut text = Vec::new();
            spool.write(&doc, report, &mut text)?;
            write_flare(config, &report.check, &String::from_utf8_lossy(&text))?;
        }
    } else {
        let text = rendered(report, opts);
        print(&text)?;
        if opts.flare {
            write_flare(config, &report.check, &text)?;
        }
    }
    Ok(())
}

/// What naming the profile's samples cost, said on stderr when there were any.
fn say_naming_cost() {
    let naming = crate::profile::naming_cost();
    if naming.addresses > 0 {
        // Naming the samples reads agentprof's own line tables (12 MB inflated in a release
        // build), beside the sampled repetitions when there are any: outside the measured
        // runs' figures, but a user timing `--profile` sees it.
        eprintln!(
            "agentprof: naming the profile's {} sampled addresses read agentprof's line tables: {:.2} s and +{} of resident memory, outside the measured runs (their figures do not include it)",
            naming.addresses,
            naming.seconds,
            crate::render::units::bytes(Some(naming.rss_growth))
        );
    }
}

/// What the Python worker tells after the runs.
#[derive(Default)]
struct PythonAfter {
    loaded: Option<crate::checks::Loaded>,
    /// With `--memory` and more than one run: the allocations that grew across them.
    memory_growth: Option<Vec<crate::profile::AllocLine>>,
    /// What the check set with `set_metadata`.
    metadata: Vec<crate::checks::CheckMetadata>,
}

fn python_after(host: &Arc<Mutex<crate::checks::PythonHost>>, opts: &CheckOptions) -> PythonAfter {
    let mut h = crate::sync::lock(host);
    PythonAfter {
        loaded: h.loaded.clone(),
        memory_growth: (opts.memory && opts.times > 1)
            .then(|| h.memory_growth(usize::from(opts.memory_options.limit)).ok())
            .flatten(),
        metadata: h.metadata().ok().unwrap_or_default(),
    }
}

/// The warm-up runs of a profiled Python check (`Runner::warm_up`): false when the worker
/// could not forget them (then the profile includes them, and the title does not say they
/// were left out).
fn warm_up(runner: &mut Runner, host: &Arc<Mutex<crate::checks::PythonHost>>) -> bool {
    match runner.warm_up(Some(host)).1 {
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
/// run's is dropped when the next one comes. Memory then grows by a run's figures only,
/// whatever `--times`.
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
