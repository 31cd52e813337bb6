//! A selection of captures: one service's profiles of one type over a time range, narrowed
//! by capture tags (`pod:web-1`, `cause:scheduled`, the tags a record carries) and by the
//! samples' own labels (dd-trace-go's `trace endpoint`, Go's `pprof.Do` labels). The page
//! names a selection as an id of its own, `sel:` and the selection as a query
//! (`sel:service=web&type=cpu&from=…&to=…&tag=pod:web-1&label=region=eu`), so every view of
//! one profile (top, flamegraph, peek, source, compare, download) is also a view of a
//! merged range.

use super::index::Entry;

crate::error::message_error! {
    /// What is wrong with a selection's id or its query parameters.
    SelectError
}

/// What selects captures, and which of their samples count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub service: String,
    pub profile_type: String,
    /// From (inclusive) and to (exclusive).
    pub from: Option<jiff::Timestamp>,
    pub to: Option<jiff::Timestamp>,
    /// Capture tags, `key:value`: a capture has every key's value (any of a key's values
    /// when one key is given several).
    pub tags: Vec<(String, String)>,
    /// Sample labels, `key=value`, the same way: a sample counts when it has them.
    pub labels: Vec<(String, String)>,
    /// Label matchers of a Prometheus-style selector (`{pod=~"web-.*"}`, Pyroscope's
    /// query API) on the capture's labels ([`labels_of`]): a capture is in when every one
    /// holds.
    pub matchers: Vec<LabelMatcher>,
}

/// One matcher of a selector: `name op "value"` with `=`, `!=`, `=~` or `!~` (a regular
/// expression anchored at both ends); a capture without the label has it as "".
#[derive(Debug, Clone)]
pub struct LabelMatcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    /// `value` compiled, anchored (for `=~` and `!~`).
    pub re: Option<regex::Regex>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOp {
    Equal,
    NotEqual,
    Regex,
    NotRegex,
}

impl PartialEq for LabelMatcher {
    fn eq(&self, other: &LabelMatcher) -> bool {
        (&self.name, self.op, &self.value) == (&other.name, other.op, &other.value)
    }
}

impl LabelMatcher {
    /// Whether `labels` (name, value) satisfy it.
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let v = labels
            .iter()
            .find(|(k, _)| *k == self.name)
            .map_or("", |(_, v)| v.as_str());
        match self.op {
            MatchOp::Equal => v == self.value,
            MatchOp::NotEqual => v != self.value,
            MatchOp::Regex => self.re.as_ref().is_some_and(|re| re.is_match(v)),
            MatchOp::NotRegex => !self.re.as_ref().is_some_and(|re| re.is_match(v)),
        }
    }
}

/// A capture's labels as Pyroscope's query API names them: `service_name` (its service),
/// `__name__` (its profile type's name there: `process_cpu` for cpu, `memory` for
/// delta-heap, else agentprof's own), then every capture tag of [`tags_of`] but `service`.
pub fn labels_of(e: &Entry) -> Vec<(String, String)> {
    let mut out = vec![("__name__".to_string(), pyroscope_name(&e.profile_type))];
    if let Some(s) = &e.service {
        out.push(("service_name".to_string(), s.clone()));
    }
    out.extend(tags_of(e).into_iter().filter(|(k, _)| k != "service"));
    out
}

/// The name Pyroscope gives a profile type agentprof names `t` (its clients' own names for
/// a Go service's CPU and heap); any other keeps agentprof's name.
pub fn pyroscope_name(t: &str) -> String {
    match t {
        "cpu" => "process_cpu".into(),
        "delta-heap" => "memory".into(),
        t => t.into(),
    }
}

/// agentprof's profile type of Pyroscope's name `name` ([`pyroscope_name`] turned back).
pub fn agentprof_type(name: &str) -> String {
    match name {
        "process_cpu" => "cpu".into(),
        "memory" => "delta-heap".into(),
        n => n.into(),
    }
}

/// The prefix of a selection's id.
pub const PREFIX: &str = "sel:";

/// A capture's tags as filters and group-by read them: its record's tags (`key:value`),
/// then what the listing knows of it that the tags do not say (`service`, `namespace`,
/// `pod`, `container`, `cause`, `trigger` — the metric that fired).
pub fn tags_of(e: &Entry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = e
        .tags
        .iter()
        .filter_map(|t| t.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let trigger = e
        .trigger
        .as_ref()
        .and_then(|t| t.get("metric"))
        .and_then(|m| m.as_str())
        .map(str::to_string);
    for (k, v) in [
        ("service", &e.service),
        ("namespace", &e.namespace),
        ("pod", &e.pod),
        ("container", &e.container),
        ("cause", &e.cause),
        ("trigger", &trigger),
    ] {
        if let Some(v) = v
            && !out.iter().any(|(kk, _)| kk == k)
        {
            out.push((k.to_string(), v.clone()));
        }
    }
    out
}

/// A time as the listing and the page write it (RFC 3339).
pub fn instant(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// Whether `have` holds every key of `want` with one of its values.
pub fn all_keys_match(want: &[(String, String)], have: &[(String, String)]) -> bool {
    want.iter().all(|(k, _)| {
        want.iter()
            .filter(|(kk, _)| kk == k)
            .any(|(_, v)| have.iter().any(|(hk, hv)| hk == k && hv == v))
    })
}

impl Selection {
    /// Reads a selection from a query's pairs; says which is wrong.
    pub fn from_pairs<'a>(
        pairs: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<Selection, SelectError> {
        let mut s = Selection::default();
        let time = |k: &str, v: &str| {
            instant(v)
                .ok_or_else(|| format!("{k}={v:?} is not an RFC 3339 time (2026-12-05T10:00:00Z)"))
        };
        for (k, v) in pairs {
            match k {
                "service" => s.service = v.to_string(),
                "type" => s.profile_type = v.to_string(),
                "from" if !v.is_empty() => s.from = Some(time(k, v)?),
                "to" if !v.is_empty() => s.to = Some(time(k, v)?),
                "from" | "to" => {}
                "tag" => {
                    let (a, b) = v
                        .split_once(':')
                        .ok_or_else(|| format!("tag={v:?} is not key:value"))?;
                    s.tags.push((a.to_string(), b.to_string()));
                }
                "label" => {
                    let (a, b) = v
                        .split_once('=')
                        .ok_or_else(|| format!("label={v:?} is not key=value"))?;
                    s.labels.push((a.to_string(), b.to_string()));
                }
                // The other parameters of the request it came with (sample_index, group_by…).
                _ => {}
            }
        }
        if s.profile_type.is_empty() {
            return Err(SelectError(
                "type: name the profile type (cpu, heap, delta-heap…)".into(),
            ));
        }
        Ok(s)
    }

    /// The selection an id names (`sel:…`), or None for a file's id.
    pub fn parse_id(id: &str) -> Option<Result<Selection, SelectError>> {
        let q = id.strip_prefix(PREFIX)?;
        let pairs: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Some(Selection::from_pairs(
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ))
    }

    /// Whether a listed capture is in the selection (before its sample labels are read).
    pub fn takes(&self, e: &Entry) -> bool {
        if e.kind != "pprof" || e.profile_type != self.profile_type {
            return false;
        }
        if !self.service.is_empty() && e.service.as_deref() != Some(self.service.as_str()) {
            return false;
        }
        if self.from.is_some() || self.to.is_some() {
            let Some(t) = instant(&e.time) else {
                return false;
            };
            if self.from.is_some_and(|f| t < f) || self.to.is_some_and(|to| t >= to) {
                return false;
            }
        }
        (self.tags.is_empty() || all_keys_match(&self.tags, &tags_of(e)))
            && (self.matchers.is_empty() || {
                let labels = labels_of(e);
                self.matchers.iter().all(|m| m.matches(&labels))
            })
    }

    /// The listed captures in the selection, oldest first.
    pub fn captures<'a>(&self, entries: &'a [Entry]) -> Vec<&'a Entry> {
        let mut v: Vec<&Entry> = entries.iter().filter(|e| self.takes(e)).collect();
        v.sort_by(|a, b| a.time.cmp(&b.time).then(a.id.cmp(&b.id)));
        v
    }

    /// What a title says of it.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} {}",
            if self.service.is_empty() {
                "every service"
            } else {
                &self.service
            },
            self.profile_type
        );
        let t = |x: &Option<jiff::Timestamp>| x.map(|t| t.to_string()).unwrap_or("…".into());
        if self.from.is_some() || self.to.is_some() {
            s.push_str(&format!(" {} – {}", t(&self.from), t(&self.to)));
        }
        for (k, v) in &self.tags {
            s.push_str(&format!(" {k}:{v}"));
        }
        for (k, v) in &self.labels {
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_names_a_selection_and_says_what_is_wrong() {
        let s = Selection::parse_id(
            "sel:service=web&type=cpu&from=2026-12-01T00%3A00%3A00Z&tag=pod:a&tag=pod:b&label=region%3Deu",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.service, "web");
        assert_eq!(s.tags.len(), 2);
        assert_eq!(s.labels, vec![("region".into(), "eu".into())]);
        assert!(Selection::parse_id("0/web/cpu.pb.gz").is_none());
        let e = Selection::parse_id("sel:type=cpu&from=yesterday")
            .unwrap()
            .unwrap_err();
        assert!(e.0.contains("from=\"yesterday\""), "{e}");
        assert!(Selection::parse_id("sel:service=web").unwrap().is_err());
        let have = vec![("pod".to_string(), "b".to_string())];
        assert!(all_keys_match(&s.tags, &have));
        assert!(!all_keys_match(&[("pod".into(), "c".into())], &have));
    }
}
