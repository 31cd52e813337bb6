//! CPU sampling of the thread that runs a check. A POSIX timer on that thread's own CPU clock
//! sends it SIGPROF every 1/frequency seconds of CPU it uses; the handler records the
//! interrupted stack's return addresses into a preallocated buffer (no allocation, no locks),
//! and `stop` symbolises them after the run. Only the check's thread is sampled, and each
//! stack is cut at `measured_run`, so the runner's own work never shows in the profile.
//!
//! A general-purpose sampler (pprof-rs) preallocates its stack buckets and is slow to start:
//! both would dwarf what a check costs (figures: docs/details.md, "Measured choices").

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
mod buffer;
#[cfg(target_os = "linux")]
mod dwarf;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod symbols;

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
        pub fn start(&mut self, _thread: ThreadId) -> Result<(), crate::Error> {
            Err(crate::Error::SamplerUnsupported)
        }
        pub fn new_process(frequency_hz: u32) -> Sampler {
            Sampler::new(frequency_hz)
        }
        pub fn start_process(&mut self) -> Result<(), crate::Error> {
            Err(crate::Error::SamplerUnsupported)
        }
        pub fn drain(&mut self) {}
        pub fn samples_so_far(&self) -> u64 {
            0
        }
        pub fn samples_in_runs(&mut self) -> u64 {
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

#[cfg(target_os = "linux")]
pub use dwarf::prefetch_line_tables;
#[cfg(not(target_os = "linux"))]
pub use imp::Sampler;
#[cfg(target_os = "linux")]
pub use linux::Sampler;
#[cfg(target_os = "linux")]
pub use symbols::{NamingCost, naming_cost};

/// What naming sampled addresses has cost so far (nothing is sampled off Linux).
#[cfg(not(target_os = "linux"))]
pub fn naming_cost() -> NamingCost {
    NamingCost::default()
}

/// Reading line tables ahead: nothing to read where profiles are not named from them.
#[cfg(not(target_os = "linux"))]
pub fn prefetch_line_tables() {}

/// See the Linux sampler's.
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NamingCost {
    pub addresses: usize,
    pub seconds: f64,
    pub rss_growth: u64,
}

/// Drops the root-side frames that are the runner's, not the check's: the marker and the
/// closure that calls the check (possibly inlined into the marker's location).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn trim_runner_frames(locations: &mut Vec<Vec<usize>>, profile: &super::CallProfile) {
    let is_runner = |f: usize| {
        let name = &profile.frames[f].function;
        is_marker(name) || name.starts_with("agentprof_checks::runner::execute")
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
        assert!(is_marker(
            "agentprof_checks::profile::sampler::measured_run<T>"
        ));
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
        // The worker computes inside `measured_run`: every sample is a run's.
        assert_eq!(sampler.samples_in_runs(), samples);
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
