//! Python checks and exec plugins: one thread per check runs its instances on their `min_collection_interval`, with a little
//! jitter so instances do not fire together. A run that is still going when the next is due
//! makes that run skipped and counted; a slow or hanging check never delays another check,
//! because each has its own thread and its own per-instance timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::checks::Runner;
use crate::profile::RunRecord;

/// What check threads tell the agent.
pub enum Msg {
    Run(Box<RunRecord>),
    /// Runs of `check` instance `instance` that were due while the previous one still ran.
    Skipped {
        check: String,
        count: u32,
    },
    /// The thread of `check` has stopped.
    Done,
}

/// Default interval, as the Agent's.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);

/// Deterministic jitter in [0, 10% of the interval), from the check name and instance.
pub(super) fn jitter(name: &str, instance: usize, interval: Duration) -> Duration {
    let mut h: u64 = 1469598103934665603;
    for b in name.bytes().chain([instance as u8]) {
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    interval.mul_f64((h % 1000) as f64 / 10_000.0)
}

/// Runs `runner`'s instances until `stop`, sending every record to `tx`.
pub fn run_check(
    name: String,
    mut runner: Runner,
    intervals: Vec<Duration>,
    tx: Sender<Msg>,
    stop: Arc<AtomicBool>,
) {
    let start = Instant::now();
    let mut next: Vec<Instant> = intervals
        .iter()
        .enumerate()
        .map(|(i, iv)| start + jitter(&name, i, *iv))
        .collect();
    let mut runs = vec![0u32; intervals.len()];
    'outer: while !stop.load(Ordering::SeqCst) && !next.is_empty() {
        let (pos, due) = next
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .map(|(i, t)| (i, *t))
            .unwrap_or((0, start));
        while Instant::now() < due {
            if stop.load(Ordering::SeqCst) {
                break 'outer;
            }
            std::thread::sleep((due - Instant::now()).min(super::IDLE_POLL));
        }
        runs[pos] += 1;
        let rec = runner.run(pos, runs[pos]);
        if tx.send(Msg::Run(Box::new(rec))).is_err() {
            break;
        }
        let iv = intervals[pos];
        let now = Instant::now();
        let mut n = next[pos] + iv;
        let mut skipped = 0u32;
        while n <= now {
            n += iv;
            skipped += 1;
        }
        next[pos] = n;
        if skipped > 0 {
            let _ = tx.send(Msg::Skipped {
                check: name.clone(),
                count: skipped,
            });
        }
    }
    let _ = tx.send(Msg::Done);
}
