//! CPU sampling of the thread that runs a check. A POSIX timer on that thread's own CPU clock
//! sends it SIGPROF every 1/frequency seconds of CPU it uses; the handler records the
//! interrupted stack's return addresses into a preallocated buffer (no allocation, no locks),
//! and `stop` symbolises them after the run. Only the check's thread is sampled, and each
//! stack is cut at `measured_run`, so the runner's own work never shows in the profile.
//!
//! A general-purpose sampler (pprof-rs) preallocates ~170 MiB of stack buckets and takes most
//! of a second to start; that would dwarf the few milliseconds and MiB a check costs.

/// Name of the thread a built-in check runs on.
pub const RUN_THREAD_NAME: &str = "agentprof-run";

/// Runs `f`; the frame of this function is where sampled stacks are cut.
#[inline(never)]
pub fn measured_run<R>(f: impl FnOnce() -> R) -> R {
    let r = f();
    std::hint::black_box(&r);
    r
}

/// The thread to sample, as seen from inside it.
#[derive(Debug, Clone, Copy)]
pub struct ThreadId {
    #[cfg(target_os = "linux")]
    pthread: libc::pthread_t,
    #[cfg(target_os = "linux")]
    tid: libc::pid_t,
}

impl ThreadId {
    /// The calling thread.
    pub fn current() -> ThreadId {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: both calls only read the calling thread's identity.
            ThreadId {
                pthread: unsafe { libc::pthread_self() },
                tid: unsafe { libc::gettid() },
            }
        }
        #[cfg(not(target_os = "linux"))]
        ThreadId {}
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::{HashMap, HashSet};
    use std::ffi::c_void;
    use std::sync::Once;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

    use anyhow::bail;

    use super::super::{CallProfile, Frame};
    use super::ThreadId;

    /// Words per sample: [state, frame count, interrupted pc, weight, check, return addresses…].
    const SLOT: usize = 128;
    const HEADER: usize = 5;
    /// A slot's state word: free to claim, being written by a handler, or whole.
    const FREE: u64 = 0;
    const WRITING: u64 = 1;
    const WHOLE: u64 = 2;
    /// Samples one run can hold; later ones are counted as dropped. The buffer is zero pages
    /// until written, so only samples actually taken cost memory.
    const CAPACITY: usize = 16_384;

    static BUFFER: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    /// Whether handlers record. `stop` clears it and then waits for INFLIGHT to reach 0; a
    /// handler raises INFLIGHT and then reads it. Both pairs are sequentially consistent, so
    /// either the handler sees it cleared or `stop` sees the handler in flight (the two
    /// cannot both miss each other, as they could with weaker orderings on x86's store
    /// buffer).
    static ACTIVE: AtomicBool = AtomicBool::new(false);
    /// Handlers running right now: with process-wide sampling, several threads may be in one.
    static INFLIGHT: AtomicUsize = AtomicUsize::new(0);
    /// The sampling timer, for `timer_getoverrun` in the handler.
    static TIMER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
    static INSTALL: Once = Once::new();
    /// Samples of threads that asked not to be profiled (naming sampled functions).
    static NOT_SAMPLED: AtomicUsize = AtomicUsize::new(0);
    /// Samples whose slot was not free when claimed (a handler of an earlier run still
    /// writing it after `stop` gave up waiting): not recorded.
    static BUSY_SLOT: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// Set on agentprof's own symbolising thread: its samples are counted, not recorded,
        /// so the agent's profile shows the agent's work rather than the profiler's.
        static UNSAMPLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// The state word of slot `i` of `buf`.
    ///
    /// # Safety
    /// `buf` is the sample buffer and `i < CAPACITY`.
    unsafe fn state<'a>(buf: *mut u64, i: usize) -> &'a AtomicU64 {
        // SAFETY: the word is inside the buffer, aligned, and only ever accessed atomically.
        unsafe { AtomicU64::from_ptr(buf.add(i * SLOT)) }
    }

    /// The check word of a sample: its frame count, pc, weight and frames folded together,
    /// so the reader can tell a whole sample from a mixture of two.
    fn check_word(words: &[u64]) -> u64 {
        words
            .iter()
            .fold(0x9e37_79b9_7f4a_7c15u64, |h, &w| (h ^ w).rotate_left(17))
    }

    extern "C" fn on_sigprof(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        // The interrupted code may be between a failing call and its read of errno.
        // SAFETY: the calling thread's errno, read and written on that thread.
        let errno = unsafe { *libc::__errno_location() };
        INFLIGHT.fetch_add(1, Ordering::SeqCst);
        record(sig, info, ctx);
        INFLIGHT.fetch_sub(1, Ordering::Release);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    fn record(_sig: libc::c_int, _info: *mut libc::siginfo_t, ctx: *mut c_void) {
        if !ACTIVE.load(Ordering::SeqCst) {
            return;
        }
        if UNSAMPLED.with(std::cell::Cell::get) {
            // SAFETY: the timer handle is the sampler's own, valid while it samples.
            let overrun = unsafe { libc::timer_getoverrun(TIMER.load(Ordering::Acquire)) };
            NOT_SAMPLED.fetch_add(1 + overrun.max(0) as usize, Ordering::Relaxed);
            return;
        }
        let buf = BUFFER.load(Ordering::Acquire);
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        if buf.is_null() || i >= CAPACITY {
            return;
        }
        // SAFETY: slot i is inside the buffer (i < CAPACITY); its state word decides who may
        // write it: only the handler that moves it from FREE to WRITING, and the reader only
        // reads (and frees) a slot in state WHOLE.
        unsafe {
            let state = state(buf, i);
            if state
                .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                BUSY_SLOT.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let slot = buf.add(i * SLOT);
            let pc = interrupted_pc(ctx);
            // CPU-clock timers fire on scheduler ticks (often 4 ms): periods that elapsed
            // since the last signal are overruns, and this sample stands for all of them.
            let overrun = libc::timer_getoverrun(TIMER.load(Ordering::Acquire));
            let weight = 1 + overrun.max(0) as u64;
            let mut n = 0usize;
            backtrace::trace_unsynchronized(|frame| {
                if n >= SLOT - HEADER {
                    return false;
                }
                *slot.add(HEADER + n) = frame.ip() as u64;
                n += 1;
                true
            });
            *slot.add(1) = n as u64;
            *slot.add(2) = pc;
            *slot.add(3) = weight;
            let frames = std::slice::from_raw_parts(slot.add(HEADER), n);
            *slot.add(4) = check_word(&[n as u64, pc, weight]) ^ check_word(frames);
            state.store(WHOLE, Ordering::Release);
        }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn interrupted_pc(ctx: *mut c_void) -> u64 {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler.
        unsafe { (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64 }
    }

    #[cfg(target_arch = "aarch64")]
    unsafe fn interrupted_pc(ctx: *mut c_void) -> u64 {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: as above.
        unsafe { (*uc).uc_mcontext.pc }
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    unsafe fn interrupted_pc(_ctx: *mut c_void) -> u64 {
        0
    }

    fn install() -> bool {
        INSTALL.call_once(|| {
            // The unwinder's first lookup sorts the binary's frame tables, allocating: done
            // here, so no handler ever allocates inside a malloc it interrupted.
            backtrace::trace(|_| false);
            let layout =
                std::alloc::Layout::array::<u64>(SLOT * CAPACITY).expect("constant layout");
            // SAFETY: a non-zero layout; zeroed pages are not resident until written.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u64;
            BUFFER.store(ptr, Ordering::Release);
            // SAFETY: installs a handler that only touches atomics and the static buffer.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigprof as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut());
            }
        });
        !BUFFER.load(Ordering::Acquire).is_null()
    }

    /// Symbolised frames of one address, innermost inlined frame first.
    type Location = Vec<usize>;

    /// What a sampler samples.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Scope {
        /// One thread, on its CPU clock; stacks cut at `measured_run`.
        Thread,
        /// Every thread of agentprof, on the process's CPU clock; whole stacks.
        Process,
    }

    pub struct Sampler {
        scope: Scope,
        frequency_hz: u32,
        timer: Option<libc::timer_t>,
        /// The thread whose CPU clock `timer` runs on (thread scope).
        timer_thread: Option<libc::pid_t>,
        /// address -> interned frames, kept across runs so each address is resolved once.
        symbols: HashMap<(u64, bool), Vec<Frame>>,
        /// address -> its function from the symbol table (process scope's periodic
        /// snapshots, which do not read the debug information).
        named: HashMap<(u64, bool), Frame>,
        /// The executable's function symbols, read at the first snapshot (none: no table).
        table: Option<Option<super::super::symtab::SymbolTable>>,
        /// Stacks (addresses, leaf first) sampled since the last `finish`, with their weight.
        raw: HashMap<Vec<u64>, u64>,
        /// Samples lost because a run filled the buffer.
        pub dropped: u64,
        /// Samples of the run thread outside `measured_run` (the runner's own snapshots).
        pub outside_run: u64,
        /// Samples not whole when read (their check word did not match): not recorded.
        pub torn: u64,
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
        pub fn start_process(&mut self) -> anyhow::Result<()> {
            if !install() {
                bail!("cannot allocate the sample buffer");
            }
            NEXT.store(0, Ordering::Relaxed);
            if self.timer.is_none() {
                // SAFETY: plain libc calls on values we own; errors are checked.
                let timer = unsafe {
                    let mut sev: libc::sigevent = std::mem::zeroed();
                    sev.sigev_notify = libc::SIGEV_SIGNAL;
                    sev.sigev_signo = libc::SIGPROF;
                    let mut timer: libc::timer_t = std::ptr::null_mut();
                    if libc::timer_create(libc::CLOCK_PROCESS_CPUTIME_ID, &mut sev, &mut timer) != 0
                    {
                        bail!(
                            "cannot create the sampling timer: {}",
                            std::io::Error::last_os_error()
                        );
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

        fn arm(&self, timer: libc::timer_t) -> anyhow::Result<()> {
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
                bail!(
                    "cannot start the sampling timer: {}",
                    std::io::Error::last_os_error()
                );
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
        pub fn start(&mut self, thread: ThreadId) -> anyhow::Result<()> {
            if !install() {
                bail!("cannot allocate the sample buffer");
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

        fn create_timer(&self, thread: ThreadId) -> anyhow::Result<libc::timer_t> {
            // SAFETY: plain libc calls on values we own; errors are checked.
            unsafe {
                let mut clock: libc::clockid_t = 0;
                if libc::pthread_getcpuclockid(thread.pthread, &mut clock) != 0 {
                    bail!("cannot read the run thread's CPU clock");
                }
                let mut sev: libc::sigevent = std::mem::zeroed();
                sev.sigev_notify = libc::SIGEV_THREAD_ID;
                sev.sigev_signo = libc::SIGPROF;
                sev.sigev_notify_thread_id = thread.tid;
                let mut timer: libc::timer_t = std::ptr::null_mut();
                if libc::timer_create(clock, &mut sev, &mut timer) != 0 {
                    bail!(
                        "cannot create the sampling timer: {}",
                        std::io::Error::last_os_error()
                    );
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
            self.raw.values().sum()
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
                        Some(c) => *c += weight.max(1),
                        None => {
                            self.raw.insert(stack.to_vec(), weight.max(1));
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
            for (stack, count) in raw {
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

        /// Resolves every address of the stacks sampled so far that has not been resolved
        /// before. The work runs on a short-lived thread of its own: parsing the binary's
        /// debug information allocates tens of MiB, and on that thread those allocations
        /// land in an allocator arena nothing long-lived shares, so they are all given back
        /// afterwards and a long-running agent that symbolises now and then does not grow.
        fn resolve_new(&mut self) {
            let mut missing: Vec<(u64, bool)> = Vec::new();
            let mut seen: HashSet<(u64, bool)> = HashSet::new();
            for stack in self.raw.keys() {
                for (depth, &ip) in stack.iter().enumerate() {
                    let key = (ip, depth == 0);
                    if !self.symbols.contains_key(&key) && seen.insert(key) {
                        missing.push(key);
                    }
                }
            }
            drop(seen);
            if missing.is_empty() {
                return;
            }
            let release = self.scope == Scope::Process;
            let keys = missing.clone();
            let resolved = std::thread::Builder::new()
                .name("agentprof-symbols".into())
                .spawn(move || {
                    UNSAMPLED.with(|u| u.set(true));
                    resolve_all(&keys, release)
                })
                .ok()
                .and_then(|h| h.join().ok());
            let resolved = resolved
                .unwrap_or_else(|| missing.iter().map(|&(ip, _)| vec![unknown(ip)]).collect());
            for (key, frames) in missing.into_iter().zip(resolved.iter()) {
                // Copies made here, so nothing kept points into the helper's allocations.
                self.symbols.insert(key, frames.to_vec());
            }
        }

        fn resolve(&self, ip: u64, leaf: bool, into: &mut CallProfile) -> Location {
            match self.symbols.get(&(ip, leaf)) {
                Some(frames) => frames.iter().map(|f| into.intern_ref(f)).collect(),
                None => vec![into.intern(unknown(ip))],
            }
        }

        /// Samples taken while agentprof named sampled functions (not in any profile).
        pub fn not_sampled() -> u64 {
            NOT_SAMPLED.load(Ordering::Relaxed) as u64
        }

        /// Process scope: every stack sampled since the start, symbolised into `into`, while
        /// the samples stay here as addresses (a few bytes per frame) for the next snapshot
        /// and `finish`. The agent logs its top calls from such snapshots and drops them, so
        /// its memory does not grow with the number of stacks it has named.
        ///
        /// A snapshot names functions from the executable's symbol table (see
        /// [`super::super::symtab`]): a few milliseconds, where the debug information costs
        /// 0.14 s of CPU and 30 MiB each time. Inlined frames, files and lines are in the
        /// profile `finish` makes.
        pub fn snapshot(&mut self, into: &mut CallProfile) {
            self.name_new();
            for (stack, &count) in &self.raw {
                let locations: Vec<Vec<usize>> = stack
                    .iter()
                    .enumerate()
                    .map(|(depth, &ip)| match self.named.get(&(ip, depth == 0)) {
                        Some(f) => vec![into.intern_ref(f)],
                        None => self.resolve(ip, depth == 0, into),
                    })
                    .collect();
                into.add(locations, count);
            }
        }

        /// Names every sampled address not named before from the symbol table, or, outside
        /// the executable, from the dynamic linker.
        fn name_new(&mut self) {
            let table = self
                .table
                .get_or_insert_with(super::super::symtab::SymbolTable::of_this_executable);
            for stack in self.raw.keys() {
                for (depth, &ip) in stack.iter().enumerate() {
                    let key = (ip, depth == 0);
                    if self.named.contains_key(&key) || self.symbols.contains_key(&key) {
                        continue;
                    }
                    let addr = if depth == 0 { ip } else { ip.saturating_sub(1) };
                    let frame = table
                        .as_ref()
                        .and_then(|t| t.frame(addr))
                        .or_else(|| dynamic_symbol(addr))
                        .unwrap_or_else(|| unknown(addr));
                    self.named.insert(key, frame);
                }
            }
        }
    }

    /// The exported symbol a shared library's address is in (`dladdr`), as libc's functions.
    fn dynamic_symbol(addr: u64) -> Option<Frame> {
        // SAFETY: dladdr only reads the loader's tables and writes into `info`, which we own;
        // the names it returns point into loaded objects and are copied at once.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(addr as *const c_void, &mut info) == 0 || info.dli_sname.is_null() {
                return None;
            }
            let name = std::ffi::CStr::from_ptr(info.dli_sname).to_string_lossy();
            Some(Frame {
                function: format!("{:#}", rustc_demangle::demangle(&name)),
                system_name: None,
                file: None,
                line: None,
            })
        }
    }

    fn unknown(addr: u64) -> Frame {
        Frame {
            function: format!("{addr:#x}"),
            ..Frame::default()
        }
    }

    /// Frames of each address (innermost inlined frame first); with `release`, the symbol
    /// tables are dropped afterwards.
    fn resolve_all(keys: &[(u64, bool)], release: bool) -> Vec<Vec<Frame>> {
        let out = keys
            .iter()
            .map(|&(ip, leaf)| {
                // A return address points after the call; look up the call itself.
                let addr = if leaf { ip } else { ip.saturating_sub(1) };
                let mut frames = Vec::new();
                backtrace::resolve(addr as *mut c_void, |sym| {
                    let function = sym
                        .name()
                        .map(|n| format!("{n:#}"))
                        .unwrap_or_else(|| format!("{addr:#x}"));
                    let system_name = sym
                        .name()
                        .and_then(|n| std::str::from_utf8(n.as_bytes()).ok())
                        .filter(|raw| *raw != function)
                        .map(str::to_string);
                    frames.push(Frame {
                        function,
                        system_name,
                        file: sym.filename().map(|p| p.display().to_string()),
                        line: sym.lineno(),
                    });
                });
                if frames.is_empty() {
                    frames.push(unknown(addr));
                }
                frames
            })
            .collect();
        if release {
            backtrace::clear_symbol_cache();
        }
        out
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
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::super::CallProfile;
    use super::ThreadId;

    pub struct Sampler {
        pub dropped: u64,
        pub outside_run: u64,
    }

    impl Sampler {
        pub fn new(_frequency_hz: u32) -> Sampler {
            Sampler {
                dropped: 0,
                outside_run: 0,
            }
        }
        pub fn start(&mut self, _thread: ThreadId) -> anyhow::Result<()> {
            anyhow::bail!("CPU sampling of checks is supported on Linux only for now")
        }
        pub fn new_process(frequency_hz: u32) -> Sampler {
            Sampler::new(frequency_hz)
        }
        pub fn start_process(&mut self) -> anyhow::Result<()> {
            anyhow::bail!("CPU sampling is supported on Linux only for now")
        }
        pub fn drain(&mut self) {}
        pub fn samples_so_far(&self) -> u64 {
            0
        }
        pub fn stop(&mut self) {}
        pub fn finish(&mut self, _into: &mut CallProfile) {}
        pub fn not_sampled() -> u64 {
            0
        }
        pub fn snapshot(&mut self, _into: &mut CallProfile) {}
    }
}

pub use imp::Sampler;

/// Drops the root-side frames that are the runner's, not the check's: the marker and the
/// closure that calls the check (possibly inlined into the marker's location).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn trim_runner_frames(locations: &mut Vec<Vec<usize>>, profile: &super::CallProfile) {
    let is_runner = |f: usize| {
        let name = &profile.frames[f].function;
        is_marker(name) || name.starts_with("agentprof::checks::runner::execute")
    };
    while let Some(last) = locations.last_mut() {
        while last.last().is_some_and(|&f| is_runner(f)) {
            last.pop();
        }
        if !last.is_empty() {
            break;
        }
        locations.pop();
    }
}

/// The marker frame, named with its path (symbol table, full debug info) or without it
/// (line-tables-only debug info names functions by their last segment).
fn is_marker(function: &str) -> bool {
    let base = function.split('<').next().unwrap_or(function);
    base == "measured_run" || base.ends_with("profile::sampler::measured_run")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::profile::{CallProfile, ProfileKind};

    /// The sampler's buffer is the process's: one sampling test at a time (the runner's
    /// tests take it too).
    pub(crate) static ONE_SAMPLER: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Burns `ms` of the calling thread's CPU (not wall time: the machine may be busy).
    #[inline(never)]
    pub(crate) fn spin(ms: u64) -> u64 {
        let cpu_ms = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: writes into the timespec we own.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
        };
        let start = cpu_ms();
        let mut x = 0u64;
        while cpu_ms() - start < ms {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        x
    }

    #[test]
    fn marker_is_recognised() {
        assert!(is_marker("agentprof::profile::sampler::measured_run<T>"));
        assert!(is_marker(
            "measured_run<core::result::Result<(), anyhow::Error>>"
        ));
        assert!(!is_marker("other::measured_run"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn samples_a_busy_thread_and_cuts_at_the_marker() {
        let _one = crate::sync::lock(&ONE_SAMPLER);
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(ThreadId::current()).unwrap();
            go_rx.recv().unwrap();
            measured_run(|| spin(200))
        });
        let id = rx.recv().unwrap();
        let mut sampler = Sampler::new(1000);
        sampler.start(id).unwrap();
        go_tx.send(()).unwrap();
        worker.join().unwrap();
        let mut p = CallProfile::new(ProfileKind::Cpu, 1000, 0);
        sampler.stop();
        sampler.finish(&mut p);
        // 200 ms of the thread's CPU at 1000 Hz: about 200 samples.
        assert!(
            (150..=230).contains(&p.total_samples()),
            "{} samples",
            p.total_samples()
        );
        let names: Vec<&str> = p
            .samples
            .iter()
            .flat_map(|s| p.stack(s))
            .map(|f| f.function.as_str())
            .collect();
        assert!(names.iter().any(|f| f.contains("spin")), "{names:?}");
        // Nothing above the check: thread start-up and the runner are not in the profile.
        assert!(
            !names
                .iter()
                .any(|f| f.contains("thread_start") || f.contains("start_thread") || is_marker(f))
        );
    }

    /// A run that does little but walk its own stack (as a panic unwinding or anyhow's
    /// backtrace capture under `RUST_BACKTRACE` do), sampled at 1000 Hz: the handler's own walk
    /// of the stack may land inside the unwinder's table lookup of the interrupted thread (a
    /// lookup under a non-recursive lock would wait forever there), and the run must end.
    #[cfg(target_os = "linux")]
    #[test]
    fn sampling_a_thread_that_unwinds_does_not_hang() {
        let _one = crate::sync::lock(&ONE_SAMPLER);
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            tx.send(ThreadId::current()).unwrap();
            go_rx.recv().unwrap();
            let t0 = std::time::Instant::now();
            let mut walks = 0u64;
            measured_run(|| {
                while t0.elapsed() < std::time::Duration::from_millis(400) {
                    let trace = std::backtrace::Backtrace::force_capture();
                    std::hint::black_box(&trace);
                    walks += 1;
                }
            });
            let _ = done_tx.send(walks);
        });
        let id = rx.recv().unwrap();
        let mut sampler = Sampler::new(1000);
        sampler.start(id).unwrap();
        go_tx.send(()).unwrap();
        // On a hang, stop the test binary: stopping the sampler would wait for the stuck
        // handler, and a panic's own unwinding for the lock the stuck thread holds.
        let Ok(walks) = done_rx.recv_timeout(std::time::Duration::from_secs(30)) else {
            eprintln!("the sampled thread hung in its own stack walk");
            std::process::abort();
        };
        sampler.stop();
        assert!(walks > 10, "{walks} stack walks");
        let mut p = CallProfile::new(ProfileKind::Cpu, 1000, 0);
        sampler.finish(&mut p);
        assert!(p.total_samples() > 0, "no samples");
    }

    /// Many short runs whose stop races the timer (10 kHz on a thread that never stops
    /// computing, stopped and started again every few hundred microseconds): every sample
    /// read is whole — its check word matches — and none is lost to a slot still being
    /// written, and the handler leaves the interrupted code's errno as it was.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_stop_racing_the_timer_reads_only_whole_samples() {
        let _one = crate::sync::lock(&ONE_SAMPLER);
        let (tx, rx) = std::sync::mpsc::channel();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let errno_changed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (d, e) = (done.clone(), errno_changed.clone());
        let worker = std::thread::spawn(move || {
            tx.send(ThreadId::current()).unwrap();
            measured_run(|| {
                while !d.load(std::sync::atomic::Ordering::Relaxed) {
                    // SAFETY: this thread's errno.
                    unsafe { *libc::__errno_location() = 4242 };
                    std::hint::black_box(spin(0));
                    // SAFETY: as above.
                    if unsafe { *libc::__errno_location() } != 4242 {
                        e.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            })
        });
        let id = rx.recv().unwrap();
        let mut sampler = Sampler::new(10_000);
        let t0 = std::time::Instant::now();
        let mut cycles = 0u32;
        while cycles < 3000 && t0.elapsed() < std::time::Duration::from_secs(10) {
            sampler.start(id).unwrap();
            std::thread::sleep(std::time::Duration::from_micros(
                200 + u64::from(cycles % 7) * 50,
            ));
            sampler.stop();
            cycles += 1;
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        worker.join().unwrap();
        let samples = sampler.samples_so_far();
        assert!(cycles > 100, "{cycles} cycles");
        assert!(samples > 100, "{samples} samples in {cycles} cycles");
        assert_eq!(
            sampler.torn, 0,
            "{} of {samples} samples were not whole",
            sampler.torn
        );
        assert_eq!(sampler.dropped, 0, "samples lost in {cycles} cycles");
        assert_eq!(
            errno_changed.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "the handler changed the sampled thread's errno"
        );
    }
}
