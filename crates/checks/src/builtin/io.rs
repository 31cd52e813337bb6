//! `io`: per-device rates, latency and utilisation from /proc/diskstats, with iostat -x's
//! formulas, as the Agent's io check reports them. Values need the previous run's counters.

use std::collections::HashMap;
use std::time::Instant;

use regex::Regex;
use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;

use super::{Builtin, regex_list};

pub const OPTIONS: &[&str] = &["device_include", "device_exclude", "device_blacklist_re"];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct IoInstance {
    device_include: Vec<String>,
    device_exclude: Vec<String>,
    /// The Agent's older name for one exclusion regex.
    device_blacklist_re: Option<String>,
}

pub struct IoCheck {
    include: Option<Regex>,
    exclude: Option<Regex>,
    last: Option<(Instant, HashMap<String, procfs::DiskStat>)>,
}

impl Builtin for IoCheck {
    type Instance = IoInstance;
    fn new(opts: IoInstance) -> Result<Self, Error> {
        let mut exclude = opts.device_exclude.clone();
        exclude.extend(opts.device_blacklist_re.clone());
        Ok(IoCheck {
            include: regex_list("device_include", &opts.device_include, false)?,
            exclude: regex_list("device_exclude", &exclude, false)?,
            last: None,
        })
    }
}

impl Check for IoCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        let now = Instant::now();
        let stats: HashMap<String, procfs::DiskStat> = procfs::diskstats()?
            .into_iter()
            .filter(|d| {
                self.include.as_ref().is_none_or(|r| r.is_match(&d.name))
                    && !self.exclude.as_ref().is_some_and(|r| r.is_match(&d.name))
            })
            .map(|d| (d.name.clone(), d))
            .collect();
        sink.log(crate::metrics::level::DEBUG, || {
            let mut names: Vec<&str> = stats.keys().map(String::as_str).collect();
            names.sort_unstable();
            format!("devices reported: {}", names.join(", "))
        });
        match &self.last {
            None => sink.awaiting_previous(14 * stats.len() as u32),
            Some((then, prev)) => {
                let dt = now.duration_since(*then).as_secs_f64();
                if dt > 0.0 {
                    for (name, cur) in &stats {
                        if let Some(old) = prev.get(name) {
                            emit(sink, name, old, cur, dt);
                        }
                    }
                }
            }
        }
        self.last = Some((now, stats));
        Ok(())
    }
}

fn emit(sink: &mut Sink, name: &str, old: &procfs::DiskStat, cur: &procfs::DiskStat, dt: f64) {
    let d = |a: u64, b: u64| a.wrapping_sub(b) as f64;
    let reads = d(cur.reads, old.reads);
    let writes = d(cur.writes, old.writes);
    let ios = reads + writes;
    let sectors_r = d(cur.sectors_read, old.sectors_read);
    let sectors_w = d(cur.sectors_written, old.sectors_written);
    let t_read = d(cur.time_reading, old.time_reading);
    let t_write = d(cur.time_writing, old.time_writing);
    let busy_ms = d(cur.time_in_progress, old.time_in_progress);
    let weighted_ms = d(cur.weighted_time_in_progress, old.weighted_time_in_progress);
    let per = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
    let t = [format!("device:{name}"), format!("device_name:{name}")];
    sink.gauge("system.io.r_s", reads / dt, &t);
    sink.gauge("system.io.w_s", writes / dt, &t);
    sink.gauge("system.io.rrqm_s", d(cur.merged, old.merged) / dt, &t);
    sink.gauge(
        "system.io.wrqm_s",
        d(cur.writes_merged, old.writes_merged) / dt,
        &t,
    );
    sink.gauge("system.io.rkb_s", sectors_r * 512.0 / 1024.0 / dt, &t);
    sink.gauge("system.io.wkb_s", sectors_w * 512.0 / 1024.0 / dt, &t);
    sink.gauge("system.io.avg_rq_sz", per(sectors_r + sectors_w, ios), &t);
    sink.gauge("system.io.avg_q_sz", weighted_ms / 1000.0 / dt, &t);
    sink.gauge("system.io.await", per(t_read + t_write, ios), &t);
    sink.gauge("system.io.r_await", per(t_read, reads), &t);
    sink.gauge("system.io.w_await", per(t_write, writes), &t);
    sink.gauge("system.io.svctm", per(busy_ms, ios), &t);
    sink.gauge(
        "system.io.util",
        (busy_ms / (dt * 1000.0) * 100.0).min(100.0),
        &t,
    );
    sink.gauge("system.io.queue_length", cur.in_progress as f64, &t);
}
