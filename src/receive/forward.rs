//! `--forward URL`: each stored upload posted on to DataKit, a Datadog Agent or Datadog's
//! intake, in the current form whatever form it came in: its attachments as sent, event.json
//! regenerated with agentprof.yaml's tags merged into `tags_profiler`, the client's headers
//! kept (and `DD-API-KEY` from agentprof.yaml when one is set, never spooled). Forwarding
//! runs beside storing: each upload is written to the forward spool (bounded) and sent from
//! it by a thread of its own, oldest first, retried while the target fails; so a slow or
//! stalled target delays nothing but its own deliveries, and what is not sent at a stop is
//! sent after the next start.

use super::form::{Form, Kind, Upload};
use crate::pull::upload::UploadError;

pub struct Forwarder {
    sender: crate::pull::upload::Background,
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
    pub fn new(
        url: reqwest::Url,
        spool: std::path::PathBuf,
        tags: Vec<String>,
        api_key: Option<String>,
    ) -> Result<Forwarder, UploadError> {
        let up = crate::pull::upload::Uploader::new(
            url,
            spool,
            256 << 20,
            std::time::Duration::from_secs(30),
        )?;
        let secret = api_key
            .map(|k| vec![("DD-API-KEY".to_string(), k)])
            .unwrap_or_default();
        let sender = crate::pull::upload::Background::start(up.with_secret_headers(secret))
            .map_err(UploadError::Thread)?;
        Ok(Forwarder { sender, tags })
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

    /// Puts the upload in the forward spool for the sending thread; Err when it could not
    /// be written there.
    pub fn forward(&self, up: &Upload, headers: &[(String, String)]) -> Result<(), UploadError> {
        let (body, ctype) = self.body(up);
        self.sender.put(&body, &ctype, headers)
    }

    /// Uploads waiting in the spool.
    pub fn pending(&self) -> usize {
        self.sender.spool.pending()
    }

    /// Sent, retried, refused for good, dropped from a full spool.
    pub fn stats(&self) -> &crate::pull::upload::UploadStats {
        &self.sender.stats
    }

    /// Stops the sending thread (the upload being sent gets `grace`); what is left waits in
    /// the spool. Returns how many.
    pub fn stop(&self, grace: std::time::Duration) -> usize {
        self.sender.stop(grace)
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
