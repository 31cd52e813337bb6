//! Uploads in dd-trace-go's format (what DataKit's `/profiling/v1/input` and Datadog's intake
//! accept): one multipart/form-data POST per collection, a part per profile named as
//! dd-trace-go names them (`cpu.pprof`, `delta-heap.pprof`, …) and a last part `event`
//! (`event.json`, application/json) describing them. 5xx answers and network errors are
//! retried with backoff; what still fails is spooled to disk (bounded, oldest dropped first)
//! and sent before the next upload, so nothing is lost across restarts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;
use serde_json::json;

use super::fetch::redact;

/// Attempts per upload before it is spooled.
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The attachment name dd-trace-go gives a profile type.
pub fn attachment_name(kind: &str, delta: bool) -> String {
    match (kind, delta) {
        ("goroutine", _) => "goroutines.pprof".into(),
        (k, true) => format!("delta-{k}.pprof"),
        (k, false) => format!("{k}.pprof"),
    }
}

/// One collection's upload.
pub struct Upload {
    pub attachments: Vec<(String, Vec<u8>)>,
    /// `tags_profiler`: service, env, version, host, runtime:go, profile_seq and user tags.
    pub tags: Vec<String>,
    pub start: jiff::Timestamp,
    pub end: jiff::Timestamp,
}

impl Upload {
    pub fn event(&self) -> serde_json::Value {
        json!({
            "attachments": self.attachments.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "tags_profiler": self.tags.join(","),
            "start": rfc3339_nano(self.start),
            "end": rfc3339_nano(self.end),
            "family": "go",
            "version": "4",
        })
    }

    /// The multipart body and its content type.
    pub fn body(&self) -> (Vec<u8>, String) {
        let boundary = format!("agentprof-{:016x}", self.end.as_nanosecond() as u64);
        let mut body = Vec::new();
        for (name, bytes) in &self.attachments {
            body.extend(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend(bytes);
            body.extend(b"\r\n");
        }
        let event = serde_json::to_vec(&self.event()).unwrap_or_default();
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"event\"; filename=\"event.json\"\r\nContent-Type: application/json\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend(event);
        body.extend(format!("\r\n--{boundary}--\r\n").as_bytes());
        (body, format!("multipart/form-data; boundary={boundary}"))
    }
}

/// RFC 3339 with nanoseconds, UTC, as Go's time.RFC3339Nano (trailing zeros dropped).
pub fn rfc3339_nano(t: jiff::Timestamp) -> String {
    let s = t.strftime("%Y-%m-%dT%H:%M:%S%.f").to_string();
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}Z")
}

/// Sends uploads, spooling what cannot be delivered.
pub struct Uploader {
    client: reqwest::blocking::Client,
    url: Url,
    spool: PathBuf,
    spool_limit: u64,
    pub sent: u64,
    pub retried: u64,
    pub spooled: u64,
    /// Spooled uploads dropped to stay within the spool's size.
    pub dropped: u64,
    /// Headers of every request, never spooled (the intake's API key).
    secret_headers: Vec<(String, String)>,
}

impl Uploader {
    pub fn new(
        url: Url,
        spool: PathBuf,
        spool_limit: u64,
        timeout: Duration,
    ) -> Result<Uploader, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .user_agent(concat!("agentprof/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Uploader {
            client,
            url,
            spool,
            spool_limit,
            sent: 0,
            retried: 0,
            spooled: 0,
            dropped: 0,
            secret_headers: Vec::new(),
        })
    }

    /// Adds headers to every request (credentials: they are never written to the spool).
    pub fn with_secret_headers(mut self, h: Vec<(String, String)>) -> Uploader {
        self.secret_headers = h;
        self
    }

    /// POSTs with retries; Err says why the last attempt failed.
    fn post(
        &mut self,
        body: &[u8],
        content_type: &str,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let mut req = self
                .client
                .post(self.url.clone())
                .header(reqwest::header::CONTENT_TYPE, content_type);
            for (k, v) in headers.iter().chain(&self.secret_headers) {
                req = req.header(k.as_str(), v.as_str());
            }
            let res = req.body(body.to_vec()).send();
            let retry = match res {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) if r.status().is_server_error() || r.status().as_u16() == 429 => {
                    last = format!("HTTP {}", r.status());
                    true
                }
                Ok(r) => {
                    last = format!("HTTP {} (not retried)", r.status());
                    false
                }
                Err(e) => {
                    last = e.without_url().to_string();
                    true
                }
            };
            if !retry || attempt == ATTEMPTS {
                break;
            }
            self.retried += 1;
            std::thread::sleep(backoff);
            backoff *= 2;
        }
        Err(format!("{}: {last}", redact(&self.url)))
    }

    /// Sends what is spooled (oldest first), then `up`; spools `up` if it cannot be sent.
    pub fn send(&mut self, up: &Upload) -> Result<(), String> {
        let (body, ctype) = up.body();
        self.send_body(&body, &ctype, &[])
    }

    /// Sends what is spooled, then this body with its headers; spools it (headers too) if
    /// it cannot be sent.
    pub fn send_body(
        &mut self,
        body: &[u8],
        ctype: &str,
        headers: &[(String, String)],
    ) -> Result<(), String> {
        self.flush_spool();
        match self.post(body, ctype, headers) {
            Ok(()) => {
                self.sent += 1;
                Ok(())
            }
            Err(e) => {
                self.spool_put(body, ctype, headers);
                Err(e)
            }
        }
    }

    fn spooled_files(&self) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(&self.spool) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "upload"))
            .collect();
        files.sort();
        files
    }

    /// Sends spooled uploads until one fails.
    pub fn flush_spool(&mut self) {
        for f in self.spooled_files() {
            let Some((ctype, headers, body)) = read_spooled(&f) else {
                let _ = std::fs::remove_file(&f);
                continue;
            };
            if self.post(&body, &ctype, &headers).is_err() {
                return;
            }
            self.sent += 1;
            let _ = std::fs::remove_file(&f);
        }
    }

    /// Writes a body to the spool without trying to send it (the target is known down).
    pub fn spool_body(&mut self, body: &[u8], ctype: &str, headers: &[(String, String)]) {
        self.spool_put(body, ctype, headers);
    }

    fn spool_put(&mut self, body: &[u8], ctype: &str, headers: &[(String, String)]) {
        if let Err(e) = std::fs::create_dir_all(&self.spool) {
            eprintln!("agentprof: cannot spool to {}: {e}", self.spool.display());
            return;
        }
        let name = self.spool.join(format!(
            "{:020}.upload",
            jiff::Timestamp::now().as_nanosecond()
        ));
        // The first line: the content type alone, or (with headers) a JSON object of both.
        let head = if headers.is_empty() {
            ctype.to_string()
        } else {
            serde_json::json!({"content_type": ctype, "headers": headers}).to_string()
        };
        let mut data = Vec::with_capacity(body.len() + head.len() + 1);
        data.extend(head.as_bytes());
        data.push(b'\n');
        data.extend(body);
        if let Err(e) = std::fs::write(&name, &data) {
            eprintln!("agentprof: cannot spool to {}: {e}", name.display());
            return;
        }
        self.spooled += 1;
        // Oldest first out until the spool fits.
        let mut files = self.spooled_files();
        let size = |f: &Path| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let mut total: u64 = files.iter().map(|f| size(f)).sum();
        while total > self.spool_limit && files.len() > 1 {
            let f = files.remove(0);
            total -= size(&f);
            let _ = std::fs::remove_file(&f);
            self.dropped += 1;
        }
    }

    pub fn pending(&self) -> usize {
        self.spooled_files().len()
    }
}

type Spooled = (String, Vec<(String, String)>, Vec<u8>);

fn read_spooled(f: &Path) -> Option<Spooled> {
    let data = std::fs::read(f).ok()?;
    let nl = data.iter().position(|&b| b == b'\n')?;
    let head = String::from_utf8(data[..nl].to_vec()).ok()?;
    let (ctype, headers) = if head.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(&head).ok()?;
        (
            v["content_type"].as_str()?.to_string(),
            serde_json::from_value(v["headers"].clone()).ok()?,
        )
    } else {
        (head, Vec::new())
    };
    Some((ctype, headers, data[nl + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_event_follow_dd_trace_go() {
        assert_eq!(attachment_name("cpu", false), "cpu.pprof");
        assert_eq!(attachment_name("heap", true), "delta-heap.pprof");
        assert_eq!(attachment_name("goroutine", false), "goroutines.pprof");
        let t = jiff::Timestamp::from_nanosecond(1_700_000_000_123_400_000).expect("ts");
        assert_eq!(rfc3339_nano(t), "2023-11-14T22:13:20.1234Z");
        let up = Upload {
            attachments: vec![("cpu.pprof".into(), vec![1, 2, 3])],
            tags: vec!["service:a".into(), "runtime:go".into()],
            start: t,
            end: t,
        };
        let ev = up.event();
        assert_eq!(ev["attachments"][0], "cpu.pprof");
        assert_eq!(ev["tags_profiler"], "service:a,runtime:go");
        assert_eq!(
            (ev["family"].as_str(), ev["version"].as_str()),
            (Some("go"), Some("4"))
        );
        let (body, ctype) = up.body();
        let text = String::from_utf8_lossy(&body);
        let boundary = ctype.split("boundary=").nth(1).expect("boundary");
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
        assert!(
            text.contains(
                "name=\"event\"; filename=\"event.json\"\r\nContent-Type: application/json"
            )
        );
    }
}
