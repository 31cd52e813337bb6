//! collector.log for `agentprof start`: appended to, rotated by size as the Agent's log is
//! (`log_file_max_size`, `log_file_max_rolls`), or written to stdout with `-`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub enum LogSink {
    File(RotatingFile),
    Stdout,
    None,
}

/// `log_level`: lines below it are not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn parse(text: &str) -> Result<Level, String> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "debug" | "trace" => Level::Debug,
            "info" => Level::Info,
            "warn" | "warning" => Level::Warning,
            "error" | "critical" => Level::Error,
            other => return Err(format!("`{other}` is not debug, info, warning or error")),
        })
    }
}

impl LogSink {
    pub fn write(&mut self, text: &str) {
        match self {
            LogSink::File(f) => f.write(text),
            LogSink::Stdout => {
                let _ = std::io::stdout().write_all(text.as_bytes());
            }
            LogSink::None => {}
        }
    }
}

pub struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    max_size: u64,
    rolls: u32,
}

fn roll_name(path: &Path, i: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{i}"));
    PathBuf::from(s)
}

impl RotatingFile {
    pub fn open(path: &Path, max_size: u64, rolls: u32) -> std::io::Result<RotatingFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            file,
            size,
            max_size,
            rolls,
        })
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        if self.rolls == 0 {
            self.file = OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(&self.path)?;
        } else {
            for i in (1..self.rolls).rev() {
                let from = roll_name(&self.path, i);
                if from.exists() {
                    std::fs::rename(&from, roll_name(&self.path, i + 1))?;
                }
            }
            std::fs::rename(&self.path, roll_name(&self.path, 1))?;
            self.file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
        }
        self.size = 0;
        Ok(())
    }

    pub fn write(&mut self, text: &str) {
        if self.size > 0
            && self.size + text.len() as u64 > self.max_size
            && let Err(e) = self.rotate()
        {
            eprintln!("agentprof: cannot rotate {}: {e}", self.path.display());
        }
        if self.file.write_all(text.as_bytes()).is_ok() {
            self.size += text.len() as u64;
        }
    }
}

/// `10MB`, `512KiB`, `1048576` (bytes).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 10MB)"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "kib" | "k" => 1 << 10,
        "mb" | "mib" | "m" => 1 << 20,
        "gb" | "gib" | "g" => 1 << 30,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use KB, MB or GB)"
            ));
        }
    };
    n.checked_mul(scale)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("`{text}` is not a usable size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_keeping_rolls() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("collector.log");
        let mut f = RotatingFile::open(&p, 100, 2).unwrap();
        for i in 0..10 {
            f.write(&format!("{i:040}\n"));
        }
        assert!(std::fs::metadata(&p).unwrap().len() <= 100);
        assert!(roll_name(&p, 1).exists() && roll_name(&p, 2).exists());
        assert!(!roll_name(&p, 3).exists());
        assert_eq!(parse_size("10MB").unwrap(), 10 << 20);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("lots").is_err());
    }
}
