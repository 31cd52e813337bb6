//! The log settings of agentprof.yaml: `log_level` and sizes such as `log_file_max_size`.

use crate::Error;

/// `log_level`: lines below it are not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn parse(text: &str) -> Result<Level, Error> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "debug" | "trace" => Level::Debug,
            "info" => Level::Info,
            "warn" | "warning" => Level::Warning,
            "error" | "critical" => Level::Error,
            other => return Err(Error::LogLevel(other.to_string())),
        })
    }
}

/// `10MB`, `512KiB`, `1048576` (bytes).
pub fn parse_size(text: &str) -> Result<u64, Error> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| Error::SizeNotANumber(text.to_string()))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "kib" | "k" => 1 << 10,
        "mb" | "mib" | "m" => 1 << 20,
        "gb" | "gib" | "g" => 1 << 30,
        other => {
            return Err(Error::SizeUnit {
                text: text.to_string(),
                unit: other.to_string(),
            });
        }
    };
    n.checked_mul(scale)
        .filter(|&v| v > 0)
        .ok_or_else(|| Error::SizeUnusable(text.to_string()))
}
