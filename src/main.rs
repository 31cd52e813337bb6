//! Thin binary: parse arguments, call the library, map the outcome to one exit-code policy.
//!
//! On Linux with glibc the entry is agentprof's own `main` rather than std's: std's start
//! asks glibc for the main thread's stack bounds (for its stack-overflow message), and glibc
//! answers by reading and `sscanf`-parsing /proc/self/maps, which paged in its stdio and
//! scanf code: 370 KiB of a cold `check disk`'s resident set and 8 of its page faults
//! (measured on a hello world built both ways). What else std's start does that agentprof
//! relies on is done here: fds 0-2 opened on /dev/null when closed, SIGPIPE ignored (a
//! closed pipe is an EPIPE error agentprof handles), a panic caught as exit status 101,
//! stdout flushed at the end. A stack overflow still stops at the guard page; it is a plain
//! SIGSEGV instead of std's message.

// Not under `cargo test`: there the test harness is the entry.
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

// Under `cargo test` nothing here calls the library, but a static build wraps the unwinder's
// `_Unwind_Find_FDE` in every link of the package and the wrapper is the library's (build.rs).
#[cfg(test)]
use agentprof as _;

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(agentprof::cmd::main())
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    use std::io::Write;
    standard_fds();
    // SAFETY: sets a signal's disposition to ignore, before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // glibc hands the arguments to std itself (std reads them in an .init_array function).
    let code = std::panic::catch_unwind(agentprof::cmd::main).unwrap_or(101);
    let _ = std::io::stdout().flush();
    libc::c_int::from(code)
}

/// Fds 0, 1 and 2 open: a closed one is opened on /dev/null, so no file agentprof opens
/// becomes its stdout by accident.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
fn standard_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        // SAFETY: opens /dev/null, which takes the lowest free descriptor: this one.
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } == -1 {
            std::process::abort();
        }
    }
}

/// `pow` and `exp`, the only two functions of the C math library the binary calls (tokio's
/// scheduler statistics, indicatif's rate estimate, agentprof's gate statistics and legacy heap
/// profiles' unsampling), defined here from the `libm` crate. The linker then resolves them in
/// the binary and drops `libm.so.6`, which every start mapped and relocated: 0.55 MiB of a
/// `check disk`'s resident set. `libm` ports fdlibm's algorithms (as Go's `math.Exp` does),
/// within one ulp as glibc's are; a unit test (`gate::stats`) checks the two agree within
/// one ulp and give the same unsampled heap counts, a CLI test that no math library loads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod math {
    #[unsafe(no_mangle)]
    pub extern "C" fn pow(x: f64, y: f64) -> f64 {
        libm::pow(x, y)
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn exp(x: f64) -> f64 {
        libm::exp(x)
    }
}
