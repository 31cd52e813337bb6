//! The signal side of the sampler: SIGPROF's handler records the interrupted stack's return
//! addresses into a preallocated buffer of slots (no allocation, no locks), each slot's state
//! word saying who may touch it; the reader (`Sampler::stop`) takes whole slots back.

use std::ffi::c_void;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Words per sample: [state, frame count, interrupted pc, weight, check, return addresses…].
pub(super) const SLOT: usize = 128;
pub(super) const HEADER: usize = 5;
/// A slot's state word: free to claim, being written by a handler, or whole.
pub(super) const FREE: u64 = 0;
const WRITING: u64 = 1;
pub(super) const WHOLE: u64 = 2;
/// Samples one run can hold; later ones are counted as dropped. The buffer is zero pages
/// until written, so only samples actually taken cost memory.
pub(super) const CAPACITY: usize = 16_384;

pub(super) static BUFFER: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
pub(super) static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Whether handlers record. `stop` clears it and then waits for INFLIGHT to reach 0; a
/// handler raises INFLIGHT and then reads it. Both pairs are sequentially consistent, so
/// either the handler sees it cleared or `stop` sees the handler in flight (the two
/// cannot both miss each other, as they could with weaker orderings on x86's store
/// buffer).
pub(super) static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Handlers running right now: with process-wide sampling, several threads may be in one.
pub(super) static INFLIGHT: AtomicUsize = AtomicUsize::new(0);
/// The sampling timer, for `timer_getoverrun` in the handler.
pub(super) static TIMER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static INSTALL: Once = Once::new();
/// Samples of threads that asked not to be profiled (naming sampled functions).
pub(super) static NOT_SAMPLED: AtomicUsize = AtomicUsize::new(0);
/// Samples whose slot was not free when claimed (a handler of an earlier run still
/// writing it after `stop` gave up waiting): not recorded.
pub(super) static BUSY_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set on agentprof's own symbolising thread: its samples are counted, not recorded,
    /// so the agent's profile shows the agent's work rather than the profiler's.
    pub(super) static UNSAMPLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The state word of slot `i` of `buf`.
///
/// # Safety
/// `buf` is the sample buffer and `i < CAPACITY`.
pub(super) unsafe fn state<'a>(buf: *mut u64, i: usize) -> &'a AtomicU64 {
    // SAFETY: the word is inside the buffer, aligned, and only ever accessed atomically.
    unsafe { AtomicU64::from_ptr(buf.add(i * SLOT)) }
}

/// The check word of a sample: its frame count, pc, weight and frames folded together,
/// so the reader can tell a whole sample from a mixture of two.
pub(super) fn check_word(words: &[u64]) -> u64 {
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

pub(super) fn install() -> bool {
    INSTALL.call_once(|| {
        // The unwinder's first lookup sorts the binary's frame tables, allocating: done
        // here, so no handler ever allocates inside a malloc it interrupted.
        backtrace::trace(|_| false);
        let layout = std::alloc::Layout::array::<u64>(SLOT * CAPACITY).expect("constant layout");
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
