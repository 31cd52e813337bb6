//! Python checks on the Datadog `AgentCheck` API, run in a persistent worker process that
//! agentprof starts with the configured interpreter. The host code (host.py) is embedded;
//! agentprof and the worker talk over a private pipe pair, so a check that prints cannot
//! corrupt anything (the worker's stdout goes to agentprof's stderr).
//!
//! Each run is bracketed by one-byte marks: the worker says it is ready, agentprof snapshots
//! it and says go; the worker runs the check, says done and waits while agentprof snapshots
//! it again. So RSS, VMS, peak RSS, I/O, threads, fds and sockets are taken by agentprof at
//! the run's exact start and end; CPU and wall time come from the worker's own clocks taken
//! right around `run()`. The two mark syscalls inside the window are accounted for exactly.

pub mod installed;
mod protocol;
mod reply;
pub mod sampler;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::Error;
use crate::metrics::Sink;
use crate::profile::{AllocLine, PeakScope, RunCost};

use super::{ExternalCheck, ExternalRun, RunOptions};
use protocol::Worker;
use reply::{absorb, alloc_lines, memory_of};
pub use sampler::{Profiler, Samples};

/// The host program, run as `python -u - IN_FD OUT_FD agentprof-python-host` with the
/// program on its standard input (so `ps` shows that short line, not 27 KB of Python).
pub const HOST: &str = include_str!("host.py");

/// Longest a worker may take to start and import a check.
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// What the worker needs to load a check.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub python: String,
    pub name: String,
    /// The checks directory's `NAME.py`, used when no `datadog_checks.NAME` is installed.
    pub path: Option<PathBuf>,
    /// Each instance's `init_config` (its file's), beside `instances`.
    pub init_configs: Vec<Value>,
    pub instances: Vec<Value>,
    pub check_ids: Vec<String>,
    pub config: Value,
    pub state_dir: PathBuf,
    /// A program the interpreter runs under (valgrind, to count instructions), and its
    /// arguments; empty for none.
    pub wrapper: Vec<String>,
    /// How `--memory` traces and groups allocations.
    pub memory: MemoryOptions,
    /// `check --breakpoint`: the line of the check's file where pdb stops, on /dev/tty.
    pub breakpoint: Option<i32>,
}

/// `check --memory`'s tracing, as `agent check -m` takes it (`--m-frames`, `--m-limit`,
/// `--m-sort`, `--m-filters`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MemoryOptions {
    /// Frames tracemalloc keeps per allocation.
    pub frames: u16,
    /// Lines (or files, or tracebacks) shown per run and for the growth.
    pub limit: u16,
    /// `lineno`, `filename` or `traceback`: what allocations are grouped by.
    pub sort: String,
    /// Glob patterns of the files whose allocations count; empty for all.
    pub filters: Vec<String>,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        MemoryOptions {
            frames: 1,
            limit: 10,
            sort: "lineno".into(),
            filters: Vec::new(),
        }
    }
}

/// What the worker names as the check's base class when the interpreter has no importable
/// datadog_checks_base and its own compatible AgentCheck stands in: host.py says the same
/// (`gate::a_python_without_datadog_checks_base_is_refused_unless_asked` fails if they part).
pub const COMPAT_BASE: &str = "agentprof compatible AgentCheck";

/// The check as the worker loaded it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Loaded {
    /// The AgentCheck subclass that runs.
    pub class: String,
    /// The module the check came from: `datadog_checks.NAME` or the checks file's name.
    pub module: String,
    /// That module's file.
    pub origin: String,
    /// `datadog_checks_base X.Y.Z` or agentprof's compatible AgentCheck
    /// ([`COMPAT_BASE`]).
    pub base: String,
    pub version: Option<String>,
    /// The interpreter's version.
    pub python: String,
    /// The interpreter as configured.
    pub interpreter: String,
    /// Seconds from starting the worker to the check loaded (the last start, after restarts).
    pub start_s: f64,
    /// Workers started: more than one after a timeout or a crash.
    pub starts: u32,
    /// Instances whose configuration or constructor failed (the others run, as under the
    /// Agent): their index and the error as `file:line: Type: message`.
    pub failed_instances: Vec<FailedInstance>,
}

/// An instance the worker could not make.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FailedInstance {
    pub instance: usize,
    pub error: String,
}

/// Starts a Python check's worker and loads the check, so one that cannot be loaded is a
/// configuration error before any run (and no cost table of runs that never happened).
pub fn load(host: &std::sync::Mutex<PythonHost>) -> Result<(), Error> {
    let mut h = crate::sync::lock(host);
    h.start().map_err(|e| Error::CheckLoad(e.to_string()))
}

/// The instances of a loaded check whose configuration or constructor failed.
pub fn failed_instances(host: &std::sync::Mutex<PythonHost>) -> Vec<FailedInstance> {
    crate::sync::lock(host)
        .loaded
        .as_ref()
        .map(|l| l.failed_instances.clone())
        .unwrap_or_default()
}

/// One value a check set with `set_metadata` (the Agent's inventory: `version.raw`…).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CheckMetadata {
    /// The instance that set it (its position in the configuration).
    pub instance: usize,
    pub name: String,
    pub value: String,
}

/// One worker shared by every instance of a Python check, started on first use and again
/// after it died or was stopped at a timeout.
pub struct PythonHost {
    spec: LoadSpec,
    worker: Option<Worker>,
    pub loaded: Option<Loaded>,
    /// How profiled runs are profiled: cProfile unless a command asks for samples.
    profiler: Profiler,
    /// How the running worker is sampled (found when it starts).
    method: Option<sampler::Method>,
    /// The samples of the profiled runs so far.
    samples: Option<Samples>,
    /// What the running worker said of its interpreter.
    interp: Option<sampler::Interpreter>,
}

impl PythonHost {
    pub fn new(spec: LoadSpec) -> PythonHost {
        PythonHost {
            spec,
            worker: None,
            loaded: None,
            profiler: Profiler::CProfile,
            method: None,
            samples: None,
            interp: None,
        }
    }

    /// Profiled runs are profiled this way from now on.
    pub fn set_profiler(&mut self, profiler: Profiler) {
        self.profiler = profiler;
    }

    /// The samples of the profiled runs so far (`--profile`'s sampler), and how they were
    /// taken; None when nothing was sampled.
    pub fn samples(&self) -> Option<&Samples> {
        self.samples.as_ref()
    }

    /// How the worker is sampled, once found: a reader outside it, or a thread in it. Said
    /// once on stderr when it is the thread, with why.
    fn attach_sampler(&mut self, pid: u32, interp: &sampler::Interpreter) {
        let Profiler::Sample { hz } = self.profiler else {
            return;
        };
        let method = sampler::attach(pid, interp);
        if let sampler::Method::InWorker { why } = &method
            && self.method.is_none()
            && self.samples.is_none()
        {
            eprintln!(
                "agentprof: note: --profile: {why}; sampling with a thread in the worker instead (its cost is in the report)"
            );
        }
        let samples = self.samples.get_or_insert_with(|| Samples::new(hz));
        samples.method = method.describe();
        self.method = Some(method);
        self.interp = Some(interp.clone());
    }

    fn ensure_started(&mut self) -> Result<&mut Worker, Error> {
        if self.worker.is_none() {
            let t0 = std::time::Instant::now();
            let mut w = Worker::spawn(
                &self.spec.python,
                &self.spec.wrapper,
                self.spec.breakpoint.is_some(),
            )?;
            let reply = w.request(
                &json!({
                    "op": "load",
                    "name": self.spec.name,
                    "path": self.spec.path,
                    "init_configs": self.spec.init_configs,
                    "instances": self.spec.instances,
                    "check_ids": self.spec.check_ids,
                    "config": self.spec.config,
                    "state_dir": self.spec.state_dir,
                    "memory": self.spec.memory,
                    "breakpoint": self.spec.breakpoint,
                }),
                LOAD_TIMEOUT,
            )?;
            if let Some(e) = reply.get("error").and_then(Value::as_str) {
                let at = reply["where"].as_str().unwrap_or(e.trim_end());
                return Err(Error::WorkerLoad {
                    check: self.spec.name.clone(),
                    at: at.to_string(),
                });
            }
            let starts = self.loaded.as_ref().map_or(0, |l| l.starts) + 1;
            self.loaded = Some(Loaded {
                class: reply["class"].as_str().unwrap_or_default().to_string(),
                module: reply["module"].as_str().unwrap_or_default().to_string(),
                origin: reply["origin"].as_str().unwrap_or_default().to_string(),
                base: reply["base"].as_str().unwrap_or_default().to_string(),
                version: reply["version"].as_str().map(str::to_string),
                python: reply["python"].as_str().unwrap_or_default().to_string(),
                interpreter: self.spec.python.clone(),
                start_s: t0.elapsed().as_secs_f64(),
                starts,
                failed_instances: reply["failed"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|f| FailedInstance {
                                instance: f[0].as_u64().unwrap_or(0) as usize,
                                error: f[1].as_str().unwrap_or_default().to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            });
            let interp = sampler::Interpreter {
                implementation: reply["implementation"].as_str().unwrap_or("").to_string(),
                hexversion: reply["hexversion"].as_u64().unwrap_or(0),
                abiflags: reply["abiflags"].as_str().unwrap_or("").to_string(),
            };
            self.attach_sampler(w.pid(), &interp);
            self.worker = Some(w);
        }
        self.worker.as_mut().ok_or(Error::WorkerNotRunning)
    }

    /// Starts the worker and loads the check now, so a check that cannot be loaded is found
    /// before any run: the Python error as `file:line: Type: message`.
    pub fn start(&mut self) -> Result<(), Error> {
        self.ensure_started().map(|_| ())
    }

    /// Why instance `index` cannot run: its configuration or constructor failed at load.
    pub fn not_loaded(&self, index: usize) -> Option<String> {
        let l = self.loaded.as_ref()?;
        let f = l.failed_instances.iter().find(|f| f.instance == index)?;
        Some(format!("instances[{index}] did not load: {}", f.error))
    }

    /// Runs instance `index` once.
    pub fn run(
        &mut self,
        index: usize,
        sink: &mut Sink,
        timeout: Duration,
        opts: RunOptions,
    ) -> ExternalRun {
        let started_at = crate::duration::unix_now();
        let failed = |e: String| ExternalRun {
            result: Err(Error::Run(e)),
            started_at,
            cost: RunCost::default(),
            memory: None,
        };
        if let Some(why) = self.not_loaded(index) {
            return failed(why);
        }
        if let Err(e) = self.ensure_started() {
            self.worker = None;
            return failed(e.to_string());
        }
        let plan = self.sampling_plan(opts);
        let Some(w) = self.worker.as_mut() else {
            return failed(Error::WorkerNotRunning.to_string());
        };
        let (outcome, sampled) = w.run(index, opts, timeout, plan);
        self.keep_samples(sampled, &outcome);
        match outcome {
            Ok(measured) => ExternalRun {
                result: absorb(&measured.reply, sink),
                started_at,
                cost: measured.cost,
                memory: memory_of(&measured.reply["memory"]),
            },
            Err(e) => failed(self.worker_failed(e)),
        }
    }

    /// A run the worker did not answer as it should: dead, hung or confused. It is stopped
    /// (the next run starts a fresh one); the error, with how the worker ended.
    fn worker_failed(&mut self, e: impl std::fmt::Display) -> String {
        let status = self
            .worker
            .take()
            .map(protocol::Worker::stop)
            .unwrap_or_default();
        format!("{e}{status}")
    }

    /// Runs instance `index` once with its instructions counted as `count` says: what a
    /// counter read around the run found (`Counting::Perf`; None under valgrind, whose counts
    /// are in its dump files), or why the run failed.
    pub fn run_counted(
        &mut self,
        index: usize,
        timeout: Duration,
        count: crate::Counting,
    ) -> Result<Option<u64>, Error> {
        let opts = RunOptions {
            count: Some(count),
            ..Default::default()
        };
        if let Some(why) = self.not_loaded(index) {
            return Err(Error::Run(why));
        }
        let outcome = match self.ensure_started() {
            Ok(w) => w.run(index, opts, timeout, protocol::Sampling::Off).0,
            Err(e) => return Err(e),
        };
        match outcome {
            Ok(measured) => {
                absorb(&measured.reply, &mut Sink::default())?;
                Ok(measured.reply["instructions"].as_u64())
            }
            Err(e) => Err(Error::Run(self.worker_failed(e))),
        }
    }

    /// How this run is profiled: not at all, by cProfile, or sampled (the outside reader is
    /// lent to the run and comes back with its samples).
    fn sampling_plan(&mut self, opts: RunOptions) -> protocol::Sampling {
        if !opts.profile {
            return protocol::Sampling::Off;
        }
        match self.profiler {
            Profiler::CProfile => protocol::Sampling::CProfile,
            Profiler::Sample { hz } => match self.method.take().or_else(|| {
                // The last run's sampler thread failed: a new reader for this one.
                let (pid, interp) = (self.worker.as_ref()?.pid(), self.interp.clone()?);
                Some(sampler::attach(pid, &interp))
            }) {
                Some(sampler::Method::Outside(reader)) => protocol::Sampling::Outside(reader, hz),
                other => {
                    self.method = other;
                    protocol::Sampling::InWorker(hz)
                }
            },
        }
    }

    /// A run's samples added to the others; the outside reader back for the next run.
    fn keep_samples(
        &mut self,
        sampled: protocol::Sampled,
        outcome: &Result<protocol::Measured, Error>,
    ) {
        let Profiler::Sample { hz } = self.profiler else {
            return;
        };
        let run = match sampled {
            protocol::Sampled::Outside(Some(lent)) => {
                let (reader, samples) = *lent;
                if self.method.is_none() {
                    self.method = Some(sampler::Method::Outside(reader));
                }
                Some(samples)
            }
            protocol::Sampled::Outside(None) => {
                eprintln!(
                    "agentprof: warning: --profile: the sampler thread failed; this run's samples are lost"
                );
                None
            }
            protocol::Sampled::Nothing => None,
        };
        let from_worker = outcome
            .as_ref()
            .ok()
            .filter(|m| m.reply["sampled"].is_object())
            .map(|m| Samples::from_reply(&m.reply["sampled"], hz));
        let Some(all) = self.samples.as_mut() else {
            return;
        };
        for s in run.iter().chain(from_worker.iter()) {
            all.absorb(s);
        }
        if run.is_some() || from_worker.is_some() || outcome.is_err() {
            all.runs += 1;
        }
        if outcome.is_err() {
            all.partial_runs += 1;
        }
    }

    /// Asks the running worker `msg`; its reply, or the error it reported.
    fn ask(&mut self, msg: &Value) -> Result<Value, Error> {
        let w = self.worker.as_mut().ok_or(Error::WorkerNotRunning)?;
        let r = w.request(msg, LOAD_TIMEOUT)?;
        match r.get("error").and_then(Value::as_str) {
            Some(e) => Err(Error::WorkerReported(e.trim_end().to_string())),
            None => Ok(r),
        }
    }

    /// The cumulative cProfile statistics of every profiled run; with `folded`, also the
    /// stacks a flamegraph is drawn from (their walk costs more than the statistics).
    pub fn pstats(
        &mut self,
        top: usize,
        folded: bool,
    ) -> Result<crate::profile::PstatsReport, Error> {
        let r = self.ask(&json!({"op": "stats", "top": top, "folded": folded}))?;
        let rows = r["rows"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|row| {
                        (
                            row[0].as_str().unwrap_or_default().to_string(),
                            row[1].as_u64().unwrap_or(0) as u32,
                            row[2].as_str().unwrap_or_default().to_string(),
                            row[3].as_u64().unwrap_or(0),
                            row[4].as_u64().unwrap_or(0),
                            row[5].as_f64().unwrap_or(0.0),
                            row[6].as_f64().unwrap_or(0.0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(crate::profile::PstatsReport {
            functions: r["functions"].as_u64().unwrap_or(0) as usize,
            total_calls: r["total_calls"].as_u64().unwrap_or(0),
            prim_calls: r["prim_calls"].as_u64().unwrap_or(0),
            total_tt: r["total_tt"].as_f64().unwrap_or(0.0),
            rows,
            folded: r["folded"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .filter_map(|l| l.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Lines whose live memory grew most between the first and the last `--memory` run.
    pub fn memory_growth(&mut self, top: usize) -> Result<Vec<AllocLine>, Error> {
        let r = self.ask(&json!({"op": "memgrowth", "top": top}))?;
        Ok(alloc_lines(&r["top"]))
    }

    /// What the checks set with `set_metadata` (their version…): per instance, name and value.
    pub fn metadata(&mut self) -> Result<Vec<CheckMetadata>, Error> {
        let r = self.ask(&json!({"op": "metadata"}))?;
        Ok(r["metadata"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|row| {
                Some(CheckMetadata {
                    instance: usize::try_from(row[0].as_i64()?).ok()?,
                    name: row[1].as_str()?.to_string(),
                    value: row[2].as_str()?.to_string(),
                })
            })
            .collect())
    }

    /// CPU seconds of a fixed pure-Python loop in this worker: the machine's speed right now.
    pub fn calibrate(&mut self) -> Result<f64, Error> {
        let r = self.ask(&json!({"op": "calibrate"}))?;
        r["seconds"]
            .as_f64()
            .filter(|s| *s > 0.0)
            .ok_or(Error::WorkerReply("the calibration gave no time"))
    }

    /// The next worker runs under `wrapper` (a program and its arguments); a running one is
    /// stopped first.
    pub fn run_under(&mut self, wrapper: Vec<String>) {
        if let Some(w) = self.worker.take() {
            w.stop();
        }
        self.spec.wrapper = wrapper;
    }

    /// The configured interpreter.
    pub fn interpreter(&self) -> &str {
        &self.spec.python
    }

    /// How the next worker traces allocations (`check --memory` and its `--m-*` options).
    pub fn set_memory_options(&mut self, memory: MemoryOptions) {
        self.spec.memory = memory;
    }

    /// The next worker stops in pdb at this line of the check's file (`check --breakpoint`).
    pub fn set_breakpoint(&mut self, line: Option<i32>) {
        self.spec.breakpoint = line;
    }

    /// The next worker starts `python` instead (the same interpreter, found past a wrapper
    /// script, for a wrapper program like valgrind to start).
    pub fn set_interpreter(&mut self, python: String) {
        self.spec.python = python;
    }

    /// Starts counting instructions in a worker that runs under callgrind: instrumentation
    /// on, and one empty bracket dumped (what a bracket costs by itself).
    pub fn count_start(&mut self) -> Result<(), Error> {
        self.ensure_started()?;
        self.ask(&json!({"op": "count_start"})).map(|_| ())
    }

    /// The worker's process id, while it runs.
    pub fn worker_pid(&self) -> Option<u32> {
        self.worker.as_ref().map(Worker::pid)
    }

    /// Forgets the cProfile statistics of the runs so far.
    pub fn reset_stats(&mut self) -> Result<(), Error> {
        if let Some(s) = self.samples.as_mut() {
            s.clear();
        }
        self.ask(&json!({"op": "reset_stats"})).map(|_| ())
    }

    /// Writes the cumulative statistics as a pstats dump (python -m pstats, snakeviz).
    pub fn dump_pstats(&mut self, path: &Path) -> Result<(), Error> {
        let abs = std::path::absolute(path).map_err(|source| Error::WorkerStart {
            what: format!("{}", path.display()),
            source,
        })?;
        self.ask(&json!({"op": "dump", "path": abs})).map(|_| ())
    }
}

/// One instance of a Python check: its index in the shared worker.
pub struct PythonCheck {
    pub host: Arc<Mutex<PythonHost>>,
    pub index: usize,
}

impl ExternalCheck for PythonCheck {
    fn run(&mut self, sink: &mut Sink, timeout: Duration, opts: RunOptions) -> ExternalRun {
        match crate::sync::lock_unless_poisoned(&self.host) {
            Some(mut h) => h.run(self.index, sink, timeout, opts),
            None => ExternalRun {
                result: Err(Error::WorkerUnusable),
                started_at: crate::duration::unix_now(),
                cost: RunCost::default(),
                memory: None,
            },
        }
    }
}

/// The run's cost from the two snapshots agentprof took and the worker's own clocks.
fn cost_of(
    before: &crate::procstat::ProcessSnapshot,
    after: &crate::procstat::ProcessSnapshot,
    reply: &Value,
    peak_reset: bool,
) -> RunCost {
    let mut before = before.clone();
    // The worker's read of "go" and write of "done" fall inside the window: not the check's.
    if let Some(io) = before.io.as_mut() {
        io.read_count += 1;
        io.write_count += 1;
    }
    let mut cost = RunCost::between(
        &before,
        after,
        reply["wall_s"].as_f64().unwrap_or(0.0),
        peak_reset,
    );
    cost.cpu_user_s = reply["cpu_user_s"].as_f64();
    cost.cpu_system_s = reply["cpu_system_s"].as_f64();
    cost.cpu_total_s = reply["cpu_total_s"].as_f64();
    if !peak_reset {
        cost.peak_scope = cost.peak_rss.map(|_| PeakScope::Process);
    }
    cost
}

/// The check id as the Agent forms it, `NAME:HASH`, or `NAME:INSTANCE_NAME:HASH` when the
/// instance has a `name` (else a `namespace`): a 64-bit FNV-1 hash of the instance and its
/// init_config, in lowercase hex. It prefixes the check's log lines and keys its persistent
/// cache; stable across agentprof runs while the configuration is unchanged. (The Agent
/// hashes its own serialisation of the YAML, so the hex differs from the Agent's.)
pub fn check_id(name: &str, instance: &Value, init_config: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in instance
        .to_string()
        .bytes()
        .chain(init_config.to_string().bytes())
    {
        h = h.wrapping_mul(0x0100_0000_01b3);
        h ^= u64::from(b);
    }
    let instance_name = ["name", "namespace"]
        .iter()
        .find_map(|k| instance[*k].as_str().filter(|s| !s.is_empty()));
    match instance_name {
        Some(n) => format!("{name}:{n}:{h:x}"),
        None => format!("{name}:{h:x}"),
    }
}
