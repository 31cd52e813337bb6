//! `metrics_file:` one JSON document per line: every metric, service check and event, tagged
//! with what it is (`"kind": "metric"`), appended as it comes.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::json;

use super::{Batch, Forwarder};

pub struct JsonLines {
    name: String,
    out: BufWriter<Box<dyn Write + Send>>,
    lines: u64,
    failed: u64,
}

impl JsonLines {
    /// Appends to `path`.
    pub fn open(path: &Path) -> std::io::Result<JsonLines> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(JsonLines {
            name: format!("metrics_file {}", path.display()),
            out: BufWriter::new(Box::new(file)),
            lines: 0,
            failed: 0,
        })
    }

    /// Writes to stdout: the forwarder when no other is configured.
    pub fn stdout() -> JsonLines {
        JsonLines {
            name: "stdout".into(),
            out: BufWriter::new(Box::new(std::io::stdout())),
            lines: 0,
            failed: 0,
        }
    }
}

impl Forwarder for JsonLines {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn send(&mut self, batch: &Batch<'_>) -> std::io::Result<()> {
        let n = (batch.metrics.len() + batch.service_checks.len() + batch.events.len()) as u64;
        match self.write(batch) {
            Ok(()) => {
                self.lines += n;
                Ok(())
            }
            Err(e) => {
                self.failed += n;
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn delivery(&self) -> super::Delivery {
        super::Delivery {
            forwarder: self.name.clone(),
            unit: "lines",
            sent: self.lines,
            failed: self.failed,
            ..Default::default()
        }
    }
}

impl JsonLines {
    fn write(&mut self, batch: &Batch<'_>) -> std::io::Result<()> {
        for m in batch.metrics {
            serde_json::to_writer(&mut self.out, &json!({"kind": "metric", "metric": m}))?;
            self.out.write_all(b"\n")?;
        }
        for sc in batch.service_checks {
            serde_json::to_writer(
                &mut self.out,
                &json!({"kind": "service_check", "service_check": sc}),
            )?;
            self.out.write_all(b"\n")?;
        }
        for e in batch.events {
            serde_json::to_writer(&mut self.out, &json!({"kind": "event", "event": e}))?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }
}
