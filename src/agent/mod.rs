//! `agentprof start`: every configured check on its interval, the agent in developer mode.
//! Check threads run the checks; this loop forwards what they report, logs the developer-mode
//! blocks, emits the agent's own figures every collector loop, and stops on SIGINT, SIGTERM or
//! `--duration`, flushing every forwarder and printing the summary.

mod agent_metrics;
mod logfile;
mod openmetrics;
mod pool;
mod schedule;
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
use crate::signal;

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

/// Runs every configured check on its interval until SIGINT, SIGTERM or `--duration`: the
/// checks loaded, the outputs opened, the check threads started, then the collector loop
/// until they are done.
pub fn run(config: &AgentConfig, opts: &StartOptions) -> anyhow::Result<AgentReport> {
    let mut report = AgentReport::default();
    let checks = load_checks(config, &mut report)?;
    let which = agent_metrics::AgentMetrics::load(&config.confd_path)?;
    let outputs = Outputs::open(config, opts)?;
    report.forwarders = outputs.forwarders.iter().map(|f| f.name()).collect();
    let dev = DevProfile::start(opts.developer_mode);
    signal::install();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Msg>();
    let started = start_checks(checks, config, opts, &tx, &stop, &mut report);
    drop(tx);
    let mut collector = Collector::new(config, opts, outputs, started, which, dev, report);
    collector.run(&rx, &stop);
    Ok(collector.finish())
}

/// Every check configured in conf.d, loaded; one that cannot be is said and recorded, and
/// none at all is a configuration error.
fn load_checks(
    config: &AgentConfig,
    report: &mut AgentReport,
) -> anyhow::Result<Vec<crate::checks::LoadedCheck>> {
    let registry = Registry::new(config);
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
    Ok(checks)
}

/// Where what the agent collects goes: the forwarders, collector.log, /metrics, and the log
/// level.
struct Outputs {
    forwarders: Vec<Box<dyn Forwarder>>,
    log: LogSink,
    exported: Option<Arc<openmetrics::OpenMetrics>>,
    level: Level,
}

impl Outputs {
    fn open(config: &AgentConfig, opts: &StartOptions) -> anyhow::Result<Outputs> {
        // Metrics go where agentprof.yaml sends them; to stdout only when asked
        // (`metrics_file: -`), so the terminal shows the agent, not a stream of JSON lines.
        let forwarders = crate::emit::configured(config)?;
        if forwarders.is_empty() {
            eprintln!(
                "agentprof: metrics are not forwarded (set dogstatsd_url, api_key or metrics_file in agentprof.yaml; metrics_file: - prints them as JSON lines)"
            );
        }
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
        let log = match log_path {
            Some(p) if p.as_os_str() == "-" => LogSink::Stdout,
            Some(p) => LogSink::File(
                RotatingFile::open(p, config.log_file_max_size, config.log_file_max_rolls)
                    .map_err(|e| {
                        UsageError::flag("--log", format!("cannot append to {}: {e}", p.display()))
                    })?,
            ),
            None => LogSink::None,
        };
        let exported = match &opts.metrics_listen {
            Some(addr) => Some(serve_metrics(addr)?),
            None => None,
        };
        let level = match &config.log_level {
            Some(l) => Level::parse(l).map_err(|e| UsageError::flag("log_level", e))?,
            None if opts.developer_mode => Level::Debug,
            None => Level::Info,
        };
        Ok(Outputs {
            forwarders,
            log,
            exported,
            level,
        })
    }

    /// Sends `batch` to every forwarder (the first five failures said); the seconds it took.
    fn forward(&mut self, batch: &Batch<'_>, errors: &mut u64) -> f64 {
        let t = Instant::now();
        for f in self.forwarders.iter_mut() {
            if let Err(e) = f.send(batch) {
                *errors += 1;
                if *errors <= 5 {
                    eprintln!("agentprof: {}: {e}", f.name());
                }
            }
        }
        t.elapsed().as_secs_f64()
    }
}

/// `--metrics-listen`: the agent's own figures on /metrics, from a thread of their own.
fn serve_metrics(addr: &str) -> anyhow::Result<Arc<openmetrics::OpenMetrics>> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| {
        UsageError::flag("--metrics-listen", format!("cannot listen on {addr}: {e}"))
    })?;
    if let Ok(local) = listener.local_addr() {
        eprintln!("agentprof: serving http://{local}/metrics");
    }
    let m = Arc::new(openmetrics::OpenMetrics::new());
    let shown = Arc::clone(&m);
    crate::serve::on_thread(
        listener,
        crate::serve::metrics_router(move || shown.render()),
        "metrics-listen",
    )
    .map_err(|e| UsageError::flag("--metrics-listen", format!("cannot serve on {addr}: {e}")))?;
    Ok(m)
}

/// Developer mode samples the whole agent process (every thread) at 99 Hz.
struct DevProfile {
    sampler: Option<crate::profile::Sampler>,
    profile: Option<crate::profile::CallProfile>,
}

impl DevProfile {
    fn start(developer_mode: bool) -> DevProfile {
        let mut dev = DevProfile {
            sampler: None,
            profile: None,
        };
        if !developer_mode {
            return dev;
        }
        let mut s = crate::profile::Sampler::new_process(AGENT_HZ);
        match s.start_process() {
            Ok(()) => {
                dev.sampler = Some(s);
                dev.profile = Some(crate::profile::CallProfile::new(
                    crate::profile::ProfileKind::Cpu,
                    AGENT_HZ,
                    (unix_now() * 1e9) as i64,
                ));
            }
            Err(e) => eprintln!("agentprof: warning: the agent is not sampled: {e:#}"),
        }
        dev
    }
}

type PythonHosts = Vec<(
    String,
    Arc<std::sync::Mutex<crate::checks::python::PythonHost>>,
)>;

/// The check threads started, and what the loop needs to know of them.
struct Started {
    kinds: HashMap<String, CheckKind>,
    summaries: HashMap<String, CheckSummary>,
    python_hosts: PythonHosts,
    /// The shortest interval of any instance.
    shortest: Duration,
    /// Threads (and the built-ins' pool) still to say they are done.
    running: usize,
    pool: Option<pool::Pool>,
}

/// A thread per Python or process check, a shared pool for the built-ins; a check that
/// cannot start is recorded and the others run.
fn start_checks(
    checks: Vec<crate::checks::LoadedCheck>,
    config: &AgentConfig,
    opts: &StartOptions,
    tx: &mpsc::Sender<Msg>,
    stop: &Arc<AtomicBool>,
    report: &mut AgentReport,
) -> Started {
    let mut st = Started {
        kinds: HashMap::new(),
        summaries: HashMap::new(),
        python_hosts: Vec::new(),
        shortest: DEFAULT_INTERVAL,
        running: 0,
        pool: None,
    };
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
        st.shortest = intervals.iter().copied().fold(st.shortest, Duration::min);
        let name = loaded.name.clone();
        st.kinds.insert(name.clone(), loaded.kind);
        st.summaries
            .insert(name.clone(), CheckSummary::new(&name, loaded.kind.label()));
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
            st.python_hosts.push((name.clone(), Arc::clone(host)));
        }
        // Developer mode profiles Python checks with cProfile, for the periodic top calls.
        let python_profile =
            (opts.developer_mode && loaded.kind == CheckKind::Python).then_some(1000);
        let runner = Runner::new(loaded, config, None, python_profile, false);
        let (tx, stop) = (tx.clone(), Arc::clone(stop));
        let spawned = std::thread::Builder::new()
            .name(format!("check-{name}"))
            .spawn(move || schedule::run_check(name, runner, intervals, tx, stop));
        match spawned {
            Ok(_) => st.running += 1,
            Err(e) => report
                .config_errors
                .push(format!("cannot start a thread: {e}")),
        }
    }
    // Built-in checks share a few threads; outside developer mode only their run time is
    // measured (process snapshots per run cost more than these small checks).
    if !builtins.is_empty() {
        let pool = pool::Pool::start(
            builtins,
            config,
            config.check_runners,
            opts.developer_mode,
            tx.clone(),
        );
        match pool {
            Ok(p) => {
                st.running += 1;
                st.pool = Some(p);
            }
            Err(e) => report
                .config_errors
                .push(format!("cannot start the check runners: {e}")),
        }
    }
    st
}

/// The collector loop: what the check threads report, forwarded and summed; the agent's own
/// figures every loop; the stop.
struct Collector<'a> {
    config: &'a AgentConfig,
    opts: &'a StartOptions,
    out: Outputs,
    checks: Started,
    agent: stats::AgentStats,
    dev: DevProfile,
    /// Each check's own figures (run time, memory…), aggregated as the Agent's are.
    check_aggs: HashMap<String, Aggregator>,
    report: AgentReport,
    /// Seconds spent running checks and forwarding since the last loop.
    collection_s: f64,
    emit_s: f64,
    loop_every: Duration,
    started: Instant,
    next_loop: Instant,
    stopping_since: Option<Instant>,
}

impl<'a> Collector<'a> {
    fn new(
        config: &'a AgentConfig,
        opts: &'a StartOptions,
        out: Outputs,
        checks: Started,
        which: agent_metrics::AgentMetrics,
        dev: DevProfile,
        report: AgentReport,
    ) -> Collector<'a> {
        let loop_every = checks
            .shortest
            .clamp(Duration::from_secs(1), DEFAULT_INTERVAL);
        let started = Instant::now();
        Collector {
            config,
            opts,
            out,
            checks,
            agent: stats::AgentStats::new(new_aggregator(config), which),
            dev,
            check_aggs: HashMap::new(),
            report,
            collection_s: 0.0,
            emit_s: 0.0,
            loop_every,
            started,
            next_loop: started + loop_every,
            stopping_since: None,
        }
    }

    fn run(&mut self, rx: &mpsc::Receiver<Msg>, stop: &AtomicBool) {
        while self.checks.running > 0 {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Msg::Run(rec)) => self.on_run(*rec),
                Ok(Msg::Skipped { check, count }) => {
                    eprintln!(
                        "agentprof: warning: {check}: {count} run(s) skipped: the previous run was still going"
                    );
                    if let Some(s) = self.checks.summaries.get_mut(&check) {
                        s.skipped += count;
                    }
                }
                Ok(Msg::Done) => self.checks.running -= 1,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Some(p) = &self.checks.pool {
                p.watch();
            }
            let now = Instant::now();
            if now >= self.next_loop && self.stopping_since.is_none() {
                self.next_loop += self.loop_every;
                self.on_loop();
            }
            if self.stopping(now, stop) {
                break;
            }
        }
    }

    /// One run of one check instance: logged, its figures forwarded with the check's own,
    /// added to its summary.
    fn on_run(&mut self, rec: crate::profile::RunRecord) {
        let (opts, level) = (self.opts, self.out.level);
        let kind = self
            .checks
            .kinds
            .get(&rec.check)
            .copied()
            .unwrap_or(CheckKind::Builtin);
        self.collection_s += rec.cost.wall_s;
        if opts.developer_mode && level <= Level::Info {
            let origin = format!("checks({}:{})", file!(), line!());
            self.out
                .log
                .write(&collector_log::block_from(&rec, &origin));
        }
        if let (Some(e), true) = (&rec.error, level <= Level::Error) {
            let origin = format!("checks({}:{})", file!(), line!());
            let first = e.lines().last().unwrap_or_default();
            let msg = format!(
                "{} instance {} run {} failed: {first}",
                rec.check, rec.instance, rec.run
            );
            self.out
                .log
                .write(&collector_log::line(rec.started_at, "ERROR", &origin, &msg));
        }
        let mut sink = Sink::default();
        stats::check_metrics(&rec, kind, opts.developer_mode, &mut sink);
        let config = self.config;
        let agg = self
            .check_aggs
            .entry(rec.check.clone())
            .or_insert_with(|| new_aggregator(config));
        let own = agg.flush(sink, rec.started_at, rec.run);
        if let Some(m) = &self.out.exported {
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
            self.emit_s += self.out.forward(&part, &mut self.report.forward_errors);
        }
        if let Some(s) = self.checks.summaries.get_mut(&rec.check) {
            // A built-in check shares agentprof's process with every other check: its
            // RSS is the agent's (reported as datadog.agent.collector.*), not its own.
            s.add(rec, opts.developer_mode && kind != CheckKind::Builtin);
        }
    }

    /// A collector loop: the agent's own figures, forwarded and exported; in developer mode
    /// its top calls and the Python checks' every `collector_profile_interval` loops.
    fn on_loop(&mut self) {
        let (opts, level, config) = (self.opts, self.out.level, self.config);
        self.report.loops += 1;
        let flushed: Flushed = self
            .agent
            .collect(self.collection_s, self.emit_s, unix_now());
        if let Some(m) = &self.out.exported {
            m.update(&flushed.metrics);
        }
        self.collection_s = 0.0;
        self.emit_s = 0.0;
        if let Some(s) = self.dev.sampler.as_mut() {
            s.drain();
        }
        if opts.developer_mode
            && level <= Level::Debug
            && config.collector_profile_interval > 0
            && self
                .report
                .loops
                .is_multiple_of(config.collector_profile_interval)
        {
            if let (Some(s), Some(p)) = (self.dev.sampler.as_mut(), self.dev.profile.as_ref()) {
                let mut now = crate::profile::CallProfile::new(p.kind, AGENT_HZ, p.start_unix_ns);
                s.snapshot(&mut now);
                self.out.log.write(&agent_top_calls(&now));
            }
            log_top_calls(&mut self.out.log, &self.checks.python_hosts);
        }
        if opts.developer_mode && level <= Level::Info {
            self.out.log.write(&collector_log::agent_stats(
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
        self.emit_s += self.out.forward(&batch, &mut self.report.forward_errors);
    }

    /// Asked to stop (a signal, `--duration`): the check threads told; true once the grace
    /// period is over with checks still running (they are left behind, not waited for).
    fn stopping(&mut self, now: Instant, stop: &AtomicBool) -> bool {
        let asked = signal::requested()
            || self
                .opts
                .duration
                .is_some_and(|d| self.started.elapsed() >= d);
        if asked && self.stopping_since.is_none() {
            stop.store(true, Ordering::SeqCst);
            if let Some(p) = &self.checks.pool {
                p.stop();
            }
            self.stopping_since = Some(now);
        }
        if self.stopping_since.is_some_and(|t| t.elapsed() >= GRACE) {
            eprintln!(
                "agentprof: {} check(s) still running after {}s: not waited for",
                self.checks.running,
                GRACE.as_secs()
            );
            return true;
        }
        false
    }

    /// Every forwarder flushed, the agent's profile written (developer mode), the summary.
    fn finish(self) -> AgentReport {
        let Collector {
            config,
            mut out,
            checks,
            dev,
            mut report,
            started,
            ..
        } = self;
        for f in out.forwarders.iter_mut() {
            if let Err(e) = f.flush() {
                report.forward_errors += 1;
                eprintln!("agentprof: {}: {e}", f.name());
            }
        }
        report.delivery = out.forwarders.iter().map(|f| f.delivery()).collect();
        report.duration_s = started.elapsed().as_secs_f64();
        if let (Some(mut s), Some(mut p)) = (dev.sampler, dev.profile) {
            s.stop();
            s.finish(&mut p);
            p.duration_ns = started.elapsed().as_nanos() as u64;
            report.profile_files = write_agent_profile(&config.profile_dir, &p);
        }
        let mut list: Vec<CheckSummary> = checks.summaries.into_values().collect();
        list.sort_by(|a, b| a.check.cmp(&b.check));
        for s in &mut list {
            s.finish();
        }
        report.checks = list;
        report
    }
}

fn new_aggregator(config: &AgentConfig) -> Aggregator {
    Aggregator::new(
        config.hostname.clone(),
        &[],
        &config.tags,
        config.histogram.clone(),
    )
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
