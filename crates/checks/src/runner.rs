//! Runs built-in check instances on a dedicated thread and measures each run on agentprof's
//! own process: snapshots are taken on that thread right before and after `Check::run`, so the
//! figures cover the run and nothing else. The thread lives across runs, so its creation never
//! shows up as a run's threads, VMS or RSS. A run past its `timeout` is reported as failed and
//! abandoned; the instance is not run again while it is still going.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Error;
use crate::config::{AgentConfig, InstanceCommon};
use crate::metrics::{Aggregator, Flushed, Sink};
use crate::procstat::{Probe, ProcessSnapshot, Target};
use crate::profile::{
    CallProfile, ProfileKind, RUN_THREAD_NAME, RunCost, RunRecord, Sampler, ThreadId, measured_run,
};

use super::{Check, ExternalCheck, LoadedCheck, RunOptions, Runnable};

/// Default per-run timeout of a built-in check, in seconds.
const DEFAULT_TIMEOUT_S: f64 = 30.0;

struct Job {
    check: Box<dyn Check>,
    reply: mpsc::Sender<Done>,
    /// Take the process snapshots (off: only the run's wall time is measured).
    measure: bool,
    /// The least level of the check's log records kept (`check -l`).
    log_level: u8,
}

/// One finished run of an in-process check, with the check handed back.
pub struct Done {
    pub check: Box<dyn Check>,
    pub sink: Sink,
    pub result: Result<(), Error>,
    pub started_at: f64,
    pub wall_s: f64,
    pub before: ProcessSnapshot,
    pub after: ProcessSnapshot,
    pub peak_reset: bool,
}

impl Done {
    pub fn cost(&self) -> RunCost {
        RunCost::between(&self.before, &self.after, self.wall_s, self.peak_reset)
    }
}

struct Worker {
    /// `None` once closed; the thread ends when it sees the channel closed.
    jobs: Option<mpsc::Sender<Job>>,
    /// The thread's id, as it sends it when it starts; asked for only by the sampler, so an
    /// unsampled run is handed over without waiting for the thread to start (each hand-over
    /// between threads is a wake-up of the other core).
    thread: Option<ThreadId>,
    thread_rx: mpsc::Receiver<ThreadId>,
    /// Joined on drop, so no run thread outlives its runner; `None` when abandoned.
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Leaves a thread that is stuck in a timed-out run behind instead of waiting for it.
    fn abandon(mut self) {
        self.handle = None;
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Worker {
    fn spawn() -> std::io::Result<Worker> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (id_tx, thread_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(RUN_THREAD_NAME.into())
            .spawn(move || {
                let _ = id_tx.send(ThreadId::current());
                let mut probe = Probe::new(Target::SelfProcess);
                for job in rx {
                    let done = execute(&mut probe, job.check, job.measure, job.log_level);
                    if job.reply.send(done).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Worker {
            jobs: Some(tx),
            thread: None,
            thread_rx,
            handle: Some(handle),
        })
    }

    /// The run thread's id, waiting for it to start the first time (None: it exited at
    /// start).
    fn thread(&mut self) -> Option<ThreadId> {
        if let Some(id) = self.thread {
            return Some(id);
        }
        let id = self.thread_rx.recv().ok()?;
        self.thread = Some(id);
        Some(id)
    }
}

/// Runs `check` once on this thread; with `measure`, takes the process snapshots around it.
pub fn execute(probe: &mut Probe, mut check: Box<dyn Check>, measure: bool, log_level: u8) -> Done {
    let mut sink = Sink::with_log_level(log_level);
    let peak_reset = measure && probe.reset_peak_rss();
    let before = if measure {
        probe.before()
    } else {
        ProcessSnapshot::default()
    };
    let started_at = crate::duration::unix_now();
    let t0 = Instant::now();
    let outcome =
        std::panic::catch_unwind(AssertUnwindSafe(|| measured_run(|| check.run(&mut sink))));
    let wall_s = t0.elapsed().as_secs_f64();
    let after = if measure {
        probe.after()
    } else {
        ProcessSnapshot::default()
    };
    let result = match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Error::Run(format!("{e:#}"))),
        Err(panic) => Err(Error::Run(format!(
            "the check panicked: {}",
            panic_message(&panic)
        ))),
    };
    Done {
        check,
        sink,
        result,
        started_at,
        wall_s,
        before,
        after,
        peak_reset,
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

struct Instance {
    index: usize,
    timeout: Duration,
    aggregator: Aggregator,
    /// `None` while a timed-out run still holds the check.
    check: Option<Box<dyn Check>>,
    /// Set for checks that run in a process of their own.
    external: Option<Box<dyn ExternalCheck>>,
}

/// Runs the instances of one loaded check, keeping aggregation state across runs.
pub struct Runner {
    name: String,
    instances: Vec<Instance>,
    worker: Option<Worker>,
    /// Set when runs are profiled.
    profile: Option<Profiling>,
    /// What external checks record besides their cost (cProfile, tracemalloc for Python).
    external_opts: RunOptions,
    /// Take process snapshots around in-process runs (see `without_process_figures`).
    measure: bool,
}

struct Profiling {
    sampler: Sampler,
    profile: CallProfile,
}

impl Runner {
    /// Prepares `loaded`'s instances (all, or only `only`, 0-based) for running.
    /// With `profile_hz`, every run's CPU is sampled at that frequency (see `finish_profile`).
    pub fn new(
        loaded: LoadedCheck,
        config: &AgentConfig,
        only: Option<usize>,
        profile_hz: Option<u32>,
        memory: bool,
    ) -> Runner {
        let instances = loaded
            .instances
            .into_iter()
            .enumerate()
            .filter(|(i, _)| only.is_none_or(|o| o == *i))
            .map(|(index, (common, runnable))| {
                let (check, external) = match runnable {
                    Runnable::InProcess(c) => (Some(c), None),
                    Runnable::External(e) => (None, Some(e)),
                };
                Instance {
                    index,
                    timeout: timeout_of(&common),
                    aggregator: Aggregator::new(
                        hostname_of(&common, config),
                        &instance_tags(&common, loaded.kind),
                        &config.tags,
                        config.histogram.clone(),
                    ),
                    check,
                    external,
                }
            })
            .collect();
        Runner {
            name: loaded.name,
            instances,
            worker: None,
            measure: true,
            external_opts: RunOptions {
                profile: profile_hz.is_some(),
                memory,
                memory_lines: memory,
                log_level: 0,
                count: None,
            },
            profile: profile_hz.map(|hz| Profiling {
                sampler: Sampler::new(hz),
                profile: CallProfile::new(ProfileKind::Cpu, hz, crate::duration::unix_now_ns()),
            }),
        }
    }

    /// With `memory`, only the traced peak and bytes kept of each run, not the lines that
    /// allocated them (which take a heap snapshot per run).
    pub fn without_memory_lines(mut self) -> Runner {
        self.external_opts.memory_lines = false;
        self
    }

    /// Every instance's run deadline is `timeout` (`check --run-timeout`), whatever its
    /// configuration's `run_timeout`.
    pub fn with_run_timeout(mut self, timeout: Option<Duration>) -> Runner {
        if let Some(t) = timeout {
            for inst in &mut self.instances {
                inst.timeout = t;
            }
        }
        self
    }

    /// Keeps the check's log records from `level` up with each run (`check --log-level`;
    /// Python's numbers: 10 debug, 20 info, 30 warning, 40 error, 50 critical, above: none).
    pub fn with_log_level(mut self, level: u8) -> Runner {
        self.external_opts.log_level = level;
        self
    }

    /// Runs only the instances whose index (in the configuration) `keep` accepts.
    pub fn keep_instances(mut self, keep: impl Fn(usize) -> bool) -> Runner {
        self.instances.retain(|i| keep(i.index));
        self
    }

    /// One run of every instance before the measured ones, then the Python host's statistics
    /// (cProfile, call counts) reset: a check's first run imports and caches what its later
    /// runs only use, so what is measured after this is its steady runs. The warm-up runs'
    /// records, and whether the statistics were reset (Err: the host could not forget them).
    pub fn warm_up(
        &mut self,
        host: Option<&std::sync::Arc<std::sync::Mutex<crate::python::PythonHost>>>,
    ) -> (Vec<RunRecord>, Result<(), Error>) {
        let warm = (0..self.instance_count())
            .map(|pos| self.run(pos, 0))
            .collect();
        let reset = match host {
            Some(h) => crate::sync::lock_unless_poisoned(h)
                .ok_or(Error::WorkerUnusable)
                .and_then(|mut h| h.reset_stats()),
            None => Ok(()),
        };
        (warm, reset)
    }

    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// The `pos`-th instance's index in its configuration (`instances[N]`).
    pub fn instance_index(&self, pos: usize) -> usize {
        self.instances[pos].index
    }

    /// Measures only the wall time of in-process runs: the process snapshots (fd list, socket
    /// tables) cost more than a small built-in check, and the agent outside developer mode
    /// does not report them.
    pub fn without_process_figures(mut self) -> Runner {
        self.measure = false;
        self
    }

    /// The call profile of every run so far, symbolised now that the runs are over; with
    /// the samples a full buffer lost.
    pub fn finish_profile(&mut self) -> Option<(CallProfile, u64)> {
        let mut p = self.profile.take()?;
        p.sampler.finish(&mut p.profile);
        Some((p.profile, p.sampler.dropped))
    }

    /// Lets the run thread end on its own instead of waiting for it: for a command that
    /// exits once its runs are over (`check`), where joining the idle thread only delays the
    /// exit (by how much: docs/details.md, "Measured choices"). The thread sees its job
    /// channel closed and returns, or ends with the process.
    pub fn release_thread(&mut self) {
        if let Some(w) = self.worker.take() {
            w.abandon();
        }
    }

    /// Repeats the `pos`-th in-process instance, sampled but neither measured nor reported,
    /// when the runs so far gave fewer than `below` samples, until the profile holds `want`
    /// samples or `budget` has passed: a built-in run of a few hundred microseconds is far too
    /// short to be sampled on its own. The runs measured so far keep their figures; these
    /// repetitions only add samples. Returns how many ran, and why they stopped early when a
    /// repetition failed.
    pub fn repeat_for_profile(
        &mut self,
        pos: usize,
        (below, want): (u64, u64),
        budget: Duration,
        mut tick: impl FnMut(u64),
    ) -> (u32, Option<String>) {
        // Counted as the profile will hold them: the runner's own measuring on the run
        // thread is sampled too, and on a busy machine it alone can reach `below`.
        let Some(p) = self.profile.as_mut() else {
            return (0, None);
        };
        if self.instances[pos].external.is_some() || p.sampler.samples_in_runs() >= below {
            return (0, None);
        }
        let measure = std::mem::replace(&mut self.measure, false);
        let t0 = Instant::now();
        let mut repeated = 0;
        let mut failed = None;
        loop {
            let have = self
                .profile
                .as_mut()
                .map_or(0, |p| p.sampler.samples_in_runs());
            tick(have);
            if have >= want || t0.elapsed() >= budget {
                break;
            }
            if let Some(e) = self.run(pos, 0).error {
                failed = Some(e);
                break;
            }
            repeated += 1;
        }
        self.measure = measure;
        (repeated, failed)
    }

    /// Runs the `pos`-th instance once; with `profile`, samples the run into it.
    pub fn run(&mut self, pos: usize, run: u32) -> RunRecord {
        if self.instances[pos].external.is_some() {
            return self.run_external(pos, run);
        }
        let name = self.name.clone();
        let (index, timeout) = (self.instances[pos].index, self.instances[pos].timeout);
        let Some(check) = self.instances[pos].check.take() else {
            return self.failed(
                pos,
                run,
                "the previous run is still going (it timed out)".into(),
            );
        };
        if self.worker.is_none() {
            match Worker::spawn() {
                Ok(w) => self.worker = Some(w),
                Err(e) => {
                    self.instances[pos].check = Some(check);
                    return self.failed(pos, run, format!("cannot start the run thread: {e}"));
                }
            }
        }
        let (reply_tx, reply_rx) = mpsc::channel();
        if let (Some(p), Some(w)) = (self.profile.as_mut(), self.worker.as_mut())
            && let Err(e) = w
                .thread()
                .ok_or_else(|| "the run thread exited at start".to_string())
                .and_then(|t| p.sampler.start(t).map_err(|e| e.to_string()))
        {
            self.instances[pos].check = Some(check);
            return self.failed(pos, run, e);
        }
        let job = Job {
            check,
            reply: reply_tx,
            measure: self.measure,
            log_level: self.external_opts.log_level,
        };
        let sent = self
            .worker
            .as_ref()
            .and_then(|w| w.jobs.as_ref())
            .is_some_and(|jobs| jobs.send(job).is_ok());
        let started = Instant::now();
        let received = if sent {
            reply_rx.recv_timeout(timeout).ok()
        } else {
            None
        };
        if let Some(p) = self.profile.as_mut() {
            p.sampler.stop();
            p.profile.duration_ns += started.elapsed().as_nanos() as u64;
        }
        let Some(done) = received else {
            return self.abandoned(pos, run, sent, started);
        };
        let inst = &mut self.instances[pos];
        let cost = done.cost();
        inst.check = Some(done.check);
        // What the run submitted is kept with its record: copied here, so the copies live in
        // this thread's heap and the run thread's frees its own for the next run. Moved
        // instead, every run would take fresh pages on the run thread, and the check's RSS
        // trend (what grew during its runs) would read agentprof's records as the check's leak.
        let sink = done.sink.clone();
        drop(done.sink);
        let flushed = inst.aggregator.flush(sink, done.started_at, run);
        RunRecord::new(
            &name,
            index,
            run,
            done.started_at,
            done.result,
            cost,
            flushed,
        )
    }

    /// A run that did not answer: timed out (`sent`) or its thread gone. The worker holds
    /// the check; later runs go to a fresh worker, and this instance waits for its check.
    fn abandoned(&mut self, pos: usize, run: u32, sent: bool, started: Instant) -> RunRecord {
        if let Some(w) = self.worker.take() {
            w.abandon();
        }
        let why = if sent {
            format!(
                "timed out after {} (instance timeout); the run was abandoned",
                crate::duration::human(started.elapsed())
            )
        } else {
            "the run thread is gone".to_string()
        };
        let mut rec = self.failed(pos, run, why);
        rec.cost.wall_s = started.elapsed().as_secs_f64();
        rec
    }

    fn run_external(&mut self, pos: usize, run: u32) -> RunRecord {
        let inst = &mut self.instances[pos];
        let mut sink = Sink::with_log_level(self.external_opts.log_level);
        let Some(check) = inst.external.as_mut() else {
            return self.failed(pos, run, "no runnable check".into());
        };
        let out = check.run(&mut sink, inst.timeout, self.external_opts);
        let flushed = inst.aggregator.flush(sink, out.started_at, run);
        let mut rec = RunRecord::new(
            &self.name,
            inst.index,
            run,
            out.started_at,
            out.result,
            out.cost,
            flushed,
        );
        rec.memory = out.memory;
        rec
    }

    fn failed(&mut self, pos: usize, run: u32, why: String) -> RunRecord {
        let index = self.instances[pos].index;
        RunRecord::new(
            &self.name,
            index,
            run,
            crate::duration::unix_now(),
            Err(Error::Run(why)),
            RunCost::default(),
            Flushed::default(),
        )
    }
}

pub fn timeout_of(common: &InstanceCommon) -> Duration {
    // Validated when the configuration was loaded; a value past Duration's range is the default.
    Duration::try_from_secs_f64(common.run_timeout.unwrap_or(DEFAULT_TIMEOUT_S))
        .unwrap_or(Duration::from_secs_f64(DEFAULT_TIMEOUT_S))
}

/// The tags the Agent adds to every submission of an instance: `service:NAME` when the
/// instance's `service` (else init_config's) is set; and the instance's `tags` for built-ins
/// and exec plugins only. The Agent's Python loader does not add them: a Python check passes
/// its instance's tags itself, and one that forgets looks as wrong here as under the Agent.
pub fn instance_tags(common: &InstanceCommon, kind: super::CheckKind) -> Vec<String> {
    let mut tags = if kind == super::CheckKind::Python {
        Vec::new()
    } else {
        common.tags.clone()
    };
    if let Some(service) = common.service.as_deref().filter(|s| !s.is_empty()) {
        tags.push(format!("service:{service}"));
    }
    tags
}

pub fn hostname_of(common: &InstanceCommon, config: &AgentConfig) -> String {
    if common.empty_default_hostname {
        String::new()
    } else {
        config.hostname.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoadOptions;

    struct Sleepy(Duration);
    impl Check for Sleepy {
        fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
            std::thread::sleep(self.0);
            sink.gauge("slept", 1.0, &[]);
            Ok(())
        }
    }

    struct Panics;
    impl Check for Panics {
        fn run(&mut self, _sink: &mut Sink) -> Result<(), Error> {
            panic!("boom")
        }
    }

    fn runner(checks: Vec<(Option<f64>, Box<dyn Check>)>) -> Runner {
        runner_with(checks, None)
    }

    fn runner_with(checks: Vec<(Option<f64>, Box<dyn Check>)>, profile_hz: Option<u32>) -> Runner {
        let config = AgentConfig::load(&LoadOptions {
            config: None,
            confd: Some(std::env::temp_dir()),
            checks: None,
            python: None,
        })
        .unwrap();
        let instances = checks
            .into_iter()
            .map(|(timeout, c)| {
                let common = InstanceCommon {
                    run_timeout: timeout,
                    ..Default::default()
                };
                (common, c)
            })
            .collect();
        let loaded = LoadedCheck::in_process("test", instances);
        Runner::new(loaded, &config, None, profile_hz, false)
    }

    #[test]
    fn a_run_past_its_timeout_fails_and_the_others_go_on() {
        let mut r = runner(vec![
            (Some(0.1), Box::new(Sleepy(Duration::from_secs(2)))),
            (None, Box::new(Sleepy(Duration::ZERO))),
        ]);
        let slow = r.run(0, 1);
        assert!(
            slow.error.as_deref().unwrap().contains("timed out"),
            "{:?}",
            slow.error
        );
        assert!(slow.cost.wall_s >= 0.1 && slow.cost.wall_s < 1.5);
        let fast = r.run(1, 1);
        assert!(fast.error.is_none(), "{:?}", fast.error);
        assert_eq!(fast.metrics.len(), 1);
        // The abandoned run still holds the first instance.
        let again = r.run(0, 2);
        assert!(again.error.as_deref().unwrap().contains("still going"));
    }

    #[test]
    fn a_panic_is_a_failed_run_not_a_crash() {
        let mut r = runner(vec![(None, Box::new(Panics))]);
        let rec = r.run(0, 1);
        assert_eq!(rec.error.as_deref(), Some("the check panicked: boom"));
        // The check object comes back: the next run runs (and panics) again.
        assert!(r.run(0, 2).error.is_some());
    }

    #[test]
    fn runs_are_measured_on_the_run_thread() {
        let mut r = runner(vec![(None, Box::new(Sleepy(Duration::from_millis(20))))]);
        let rec = r.run(0, 1);
        assert!(rec.cost.wall_s >= 0.02);
        // CPU is the whole process's (other tests run in it too): only check it is there.
        assert!(rec.cost.cpu_user_s.is_some() && rec.cost.cpu_system_s.is_some());
        assert!(rec.cost.threads.unwrap() >= 2);
        assert_eq!(rec.cost.peak_scope, Some(crate::profile::PeakScope::Run));
    }

    struct Spins(u64);
    impl Check for Spins {
        fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
            std::hint::black_box(crate::profile::sampler_tests::spin(self.0));
            sink.gauge("spun", 1.0, &[]);
            Ok(())
        }
    }

    /// A run that times out between two that compute: the run after it, on the runner's
    /// fresh thread, is sampled as fully as the one before (the sampler's timer follows the
    /// thread that runs).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_profile_samples_the_runs_after_a_timed_out_one() {
        let _one = crate::sync::lock(&crate::profile::sampler_tests::ONE_SAMPLER);
        let mut r = runner_with(
            vec![
                (None, Box::new(Spins(150))),
                (Some(0.05), Box::new(Sleepy(Duration::from_secs(1)))),
                (None, Box::new(Spins(150))),
            ],
            Some(1000),
        );
        let mut counts = Vec::new();
        for pos in 0..3 {
            let before = r.profile.as_ref().unwrap().sampler.samples_so_far();
            let rec = r.run(pos, 1);
            assert_eq!(rec.error.is_some(), pos == 1, "{:?}", rec.error);
            counts.push(r.profile.as_ref().unwrap().sampler.samples_so_far() - before);
        }
        // 150 ms of CPU at 1000 Hz: about 150 samples each (the sleeping run takes none).
        assert!(
            counts[0] >= 100 && counts[2] >= 100,
            "samples per run: {counts:?}"
        );
        assert!(counts[1] <= 5, "samples per run: {counts:?}");
    }
}
