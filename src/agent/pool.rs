//! Built-in checks run on a small pool of threads (`check_runners`, default 4, as the Agent's
//! check runners), not a thread each. Every instance is a slot with its next due time; an idle
//! pool thread takes the slot due first, runs it on itself (the process snapshots of developer
//! mode are taken on that thread, right around the run) and schedules the slot's next run.
//!
//! A run past its instance `timeout` is failed by the watchdog (`Pool::watch`, called by the
//! agent's loop): the thread stuck in it no longer counts as one of the pool's and a fresh one
//! takes its place, so a hanging check never holds up the others. When the stuck run returns,
//! its instance is scheduled again and that thread ends. Runs due while an instance's previous
//! run is still going are skipped and counted.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::checks::{Check, LoadedCheck, Runnable, execute};
use crate::config::AgentConfig;
use crate::duration::unix_now;
use crate::metrics::{Aggregator, Flushed};
use crate::procstat::{Probe, Target};
use crate::profile::{RunCost, RunRecord};

use super::schedule::{DEFAULT_INTERVAL, Msg, jitter};

/// Thread name of the pool's threads.
const THREAD_NAME: &str = "agentprof-runner";

struct Slot {
    check: String,
    /// The instance's position in the check's configuration.
    index: usize,
    /// `None` while a run holds it.
    runnable: Option<Box<dyn Check>>,
    aggregator: Aggregator,
    interval: Duration,
    timeout: Duration,
    next: Instant,
    runs: u32,
    /// The run going on now: when it started and its ticket. A run whose ticket no longer
    /// matches was failed by the watchdog.
    running: Option<(Instant, u64)>,
    ticket: u64,
}

struct State {
    slots: Vec<Slot>,
    stop: bool,
    /// The agent has been told the pool is done.
    done_sent: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    tx: Mutex<Sender<Msg>>,
    measure: bool,
}

pub struct Pool {
    shared: Arc<Shared>,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    crate::sync::lock(&shared.state)
}

fn send(shared: &Shared, msg: Msg) {
    let tx = crate::sync::lock(&shared.tx);
    let _ = tx.send(msg);
}

impl Pool {
    /// Starts `size` threads (at most one per instance) running every instance of `checks`.
    /// With `measure`, each run's process figures are taken (developer mode).
    /// Returns the pool and the number of instances it runs.
    pub fn start(
        checks: Vec<LoadedCheck>,
        config: &AgentConfig,
        size: usize,
        measure: bool,
        tx: Sender<Msg>,
    ) -> std::io::Result<Pool> {
        let now = Instant::now();
        let mut slots = Vec::new();
        for loaded in checks {
            for (index, (common, runnable)) in loaded.instances.into_iter().enumerate() {
                let Runnable::InProcess(check) = runnable else {
                    continue;
                };
                let interval = common
                    .min_collection_interval
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .unwrap_or(DEFAULT_INTERVAL);
                slots.push(Slot {
                    check: loaded.name.clone(),
                    index,
                    runnable: Some(check),
                    aggregator: Aggregator::new(
                        crate::checks::hostname_of(&common, config),
                        &crate::checks::instance_tags(&common, loaded.kind),
                        &config.tags,
                        config.histogram.clone(),
                    ),
                    interval,
                    timeout: crate::checks::timeout_of(&common),
                    next: now + jitter(&loaded.name, index, interval),
                    runs: 0,
                    running: None,
                    ticket: 0,
                });
            }
        }
        let size = size.clamp(1, slots.len().max(1));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                slots,
                stop: false,
                done_sent: false,
            }),
            wake: Condvar::new(),
            tx: Mutex::new(tx),
            measure,
        });
        let pool = Pool { shared };
        for _ in 0..size {
            pool.spawn_thread()?;
        }
        Ok(pool)
    }

    fn spawn_thread(&self) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || work(&shared));
        spawned.map(drop)
    }

    /// Stops handing out runs; runs going on finish, then the pool says `Msg::Done`.
    pub fn stop(&self) {
        let mut st = lock(&self.shared);
        st.stop = true;
        finish_if_idle(&self.shared, &mut st);
        drop(st);
        self.shared.wake.notify_all();
    }

    /// Fails the runs past their timeout (a fresh thread replaces each stuck one) and counts
    /// as skipped the runs due while an instance is still stuck.
    pub fn watch(&self) {
        let now = Instant::now();
        let mut failed = Vec::new();
        let mut skipped = Vec::new();
        let mut replace = 0;
        {
            let mut st = lock(&self.shared);
            let stopping = st.stop;
            for slot in st.slots.iter_mut() {
                if let Some((since, _)) = slot.running
                    && now.duration_since(since) >= slot.timeout
                {
                    slot.running = None;
                    slot.ticket += 1;
                    slot.runs += 1;
                    let why = format!(
                        "timed out after {} (instance timeout); the run was abandoned",
                        crate::duration::human(now.duration_since(since))
                    );
                    let cost = RunCost {
                        wall_s: now.duration_since(since).as_secs_f64(),
                        ..RunCost::default()
                    };
                    let started_at = unix_now() - cost.wall_s;
                    failed.push(RunRecord::new(
                        &slot.check,
                        slot.index,
                        slot.runs,
                        started_at,
                        Err(crate::checks::Error::Run(why)),
                        cost,
                        Flushed::default(),
                    ));
                    let (next, passed) = next_after(slot.next, slot.interval, now);
                    slot.next = next;
                    if passed > 0 {
                        skipped.push((slot.check.clone(), passed));
                    }
                    replace += 1;
                } else if slot.runnable.is_none() && slot.running.is_none() && slot.next <= now {
                    // The run due at `slot.next` and any after it until now.
                    let (next, passed) = next_after(slot.next, slot.interval, now);
                    slot.next = next;
                    skipped.push((slot.check.clone(), passed + 1));
                }
            }
            if stopping {
                finish_if_idle(&self.shared, &mut st);
                replace = 0;
            }
        }
        for rec in failed {
            send(&self.shared, Msg::Run(Box::new(rec)));
        }
        for (check, count) in skipped {
            send(&self.shared, Msg::Skipped { check, count });
        }
        for _ in 0..replace {
            if let Err(e) = self.spawn_thread() {
                eprintln!("agentprof: cannot replace a check runner stuck in a run: {e}");
            }
        }
    }
}

/// The first time after `now` on `from`'s grid of `interval`s, and how many were passed.
fn next_after(from: Instant, interval: Duration, now: Instant) -> (Instant, u32) {
    let mut n = from + interval;
    let mut passed = 0;
    while n <= now {
        n += interval;
        passed += 1;
    }
    (n, passed)
}

/// Tells the agent the pool is done once it is stopping and no counted thread is left.
fn finish_if_idle(shared: &Shared, st: &mut State) {
    let busy = st.slots.iter().any(|s| s.running.is_some());
    if st.stop && !busy && !st.done_sent {
        st.done_sent = true;
        send(shared, Msg::Done);
    }
}

/// Waits for the slot due first and takes its check, marking it running: its position,
/// the check, the run's ticket and its run number. None once the pool is stopping.
fn next_due(shared: &Shared) -> Option<(usize, Box<dyn Check>, u64, u32)> {
    let mut st = lock(shared);
    loop {
        if st.stop {
            finish_if_idle(shared, &mut st);
            return None;
        }
        let now = Instant::now();
        let first = st
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.runnable.is_some())
            .min_by_key(|(_, s)| s.next)
            .map(|(i, s)| (i, s.next));
        let wait = match first {
            Some((i, due)) if due <= now => {
                let slot = &mut st.slots[i];
                slot.ticket += 1;
                slot.runs += 1;
                slot.running = Some((now, slot.ticket));
                let check = slot.runnable.take();
                if let Some(check) = check {
                    return Some((i, check, slot.ticket, slot.runs));
                }
                continue;
            }
            Some((_, due)) => due - now,
            None => Duration::from_secs(1),
        };
        st = shared
            .wake
            .wait_timeout(st, wait)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
}

fn work(shared: &Shared) {
    let mut probe = Probe::new(Target::SelfProcess);
    loop {
        let Some((pos, check, ticket, run)) = next_due(shared) else {
            return;
        };
        let done = execute(&mut probe, check, shared.measure, 0);
        let mut st = lock(shared);
        let slot = &mut st.slots[pos];
        let now = Instant::now();
        let ours = slot.running.is_some_and(|(_, t)| t == ticket);
        let cost = done.cost();
        slot.runnable = Some(done.check);
        if !ours {
            // The watchdog failed this run and replaced this thread: hand the instance back
            // (its next run is already scheduled) and end.
            finish_if_idle(shared, &mut st);
            drop(st);
            shared.wake.notify_one();
            return;
        }
        slot.running = None;
        let flushed = slot.aggregator.flush(done.sink, done.started_at, run);
        let rec = RunRecord::new(
            &slot.check,
            slot.index,
            run,
            done.started_at,
            done.result,
            cost,
            flushed,
        );
        let (next, skipped) = next_after(slot.next, slot.interval, now);
        slot.next = next;
        let name = (skipped > 0).then(|| slot.check.clone());
        finish_if_idle(shared, &mut st);
        drop(st);
        send(shared, Msg::Run(Box::new(rec)));
        if let Some(check) = name {
            send(
                shared,
                Msg::Skipped {
                    check,
                    count: skipped,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::InstanceCommon;
    use crate::metrics::Sink;
    use std::sync::mpsc;

    struct Sleepy(Duration);
    impl Check for Sleepy {
        fn run(&mut self, sink: &mut Sink) -> Result<(), crate::checks::Error> {
            std::thread::sleep(self.0);
            sink.gauge("slept", 1.0, &[]);
            Ok(())
        }
    }

    fn loaded(name: &str, sleep: Duration, interval: f64, timeout: f64) -> LoadedCheck {
        let common = InstanceCommon {
            min_collection_interval: Some(interval),
            run_timeout: Some(timeout),
            ..InstanceCommon::default()
        };
        LoadedCheck::in_process(name, vec![(common, Box::new(Sleepy(sleep)))])
    }

    #[test]
    fn a_hanging_check_fails_on_its_timeout_and_the_others_go_on() {
        let config = AgentConfig::load(&crate::config::LoadOptions {
            confd: Some(std::env::temp_dir()),
            ..Default::default()
        })
        .expect("config");
        let (tx, rx) = mpsc::channel();
        // One thread: the stuck run must be replaced for the quick check to run at all.
        let pool = Pool::start(
            vec![
                loaded("stuck", Duration::from_secs(3), 0.1, 0.3),
                loaded("quick", Duration::ZERO, 0.1, 5.0),
            ],
            &config,
            1,
            false,
            tx,
        )
        .expect("pool");
        let t = Instant::now();
        let (mut quick, mut stuck_failed, mut skipped) = (0, 0, 0);
        while t.elapsed() < Duration::from_millis(1500) {
            pool.watch();
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Msg::Run(rec)) if rec.check == "quick" => quick += 1,
                Ok(Msg::Run(rec)) => {
                    assert!(
                        rec.error
                            .as_deref()
                            .is_some_and(|e| e.contains("timed out"))
                    );
                    stuck_failed += 1;
                }
                Ok(Msg::Skipped { count, .. }) => skipped += count,
                _ => {}
            }
        }
        pool.stop();
        assert_eq!(
            stuck_failed, 1,
            "one timed-out run, then the instance waits"
        );
        assert!(
            quick >= 8,
            "the quick check ran {quick} times in 1.5 s at 0.1 s"
        );
        assert!(skipped >= 10, "runs due while stuck are skipped: {skipped}");
        let done = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(1)).ok())
            .any(|m| matches!(m, Msg::Done));
        assert!(done, "the pool says it is done once stopped");
    }
}
