//! Instruction counts of a check's runs (`gate --measure instructions`): deterministic where
//! timings are not, so a few percent more work is a regression with no statistics needed.
//!
//! The count is of user-space instructions retired by the check's own work in each run. Where
//! the kernel offers hardware counters, `perf_event_open` counts them (`perf.rs`): a counter
//! on the thread that runs a built-in, read around its call; one the Python worker opens on
//! itself and reads around `check.run()`; one an exec plugin inherits at its exec, with every
//! process it starts. Most CI machines, virtual ones above all, offer none; valgrind's
//! callgrind counts instead (`valgrind.rs`). What either yields is `counted.rs`'s.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use super::counted::{COUNT_TIMEOUT, CountError, Counted, WARM_UPS};
use crate::checks::stdout_of;
use crate::checks::{LoadedCheck, Runnable};
use crate::config::LoadOptions;
use crate::error::UsageError;
use crate::progress::Progress;

crate::error::message_error! {
    /// Why valgrind's version could not be read.
    ValgrindError
}

/// What counts: a hardware counter, or valgrind.
pub struct Counter {
    by: By,
}

enum By {
    Perf(super::perf::Event),
    Valgrind { version: String },
}

/// What `source()` starts with for each way of counting (a baseline keeps it).
pub const PERF_SOURCE: &str = "perf_event_open";

impl Counter {
    /// The hardware counter where the kernel offers it, else valgrind; with `prefer` (the
    /// source a baseline was counted by, or the one `--counter` names), that one when it can
    /// be had, so the two sides are counted alike. An error that says what is missing
    /// otherwise, `why` naming who wanted `prefer` ("the baseline was counted by").
    pub fn find(prefer: Option<&str>, why: &str) -> Result<Counter, UsageError> {
        let perf = super::perf::unavailable(super::perf::INSTRUCTIONS);
        let valgrind = valgrind_version();
        let wants_valgrind = prefer.is_some_and(|p| p.starts_with("valgrind"));
        match (perf, valgrind) {
            (None, _) if !wants_valgrind => Ok(Counter {
                by: By::Perf(super::perf::INSTRUCTIONS),
            }),
            (_, Ok(version)) if !prefer.is_some_and(|p| p.starts_with(PERF_SOURCE)) => {
                Ok(Counter {
                    by: By::Valgrind { version },
                })
            }
            (perf, valgrind) => {
                let perf = perf.map_or("the hardware counter is there".to_string(), |e| {
                    format!("perf_event_open gives no hardware counter here ({e})")
                });
                let valgrind = valgrind.err().unwrap_or_else(|| "valgrind is there".into());
                let want = prefer.map_or(String::new(), |p| {
                    format!("{why} {p}, which this machine cannot do; ")
                });
                Err(UsageError::flag(
                    "--measure instructions",
                    format!("{want}{perf}, and {valgrind}"),
                ))
            }
        }
    }

    /// What counted, for the report: `perf_event_open (hardware instructions, user space)`
    /// or `valgrind-3.19.0 (callgrind)`.
    pub fn source(&self) -> String {
        match &self.by {
            By::Perf(_) => format!("{PERF_SOURCE} (hardware instructions, user space)"),
            By::Valgrind { version } => format!("{version} (callgrind)"),
        }
    }
}

/// valgrind's version, or why it cannot count here.
fn valgrind_version() -> Result<String, ValgrindError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(ValgrindError(format!(
            "counting by valgrind is built for x86-64, not {}",
            std::env::consts::ARCH
        )));
    }
    let out = stdout_of(
        Command::new("valgrind").arg("--version"),
        &[],
        Duration::from_secs(30),
    )
    .map_err(|e| format!("cannot run valgrind ({e}): install it (apt-get install valgrind)"))?;
    let version = String::from_utf8_lossy(&out).trim().to_string();
    if !version.starts_with("valgrind-") {
        return Err(ValgrindError(format!(
            "`valgrind --version` said {version:?}, not a valgrind version"
        )));
    }
    Ok(version)
}

/// Counts `runs` runs of instance `instance` of `loaded` (after warm-up runs, not
/// counted): the instructions of each, in order.
pub fn count(
    counter: &Counter,
    opts: &LoadOptions,
    loaded: LoadedCheck,
    instance: usize,
    runs: u32,
    progress: &mut Progress,
) -> Result<Counted, CountError> {
    let event = match counter.by {
        By::Perf(event) => event,
        By::Valgrind { .. } => {
            return super::valgrind::count(opts, loaded, instance, runs, progress);
        }
    };
    count_perf(event, loaded, instance, runs, progress).map(|per_run| Counted {
        per_run,
        by_function: BTreeMap::new(),
        cache_per_run: Vec::new(),
        stacks: Vec::new(),
    })
}

/// Counts by the hardware counter (see the module's documentation).
fn count_perf(
    event: super::perf::Event,
    loaded: LoadedCheck,
    instance: usize,
    runs: u32,
    progress: &mut Progress,
) -> Result<Vec<f64>, CountError> {
    let name = loaded.name.clone();
    let failed = |run: u32, e: &dyn std::fmt::Display| CountError::run_failed(&name, run, e);
    let mut out = Vec::with_capacity(runs as usize);
    let mut keep = |run: u32, n: u64, progress: &mut Progress| {
        if run > WARM_UPS {
            out.push(n as f64);
        }
        progress.inc();
    };
    if let Some(host) = loaded.python.clone() {
        let mut h = crate::sync::lock_unless_poisoned(&host)
            .ok_or_else(|| CountError::check(&name, "the Python worker is unusable"))?;
        let how = crate::checks::Counting::Perf {
            kind: event.kind,
            config: event.config,
        };
        for run in 1..=runs + WARM_UPS {
            let n = h
                .run_counted(instance, COUNT_TIMEOUT, how)
                .map_err(|e| failed(run, &e))?
                .ok_or_else(|| failed(run, &"the worker returned no count"))?;
            keep(run, n, progress);
        }
        return Ok(out);
    }
    match loaded.instances.into_iter().nth(instance).map(|(_, r)| r) {
        Some(Runnable::InProcess(mut check)) => {
            // This thread runs the check and reads its counter around each call, nothing else.
            let io = |e| CountError::io("perf_event_open", e);
            let counter = super::perf::Counter::this_thread(event, true, false).map_err(io)?;
            for run in 1..=runs + WARM_UPS {
                let mut sink = crate::metrics::Sink::default();
                let before = counter.read().map_err(io)?;
                let result = check.run(&mut sink);
                let n = counter.read().map_err(io)?.saturating_sub(before);
                result.map_err(|e| failed(run, &e))?;
                keep(run, n, progress);
            }
        }
        Some(Runnable::External(check)) => {
            let inv = check
                .invocation()
                .ok_or_else(|| CountError::check(&name, "not one program per run"))?;
            for run in 1..=runs + WARM_UPS {
                let n = super::perf::count_program(
                    event,
                    Command::new(&inv.program).args(&inv.args),
                    &inv.stdin,
                    COUNT_TIMEOUT,
                )
                .map_err(|e| failed(run, &e))?;
                keep(run, n, progress);
            }
        }
        None => return Err(CountError::check(&name, format!("no instance {instance}"))),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;
    use crate::gate::perf;
    use std::path::Path;

    /// Counts of `name` by the task clock (the hardware counter's paths, with a software
    /// event this machine has), `runs` of them after the warm-ups.
    fn counted(dir: &Path, name: &str) -> Vec<f64> {
        let opts = LoadOptions {
            config: None,
            confd: Some(dir.to_path_buf()),
            checks: Some(dir.to_path_buf()),
            python: Some("python3".into()),
        };
        let config = AgentConfig::load(&opts).expect("config");
        let loaded = crate::checks::Registry::new(&config)
            .load(name)
            .expect("the check loads");
        if let Some(h) = &loaded.python {
            crate::checks::start_python(h).expect("the worker starts");
        }
        let counter = Counter {
            by: By::Perf(perf::TASK_CLOCK),
        };
        let mut progress = Progress::new(0, "");
        count(&counter, &opts, loaded, 0, 5, &mut progress)
            .expect("counted")
            .per_run
    }

    fn median(v: &[f64]) -> f64 {
        crate::gate::stats::median(v).unwrap_or(0.0)
    }

    /// Every kind of check counted by a perf counter: a Python check on its worker's thread,
    /// an exec plugin over its process tree, a built-in on the thread that runs it. Four
    /// times the work reads as more than twice the count.
    #[test]
    fn perf_counts_python_exec_and_built_in_checks() {
        if let Some(e) = perf::unavailable(perf::TASK_CLOCK) {
            assert!(std::env::var("CI").is_err(), "perf_event_open: {e}");
            return;
        }
        let dir = std::env::temp_dir().join(format!("agentprof-perf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("loop.py"),
            "from datadog_checks.base import AgentCheck\n\nclass Loop(AgentCheck):\n    def check(self, instance):\n        x = 0\n        for i in range(int(instance['work'])):\n            x = (x * 31 + i) & 0xFFFF\n        self.gauge('loop.x', x)\n",
        )
        .expect("write");
        std::fs::write(
            dir.join("spin.sh"),
            "#!/bin/sh\nsh -c \"i=0; while [ \\$i -lt $1 ]; do i=\\$((i+1)); done\"\necho spin.done:1\\|g\n",
        )
        .expect("write");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join("spin.sh"), std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let mut ratios = Vec::new();
        for (name, conf, small, big) in [
            // Large enough that the run's fixed cost (about 18 ms on the worker) is not most
            // of the smaller count.
            ("loop", "instances:\n  - work: {}\n", 1_000_000, 4_000_000),
            ("spin", "instances:\n  - command: ['{}']\n", 20_000, 80_000),
        ] {
            std::fs::write(
                dir.join(format!("{name}.yaml")),
                conf.replace("{}", &small.to_string()),
            )
            .expect("write");
            let a = median(&counted(&dir, name));
            std::fs::write(
                dir.join(format!("{name}.yaml")),
                conf.replace("{}", &big.to_string()),
            )
            .expect("write");
            let b = median(&counted(&dir, name));
            assert!(a > 0.0 && b > 2.0 * a, "{name}: {a} then {b}");
            ratios.push(format!("{name} {:.2}", b / a));
        }
        let cpu = counted(&dir, "cpu");
        assert!(cpu.len() == 5 && cpu.iter().all(|n| *n > 0.0), "{cpu:?}");
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!(
            "measured: 4× the work, task clock counted ×{}",
            ratios.join(", ×")
        );
    }
}
