//! An exec plugin's exact figures: the plugin is started under ptrace, stopped once right
//! after its `execve` (its memory is then the new program's, nothing of agentprof's fork) and
//! once at its exit (`PTRACE_EVENT_EXIT`, before the kernel tears down its memory, files and
//! sockets), and /proc is read at both stops. So "before" is the plugin at its first
//! instruction, "after" and peak RSS (VmHWM of the exec'd image) are the plugin's own at its
//! end, with no sample taken in the middle of fork/exec and none missed between two samples.
//!
//! ptrace requests must come from the thread that forked the tracee, so one thread per run
//! spawns the plugin and does every wait and request. Where ptrace is refused (a seccomp
//! profile, `kernel.yama.ptrace_scope=3`), `spawn` says so and the caller samples instead.

use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::Instant;

use crate::procstat::{Probe, ProcessSnapshot, Target};

/// What the tracer thread reports, in order.
pub enum TraceEvent {
    /// The plugin was spawned (or could not be): its process, pipes taken by the caller.
    Spawned(std::io::Result<Child>),
    /// The snapshot at its first instruction after exec.
    Exec(ProcessSnapshot),
    /// The snapshot at its exit, before its memory and files are released, and every process
    /// it leaves behind (its descendants then, `setsid` escapees included), with their start
    /// times so a reused pid is never mistaken for one of them.
    Exit(ProcessSnapshot, Vec<(i32, u64)>),
    /// It has exited (not yet reaped): when.
    Ended(Instant),
}

/// Starts `cmd` traced on a thread of its own; events arrive on the returned channel. Never
/// blocks on the plugin.
pub fn spawn(mut cmd: Command) -> mpsc::Receiver<TraceEvent> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("exec-tracer".into())
        .spawn(move || trace(&mut cmd, &tx));
    if let Err(e) = spawned {
        let (tx, rx2) = mpsc::channel();
        let _ = tx.send(TraceEvent::Spawned(Err(e)));
        return rx2;
    }
    rx
}

fn trace(cmd: &mut Command, tx: &mpsc::Sender<TraceEvent>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: pre_exec runs in the forked child before exec; ptrace(TRACEME) is
    // async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(TraceEvent::Spawned(Err(e)));
            return;
        }
    };
    let pid = child.id() as libc::pid_t;
    if tx.send(TraceEvent::Spawned(Ok(child))).is_err() {
        // SAFETY: the caller is gone; the process we started must not outlive it.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut probe: Option<Probe> = None;
    loop {
        match next_stop(pid) {
            Stop::Exited => break,
            Stop::Retry => continue,
            Stop::Trapped { sig, event } => {
                let mut inject = 0;
                if event == libc::PTRACE_EVENT_EXIT {
                    let p = probe.get_or_insert_with(|| Probe::new(Target::Pid(pid as u32)));
                    let snap = p.after();
                    let _ = tx.send(TraceEvent::Exit(snap, descendants(pid)));
                } else if event == libc::PTRACE_EVENT_EXEC {
                    // The plugin exec'd again (a wrapper script): it goes on as the new program.
                } else if sig == libc::SIGTRAP && probe.is_none() {
                    // The stop after the first execve: the plugin's first instruction.
                    let mut p = Probe::new(Target::Pid(pid as u32));
                    let _ = tx.send(TraceEvent::Exec(p.before()));
                    probe = Some(p);
                    let opts = libc::PTRACE_O_TRACEEXIT
                        | libc::PTRACE_O_TRACEEXEC
                        | libc::PTRACE_O_EXITKILL;
                    // SAFETY: options on our stopped tracee.
                    unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, opts) };
                } else {
                    // A signal meant for the plugin: deliver it.
                    inject = sig;
                }
                // SAFETY: resumes our stopped tracee, with the signal it stopped for, if any.
                unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, inject) };
            }
        }
    }
    let _ = tx.send(TraceEvent::Ended(Instant::now()));
}

enum Stop {
    /// Exited or killed: left unreaped, so /proc keeps its final I/O counters.
    Exited,
    /// Interrupted, or a change that is not a stop: wait again.
    Retry,
    /// A ptrace stop: the signal, and the PTRACE_EVENT_* it reports (0 for none).
    Trapped { sig: i32, event: i32 },
}

/// The tracee's next state change. An exit is only looked at (WNOWAIT), never reaped here;
/// a stop is consumed with waitpid, whose status carries the ptrace event.
fn next_stop(pid: libc::pid_t) -> Stop {
    // SAFETY: waitid and waitpid on our own child, into values we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WSTOPPED | libc::WNOWAIT | libc::__WALL;
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => Stop::Retry,
                _ => Stop::Exited,
            };
        }
        if matches!(
            info.si_code,
            libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED
        ) {
            return Stop::Exited;
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, libc::__WALL) != pid || !libc::WIFSTOPPED(status) {
            return if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                Stop::Exited
            } else {
                Stop::Retry
            };
        }
        Stop::Trapped {
            sig: libc::WSTOPSIG(status),
            event: (status >> 16) & 0xff,
        }
    }
}

/// Every descendant of `pid` (children's children too), from /proc's per-thread `children`
/// lists, while `pid` is stopped at its exit and still their parent.
fn descendants(pid: libc::pid_t) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for c in text
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if out.len() >= 4096 {
                    return out;
                }
                if let Some(st) = start_time(c) {
                    out.push((c, st));
                    todo.push(c);
                }
            }
        }
    }
    out
}

/// A process's start time (clock ticks since boot), the 22nd field of /proc/PID/stat.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}
