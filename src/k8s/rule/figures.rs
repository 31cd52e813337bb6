//! A rule's figures checked: its normal and emergency thresholds, and its timings (the
//! recording, the timeout, the window, the cooldown and their relations).

use std::time::Duration;

use crate::error::UsageError;

use super::{At, RawQuantity, RawRule, Thresholds, quantity, short};

/// The normal and emergency thresholds (percentages of the limit, millicores, bytes); an
/// emergency below its normal threshold is refused.
pub(super) fn thresholds(
    at: &At<'_>,
    r: &mut RawRule,
) -> Result<(Thresholds, Thresholds), UsageError> {
    let pct = |key: &str, v: Option<f64>| -> Result<Option<f64>, UsageError> {
        match v {
            Some(p) if !(p > 0.0 && p <= 100.0) => Err(at.err(
                key,
                format!("{p} is not a percentage above 0 and at most 100"),
            )),
            other => Ok(other),
        }
    };
    let qty = |key: &str, v: Option<RawQuantity>, scale: f64| -> Result<Option<f64>, UsageError> {
        let v = match v {
            None => return Ok(None),
            Some(RawQuantity::Number(n)) => n,
            Some(RawQuantity::Text(t)) => quantity(&t).map_err(|e| at.err(key, e))? * scale,
        };
        if v > 0.0 && v.is_finite() {
            Ok(Some(v))
        } else {
            Err(at.err(key, format!("{v} must be above 0")))
        }
    };
    // A CPU quantity string is in cores (`500m` is half a core); a bare number is millicores.
    let normal = Thresholds {
        cpu_pct: pct("cpu_usage_base_limit", r.cpu_usage_base_limit)?,
        mem_pct: pct("mem_usage_base_limit", r.mem_usage_base_limit)?,
        cpu_millicores: qty(
            "cpu_usage_millicores",
            r.cpu_usage_millicores.take(),
            1000.0,
        )?,
        mem_bytes: qty("mem_usage_bytes", r.mem_usage_bytes.take(), 1.0)?.map(|b| b as u64),
    };
    let emergency = Thresholds {
        cpu_pct: pct("cpu_emergency_base_limit", r.cpu_emergency_base_limit)?,
        mem_pct: pct("mem_emergency_base_limit", r.mem_emergency_base_limit)?,
        cpu_millicores: qty(
            "cpu_emergency_millicores",
            r.cpu_emergency_millicores.take(),
            1000.0,
        )?,
        mem_bytes: qty("mem_emergency_bytes", r.mem_emergency_bytes.take(), 1.0)?.map(|b| b as u64),
    };
    for (key, e, n) in [
        (
            "cpu_emergency_base_limit",
            emergency.cpu_pct,
            normal.cpu_pct,
        ),
        (
            "mem_emergency_base_limit",
            emergency.mem_pct,
            normal.mem_pct,
        ),
        (
            "cpu_emergency_millicores",
            emergency.cpu_millicores,
            normal.cpu_millicores,
        ),
        (
            "mem_emergency_bytes",
            emergency.mem_bytes.map(|b| b as f64),
            normal.mem_bytes.map(|b| b as f64),
        ),
    ] {
        if let (Some(e), Some(n)) = (e, n)
            && e < n
        {
            return Err(at.err(
                key,
                format!("{e} is below the normal threshold {n}: an emergency is the higher one"),
            ));
        }
    }
    Ok((normal, emergency))
}

/// How long recordings, requests, the monitor's window and the cooldown take.
pub(super) struct Timings {
    pub(super) profile_duration: Duration,
    pub(super) emergency_duration: Duration,
    pub(super) request_timeout: Duration,
    pub(super) monitor_interval: Duration,
    pub(super) trigger_window: Duration,
    pub(super) cooldown: Duration,
}

/// The rule's durations; with a CPU recording in it (`cpu`), the request timeout must
/// outlast the longest one.
pub(super) fn timings(at: &At<'_>, r: &RawRule, cpu: bool) -> Result<Timings, UsageError> {
    let s = Duration::from_secs;
    let profile_duration = at.duration("profile_duration", &r.profile_duration, s(10), s(1))?;
    let emergency_duration = at.duration(
        "emergency_duration",
        &r.emergency_duration,
        profile_duration,
        s(1),
    )?;
    let longest = if cpu {
        profile_duration.max(emergency_duration)
    } else {
        Duration::ZERO
    };
    let request_timeout = at.duration(
        "request_timeout",
        &r.request_timeout,
        (longest + s(5)).max(s(15)),
        Duration::from_millis(1),
    )?;
    if request_timeout <= longest {
        return Err(at.err(
            "request_timeout",
            format!(
                "{} must exceed the longest CPU recording, {}",
                short(request_timeout),
                short(longest)
            ),
        ));
    }
    let monitor_interval = at.duration("monitor_interval", &r.monitor_interval, s(10), s(1))?;
    let trigger_window =
        at.duration("trigger_window", &r.trigger_window, s(60), monitor_interval)?;
    let cooldown = at.duration("cooldown", &r.cooldown, s(600), Duration::ZERO)?;
    Ok(Timings {
        profile_duration,
        emergency_duration,
        request_timeout,
        monitor_interval,
        trigger_window,
        cooldown,
    })
}
