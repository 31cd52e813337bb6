//! The block the Datadog Agent's developer mode wrote to collector.log for each check run, line
//! for line, so habits (and greps) built on that log keep working.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use crate::profile::RunRecord;

fn figure(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| v.to_string())
}

/// `YYYY-MM-DD HH:MM:SS TZ`, local time, as the Agent's log lines start.
pub fn timestamp(unix_s: f64) -> String {
    let ts = jiff::Timestamp::from_nanosecond((unix_s * 1e9) as i128)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    ts.to_zoned(jiff::tz::TimeZone::system())
        .strftime("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// One log line as the Agent's collector.log has them:
/// `YYYY-MM-DD HH:MM:SS TZ | LEVEL | module(file:line) | message`.
pub fn line(unix_s: f64, level: &str, origin: &str, message: &str) -> String {
    format!("{} | {level} | {origin} | {message}\n", timestamp(unix_s))
}

/// The `AGENT STATS:` block: one `( 'name', timestamp, value, { 'hostname': …, 'type': … })`
/// tuple per agent metric, as the Agent printed them.
pub fn agent_stats(unix_s: f64, origin: &str, metrics: &[crate::metrics::Metric]) -> String {
    let mut s = line(unix_s, "INFO", origin, "");
    s.push_str("AGENT STATS:\n[ ");
    for (i, m) in metrics.iter().enumerate() {
        if i > 0 {
            s.push_str(",\n  ");
        }
        let _ = write!(
            s,
            "( '{}', {}, {}, {{ 'hostname': '{}', 'type': '{}'}})",
            m.metric,
            m.timestamp as i64,
            m.value,
            m.host,
            m.mtype.as_str()
        );
    }
    s.push_str("\n]\n");
    s
}

/// The run's memory block, its header naming where it comes from (`check` for
/// `agentprof check`, `module(file:line)` for the agent).
pub fn block_from(r: &RunRecord, origin: &str) -> String {
    let c = &r.cost;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} | INFO | {origin} | {}",
        timestamp(r.started_at),
        r.check
    );
    let _ = writeln!(s, "Memory Before (RSS): {}", figure(c.rss_before));
    let _ = writeln!(s, "Memory After (RSS): {}", figure(c.rss_after));
    let _ = writeln!(s, "Difference (RSS): {}", figure(c.rss_diff()));
    let _ = writeln!(s, "Memory Before (VMS): {}", figure(c.vms_before));
    let _ = writeln!(s, "Memory After (VMS): {}", figure(c.vms_after));
    let _ = writeln!(s, "Difference (VMS): {}", figure(c.vms_diff()));
    s
}

/// Appends the blocks of `records` to `path`, creating it if needed.
pub fn block(r: &RunRecord) -> String {
    block_from(r, "check")
}

pub fn append(path: &Path, records: &[RunRecord]) -> std::io::Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&block(r));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Flushed;
    use crate::profile::RunCost;

    #[test]
    fn block_matches_the_agent_lines() {
        let cost = RunCost {
            rss_before: Some(18685952),
            rss_after: Some(18722816),
            vms_before: Some(2533859328),
            vms_after: Some(2534907904),
            ..Default::default()
        };
        let r = RunRecord::new("disk", 0, 1, 1435004705.0, Ok(()), cost, Flushed::default());
        let b = block(&r);
        let lines: Vec<&str> = b.lines().collect();
        assert!(lines[0].ends_with(" | INFO | check | disk"), "{}", lines[0]);
        assert_eq!(
            &lines[1..],
            [
                "Memory Before (RSS): 18685952",
                "Memory After (RSS): 18722816",
                "Difference (RSS): 36864",
                "Memory Before (VMS): 2533859328",
                "Memory After (VMS): 2534907904",
                "Difference (VMS): 1048576",
            ]
        );
    }
}
