//! collector.log for `agentprof start`: appended to, rotated by size as the Agent's log is
//! (`log_file_max_size`, `log_file_max_rolls`), or written to stdout with `-`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::config::Level;

pub enum LogSink {
    File(RotatingFile),
    Stdout,
    None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_size;

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
