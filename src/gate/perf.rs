//! Hardware counters through `perf_event_open(2)`, where the kernel offers them: the
//! instructions a thread, or a program and every process it starts, retire in user space.
//! Most CI virtual machines offer none (the call fails with ENOENT), and instructions are
//! then counted under valgrind instead (`instructions.rs`).

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Command;
use std::time::Duration;

crate::error::message_error! {
    /// Why a perf counter could not count.
    PerfError
}

/// One kind of event: perf_event_attr's `type` and `config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub kind: u32,
    pub config: u64,
}

/// Retired instructions (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS).
pub const INSTRUCTIONS: Event = Event { kind: 0, config: 1 };

/// The task's CPU clock in nanoseconds (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK): a
/// software event every kernel with perf events has, which counts through the same paths
/// (the tests use it where there is no hardware counter).
#[cfg(test)]
pub const TASK_CLOCK: Event = Event { kind: 1, config: 1 };

/// perf_event_attr as of its first version (PERF_ATTR_SIZE_VER0, 64 bytes): the fields
/// this counting sets; the kernel reads the size it is told.
#[repr(C)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const DISABLED: u64 = 1 << 0;
const INHERIT: u64 = 1 << 1;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const ENABLE_ON_EXEC: u64 = 1 << 12;
/// perf_event_open's flag for a close-on-exec descriptor.
const FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// A counter of one event.
pub struct Counter(OwnedFd);

impl Counter {
    /// Counts `event` in user space on the calling thread and, with `inherit`, on the threads
    /// and processes it starts from now on (their counts join this one when they end). With
    /// `on_exec`, it starts counting only in a process that execs: the calling thread's own
    /// work is not counted, a program it starts is.
    pub fn this_thread(event: Event, inherit: bool, on_exec: bool) -> std::io::Result<Counter> {
        let mut flags = EXCLUDE_KERNEL | EXCLUDE_HV;
        if inherit {
            flags |= INHERIT;
        }
        if on_exec {
            flags |= DISABLED | ENABLE_ON_EXEC;
        }
        let attr = Attr {
            kind: event.kind,
            size: std::mem::size_of::<Attr>() as u32,
            config: event.config,
            sample_period: 0,
            sample_type: 0,
            read_format: 0,
            flags,
            wakeup_events: 0,
            bp_type: 0,
            config1: 0,
        };
        // SAFETY: perf_event_open reads `size` bytes of the attribute it is given, which
        // lives through the call; pid 0 and cpu -1 are this thread on any CPU; no group.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor perf_event_open just returned, owned by nobody else.
        Ok(Counter(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// The count so far (with `inherit`, the threads and processes that ended included).
    pub fn read(&self) -> std::io::Result<u64> {
        use std::io::Read;
        let mut buf = [0u8; 8];
        let mut f = std::fs::File::from(self.0.try_clone()?);
        f.read_exact(&mut buf)?;
        Ok(u64::from_ne_bytes(buf))
    }
}

/// Whether `event` can be counted here: None when it can, else why not.
pub fn unavailable(event: Event) -> Option<std::io::Error> {
    Counter::this_thread(event, false, false).err()
}

/// Runs `cmd` with `input` on its stdin to its end within `timeout`, counting `event` in the
/// program and every process it starts (not in agentprof): the count, or why the program
/// failed.
pub fn count_program(
    event: Event,
    cmd: &mut Command,
    input: &[u8],
    timeout: Duration,
) -> Result<u64, PerfError> {
    // On a thread of its own, which starts the program and nothing else: the counter is
    // inherited by what this thread starts and enabled in the program at its exec.
    std::thread::scope(|s| {
        s.spawn(|| {
            let counter = Counter::this_thread(event, true, true)
                .map_err(|e| format!("perf_event_open: {e}"))?;
            let out = crate::checks::run_bounded(cmd, input, timeout, 16 << 20)
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(PerfError(format!(
                    "{}: {}",
                    out.status,
                    crate::checks::stderr_tail(&out.stderr, 2000)
                )));
            }
            counter
                .read()
                .map_err(|e| PerfError(format!("reading the counter: {e}")))
        })
        .join()
        .unwrap_or_else(|_| Err(PerfError("the counting thread panicked".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task clock counts through the same paths as instructions do where a kernel has
    /// them: a busy program counts far more than an idle one, and agentprof's own thread
    /// counts what it does.
    #[test]
    fn a_program_and_its_children_are_counted_and_the_starter_is_not() {
        if let Some(e) = unavailable(TASK_CLOCK) {
            // perf events themselves refused (a seccomp sandbox): nothing to count with.
            assert!(
                std::env::var("CI").is_err(),
                "perf_event_open of the task clock: {e}"
            );
            return;
        }
        let busy = count_program(
            TASK_CLOCK,
            // The work is in a grandchild: the shell's own child.
            Command::new("sh").args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'",
            ]),
            b"",
            Duration::from_secs(60),
        )
        .expect("busy");
        let idle = count_program(
            TASK_CLOCK,
            Command::new("sh").args(["-c", "sleep 0.3"]),
            b"",
            Duration::from_secs(60),
        )
        .expect("idle");
        // 300,000 shell iterations take far over 50 ms of CPU; sleeping takes almost none,
        // and the 300 ms agentprof waited are not counted.
        assert!(busy > 50_000_000, "busy {busy} ns");
        assert!(idle < 50_000_000, "idle {idle} ns");
        let failed = count_program(
            TASK_CLOCK,
            Command::new("sh").args(["-c", "echo no >&2; exit 3"]),
            b"",
            Duration::from_secs(60),
        )
        .expect_err("exit 3");
        assert!(failed.0.contains("no"), "{failed}");
        // This thread: what it does is counted.
        let c = Counter::this_thread(TASK_CLOCK, false, false).expect("counter");
        let before = c.read().expect("read");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(c.read().expect("read") > before, "{x}");
    }
}
