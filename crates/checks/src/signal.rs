//! SIGINT and SIGTERM ask the agent (or a pull) to stop; the handler only sets a flag the
//! loops poll. A second signal while the first is being honoured exits at once (130), as a
//! user pressing Ctrl-C twice expects.
//!
//! The process groups agentprof starts and must not outlive it (Python workers) are adopted
//! here: they are ended when agentprof's command returns, and on that second signal, also
//! when a check run was left running after the stop's grace period.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Adopted process groups (0: a free slot). Atomics, so the signal handler can read them.
static CHILD_GROUPS: [AtomicI32; 256] = [const { AtomicI32::new(0) }; 256];

extern "C" fn on_signal(_sig: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        end_children();
        // SAFETY: _exit is async-signal-safe; nothing else runs here.
        unsafe { libc::_exit(130) };
    }
}

/// Process group `pgid` (a child agentprof started as its leader) ends when agentprof's
/// command ends, whatever is still running in it. Past 256 groups a new one is not adopted
/// (its own parent-death signal still ends its leader).
pub fn adopt_group(pgid: i32) {
    for slot in &CHILD_GROUPS {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

/// Group `pgid` was ended by its owner.
pub fn release_group(pgid: i32) {
    for slot in &CHILD_GROUPS {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// SIGKILL to every adopted group. Only atomics and kill(2): safe in a signal handler.
pub fn end_children() {
    for slot in &CHILD_GROUPS {
        let g = slot.swap(0, Ordering::SeqCst);
        if g > 0 {
            // SAFETY: kill(2) on a process group agentprof started; async-signal-safe.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
}

/// Installs the handlers for SIGINT and SIGTERM.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
