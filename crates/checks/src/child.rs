//! A program run to its end within a deadline, its output read up to a bound: the probes and
//! helpers agentprof starts (an interpreter asked what it has installed, git, valgrind).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// Runs `cmd` in a process group of its own with `input` on its stdin (none: /dev/null), to
/// its end within `timeout`; its stdout and stderr are read up to `max` bytes each. Past the
/// timeout the group is killed and the error says so. When the program ends, what it left
/// running in its group is killed too, so nothing holds the pipes open.
pub fn run_bounded(
    cmd: &mut Command,
    input: &[u8],
    timeout: Duration,
    max: usize,
) -> Result<Output, Error> {
    cmd.stdin(if input.is_empty() {
        Stdio::null()
    } else {
        Stdio::piped()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let mut child = cmd.spawn().map_err(Error::ChildStart)?;
    let group = child.id() as i32;
    crate::signal::adopt_group(group);
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(max as u64).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                break Err(Error::ChildTimeout {
                    within: crate::duration::human(timeout),
                });
            }
            Err(e) => break Err(Error::ChildWait(e)),
        }
    };
    // SAFETY: kill(2) of the process group the child was made the leader of.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    if status.is_err() {
        let _ = child.wait();
    }
    crate::signal::release_group(group);
    Ok(Output {
        status: status?,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// [`run_bounded`] for a program whose stdout is the answer (16 MiB at most): that stdout,
/// or an error with its exit status and the end of its stderr.
pub fn stdout_of(cmd: &mut Command, input: &[u8], timeout: Duration) -> Result<Vec<u8>, Error> {
    let out = run_bounded(cmd, input, timeout, 16 << 20)?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    Err(Error::ChildFailed {
        status: out.status,
        stderr: stderr_tail(&out.stderr, 2000),
    })
}

/// The last `n` characters of a program's stderr, for an error message.
pub fn stderr_tail(stderr: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim_end();
    let start = text
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_read_bounded_and_stopped_at_its_deadline() {
        let out = run_bounded(
            Command::new("sh").args(["-c", "cat; echo err >&2"]),
            b"hello",
            Duration::from_secs(30),
            3,
        )
        .expect("sh runs");
        assert!(out.status.success());
        assert_eq!(
            (out.stdout.as_slice(), out.stderr.as_slice()),
            (&b"hel"[..], &b"err"[..])
        );
        // A program that leaves a child holding its stdout still ends the call.
        let t0 = Instant::now();
        let out = run_bounded(
            Command::new("sh").args(["-c", "sleep 30 & echo started"]),
            b"",
            Duration::from_secs(30),
            100,
        )
        .expect("sh runs");
        assert_eq!(out.stdout, b"started\n");
        assert!(t0.elapsed() < Duration::from_secs(20));
        let e = run_bounded(
            Command::new("sleep").arg("30"),
            b"",
            Duration::from_millis(100),
            100,
        )
        .expect_err("past the deadline");
        assert!(matches!(e, Error::ChildTimeout { .. }), "{e}");
        assert!(e.to_string().starts_with("no answer within"), "{e}");
        assert_eq!(stderr_tail("abc\ndéf\n".as_bytes(), 3), "déf");
    }
}
