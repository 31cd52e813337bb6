//! `--forward URL`: each stored upload posted on to DataKit, a Datadog Agent or Datadog's
//! intake, in the current form whatever form it came in: its attachments as sent, event.json
//! regenerated with agentprof.yaml's tags merged into `tags_profiler`, the client's headers
//! kept (and `DD-API-KEY` from agentprof.yaml when one is set, never spooled). Forwarding
//! runs beside storing: each upload is written to the forward spool (bounded) and sent from
//! it by a thread of its own, oldest first, retried while the target fails; so a slow or
//! stalled target delays nothing but its own deliveries, and what is not sent at a stop is
//! sent after the next start.

use super::form::{Form, Kind, Upload};
use crate::pull::upload::{Background, Format, UploadError};

pub struct Forwarder {
    /// `--forward` (dd-trace's form) and `--forward-otlp` (OTLP profiles), each with its
    /// spool and sending thread.
    senders: Vec<Background>,
    tags: Vec<String>,
}

/// A form-data name or file name as it goes in a part's header: `"`, CR and LF percent-
/// encoded (as browsers send them), so a name cannot end its quotes and add a field.
fn quoted(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '"' => out.push_str("%22"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if c.is_control() => out.push_str(&format!("%{:02X}", c as u32 & 0xff)),
            c => out.push(c),
        }
    }
    out
}

impl Forwarder {
    /// The forwarder of `url` (dd-trace's form, in `spool`) and `otlp` (in `spool/otlp`),
    /// each with 256 MiB of spool and `timeout` per request.
    pub fn new(
        url: Option<reqwest::Url>,
        otlp: Option<crate::pull::otlp::OtlpTarget>,
        spool: std::path::PathBuf,
        tags: Vec<String>,
        api_key: Option<String>,
        timeout: std::time::Duration,
    ) -> Result<Forwarder, UploadError> {
        let mut senders = Vec::new();
        if let Some(url) = url {
            let up = crate::pull::upload::Uploader::new(url, spool.clone(), 256 << 20, timeout)?;
            let secret = api_key
                .map(|k| vec![("DD-API-KEY".to_string(), k)])
                .unwrap_or_default();
            senders.push(
                Background::start(up.with_secret_headers(secret)).map_err(UploadError::Thread)?,
            );
        }
        if let Some(t) = otlp {
            let up =
                crate::pull::upload::Uploader::new(t.url, spool.join("otlp"), 256 << 20, timeout)?
                    .with_format(Format::Otlp {
                        original: t.original_payload,
                    })
                    .with_secret_headers(t.headers);
            senders.push(Background::start(up).map_err(UploadError::Thread)?);
        }
        Ok(Forwarder { senders, tags })
    }

    /// The upload as pull's uploader sends it (its profiles named `<type>.pprof`, the tags
    /// merged), for the OTLP export.
    fn as_pull(&self, up: &Upload) -> crate::pull::upload::Upload {
        let received = jiff::Timestamp::now();
        let start = up.start.unwrap_or(received);
        crate::pull::upload::Upload {
            attachments: up
                .attachments
                .iter()
                .filter(|a| a.kind == Kind::Pprof)
                .map(|a| (format!("{}.pprof", a.stem), a.data.to_vec()))
                .collect(),
            tags: self.merged_tags(up),
            start,
            end: up.end.unwrap_or(start),
            family: up.language(),
        }
    }

    fn merged_tags(&self, up: &Upload) -> Vec<String> {
        let mut tags = up.tags.clone();
        for t in &self.tags {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        tags
    }

    /// The upload as forwarded: the multipart body and its content type.
    pub fn body(&self, up: &Upload) -> (Vec<u8>, String) {
        let tags = self.merged_tags(up);
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
            let (name, file) = (quoted(name), quoted(file));
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

    /// Puts the upload in the forward spool for the sending thread, once per `key` (its
    /// digest): an upload stored again after a kill -9 is not forwarded again. Err when it
    /// could not be written there.
    pub fn forward(
        &self,
        up: &Upload,
        headers: &[(String, String)],
        key: &str,
    ) -> Result<(), UploadError> {
        // A POST cut by a kill -9 after the target took it is sent again at the next start
        // (nothing can tell it arrived); the key lets a target that honours it keep one.
        let mut headers = headers.to_vec();
        headers.push(("Idempotency-Key".to_string(), key.to_string()));
        let headers = &headers[..];
        for s in &self.senders {
            match s.format {
                Format::DdTrace => {
                    let (body, ctype) = self.body(up);
                    s.put(Some(key), &body, &ctype, headers)?;
                }
                Format::Otlp { .. } => {
                    if let Some(e) = self.as_pull(up).encode(s.format)? {
                        s.put(Some(key), &e.body, &e.content_type, &e.headers)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Uploads waiting in the spools.
    pub fn pending(&self) -> usize {
        self.senders.iter().map(|s| s.spool.pending()).sum()
    }

    /// Each target's name (`ddtrace`, `otlp`) and its counts: sent, retried, refused for
    /// good, dropped from a full spool.
    pub fn stats(&self) -> Vec<(&'static str, &crate::pull::upload::UploadStats)> {
        self.senders
            .iter()
            .map(|s| {
                let name = match s.format {
                    Format::DdTrace => "ddtrace",
                    Format::Otlp { .. } => "otlp",
                };
                (name, &*s.stats)
            })
            .collect()
    }

    /// Stops the sending threads (the upload each is sending gets `grace`); what is left
    /// waits in the spools. Returns how many.
    pub fn stop(&self, grace: std::time::Duration) -> usize {
        let deadline = std::time::Instant::now() + grace;
        self.senders.iter().for_each(Background::ask_stop);
        self.senders.iter().map(|s| s.stop_by(deadline)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_cannot_end_its_quotes() {
        assert_eq!(quoted("cpu.pprof"), "cpu.pprof");
        assert_eq!(
            quoted("cpu\"; name=\"event.pprof"),
            "cpu%22; name=%22event.pprof"
        );
        assert_eq!(quoted("a\r\nb"), "a%0D%0Ab");
    }
}
