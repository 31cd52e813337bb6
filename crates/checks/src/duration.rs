//! Durations as users type them: `500ms`, `1s`, `1.5s`, `2m`, `1h`; a bare number is in the
//! unit the caller names (milliseconds for `--pause`, seconds in check configs).

use std::time::Duration;

use crate::Error;

/// Parses `text`; a number without a unit is taken in `bare_unit_secs` seconds per unit.
pub fn parse(text: &str, bare_unit_secs: f64) -> Result<Duration, Error> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::DurationEmpty);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| Error::DurationNotANumber(text.to_string()))?;
    let scale = match unit.trim() {
        "" => bare_unit_secs,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(Error::DurationUnit {
                text: text.to_string(),
                unit: other.to_string(),
            });
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(Error::DurationTooLarge(text.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Now, in seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Now, in nanoseconds since the Unix epoch.
pub fn unix_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Now, in RFC 3339 to the second (UTC), as profile files are named: `cpu-2026-12-01T09:38:00Z`.
pub fn file_stamp() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Short human form: `850µs`, `12.3ms`, `1.50s`, `2m05s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.0}µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2}ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.2}s")
    } else {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_bare_numbers() {
        assert_eq!(parse("500", 1e-3).unwrap(), Duration::from_millis(500));
        assert_eq!(parse("1.5s", 1e-3).unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("2m", 1.0).unwrap(), Duration::from_secs(120));
        assert_eq!(parse("15", 1.0).unwrap(), Duration::from_secs(15));
        assert!(matches!(
            parse("fast", 1.0),
            Err(Error::DurationNotANumber(text)) if text == "fast"
        ));
        assert!(
            parse("5 parsecs", 1.0)
                .unwrap_err()
                .to_string()
                .contains("unknown unit `parsecs`")
        );
        assert!(parse("-1s", 1.0).is_err());
    }
}
