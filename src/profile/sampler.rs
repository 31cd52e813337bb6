//! CPU sampling of agentprof's own run threads with pprof-rs (SIGPROF at a set frequency).
//! Only samples of the thread that runs the check count, and each stack is cut at
//! `measured_run`, so the runner's own work and thread start-up never show in the profile.

use std::time::Instant;

use anyhow::Context as _;

use super::{CallProfile, Frame};

/// Name of the thread a built-in check runs on; the sampler keeps only its samples.
pub const RUN_THREAD_NAME: &str = "agentprof-run";

const MARKER: &str = "measured_run";

/// Runs `f`; the frame of this function is where sampled stacks are cut.
#[inline(never)]
pub fn measured_run<R>(f: impl FnOnce() -> R) -> R {
    let r = f();
    std::hint::black_box(&r);
    r
}

/// Sampling in progress; `finish` adds what it saw to a `CallProfile`.
pub struct Sampler {
    guard: pprof::ProfilerGuard<'static>,
    started: Instant,
}

impl Sampler {
    pub fn start(frequency_hz: u32) -> anyhow::Result<Sampler> {
        let guard = pprof::ProfilerGuardBuilder::default()
            .frequency(frequency_hz as i32)
            // Unwinding from inside the unwinder or the vDSO can deadlock or fault.
            .blocklist(&["libgcc", "libgcc_s", "vdso"])
            .build()
            .context("cannot start the CPU sampler")?;
        Ok(Sampler {
            guard,
            started: Instant::now(),
        })
    }

    pub fn finish(self, into: &mut CallProfile) -> anyhow::Result<()> {
        let elapsed = self.started.elapsed();
        let report = self
            .guard
            .report()
            .build()
            .context("cannot read the CPU samples")?;
        drop(self.guard);
        into.duration_ns += elapsed.as_nanos() as u64;
        for (frames, count) in &report.data {
            if frames.thread_name != RUN_THREAD_NAME || *count <= 0 {
                continue;
            }
            let mut locations = Vec::with_capacity(frames.frames.len());
            let mut cut = false;
            for symbols in &frames.frames {
                let mut loc = Vec::with_capacity(symbols.len());
                for sym in symbols {
                    let function = clean_name(&sym.name());
                    if is_marker(&function) {
                        cut = true;
                    }
                    loc.push(into.intern(Frame {
                        function,
                        file: sym.filename.as_ref().map(|p| p.display().to_string()),
                        line: sym.lineno,
                    }));
                }
                if !loc.is_empty() {
                    locations.push(loc);
                }
                if cut {
                    break;
                }
            }
            if !locations.is_empty() {
                into.add(locations, *count as u64);
            }
        }
        Ok(())
    }
}

fn is_marker(function: &str) -> bool {
    let base = function.split('<').next().unwrap_or(function);
    base.ends_with(MARKER) && base.contains("profile::sampler")
}

/// Drops the `::h0123456789abcdef` hash legacy Rust mangling leaves on demangled names.
fn clean_name(name: &str) -> String {
    if let Some(i) = name.rfind("::h") {
        let hash = &name[i + 3..];
        if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return name[..i].to_string();
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_their_hash_only() {
        assert_eq!(clean_name("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(clean_name("a::hello"), "a::hello");
        assert!(is_marker("agentprof::profile::sampler::measured_run<T>"));
        assert!(!is_marker("other::measured_run"));
    }
}
