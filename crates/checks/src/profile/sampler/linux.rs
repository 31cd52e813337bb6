//! The sampler on Linux: a POSIX CPU-clock timer per sampled thread (or one on the
//! process's clock), the stacks taken out of the signal buffer, and the profile they make.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::super::{CallProfile, Frame};
use super::ThreadId;
use super::buffer::{
    ACTIVE, BUFFER, BUSY_SLOT, CAPACITY, FREE, HEADER, INFLIGHT, NEXT, NOT_SAMPLED, SLOT, TIMER,
    WHOLE, check_word, install, state,
};
use crate::Error;

/// What a sampler samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// One thread, on its CPU clock; stacks cut at `measured_run`.
    Thread,
    /// Every thread of agentprof, on the process's CPU clock; whole stacks.
    Process,
}

pub struct Sampler {
    pub(super) scope: Scope,
    pub(super) frequency_hz: u32,
    pub(super) timer: Option<libc::timer_t>,
    /// The thread whose CPU clock `timer` runs on (thread scope).
    pub(super) timer_thread: Option<libc::pid_t>,
    /// address -> interned frames, kept across runs so each address is resolved once.
    pub(super) symbols: HashMap<(u64, bool), Vec<Frame>>,
    /// address -> its function from the symbol table (process scope's periodic
    /// snapshots, which do not read the debug information).
    pub(super) named: HashMap<(u64, bool), Frame>,
    /// The executable's function symbols, read at the first snapshot (none: no table).
    pub(super) table: Option<Option<crate::profile::symtab::SymbolTable>>,
    /// Stacks (addresses, leaf first) sampled since the last `finish`, with their weight.
    pub(super) raw: HashMap<Vec<u64>, Sampled>,
    /// Samples lost because a run filled the buffer.
    pub dropped: u64,
    /// Samples of the run thread outside `measured_run` (the runner's own snapshots).
    pub outside_run: u64,
    /// Samples not whole when read (their check word did not match): not recorded.
    pub torn: u64,
}

/// One sampled stack's weight, and whether it was taken inside a run once that was looked
/// at (`samples_in_runs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sampled {
    pub(super) count: u64,
    pub(super) in_run: Option<bool>,
}

impl Sampler {
    pub fn new(frequency_hz: u32) -> Sampler {
        Sampler {
            scope: Scope::Thread,
            frequency_hz: frequency_hz.max(1),
            timer: None,
            timer_thread: None,
            symbols: HashMap::new(),
            named: HashMap::new(),
            table: None,
            raw: HashMap::new(),
            dropped: 0,
            outside_run: 0,
            torn: 0,
        }
    }

    /// A sampler of the whole process (every thread), for the agent's own profile.
    pub fn new_process(frequency_hz: u32) -> Sampler {
        let mut s = Sampler::new(frequency_hz);
        s.scope = Scope::Process;
        s
    }

    /// Starts sampling every thread of agentprof on the process's CPU clock.
    pub fn start_process(&mut self) -> Result<(), Error> {
        if !install() {
            return Err(Error::SamplerBuffer);
        }
        NEXT.store(0, Ordering::Relaxed);
        if self.timer.is_none() {
            // SAFETY: plain libc calls on values we own; errors are checked.
            let timer = unsafe {
                let mut sev: libc::sigevent = std::mem::zeroed();
                sev.sigev_notify = libc::SIGEV_SIGNAL;
                sev.sigev_signo = libc::SIGPROF;
                let mut timer: libc::timer_t = std::ptr::null_mut();
                if libc::timer_create(libc::CLOCK_PROCESS_CPUTIME_ID, &mut sev, &mut timer) != 0 {
                    return Err(Error::SamplerTimer(std::io::Error::last_os_error()));
                }
                timer
            };
            TIMER.store(timer, Ordering::Release);
            self.arm(timer)?;
            self.timer = Some(timer);
        }
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn arm(&self, timer: libc::timer_t) -> Result<(), Error> {
        let period = 1_000_000_000i64 / i64::from(self.frequency_hz);
        let ts = libc::timespec {
            tv_sec: period / 1_000_000_000,
            tv_nsec: period % 1_000_000_000,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: the timer was just created by this sampler.
        if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(Error::SamplerArm(std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Moves what was sampled so far out of the buffer and goes on sampling.
    pub fn drain(&mut self) {
        self.stop();
        ACTIVE.store(true, Ordering::SeqCst);
    }

    /// Starts sampling `thread` on its CPU clock. The timer is created once per thread
    /// and keeps running across that thread's runs: a run shorter than one period is
    /// still sampled in proportion to its CPU, because the clock counts the thread's CPU,
    /// not the run's. A run on another thread (the runner replaces a thread whose run
    /// timed out) gets a timer of its own, the old one deleted.
    pub fn start(&mut self, thread: ThreadId) -> Result<(), Error> {
        if !install() {
            return Err(Error::SamplerBuffer);
        }
        NEXT.store(0, Ordering::Relaxed);
        if self.timer_thread != Some(thread.tid)
            && let Some(old) = self.timer.take()
        {
            // SAFETY: the timer was created by this sampler and is deleted once.
            unsafe { libc::timer_delete(old) };
        }
        if self.timer.is_none() {
            self.timer = Some(self.create_timer(thread)?);
            self.timer_thread = Some(thread.tid);
        }
        ACTIVE.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn create_timer(&self, thread: ThreadId) -> Result<libc::timer_t, Error> {
        // SAFETY: plain libc calls on values we own; errors are checked.
        unsafe {
            let mut clock: libc::clockid_t = 0;
            if libc::pthread_getcpuclockid(thread.pthread, &mut clock) != 0 {
                return Err(Error::SamplerClock);
            }
            let mut sev: libc::sigevent = std::mem::zeroed();
            sev.sigev_notify = libc::SIGEV_THREAD_ID;
            sev.sigev_signo = libc::SIGPROF;
            sev.sigev_notify_thread_id = thread.tid;
            let mut timer: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(clock, &mut sev, &mut timer) != 0 {
                return Err(Error::SamplerTimer(std::io::Error::last_os_error()));
            }
            TIMER.store(timer, Ordering::Release);
            if let Err(e) = self.arm(timer) {
                libc::timer_delete(timer);
                return Err(e);
            }
            Ok(timer)
        }
    }

    /// Samples taken so far (not yet symbolised).
    pub fn samples_so_far(&self) -> u64 {
        self.raw.values().map(|s| s.count).sum()
    }

    /// Stops sampling; the run's stacks are kept as addresses until `finish`.
    pub fn stop(&mut self) {
        ACTIVE.store(false, Ordering::SeqCst);
        // A handler on another thread may still be writing its slot. One stuck there
        // (its thread stopped by a debugger) is not waited for past 100 ms: its slot
        // stays WRITING, is not read, and is not claimed again until it is whole.
        let t = std::time::Instant::now();
        while INFLIGHT.load(Ordering::SeqCst) > 0
            && t.elapsed() < std::time::Duration::from_millis(100)
        {
            std::hint::spin_loop();
        }
        let taken = NEXT.swap(0, Ordering::AcqRel);
        let n = taken.min(CAPACITY);
        self.dropped += (taken - n + BUSY_SLOT.swap(0, Ordering::Relaxed)) as u64;
        let buf = BUFFER.load(Ordering::Acquire);
        for i in 0..n {
            // SAFETY: i < CAPACITY; a slot is read only in state WHOLE, when no handler
            // writes it (a handler writes only a slot it moved from FREE).
            let state = unsafe { state(buf, i) };
            if state.load(Ordering::Acquire) != WHOLE {
                continue;
            }
            // SAFETY: as above; the slot is the buffer's i-th.
            let slot = unsafe { std::slice::from_raw_parts(buf.add(i * SLOT), SLOT) };
            let depth = (slot[1] as usize).min(SLOT - HEADER);
            let (pc, weight) = (slot[2], slot[3]);
            let ips = &slot[HEADER..HEADER + depth];
            let whole = check_word(&[slot[1], pc, weight]) ^ check_word(ips) == slot[4];
            // Frames above the interrupted one belong to the handler and the signal
            // trampoline: start where the unwinder reached the interrupted pc.
            let stack = match ips.iter().position(|&ip| ip == pc) {
                _ if !whole => None,
                Some(at) => Some(&ips[at..]),
                None if pc != 0 => Some(&slot[2..3]),
                None => None,
            };
            if let Some(stack) = stack {
                match self.raw.get_mut(stack) {
                    Some(s) => s.count += weight.max(1),
                    None => {
                        let count = weight.max(1);
                        self.raw.insert(
                            stack.to_vec(),
                            Sampled {
                                count,
                                in_run: None,
                            },
                        );
                    }
                }
            }
            self.torn += u64::from(!whole);
            self.dropped += u64::from(!whole);
            state.store(FREE, Ordering::Release);
        }
    }

    /// Symbolises every stack sampled so far into `into`. Symbolisation reads the
    /// binary's debug information (tens of MiB), so it runs once, after the last run,
    /// where it cannot inflate any run's figures.
    pub fn finish(&mut self, into: &mut CallProfile) {
        self.resolve_new();
        let raw = std::mem::take(&mut self.raw);
        for (stack, Sampled { count, .. }) in raw {
            let mut locations = Vec::with_capacity(stack.len());
            let mut inside_run = false;
            if self.scope == Scope::Process {
                let locations: Vec<Vec<usize>> = stack
                    .iter()
                    .enumerate()
                    .map(|(depth, &ip)| self.resolve(ip, depth == 0, into))
                    .collect();
                into.add(locations, count);
                continue;
            }
            for (depth, &ip) in stack.iter().enumerate() {
                let loc = self.resolve(ip, depth == 0, into);
                inside_run = loc
                    .iter()
                    .any(|&f| super::is_marker(&into.frames[f].function));
                locations.push(loc);
                if inside_run {
                    break;
                }
            }
            // Samples of the runner's own measurements on the same thread are not the check's.
            if inside_run {
                super::trim_runner_frames(&mut locations, into);
                into.add(locations, count);
            } else {
                self.outside_run += count;
            }
        }
    }

    /// Samples taken while agentprof named sampled functions (not in any profile).
    pub fn not_sampled() -> u64 {
        NOT_SAMPLED.load(Ordering::Relaxed) as u64
    }
}

// SAFETY: the timer id is a plain handle the kernel accepts from any thread of the
// process; nothing else in a Sampler is tied to the thread that created it.
unsafe impl Send for Sampler {}

impl Drop for Sampler {
    fn drop(&mut self) {
        ACTIVE.store(false, Ordering::SeqCst);
        if let Some(timer) = self.timer.take() {
            // SAFETY: the timer was created by `start` and is deleted once.
            unsafe { libc::timer_delete(timer) };
        }
    }
}
