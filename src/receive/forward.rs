//! `--forward URL`: each stored upload posted on to DataKit, a Datadog Agent or Datadog's
//! intake, in the current form whatever form it came in: its attachments as sent, event.json
//! regenerated with agentprof.yaml's tags merged into `tags_profiler`, the client's headers
//! kept (and `DD-API-KEY` from agentprof.yaml when one is set, never spooled). 5xx answers
//! and network errors are retried; what still fails waits in the spool (bounded) and is sent
//! first next time, also after a restart.

use super::form::{Form, Kind, Upload};

pub struct Forwarder {
    uploader: crate::pull::upload::Uploader,
    tags: Vec<String>,
    /// After a failure the target is left alone for a while (5 s, doubling to 60 s): uploads
    /// go straight to the spool instead of each waiting out the retries.
    down_until: Option<std::time::Instant>,
    pause: std::time::Duration,
}

const FIRST_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);
const MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(60);

impl Forwarder {
    pub fn new(
        url: reqwest::Url,
        spool: std::path::PathBuf,
        tags: Vec<String>,
        api_key: Option<String>,
    ) -> Result<Forwarder, String> {
        let up = crate::pull::upload::Uploader::new(
            url,
            spool,
            256 << 20,
            std::time::Duration::from_secs(30),
        )?;
        let secret = api_key
            .map(|k| vec![("DD-API-KEY".to_string(), k)])
            .unwrap_or_default();
        Ok(Forwarder {
            uploader: up.with_secret_headers(secret),
            tags,
            down_until: None,
            pause: FIRST_PAUSE,
        })
    }

    /// The upload as forwarded: the multipart body and its content type.
    pub fn body(&self, up: &Upload) -> (Vec<u8>, String) {
        let mut tags = up.tags.clone();
        for t in &self.tags {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        // The older form's data[i] parts are named as the current form names them.
        let name = |a: &super::form::Attachment| match (up.form, &a.kind) {
            (Form::Legacy, Kind::Pprof) => format!("{}.pprof", a.stem),
            _ => a.name.clone(),
        };
        let names: Vec<String> = up.attachments.iter().map(name).collect();
        let mut event = match &up.event {
            Some(serde_json::Value::Object(m)) => m.clone(),
            _ => serde_json::Map::new(),
        };
        event.insert("attachments".into(), names.clone().into());
        event.insert("tags_profiler".into(), tags.join(",").into());
        let ts = |t: Option<jiff::Timestamp>| t.map(crate::pull::upload::rfc3339_nano);
        if let Some(s) = ts(up.start) {
            event.insert("start".into(), s.into());
        }
        if let Some(e) = ts(up.end) {
            event.insert("end".into(), e.into());
        }
        event
            .entry("family")
            .or_insert_with(|| up.language().into());
        event.entry("version").or_insert_with(|| "4".into());
        let boundary = format!(
            "agentprof-forward-{:016x}",
            jiff::Timestamp::now().as_nanosecond() as u64
        );
        let mut body = Vec::new();
        let mut part = |name: &str, file: &str, ctype: &str, bytes: &[u8]| {
            body.extend(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\nContent-Type: {ctype}\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend(bytes);
            body.extend(b"\r\n");
        };
        for (a, n) in up.attachments.iter().zip(&names) {
            part(n, n, "application/octet-stream", &a.data);
        }
        let ev = serde_json::Value::Object(event).to_string();
        part("event", "event.json", "application/json", ev.as_bytes());
        body.extend(format!("--{boundary}--\r\n").as_bytes());
        (body, format!("multipart/form-data; boundary={boundary}"))
    }

    /// Forwards (after what waits in the spool); Err says why it was spooled instead.
    pub fn forward(&mut self, up: &Upload, headers: &[(String, String)]) -> Result<(), String> {
        let (body, ctype) = self.body(up);
        let now = std::time::Instant::now();
        if self.down_until.is_some_and(|t| now < t) {
            self.uploader.spool_body(&body, &ctype, headers);
            return Err("the forward target failed just before; spooled".into());
        }
        let r = self.uploader.send_body(&body, &ctype, headers);
        match &r {
            Ok(()) => {
                self.down_until = None;
                self.pause = FIRST_PAUSE;
            }
            Err(_) => {
                self.down_until = Some(std::time::Instant::now() + self.pause);
                self.pause = (self.pause * 2).min(MAX_PAUSE);
            }
        }
        r
    }

    /// Sends what the spool holds (at stop, and when the target may be back).
    pub fn flush(&mut self) {
        if self
            .down_until
            .is_none_or(|t| std::time::Instant::now() >= t)
        {
            self.uploader.flush_spool();
        }
    }

    /// Uploads waiting in the spool.
    pub fn pending(&self) -> usize {
        self.uploader.pending()
    }
}
