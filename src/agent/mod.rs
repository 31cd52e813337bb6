//! `agentprof start`: every configured check on its interval, the agent in developer mode.
//! Check threads run the checks; this loop forwards what they report, logs the developer-mode
//! blocks, emits the agent's own figures every collector loop, and stops on SIGINT, SIGTERM or
//! `--duration`, flushing every forwarder and printing the summary.

mod agent_metrics;
mod logfile;
mod openmetrics;
mod pool;
mod schedule;
pub mod signal;
mod stats;
mod summary;

pub use logfile::{Level, parse_size};
pub use summary::CheckSummary;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::checks::{CheckKind, Registry, Runner};
use crate::config::{AgentConfig, CheckConf};
use crate::emit::{Batch, Forwarder};
use crate::error::UsageError;
use crate::metrics::{Aggregator, Flushed, Sink};
use crate::render::collector_log;

use logfile::{LogSink, RotatingFile};
use schedule::{DEFAULT_INTERVAL, Msg};

/// How long running checks get to finish once the agent is asked to stop.
const GRACE: Duration = Duration::from_secs(3);
/// collector.log's place in developer mode when none is configured.
const DEFAULT_LOG: &str = "collector.log";
/// conf.d files that configure the agent, not checks.
const NOT_CHECKS: &[&str] = &["agent_metrics", "profile"];

#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub developer_mode: bool,
    pub duration: Option<Duration>,
    pub json: bool,
    /// Overrides `log_file`; `-` is stdout.
    pub log: Option<PathBuf>,
    /// Serve /metrics here.
    pub metrics_listen: Option<String>,
}

/// What the agent did, for the summary and `--json`.
#[derive(Debug, Default, serde::Serialize)]
pub struct AgentReport {
    pub checks: Vec<CheckSummary>,
    pub config_errors: Vec<String>,
    pub forwarders: Vec<String>,
    /// Per forwarder, what it delivered (after the final flush).
    pub delivery: Vec<crate::emit::Delivery>,
    pub forward_errors: u64,
    pub loops: u32,
    pub duration_s: f64,
    /// Developer mode: the agent's whole-run flamegraph and pprof file.
    pub profile_files: Vec<PathBuf>,
}

/// Names of the checks that have a configuration in `confd`.
pub fn configured_checks(confd: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(confd) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_str()?.to_string();
            let name = file
                .strip_suffix(".yaml")
                .or_else(|| file.strip_suffix(".yml"))
                .or_else(|| file.strip_suffix(".d"))?
                .to_string();
            // A broken entry is kept, so loading it says why it was not started.
            let present = !matches!(CheckConf::locate(confd, &name), Ok(None));
            (present && !NOT_CHECKS.contains(&name.as_str())).then_some(name)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub fn run(config: &AgentConfig, opts: &StartOptions) -> anyhow::Result<AgentReport> {
    let registry = Registry::new(config);
    let mut report = AgentReport::default();
    let mut checks = Vec::new();
    for name in configured_checks(&config.confd_path) {
        match registry.load(&name) {
            Ok(loaded) => {
                for w in &loaded.warnings {
                    eprintln!("agentprof: warning: {w}");
                }
                checks.push(loaded);
            }
            Err(e) => {
                eprintln!("agentprof: {name} not started: {e}");
                report.config_errors.push(format!("{name}: {e}"));
            }
        }
    }
    if checks.is_empty() {
        return Err(UsageError::config(
            &config.confd_path,
            "no check is configured here (add NAME.yaml with `instances:`; see conf.d/*.yaml.example)",
        )
        .into());
    }

    let which = agent_metrics::AgentMetrics::load(&config.confd_path)?;
    // Metrics go where agentprof.yaml sends them; to stdout only when asked
    // (`metrics_file: -`), so the terminal shows the agent, not a stream of JSON lines.
    let mut forwarders = crate::emit::configured(config)?;
    if forwarders.is_empty() {
        eprintln!(
            "agentprof: metrics are not forwarded (set dogstatsd_url, api_key or metrics_file in agentprof.yaml; metrics_file: - prints them as JSON lines)"
        );
    }
    report.forwarders = forwarders.iter().map(|f| f.name()).collect();

    // Developer mode is its collector.log blocks: with no log configured they go to
    // ./collector.log, said at start, rather than nowhere.
    let default_log = PathBuf::from(DEFAULT_LOG);
    let configured_log = opts.log.as_ref().or(config.log_file.as_ref());
    let log_path = match configured_log {
        Some(p) => Some(p),
        None if opts.developer_mode => {
            eprintln!(
                "agentprof: developer mode logs to {} (set log_file: or --log PATH; --log - for stdout)",
                std::path::absolute(&default_log)
                    .unwrap_or_else(|_| default_log.clone())
                    .display()
            );
            Some(&default_log)
        }
        None => None,
    };
    let mut log = match log_path {
        Some(p) if p.as_os_str() == "-" => LogSink::Stdout,
        Some(p) => LogSink::File(
            RotatingFile::open(p, config.log_file_max_size, config.log_file_max_rolls).map_err(
                |e| UsageError::flag("--log", format!("cannot append to {}: {e}", p.display())),
            )?,
        ),
        None => LogSink::None,
    };

    let exported = match &opts.metrics_listen {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr.as_str()).map_err(|e| {
                UsageError::flag("--metrics-listen", format!("cannot listen on {addr}: {e}"))
            })?;
            if let Ok(local) = listener.local_addr() {
                eprintln!("agentprof: serving http://{local}/metrics");
            }
            let m = Arc::new(openmetrics::OpenMetrics::new());
            openmetrics::serve(listener, Arc::clone(&m));
            Some(m)
        }
        None => None,
    };

    let level = match &config.log_level {
        Some(l) => Level::parse(l).map_err(|e| UsageError::flag("log_level", e))?,
        None if opts.developer_mode => Level::Debug,
        None => Level::Info,
    };
    // Developer mode samples the whole agent process (every thread) at 99 Hz.
    let mut sampler = None;
    let mut agent_profile = None;
    if opts.developer_mode {
        let mut s = crate::profile::Sampler::new_process(AGENT_HZ);
        match s.start_process() {
            Ok(()) => {
                sampler = Some(s);
                agent_profile = Some(crate::profile::CallProfile::new(
                    crate::profile::ProfileKind::Cpu,
                    AGENT_HZ,
                    (unix_now() * 1e9) as i64,
                ));
            }
            Err(e) => eprintln!("agentprof: warning: the agent is not sampled: {e:#}"),
        }
    }

    signal::install();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut kinds: HashMap<String, CheckKind> = HashMap::new();
    let mut summaries: HashMap<String, CheckSummary> = HashMap::new();
    let mut python_hosts: Vec<(
        String,
        Arc<std::sync::Mutex<crate::checks::python::PythonHost>>,
    )> = Vec::new();
    let mut shortest = DEFAULT_INTERVAL;
    let mut running = 0;
    let mut builtins = Vec::new();
    for loaded in checks {
        let intervals: Vec<Duration> = loaded
            .instances
            .iter()
            .map(|(c, _)| {
                c.min_collection_interval
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .unwrap_or(DEFAULT_INTERVAL)
            })
            .collect();
        shortest = intervals.iter().copied().fold(shortest, Duration::min);
        let name = loaded.name.clone();
        kinds.insert(name.clone(), loaded.kind);
        summaries.insert(name.clone(), CheckSummary::new(&name, loaded.kind.label()));
        if loaded.kind == CheckKind::Builtin {
            builtins.push(loaded);
            continue;
        }
        if let Some(host) = &loaded.python {
            // A check that cannot be loaded is reported once and not scheduled, as the
            // Agent's collector does; the other checks run.
            if let Err(e) = crate::error::UsageError::load_python(host) {
                report.config_errors.push(e.to_string());
                continue;
            }
            python_hosts.push((name.clone(), Arc::clone(host)));
        }
        // Developer mode profiles Python checks with cProfile, for the periodic top calls.
        let python_profile =
            (opts.developer_mode && loaded.kind == CheckKind::Python).then_some(1000);
        let runner = Runner::new(loaded, config, None, python_profile, false);
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name(format!("check-{name}"))
            .spawn(move || schedule::run_check(name, runner, intervals, tx, stop));
        match spawned {
            Ok(_) => running += 1,
            Err(e) => report
                .config_errors
                .push(format!("cannot start a thread: {e}")),
        }
    }
    // Built-in checks share a few threads; outside developer mode only their run time is
    // measured (process snapshots per run cost more than these small checks).
    let pool = if builtins.is_empty() {
        None
    } else {
        match pool::Pool::start(
            builtins,
            config,
            config.check_runners,
            opts.developer_mode,
            tx.clone(),
        ) {
            Ok(p) => {
                running += 1;
                Some(p)
            }
            Err(e) => {
                report
                    .config_errors
                    .push(format!("cannot start the check runners: {e}"));
                None
            }
        }
    };
    drop(tx);

    let loop_every = shortest.clamp(Duration::from_secs(1), DEFAULT_INTERVAL);
    let mut agent = stats::AgentStats::new(
        Aggregator::new(
            config.hostname.clone(),
            &[],
            &config.tags,
            config.histogram.clone(),
        ),
        which,
    );
    let started = Instant::now();
    let mut next_loop = started + loop_every;
    let (mut collection_s, mut emit_s) = (0.0, 0.0);
    let mut stopping_since: Option<Instant> = None;
    let forward = |batch: &Batch<'_>, fw: &mut Vec<Box<dyn Forwarder>>, errors: &mut u64| -> f64 {
        let t = Instant::now();
        for f in fw.iter_mut() {
            if let Err(e) = f.send(batch) {
                *errors += 1;
                if *errors <= 5 {
                    eprintln!("agentprof: {}: {e}", f.name());
                }
            }
        }
        t.elapsed().as_secs_f64()
    };
    let mut check_aggs: HashMap<String, Aggregator> = HashMap::new();
    while running > 0 {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Run(rec)) => {
                let kind = kinds.get(&rec.check).copied().unwrap_or(CheckKind::Builtin);
                collection_s += rec.cost.wall_s;
                if opts.developer_mode && level <= Level::Info {
                    let origin = format!("checks({}:{})", file!(), line!());
                    log.write(&collector_log::block_from(&rec, &origin));
                }
                if let (Some(e), true) = (&rec.error, level <= Level::Error) {
                    let origin = format!("checks({}:{})", file!(), line!());
                    let first = e.lines().last().unwrap_or_default();
                    let msg = format!(
                        "{} instance {} run {} failed: {first}",
                        rec.check, rec.instance, rec.run
                    );
                    log.write(&collector_log::line(rec.started_at, "ERROR", &origin, &msg));
                }
                let mut sink = Sink::default();
                stats::check_metrics(&rec, kind, opts.developer_mode, &mut sink);
                let agg = check_aggs.entry(rec.check.clone()).or_insert_with(|| {
                    Aggregator::new(
                        config.hostname.clone(),
                        &[],
                        &config.tags,
                        config.histogram.clone(),
                    )
                });
                let own = agg.flush(sink, rec.started_at, rec.run);
                if let Some(m) = &exported {
                    m.update(&own.metrics);
                }
                for part in [
                    Batch {
                        metrics: &rec.metrics,
                        service_checks: &rec.service_checks,
                        events: &rec.events,
                    },
                    Batch {
                        metrics: &own.metrics,
                        service_checks: &own.service_checks,
                        events: &own.events,
                    },
                ] {
                    emit_s += forward(&part, &mut forwarders, &mut report.forward_errors);
                }
                if let Some(s) = summaries.get_mut(&rec.check) {
                    // A built-in check shares agentprof's process with every other check: its
                    // RSS is the agent's (reported as datadog.agent.collector.*), not its own.
                    s.add(*rec, opts.developer_mode && kind != CheckKind::Builtin);
                }
            }
            Ok(Msg::Skipped { check, count }) => {
                eprintln!(
                    "agentprof: warning: {check}: {count} run(s) skipped: the previous run was still going"
                );
                if let Some(s) = summaries.get_mut(&check) {
                    s.skipped += count;
                }
            }
            Ok(Msg::Done) => running -= 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let Some(p) = &pool {
            p.watch();
        }
        let now = Instant::now();
        if now >= next_loop && stopping_since.is_none() {
            next_loop += loop_every;
            report.loops += 1;
            let flushed: Flushed = agent.collect(collection_s, emit_s, unix_now());
            if let Some(m) = &exported {
                m.update(&flushed.metrics);
            }
            collection_s = 0.0;
            emit_s = 0.0;
            if let Some(s) = sampler.as_mut() {
                s.drain();
            }
            if opts.developer_mode
                && level <= Level::Debug
                && config.collector_profile_interval > 0
                && report.loops % config.collector_profile_interval == 0
            {
                if let (Some(s), Some(p)) = (sampler.as_mut(), agent_profile.as_ref()) {
                    let mut now =
                        crate::profile::CallProfile::new(p.kind, AGENT_HZ, p.start_unix_ns);
                    s.snapshot(&mut now);
                    log.write(&agent_top_calls(&now));
                }
                log_top_calls(&mut log, &python_hosts);
            }
            if opts.developer_mode && level <= Level::Info {
                log.write(&collector_log::agent_stats(
                    unix_now(),
                    &format!("checks.collector({}:{})", file!(), line!()),
                    &flushed.metrics,
                ));
            }
            let batch = Batch {
                metrics: &flushed.metrics,
                service_checks: &flushed.service_checks,
                events: &flushed.events,
            };
            emit_s += forward(&batch, &mut forwarders, &mut report.forward_errors);
        }
        let asked = signal::requested() || opts.duration.is_some_and(|d| started.elapsed() >= d);
        if asked && stopping_since.is_none() {
            stop.store(true, Ordering::SeqCst);
            if let Some(p) = &pool {
                p.stop();
            }
            stopping_since = Some(now);
        }
        if stopping_since.is_some_and(|t| t.elapsed() >= GRACE) {
            // Checks still running past the grace period are left behind; their results are not waited for.
            eprintln!(
                "agentprof: {running} check(s) still running after {}s: not waited for",
                GRACE.as_secs()
            );
            break;
        }
    }
    for f in forwarders.iter_mut() {
        if let Err(e) = f.flush() {
            report.forward_errors += 1;
            eprintln!("agentprof: {}: {e}", f.name());
        }
    }
    report.delivery = forwarders.iter().map(|f| f.delivery()).collect();
    report.duration_s = started.elapsed().as_secs_f64();
    if let (Some(mut s), Some(mut p)) = (sampler, agent_profile) {
        s.stop();
        s.finish(&mut p);
        p.duration_ns = started.elapsed().as_nanos() as u64;
        report.profile_files = write_agent_profile(&config.profile_dir, &p);
    }
    let mut list: Vec<CheckSummary> = summaries.into_values().collect();
    list.sort_by(|a, b| a.check.cmp(&b.check));
    for s in &mut list {
        s.finish();
    }
    report.checks = list;
    Ok(report)
}

/// Sampling frequency of the agent's own profile, as Go's default (not a divisor of timers).
const AGENT_HZ: u32 = 99;

/// The agent's top 20 functions by cumulative samples, `go tool pprof -top -cum` style.
fn agent_top_calls(p: &crate::profile::CallProfile) -> String {
    let t = crate::profile::top(p, 20);
    let ms = |n: u64| n as f64 * p.period_ns as f64 / 1e6;
    let pct = |n: u64| n as f64 / t.total_samples.max(1) as f64 * 100.0;
    let origin = format!("collector(profile.rs:{})", line!());
    let mut out = collector_log::line(
        unix_now(),
        "DEBUG",
        &origin,
        &format!(
            "agent: {} samples at {AGENT_HZ} Hz ({:.1}ms of CPU), top {} of {} functions by cumulative time; {} more samples went to naming the sampled functions (not shown)",
            t.total_samples,
            ms(t.total_samples),
            t.rows.len(),
            t.functions,
            crate::profile::Sampler::not_sampled()
        ),
    );
    out.push_str("      flat  flat%   sum%        cum   cum%\n");
    let mut sum = 0;
    for r in &t.rows {
        sum += r.flat;
        out.push_str(&format!(
            "{:>8.2}ms {:>5.2}% {:>5.2}% {:>8.2}ms {:>5.2}%  {}\n",
            ms(r.flat),
            pct(r.flat),
            pct(sum),
            ms(r.cum),
            pct(r.cum),
            r.function
        ));
    }
    out
}

/// Writes `agent-TIME.svg` and `.pb.gz` into `dir` (TIME in RFC 3339, as `pull` names its
/// files); the paths written.
fn write_agent_profile(dir: &Path, p: &crate::profile::CallProfile) -> Vec<PathBuf> {
    if p.total_samples() == 0 {
        eprintln!("agentprof: the agent used too little CPU to be sampled: no profile written");
        return Vec::new();
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("agentprof: cannot create {}: {e}", dir.display());
        return Vec::new();
    }
    let stem = format!("agent-{}", crate::duration::file_stamp());
    let mut written = Vec::new();
    let pb = dir.join(format!("{stem}.pb.gz"));
    match crate::pprof::encode_gzip(p).and_then(|b| std::fs::write(&pb, b)) {
        Ok(()) => written.push(pb),
        Err(e) => eprintln!("agentprof: cannot write {}: {e}", pb.display()),
    }
    let svg = dir.join(format!("{stem}.svg"));
    let drawn = std::fs::File::create(&svg)
        .map_err(anyhow::Error::from)
        .and_then(|f| {
            crate::profile::write_flamegraph(
                p,
                "agentprof start — the agent",
                std::io::BufWriter::new(f),
            )
        });
    match drawn {
        Ok(()) => written.push(svg),
        Err(e) => eprintln!("agentprof: cannot write {}: {e:#}", svg.display()),
    }
    for w in &written {
        eprintln!("agentprof: wrote {}", w.display());
    }
    written
}

/// Every `collector_profile_interval` loops: the top 20 calls of each Python check since it
/// started, in pstats' layout. A check busy running right now is logged at the next interval.
fn log_top_calls(
    log: &mut LogSink,
    hosts: &[(
        String,
        Arc<std::sync::Mutex<crate::checks::python::PythonHost>>,
    )],
) {
    for (name, host) in hosts {
        let Ok(mut h) = host.try_lock() else { continue };
        let Ok(report) = h.pstats(20, false) else {
            continue;
        };
        let view = crate::render::pstats::PstatsView { report, top: 20 };
        let origin = format!("collector(profile.rs:{})", line!());
        log.write(&collector_log::line(
            unix_now(),
            "DEBUG",
            &origin,
            &format!("{name}: top calls"),
        ));
        log.write(&crate::render::pstats::render(&view));
    }
}

pub fn render_summary(report: &AgentReport) -> String {
    summary::render(&report.checks, &report.config_errors, &report.delivery)
}
