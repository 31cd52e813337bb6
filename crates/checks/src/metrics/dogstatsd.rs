//! DogStatsD datagrams as exec plugins print them, one per line, into a run's `Sink`:
//! metrics `name:value[:value…]|g|c|h|d|ms|s[|@rate][|#tag,tag:v]`, service checks
//! `_sc|name|status[|d:ts][|h:host][|#tags][|m:message]` and events
//! `_e{title_len,text_len}:title|text[|d:ts][|h:host][|k:key][|p:priority][|s:source][|t:type][|#tags]`.
//! A line that does not parse is a warning naming the line; it never stops the run.

use std::hash::{Hash, Hasher};

use super::{Event, MetricType, ServiceCheckStatus, Sink, Submission};
use crate::Error;

/// Longest line considered; anything longer is refused without being copied.
pub const MAX_LINE: usize = 64 * 1024;

/// Refused lines named one by one; past this, they are only counted.
const NAMED_REFUSALS: u32 = 10;

/// Parses every line of `text` into `sink`; returns how many lines were refused.
pub fn parse_into(text: &str, sink: &mut Sink) -> u32 {
    let mut refused = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if let Err(why) = parse_line(line, sink) {
            refused += 1;
            if refused <= NAMED_REFUSALS {
                let shown: String = line.chars().take(120).collect();
                sink.warning(format!("stdout line {}: {why}: {shown:?}", i + 1));
            }
        }
    }
    if refused > NAMED_REFUSALS {
        sink.warning(format!(
            "{} more stdout lines were not DogStatsD and were skipped",
            refused - NAMED_REFUSALS
        ));
    }
    refused
}

/// What is wrong with a DogStatsD line.
fn line_error(why: impl Into<String>) -> Error {
    Error::StatsdLine(why.into())
}

fn parse_line(line: &str, sink: &mut Sink) -> Result<(), Error> {
    if line.len() > MAX_LINE {
        return Err(Error::StatsdLine(format!("longer than {MAX_LINE} bytes")));
    }
    if let Some(rest) = line.strip_prefix("_sc|") {
        return service_check(rest, sink);
    }
    if let Some(rest) = line.strip_prefix("_e{") {
        return event(rest, sink);
    }
    metric(line, sink)
}

fn split_tags(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

fn metric(line: &str, sink: &mut Sink) -> Result<(), Error> {
    let (name, rest) = line
        .split_once(':')
        .ok_or_else(|| line_error("not a DogStatsD metric (name:value|type)"))?;
    // A name with a control character (an escape sequence, NUL, a line break) would act on
    // the terminal that shows it or on the intake that reads it: refused like `|` and space.
    if name.is_empty() || name.contains(['|', ' ']) || name.chars().any(char::is_control) {
        return Err(Error::StatsdLine("bad metric name".into()));
    }
    let mut fields = rest.split('|');
    let values = fields.next().unwrap_or_default();
    let kind = fields
        .next()
        .ok_or_else(|| line_error("no metric type (|g, |c, |h, |d, |ms or |s)"))?;
    let mtype = match kind {
        "g" => MetricType::Gauge,
        "c" => MetricType::Count,
        "h" | "ms" => MetricType::Histogram,
        "d" => MetricType::Distribution,
        "s" => MetricType::Set,
        other => return Err(Error::StatsdLine(format!("unknown metric type `{other}`"))),
    };
    let mut rate = 1.0;
    let mut tags = Vec::new();
    for f in fields {
        if let Some(r) = f.strip_prefix('@') {
            rate = r
                .parse::<f64>()
                .map_err(|_| line_error(format!("bad sample rate `{r}`")))?;
            if !(rate > 0.0 && rate <= 1.0) {
                return Err(Error::StatsdLine(format!(
                    "sample rate {r} is not in (0, 1]"
                )));
            }
        } else if let Some(t) = f.strip_prefix('#') {
            tags = split_tags(t);
        }
        // c: (container) and T (timestamp) fields are accepted and not used.
    }
    for v in values.split(':') {
        let value = if mtype == MetricType::Set {
            set_member(v)
        } else {
            let x: f64 = v
                .parse()
                .map_err(|_| line_error(format!("`{v}` is not a number")))?;
            if !x.is_finite() {
                return Err(Error::StatsdLine(format!("`{v}` is not a finite number")));
            }
            x
        };
        let value = if mtype == MetricType::Count {
            value / rate
        } else {
            value
        };
        sink.push(Submission {
            name: name.to_string(),
            mtype,
            value,
            tags: tags.clone(),
            hostname: None,
            flush_first_value: false,
            // Read after the plugin ended: when it printed the line is not known.
            timestamp: 0.0,
            // A distribution's value sent at rate r stands for 1/r values (the Agent's sketch
            // counts it so); other types use the rate as above or not at all.
            weight: if mtype == MetricType::Distribution {
                1.0 / rate
            } else {
                1.0
            },
        });
    }
    Ok(())
}

/// A set member as a number the aggregator can count distinct values of: a 52-bit hash,
/// exact as an f64.
fn set_member(v: &str) -> f64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    (h.finish() >> 12) as f64
}

fn service_check(rest: &str, sink: &mut Sink) -> Result<(), Error> {
    let mut fields = rest.split('|');
    let name = fields
        .next()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| line_error("service check without a name"))?;
    let status = fields
        .next()
        .ok_or_else(|| line_error("service check without a status"))?;
    let status = status
        .parse::<i64>()
        .ok()
        .and_then(ServiceCheckStatus::from_code)
        .ok_or_else(|| {
            line_error(format!(
                "service check status `{status}` is not 0, 1, 2 or 3"
            ))
        })?;
    let (mut tags, mut message, mut host) = (Vec::new(), String::new(), None);
    for f in fields {
        if let Some(t) = f.strip_prefix('#') {
            tags = split_tags(t);
        } else if let Some(m) = f.strip_prefix("m:") {
            message = m.replace("\\n", "\n");
        } else if let Some(h) = f.strip_prefix("h:") {
            host = Some(h.to_string());
        }
    }
    sink.service_check(name, status, &tags, &message);
    if let (Some(h), Some(sc)) = (host, sink.service_checks.last_mut()) {
        sc.hostname = Some(h);
    }
    Ok(())
}

fn event(rest: &str, sink: &mut Sink) -> Result<(), Error> {
    let (lens, body) = rest
        .split_once("}:")
        .ok_or_else(|| line_error("event without `}:`"))?;
    let (tl, xl) = lens
        .split_once(',')
        .ok_or_else(|| line_error("event lengths are not {title,text}"))?;
    let tl: usize = tl
        .parse()
        .map_err(|_| line_error("bad event title length"))?;
    let xl: usize = xl
        .parse()
        .map_err(|_| line_error("bad event text length"))?;
    let title = body
        .get(..tl)
        .ok_or_else(|| line_error("event title shorter than its length"))?;
    let after = body
        .get(tl..)
        .ok_or_else(|| line_error("event title shorter than its length"))?;
    let after = after
        .strip_prefix('|')
        .ok_or_else(|| line_error("no `|` after the event title"))?;
    let text = after
        .get(..xl)
        .ok_or_else(|| line_error("event text shorter than its length"))?;
    let mut ev = Event {
        title: title.to_string(),
        text: text.replace("\\n", "\n"),
        alert_type: "info".into(),
        priority: "normal".into(),
        ..Default::default()
    };
    for f in after[xl..].split('|').filter(|f| !f.is_empty()) {
        if let Some(t) = f.strip_prefix('#') {
            ev.tags = split_tags(t);
        } else if let Some(v) = f.strip_prefix("t:") {
            ev.alert_type = v.to_string();
        } else if let Some(v) = f.strip_prefix("p:") {
            ev.priority = v.to_string();
        } else if let Some(v) = f.strip_prefix("k:") {
            ev.aggregation_key = Some(v.to_string());
        } else if let Some(v) = f.strip_prefix("s:") {
            ev.source_type_name = Some(v.to_string());
        } else if let Some(v) = f.strip_prefix("h:") {
            ev.host = v.to_string();
        } else if let Some(v) = f.strip_prefix("d:") {
            ev.timestamp = v
                .parse()
                .map_err(|_| line_error(format!("bad event timestamp `{v}`")))?;
        }
    }
    sink.event(ev);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_every_type() {
        let mut s = Sink::default();
        let bad = parse_into(
            "a.g:1.5|g|#env:dev,role:db\na.c:2|c|@0.5\na.h:1:2:3|h\na.d:4|d|@0.25\na.t:10|ms\na.s:bob|s\na.s:bob|s\n",
            &mut s,
        );
        assert_eq!(bad, 0, "{:?}", s.warnings);
        let m = &s.metrics;
        assert_eq!(
            (m[0].name.as_str(), m[0].mtype, m[0].value),
            ("a.g", MetricType::Gauge, 1.5)
        );
        assert_eq!(m[0].tags, vec!["env:dev", "role:db"]);
        assert_eq!((m[1].mtype, m[1].value), (MetricType::Count, 4.0));
        assert_eq!(m.iter().filter(|x| x.name == "a.h").count(), 3);
        assert_eq!(
            m.iter()
                .filter(|x| x.mtype == MetricType::Histogram)
                .count(),
            4
        );
        // A distribution's value at rate 0.25 stands for four values.
        let d: Vec<_> = m
            .iter()
            .filter(|x| x.mtype == MetricType::Distribution)
            .collect();
        assert_eq!((d.len(), d[0].value, d[0].weight), (1, 4.0, 4.0));
        assert_eq!(m.iter().filter(|x| x.mtype == MetricType::Set).count(), 2);
        assert_eq!(m[7].value, m[8].value);
    }

    #[test]
    fn service_checks_and_events() {
        let mut s = Sink::default();
        parse_into("_sc|backup.fresh|2|#path:/var|m:too old\\nreally\n", &mut s);
        parse_into("_e{5,4}:hello|body|t:warning|#a:b|k:key\n", &mut s);
        let sc = &s.service_checks[0];
        assert_eq!(
            (sc.name.as_str(), sc.status, sc.message.as_str()),
            (
                "backup.fresh",
                ServiceCheckStatus::Critical,
                "too old\nreally"
            )
        );
        let ev = &s.events[0];
        assert_eq!(
            (ev.title.as_str(), ev.text.as_str(), ev.alert_type.as_str()),
            ("hello", "body", "warning")
        );
        assert_eq!(ev.aggregation_key.as_deref(), Some("key"));
        assert_eq!(ev.tags, vec!["a:b"]);
    }

    #[test]
    fn bad_lines_are_warnings_not_failures() {
        let mut s = Sink::default();
        let bad = parse_into(
            "hello world\nx:abc|g\nx:1|q\nx:1|c|@2\n_sc|n|7\n_e{99,1}:a|b\nx:NaN|g\nok:1|g\n",
            &mut s,
        );
        assert_eq!(bad, 7);
        assert_eq!(s.metrics.len(), 1);
        assert!(s.warnings[0].starts_with("stdout line 1:"));
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("`abc` is not a number"))
        );
        assert!(s.warnings.iter().any(|w| w.contains("status `7`")));
    }
}
