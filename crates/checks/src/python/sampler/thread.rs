//! The thread in agentprof that samples the worker from outside during one run: every
//! period it reads each Python thread's stack and charges it the wall time since the last
//! round, and as CPU time too when the thread is running at that moment (its state in
//! /proc/PID/task/TID/stat), so a thread blocked in a read shows wall time and no CPU.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::reader::Reader;
use super::samples::{HOST_FILE, Samples, Values, frame_named};

/// A sampling thread at work; [`Running::finish`] stops it and gives its samples.
pub struct Running {
    stop: Arc<AtomicBool>,
    marks: Arc<Marks>,
    handle: JoinHandle<(Box<Reader>, Samples)>,
}

/// When the run started and ended (agentprof's "go" sent, "done" read), in nanoseconds
/// since the sampler's start; `u64::MAX` until then. The time a sample stands for is held
/// inside them.
struct Marks {
    base: Instant,
    start: AtomicU64,
    end: AtomicU64,
}

impl Marks {
    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

impl Running {
    /// Starts sampling worker `pid` through `reader` at `hz`.
    pub fn start(reader: Box<Reader>, pid: u32, hz: u32) -> std::io::Result<Running> {
        let stop = Arc::new(AtomicBool::new(false));
        let marks = Arc::new(Marks {
            base: Instant::now(),
            start: AtomicU64::new(u64::MAX),
            end: AtomicU64::new(u64::MAX),
        });
        let (flag, m) = (stop.clone(), marks.clone());
        let handle = std::thread::Builder::new()
            .name("agentprof-pysample".into())
            .spawn(move || sample(reader, pid, hz, &flag, &m))?;
        Ok(Running {
            stop,
            marks,
            handle,
        })
    }

    /// The run starts now.
    pub fn run_started(&self) {
        self.marks.start.store(self.marks.now(), Ordering::Release);
    }

    /// The run ended now.
    pub fn run_ended(&self) {
        self.marks.end.store(self.marks.now(), Ordering::Release);
    }

    /// Stops the thread and gives back the reader (for the next run) and the samples; None
    /// if the thread failed.
    pub fn finish(self) -> Option<(Box<Reader>, Samples)> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().ok()
    }
}

fn sample(
    mut reader: Box<Reader>,
    pid: u32,
    hz: u32,
    stop: &AtomicBool,
    marks: &Marks,
) -> (Box<Reader>, Samples) {
    let period = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let mut round = Round::new(pid, hz);
    let started = marks.base;
    // Rounds fall at a random moment of each period, not at fixed times after the run's
    // start (a sampler starts with each run).
    let mut next = started
        .checked_sub(period)
        .map_or(started, |t| t + random_part(period));
    loop {
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::park_timeout(next - now);
        } else {
            // Behind (a slow round, a busy machine): the next round is a period from now;
            // the time charged is what really passed.
            next = now;
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        let window = (
            marks.start.load(Ordering::Acquire),
            marks.end.load(Ordering::Acquire),
        );
        round.take(&mut reader, marks.now(), window);
    }
    // The last stacks seen stand for half a period after them, within the run.
    let end = marks
        .now()
        .min(round.last_ns + period.as_nanos() as u64 / 2)
        .min(marks.end.load(Ordering::Acquire));
    round.flush(end);
    let mut samples = round.samples;
    samples.duration_ns = started.elapsed().as_nanos() as u64;
    (reader, samples)
}

/// A random part of `d`, from the standard library's random hash keys and the clock.
fn random_part(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_nanos()),
    );
    let nanos = d.as_nanos().max(1) as u64;
    Duration::from_nanos(h.finish() % nanos)
}

/// A thread's last stack, waiting for the end of the time it stands for.
struct Pending {
    label: String,
    stack: Vec<u32>,
    running: bool,
    /// Nanoseconds since the sampler's start from which it stands.
    from_ns: u64,
}

/// What one round of sampling needs and keeps: the stacks seen at the last round, the
/// frames named so far, the threads' states.
///
/// A stack stands for the time from half-way after the round before it to half-way to the
/// round after (a change of function between two rounds is charged to neither side more
/// than the other), held within the run: time before agentprof said "go" or after the
/// worker said "done" is not the check's.
struct Round {
    pid: u32,
    samples: Samples,
    states: ThreadStates,
    labels: HashMap<u32, String>,
    /// (code object, line) -> the frame's id in `samples`.
    ids: HashMap<(usize, i32), u32>,
    pending: HashMap<u32, Pending>,
    /// When the last round was taken, nanoseconds since the sampler's start.
    last_ns: u64,
}

impl Round {
    fn new(pid: u32, hz: u32) -> Round {
        Round {
            pid,
            samples: Samples::new(hz),
            states: ThreadStates::new(pid),
            labels: HashMap::new(),
            ids: HashMap::new(),
            pending: HashMap::new(),
            last_ns: 0,
        }
    }

    /// One round at `now` (nanoseconds since the sampler's start), the run being `window`
    /// (its start and end, `u64::MAX` while unknown): every thread's stack read.
    fn take(&mut self, reader: &mut Reader, now: u64, (start, end): (u64, u64)) {
        let mid = self.last_ns + now.saturating_sub(self.last_ns) / 2;
        self.last_ns = now;
        self.flush(mid.min(end));
        let threads = match reader.threads() {
            Ok(t) => t,
            Err(_) => {
                self.samples.torn += 1;
                return;
            }
        };
        for (tid, frame) in threads {
            if frame == 0 {
                continue;
            }
            let Ok(frames) = reader.stack(frame) else {
                self.samples.torn += 1;
                continue;
            };
            let Some(stack) = self.checks_frames(&frames) else {
                continue;
            };
            let running = self.states.running(tid);
            let pid = self.pid;
            let label = self
                .labels
                .entry(tid)
                .or_insert_with(|| {
                    if tid == pid {
                        "main".to_string()
                    } else {
                        format!("thread {tid}")
                    }
                })
                .clone();
            // A thread the check started stands from its first round on; the run's own
            // thread not before the run started.
            let from = if start == u64::MAX {
                mid
            } else {
                mid.max(start)
            };
            self.pending.insert(
                tid,
                Pending {
                    label,
                    stack,
                    running,
                    from_ns: from,
                },
            );
        }
    }

    /// Every pending stack charged the time from where it stands to `until`.
    fn flush(&mut self, until: u64) {
        for (_, p) in self.pending.drain() {
            let wall = until.saturating_sub(p.from_ns);
            self.samples.add(
                &p.label,
                &p.stack,
                Values {
                    count: 1,
                    wall_ns: wall,
                    cpu_ns: if p.running { wall } else { 0 },
                },
            );
        }
    }

    /// The frames of a stack that are the check's, as frame ids innermost first; None when
    /// the thread is in agentprof's host and not in a check's run. The host's frames under
    /// the check (its loop, `run()`) are left out; those the check calls into (its
    /// submissions) stay. A thread the check started has no host frames.
    fn checks_frames(&mut self, frames: &[super::reader::PyFrame]) -> Option<Vec<u32>> {
        let host = frames
            .iter()
            .rev()
            .take_while(|f| f.code.filename == HOST_FILE)
            .count();
        let keep = &frames[..frames.len() - host];
        if keep.is_empty() {
            return None;
        }
        // Under the host, only what its run() (or its bracket for counting) called is the
        // check's: a reply being written (json) after the run is not.
        if host > 0 {
            let caller = &frames[frames.len() - host].code.qualname;
            if !RUN_FUNCTIONS.contains(&caller.as_str()) {
                return None;
            }
        }
        let mut stack = Vec::with_capacity(keep.len());
        for f in keep {
            let key = (Arc::as_ptr(&f.code) as usize, f.line);
            let id = match self.ids.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.samples.intern(frame_named(
                        &f.code.filename,
                        &f.code.qualname,
                        f.line,
                        f.code.firstlineno,
                    ));
                    self.ids.insert(key, id);
                    id
                }
            };
            stack.push(id);
        }
        Some(stack)
    }
}

/// The host's functions that call a check's `run()`: `run`, `_bracket` (instruction
/// counting) and `_debug` (pdb).
const RUN_FUNCTIONS: [&str; 3] = ["run", "_bracket", "_debug"];

/// Whether each thread is on a CPU (or waiting for one) right now, from its state in
/// /proc/PID/task/TID/stat, read beside its stack. (The kernel's per-thread run time is
/// only brought up to date at scheduler ticks, so its growth between two samples says
/// little about the stack seen at the second; the state says what the thread is doing
/// at that moment, as py-spy's idle test does.)
struct ThreadStates {
    pid: u32,
    files: HashMap<u32, Option<File>>,
    buf: Vec<u8>,
}

impl ThreadStates {
    fn new(pid: u32) -> ThreadStates {
        ThreadStates {
            pid,
            files: HashMap::new(),
            buf: vec![0; 1024],
        }
    }

    /// True when thread `tid` is running or runnable (state R); a thread whose state cannot
    /// be read counts as running, so CPU is never hidden.
    fn running(&mut self, tid: u32) -> bool {
        let pid = self.pid;
        let file = self
            .files
            .entry(tid)
            .or_insert_with(|| File::open(format!("/proc/{pid}/task/{tid}/stat")).ok());
        let Some(f) = file else { return true };
        let Ok(n) = f.read_at(&mut self.buf, 0) else {
            return true;
        };
        let text = &self.buf[..n];
        match text.iter().rposition(|&b| b == b')') {
            Some(i) => text.get(i + 2).is_none_or(|&state| state == b'R'),
            None => true,
        }
    }
}
