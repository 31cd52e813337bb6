//! What `agentprof start` sets up before its loop: the checks loaded, the outputs opened
//! (forwarders, collector.log, /metrics), the check threads and the built-ins' pool started.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::logfile::{Level, LogSink, RotatingFile};
use super::schedule::{self, DEFAULT_INTERVAL, Msg};
use super::{
    AgentReport, CheckSummary, DEFAULT_LOG, StartOptions, configured_checks, openmetrics, pool,
};
use crate::checks::{CheckKind, Registry, Runner};
use crate::config::AgentConfig;
use crate::emit::{Batch, Forwarder};
use crate::error::UsageError;

/// The built-in checks the Datadog Agent runs with no configuration of its own (its package
/// ships their conf.yaml.default).
const DEFAULT_CHECKS: [&str; 7] = ["cpu", "disk", "io", "load", "memory", "network", "uptime"];

/// Every check configured in conf.d, loaded (none configured: the Agent's default checks);
/// one that cannot be is said and recorded, and none loaded at all is a configuration error.
pub(super) fn load_checks(
    config: &AgentConfig,
    report: &mut AgentReport,
) -> Result<Vec<crate::checks::LoadedCheck>, UsageError> {
    let registry = Registry::new(config);
    let mut checks = Vec::new();
    let mut names = configured_checks(&config.confd_path);
    if names.is_empty() {
        // As the Agent, whose package enables these from their conf.yaml.default files.
        let start = if config.confd_path.join("disk.yaml.example").is_file() {
            format!(
                "to configure one, copy its {}/NAME.yaml.example to NAME.yaml",
                config.confd_path.display()
            )
        } else {
            "`agentprof init` writes NAME.yaml.example files to start from".to_string()
        };
        eprintln!(
            "agentprof: no check is configured in {}: running the Agent's default checks ({}) with their conf.yaml.default instances; {start}",
            config.confd_path.display(),
            DEFAULT_CHECKS.join(", ")
        );
        names = DEFAULT_CHECKS.iter().map(|n| n.to_string()).collect();
    }
    for name in names {
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
            "no check is configured here (add NAME.yaml with `instances:`; `agentprof init` writes an example of each, conf.d/NAME.yaml.example)",
        ));
    }
    Ok(checks)
}

/// Where what the agent collects goes: the forwarders, collector.log, /metrics, and the log
/// level.
pub(super) struct Outputs {
    pub(super) forwarders: Vec<Box<dyn Forwarder>>,
    pub(super) log: LogSink,
    pub(super) exported: Option<Arc<openmetrics::OpenMetrics>>,
    pub(super) level: Level,
}

impl Outputs {
    pub(super) fn open(config: &AgentConfig, opts: &StartOptions) -> Result<Outputs, UsageError> {
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
    pub(super) fn forward(&mut self, batch: &Batch<'_>, errors: &mut u64) -> f64 {
        let t = Instant::now();
        crate::emit::send_all(&mut self.forwarders, batch, |name, e| {
            *errors += 1;
            if *errors <= 5 {
                eprintln!("agentprof: {name}: {e}");
            }
        });
        t.elapsed().as_secs_f64()
    }
}

/// `--metrics-listen`: the agent's own figures on /metrics, from a thread of their own.
fn serve_metrics(addr: &str) -> Result<Arc<openmetrics::OpenMetrics>, UsageError> {
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
        crate::serve::Bounds::metrics(),
        "metrics-listen",
    )
    .map_err(|e| UsageError::flag("--metrics-listen", format!("cannot serve on {addr}: {e}")))?;
    Ok(m)
}

pub(super) type PythonHosts = Vec<(String, Arc<std::sync::Mutex<crate::checks::PythonHost>>)>;

/// The check threads started, and what the loop needs to know of them.
pub(super) struct Started {
    pub(super) kinds: HashMap<String, CheckKind>,
    pub(super) summaries: HashMap<String, CheckSummary>,
    pub(super) python_hosts: PythonHosts,
    /// The shortest interval of any instance.
    pub(super) shortest: Duration,
    /// Threads (and the built-ins' pool) still to say they are done.
    pub(super) running: usize,
    pub(super) pool: Option<pool::Pool>,
}

impl Default for Started {
    /// Nothing started yet; the shortest interval the default one.
    fn default() -> Started {
        Started {
            kinds: HashMap::new(),
            summaries: HashMap::new(),
            python_hosts: Vec::new(),
            shortest: DEFAULT_INTERVAL,
            running: 0,
            pool: None,
        }
    }
}

/// Each instance's `min_collection_interval`, else the default.
fn intervals(loaded: &crate::checks::LoadedCheck) -> Vec<Duration> {
    loaded
        .instances
        .iter()
        .map(|(c, _)| {
            c.min_collection_interval
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(DEFAULT_INTERVAL)
        })
        .collect()
}

/// A thread per Python or process check, a shared pool for the built-ins; a check that
/// cannot start is recorded and the others run.
pub(super) fn start_checks(
    checks: Vec<crate::checks::LoadedCheck>,
    config: &AgentConfig,
    opts: &StartOptions,
    tx: &mpsc::Sender<Msg>,
    stop: &Arc<AtomicBool>,
    report: &mut AgentReport,
) -> Started {
    let mut st = Started::default();
    let mut builtins = Vec::new();
    for loaded in checks {
        let mut intervals = intervals(&loaded);
        st.shortest = intervals.iter().copied().fold(st.shortest, Duration::min);
        let name = loaded.name.clone();
        st.kinds.insert(name.clone(), loaded.kind);
        st.summaries
            .insert(name.clone(), CheckSummary::new(&name, loaded.kind.label()));
        if loaded.kind == CheckKind::Builtin {
            builtins.push(loaded);
            continue;
        }
        let mut failed = Vec::new();
        if let Some(host) = &loaded.python {
            if opts.developer_mode {
                // Developer mode samples Python checks' stacks, for the periodic top calls
                // and a profile file of each at the end.
                crate::sync::lock(host)
                    .set_profiler(crate::checks::Profiler::Sample { hz: PYTHON_HZ });
            }
            let Some(f) = load_python(&name, host, report) else {
                continue;
            };
            failed = f;
            st.python_hosts.push((name.clone(), Arc::clone(host)));
        }
        let python_profile =
            (opts.developer_mode && loaded.kind == CheckKind::Python).then_some(PYTHON_HZ);
        // An instance that did not load is not scheduled (its interval goes with it).
        intervals = intervals
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !failed.contains(i))
            .map(|(_, iv)| iv)
            .collect();
        let runner = Runner::new(loaded, config, None, python_profile, false)
            .keep_instances(|i| !failed.contains(&i));
        let (tx, stop) = (tx.clone(), Arc::clone(stop));
        match std::thread::Builder::new()
            .name(format!("check-{name}"))
            .spawn(move || schedule::run_check(name, runner, intervals, tx, stop))
        {
            Ok(_) => st.running += 1,
            Err(e) => report
                .config_errors
                .push(format!("cannot start a thread: {e}")),
        }
    }
    // Built-in checks share a few threads; outside developer mode only their run time is
    // measured (process snapshots per run cost more than these small checks).
    if !builtins.is_empty() {
        match pool::Pool::start(
            builtins,
            config,
            config.check_runners,
            opts.developer_mode,
            tx.clone(),
        ) {
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

/// A Python check's module loaded; the instances that did not load, each reported (they are
/// not scheduled; the others run). None when the check cannot be loaded at all: it is
/// reported once and not scheduled, as the Agent's collector does, and the other checks run.
/// How often developer mode samples a Python check's stacks.
const PYTHON_HZ: u32 = 100;

fn load_python(
    name: &str,
    host: &Arc<std::sync::Mutex<crate::checks::PythonHost>>,
    report: &mut AgentReport,
) -> Option<Vec<usize>> {
    if let Err(e) = crate::checks::start_python(host) {
        report.config_errors.push(e.to_string());
        return None;
    }
    let mut failed = Vec::new();
    for f in crate::checks::failed_instances(host) {
        report.config_errors.push(format!(
            "{name}: instances[{}] did not load and is not scheduled; the others run: {}",
            f.instance, f.error
        ));
        failed.push(f.instance);
    }
    Some(failed)
}
