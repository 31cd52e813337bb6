//! Developer mode's own outputs: the agent sampled at 99 Hz, its top calls and the Python
//! checks' in collector.log, its whole-run flamegraph and pprof file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::logfile::LogSink;
use crate::duration::unix_now;
use crate::render::collector_log;

/// Developer mode samples the whole agent process (every thread) at 99 Hz.
pub(super) struct DevProfile {
    pub(super) sampler: Option<crate::profile::Sampler>,
    pub(super) profile: Option<crate::profile::CallProfile>,
}

impl DevProfile {
    pub(super) fn start(developer_mode: bool) -> DevProfile {
        let mut dev = DevProfile {
            sampler: None,
            profile: None,
        };
        if !developer_mode {
            return dev;
        }
        let mut s = crate::profile::Sampler::new_process(AGENT_HZ);
        match s.start_process() {
            Ok(()) => {
                dev.sampler = Some(s);
                dev.profile = Some(crate::profile::CallProfile::new(
                    crate::profile::ProfileKind::Cpu,
                    AGENT_HZ,
                    (unix_now() * 1e9) as i64,
                ));
            }
            Err(e) => eprintln!("agentprof: warning: the agent is not sampled: {e:#}"),
        }
        dev
    }
}

/// Sampling frequency of the agent's own profile, as Go's default (not a divisor of timers).
pub(super) const AGENT_HZ: u32 = 99;

/// The agent's top 20 functions by cumulative samples, `go tool pprof -top -cum` style.
pub(super) fn agent_top_calls(p: &crate::profile::CallProfile) -> String {
    let t = crate::profile::call_top(p, 20);
    let ms = |n: u64| n as f64 * p.period_ns as f64 / 1e6;
    let pct = |n: u64| n as f64 / t.total_samples.max(1) as f64 * 100.0;
    let origin = format!("collector(profile.rs:{})", line!());
    let mut out = collector_log::line(
        unix_now(),
        "DEBUG",
        &origin,
        &format!(
            "agent: {} samples at {AGENT_HZ} Hz ({:.1}ms of CPU), top {} of {} functions by cumulative time; {} more samples went to naming the sampled functions (not shown)",
            t.total_samples,
            ms(t.total_samples),
            t.rows.len(),
            t.functions,
            crate::profile::Sampler::not_sampled()
        ),
    );
    out.push_str("      flat  flat%   sum%        cum   cum%\n");
    let mut sum = 0;
    for r in &t.rows {
        sum += r.flat;
        out.push_str(&format!(
            "{:>8.2}ms {:>5.2}% {:>5.2}% {:>8.2}ms {:>5.2}%  {}\n",
            ms(r.flat),
            pct(r.flat),
            pct(sum),
            ms(r.cum),
            pct(r.cum),
            r.function
        ));
    }
    out
}

/// Writes `agent-TIME.svg` and `.pb.gz` into `dir` (TIME in RFC 3339, as `pull` names its
/// files); the paths written.
pub(super) fn write_agent_profile(dir: &Path, p: &crate::profile::CallProfile) -> Vec<PathBuf> {
    if p.total_samples() == 0 {
        eprintln!("agentprof: the agent used too little CPU to be sampled: no profile written");
        return Vec::new();
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("agentprof: cannot create {}: {e}", dir.display());
        return Vec::new();
    }
    let stem = format!("agent-{}", crate::duration::file_stamp());
    let mut written = Vec::new();
    match crate::profile::encode_gzip(p)
        .and_then(|b| crate::files::write_new(dir, &stem, "pb.gz", &b))
    {
        Ok(pb) => written.push(pb),
        Err(e) => eprintln!(
            "agentprof: cannot write {stem}.pb.gz in {}: {e}",
            dir.display()
        ),
    }
    let mut svg_bytes = Vec::new();
    let drawn = crate::profile::write_flamegraph(p, "agentprof start — the agent", &mut svg_bytes)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            crate::files::write_new(dir, &stem, "svg", &svg_bytes).map_err(|e| e.to_string())
        });
    match drawn {
        Ok(svg) => written.push(svg),
        Err(e) => eprintln!(
            "agentprof: cannot write {stem}.svg in {}: {e}",
            dir.display()
        ),
    }
    for w in &written {
        eprintln!("agentprof: wrote {}", w.display());
    }
    written
}

/// Every `collector_profile_interval` loops: the top 20 functions of each Python check since
/// it started, by cumulative wall time with CPU beside, from its sampled stacks. A check busy
/// running right now is logged at the next interval.
pub(super) fn log_top_calls(
    log: &mut LogSink,
    hosts: &[(String, Arc<std::sync::Mutex<crate::checks::PythonHost>>)],
) {
    for (name, host) in hosts {
        let Ok(h) = host.try_lock() else { continue };
        let Some(samples) = h.samples().filter(|s| !s.is_empty()) else {
            continue;
        };
        let total = samples.total();
        let origin = format!("collector(profile.rs:{})", line!());
        log.write(&collector_log::line(
            unix_now(),
            "DEBUG",
            &origin,
            &format!(
                "{name}: top calls: {} samples at {} Hz over {} runs, {:.1}ms wall, {:.1}ms CPU ({})",
                total.count,
                samples.frequency_hz,
                samples.runs,
                total.wall_ns as f64 / 1e6,
                total.cpu_ns as f64 / 1e6,
                samples.method
            ),
        ));
        log.write(&sampled_top(samples, 20));
    }
}

/// `  cum wall  cum wall%   cum cpu  function (file:line)` rows, as go tool pprof -top -cum
/// lays its columns out.
fn sampled_top(samples: &crate::checks::Samples, n: usize) -> String {
    let total = samples.total();
    let pct = |v: u64, of: u64| v as f64 / of.max(1) as f64 * 100.0;
    let mut out = String::from("  cum wall  cum wall%    cum cpu   cum cpu%  function\n");
    for r in samples.top(n).0 {
        out.push_str(&format!(
            "{:>8.2}ms {:>9.2}% {:>8.2}ms {:>9.2}%  {} ({}:{})\n",
            r.cum_wall_ns as f64 / 1e6,
            pct(r.cum_wall_ns, total.wall_ns),
            r.cum_cpu_ns as f64 / 1e6,
            pct(r.cum_cpu_ns, total.cpu_ns),
            crate::redact::printable(&r.function),
            r.file,
            r.line
        ));
    }
    out
}

/// Writes each Python check's sampled profile, `python-CHECK-TIME.pb.gz`, into `dir` (a
/// check with no samples, outside developer mode, writes nothing); the paths written.
pub(super) fn write_python_profiles(
    dir: &Path,
    hosts: &[(String, Arc<std::sync::Mutex<crate::checks::PythonHost>>)],
) -> Vec<PathBuf> {
    let mut written = Vec::new();
    for (name, host) in hosts {
        // A check still in its run holds its host (a stop does not wait for a run): its
        // profile is not written rather than the stop waiting.
        let Ok(h) = host.try_lock() else {
            eprintln!("agentprof: {name} is still running: its Python profile is not written");
            continue;
        };
        let Some(proto) = h.samples().filter(|s| !s.is_empty()).map(|s| s.to_proto()) else {
            continue;
        };
        drop(h);
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("agentprof: cannot create {}: {e}", dir.display());
            return written;
        }
        let stem = format!("python-{name}-{}", crate::duration::file_stamp());
        let bytes = crate::pprof::gzip_fast(&prost::Message::encode_to_vec(&proto));
        match crate::files::write_new(dir, &stem, "pb.gz", &bytes) {
            Ok(path) => {
                eprintln!("agentprof: wrote {}", path.display());
                written.push(path);
            }
            Err(e) => eprintln!(
                "agentprof: cannot write {stem}.pb.gz in {}: {e}",
                dir.display()
            ),
        }
    }
    written
}
