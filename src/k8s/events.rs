//! What `agentprof k8s` says as it goes: one event a line, JSON with `--json` (docs/json.md),
//! words on stderr otherwise.

/// One event: a JSON line on stdout with `--json`, else a line on stderr. A closed stdout or
/// stderr (the reader went away) loses the line, never the collector.
pub(super) fn log(json: bool, event: &str, fields: serde_json::Value) {
    use std::io::Write;
    if json {
        let mut v = fields;
        v["event"] = event.into();
        v["time"] = crate::pull::upload::rfc3339_nano(jiff::Timestamp::now()).into();
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    } else {
        let text = fields
            .as_object()
            .map(|m| {
                m.iter()
                    // Pod names, endpoints and errors come from the cluster: escaped.
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => {
                            format!("{k}={}", crate::redact::printable(s))
                        }
                        other => format!("{k}={other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let _ = writeln!(std::io::stderr().lock(), "agentprof k8s: {event} {text}");
    }
}
