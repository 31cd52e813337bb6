//! `agentprof start`: every configured check on its interval, the agent in developer mode.
//! Check threads run the checks; this loop forwards what they report, logs the developer-mode
//! blocks, emits the agent's own figures every collector loop, and stops on SIGINT, SIGTERM or
//! `--duration`, flushing every forwarder and printing the summary.

mod agent_metrics;
mod devmode;
mod logfile;
mod openmetrics;
mod pool;
mod schedule;
mod setup;
mod stats;
mod summary;

pub use logfile::Level;
pub use summary::CheckSummary;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::checks::CheckKind;
use crate::config::{AgentConfig, CheckConf};
use crate::emit::Batch;
use crate::metrics::{Aggregator, Flushed, Sink};
use crate::render::collector_log;
use crate::signal;

use devmode::{
    AGENT_HZ, DevProfile, agent_top_calls, log_top_calls, write_agent_profile,
    write_python_profiles,
};
use schedule::{DEFAULT_INTERVAL, Msg};
use setup::{Outputs, Started, load_checks, start_checks};

/// The longest the collector and each check's scheduler sleep without looking at the stop
/// flag: a signal or `--duration` is acted on within this, and a run past its deadline is
/// found by the pool's watch within this.
pub(crate) const IDLE_POLL: Duration = Duration::from_millis(200);

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

/// Runs every configured check on its interval until SIGINT, SIGTERM or `--duration`: the
/// checks loaded, the outputs opened, the check threads started, then the collector loop
/// until they are done.
/// Its errors are the configuration's (exit 2): checks, outputs and listeners are set up
/// before the first run; a check that fails afterwards is in the report.
pub fn run(
    config: &AgentConfig,
    opts: &StartOptions,
) -> Result<AgentReport, crate::error::UsageError> {
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

    /// How long the collector may wait for a run before its own work is due: the next loop,
    /// `--duration`'s end, or `IDLE_POLL` (signals, the pool's watch over run deadlines).
    /// Waking at every 50 ms whatever was due cost an idle agent 20 wake-ups a second.
    fn wait(&self, now: Instant) -> Duration {
        if self.stopping_since.is_some() {
            return Duration::from_millis(50);
        }
        let mut wait = IDLE_POLL.min(self.next_loop.saturating_duration_since(now));
        if let Some(d) = self.opts.duration {
            wait = wait.min((self.started + d).saturating_duration_since(now));
        }
        wait.max(Duration::from_millis(1))
    }

    fn run(&mut self, rx: &mpsc::Receiver<Msg>, stop: &AtomicBool) {
        while self.checks.running > 0 {
            match rx.recv_timeout(self.wait(Instant::now())) {
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
        // A Python check's own log records (warning and up): on stderr with their level and
        // check, as the Agent's log shows them.
        for l in &rec.logs {
            eprintln!(
                "agentprof: {} | {} instance {} run {}: {}",
                l.level,
                rec.check,
                rec.instance,
                rec.run,
                crate::redact::printable_lines(&l.message)
            );
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
            s.add(
                rec,
                opts.developer_mode && kind != CheckKind::Builtin,
                kind.persists(),
            );
        }
    }

    /// A collector loop: the agent's own figures, forwarded and exported; in developer mode
    /// its top calls and the Python checks' every `collector_profile_interval` loops.
    fn on_loop(&mut self) {
        let (opts, level, config) = (self.opts, self.out.level, self.config);
        self.report.loops += 1;
        let flushed: Flushed =
            self.agent
                .collect(self.collection_s, self.emit_s, crate::duration::unix_now());
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
                crate::duration::unix_now(),
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
        // Python checks' samples: only developer mode takes them.
        report.profile_files.extend(write_python_profiles(
            &config.profile_dir,
            &checks.python_hosts,
        ));
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

pub fn render_summary(report: &AgentReport) -> String {
    summary::render(&report.checks, &report.config_errors, &report.delivery)
}
