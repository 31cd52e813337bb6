//! The thread in agentprof that samples the worker from outside during one run: every
//! period it reads each Python thread's stack and charges it the wall time since the last
//! round, and as CPU time too when the thread is running at that moment (its state in
//! /proc/PID/task/TID/stat), so a thread blocked in a read shows wall time and no CPU.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::reader::Reader;
use super::samples::{HOST_FILE, Samples, Values, frame_named};

/// A sampling thread at work; [`Running::finish`] stops it and gives its samples.
pub struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(Box<Reader>, Samples)>,
}

impl Running {
    /// Starts sampling worker `pid` through `reader` at `hz`.
    pub fn start(reader: Box<Reader>, pid: u32, hz: u32) -> std::io::Result<Running> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("agentprof-pysample".into())
            .spawn(move || sample(reader, pid, hz, &flag))?;
        Ok(Running { stop, handle })
    }

    /// Stops the thread and gives back the reader (for the next run) and the samples; None
    /// if the thread failed.
    pub fn finish(self) -> Option<(Box<Reader>, Samples)> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().ok()
    }
}

fn sample(mut reader: Box<Reader>, pid: u32, hz: u32, stop: &AtomicBool) -> (Box<Reader>, Samples) {
    let period = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let mut samples = Samples::new(hz);
    let mut states = ThreadStates::new(pid);
    let mut labels: HashMap<u32, String> = HashMap::new();
    // (code object, line) -> the frame's id in `samples`.
    let mut ids: HashMap<(usize, i32), u32> = HashMap::new();
    let mut stack: Vec<u32> = Vec::with_capacity(64);
    let started = Instant::now();
    let mut last = started;
    let mut next = started;
    loop {
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::park_timeout(next - now);
        } else {
            // Behind (a slow round, a busy machine): the next round is a period from now;
            // the wall time charged is what really passed.
            next = now;
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        let now = Instant::now();
        let wall = now.duration_since(last).as_nanos() as u64;
        last = now;
        let threads = match reader.threads() {
            Ok(t) => t,
            Err(_) => {
                samples.torn += 1;
                continue;
            }
        };
        for (tid, frame) in threads {
            if frame == 0 {
                continue;
            }
            let Ok(frames) = reader.stack(frame) else {
                samples.torn += 1;
                continue;
            };
            // The host's frames under the check (its loop, run(), the marks) are not the
            // check's; those the check calls into (its submissions) are.
            let host = frames
                .iter()
                .rev()
                .take_while(|f| f.code.filename == HOST_FILE)
                .count();
            let keep = &frames[..frames.len() - host];
            if keep.is_empty() {
                continue;
            }
            stack.clear();
            for f in keep {
                let key = (Arc::as_ptr(&f.code) as usize, f.line);
                let id = match ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = samples.intern(frame_named(
                            &f.code.filename,
                            &f.code.qualname,
                            f.line,
                            f.code.firstlineno,
                        ));
                        ids.insert(key, id);
                        id
                    }
                };
                stack.push(id);
            }
            let cpu = if states.running(tid) { wall } else { 0 };
            let label = labels.entry(tid).or_insert_with(|| {
                if tid == pid {
                    "main".to_string()
                } else {
                    format!("thread {tid}")
                }
            });
            samples.add(
                label,
                &stack,
                Values {
                    count: 1,
                    wall_ns: wall,
                    cpu_ns: cpu,
                },
            );
        }
    }
    samples.duration_ns = started.elapsed().as_nanos() as u64;
    (reader, samples)
}

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
