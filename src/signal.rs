//! SIGINT and SIGTERM ask the agent (or a pull) to stop; the handler only sets a flag the
//! loops poll. A second signal while the first is being honoured exits at once (130), as a
//! user pressing Ctrl-C twice expects.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe; nothing else runs here.
        unsafe { libc::_exit(130) };
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
