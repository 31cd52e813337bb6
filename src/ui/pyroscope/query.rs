//! What a query of Pyroscope's API selects: a profile type id
//! (`process_cpu:cpu:nanoseconds:cpu:nanoseconds`), a label selector
//! (`{service_name="web",pod=~"web-.*"}`) and a time range in milliseconds, read into the
//! ui's [`Selection`] with the sample type to sum.

use crate::ui::select::{LabelMatcher, MatchOp, Selection, agentprof_type};

crate::error::message_error! {
    /// What is wrong with a quoted selector value.
    QuoteError
}

/// Why a query cannot be answered as asked: Connect's `invalid_argument`.
#[derive(Debug)]
pub struct Invalid(pub String);

/// The longest selector or regular expression read.
const MAX_SELECTOR: usize = 4096;

/// `name:sample_type:sample_unit:period_type:period_unit`, read.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeId {
    /// As the query wrote it.
    pub id: String,
    /// agentprof's profile type (`cpu` for Pyroscope's `process_cpu`).
    pub profile_type: String,
    pub sample_type: String,
    pub sample_unit: String,
}

pub fn type_id(id: &str) -> Result<TypeId, Invalid> {
    let parts: Vec<&str> = id.split(':').collect();
    match parts[..] {
        [name, sample_type, sample_unit, _, _] if !name.is_empty() && !sample_type.is_empty() => {
            Ok(TypeId {
                id: id.to_string(),
                profile_type: agentprof_type(name),
                sample_type: sample_type.to_string(),
                sample_unit: sample_unit.to_string(),
            })
        }
        _ => Err(Invalid(format!(
            "profile_typeID {id:?} is not <name>:<sample type>:<unit>:<period type>:<period unit> \
             (process_cpu:cpu:nanoseconds:cpu:nanoseconds)"
        ))),
    }
}

/// A selector's matchers: `{}` or empty selects every capture.
// long: one step per token of the selector (name, operator, quoted value, separator), each with the error that says where it went wrong
pub fn selector(text: &str) -> Result<Vec<LabelMatcher>, Invalid> {
    if text.len() > MAX_SELECTOR {
        return Err(Invalid(format!(
            "label_selector: {} bytes, more than {MAX_SELECTOR}",
            text.len()
        )));
    }
    let t = text.trim();
    if t.is_empty() {
        return Ok(Vec::new());
    }
    let bad =
        |why: &str, at: usize| Invalid(format!("label_selector {text:?}: {why} at byte {at}"));
    let b = t.as_bytes();
    if b[0] != b'{' {
        return Err(bad("it must begin with {", 0));
    }
    let mut i = 1;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i < b.len() && b[i] == b'}' {
            i += 1;
            break;
        }
        // A name: a Prometheus label name, or a quoted one.
        let name = if i < b.len() && b[i] == b'"' {
            let (s, next) = quoted(t, i).map_err(|w| bad(&w.0, i))?;
            i = next;
            s
        } else {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            if i == start {
                return Err(bad("expected a label name", i));
            }
            t[start..i].to_string()
        };
        skip_ws(&mut i);
        let op = match (b.get(i), b.get(i + 1)) {
            (Some(b'='), Some(b'~')) => (MatchOp::Regex, 2),
            (Some(b'!'), Some(b'=')) => (MatchOp::NotEqual, 2),
            (Some(b'!'), Some(b'~')) => (MatchOp::NotRegex, 2),
            (Some(b'='), _) => (MatchOp::Equal, 1),
            _ => return Err(bad("expected =, !=, =~ or !~", i)),
        };
        i += op.1;
        skip_ws(&mut i);
        if i >= b.len() || !matches!(b[i], b'"' | b'\'' | b'`') {
            return Err(bad("expected a quoted value", i));
        }
        let (value, next) = quoted(t, i).map_err(|w| bad(&w.0, i))?;
        i = next;
        let re = match op.0 {
            MatchOp::Regex | MatchOp::NotRegex => Some(
                regex::RegexBuilder::new(&format!("^(?:{value})$"))
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| Invalid(format!("label_selector: {name}: {e}")))?,
            ),
            _ => None,
        };
        out.push(LabelMatcher {
            name,
            op: op.0,
            value,
            re,
        });
        skip_ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return Err(bad("expected , or }", i)),
        }
    }
    if t[i..].trim().is_empty() {
        Ok(out)
    } else {
        Err(bad("unexpected text after }", i))
    }
}

/// The string quoted at `at` (by ", ' or `; backslash escapes in the first two) and where
/// it ends.
fn quoted(t: &str, at: usize) -> Result<(String, usize), QuoteError> {
    let quote = t.as_bytes()[at] as char;
    let mut out = String::new();
    let mut chars = t[at + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, at + 1 + k + 1)),
            '\\' if quote != '`' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, e)) => out.push(e),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(QuoteError("an unclosed quote".into()))
}

/// Milliseconds since the epoch, as a time; 0 is "not given".
fn instant(ms: i64, what: &str) -> Result<Option<jiff::Timestamp>, Invalid> {
    if ms == 0 {
        return Ok(None);
    }
    jiff::Timestamp::from_millisecond(ms)
        .map(Some)
        .map_err(|e| Invalid(format!("{what}: {ms} ms: {e}")))
}

/// The selection of a profile type (agentprof's name), a selector and a range (`end`
/// inclusive, as Pyroscope takes it).
pub fn selection(
    profile_type: &str,
    label_selector: &str,
    start: i64,
    end: i64,
) -> Result<Selection, Invalid> {
    if start != 0 && end != 0 && start > end {
        return Err(Invalid(format!("start {start} is after end {end}")));
    }
    Ok(Selection {
        profile_type: profile_type.to_string(),
        from: instant(start, "start")?,
        // The selection's end is exclusive.
        to: instant(end, "end")?.map(|t| t + jiff::SignedDuration::from_millis(1)),
        matchers: selector(label_selector)?,
        ..Selection::default()
    })
}

/// A selector's matchers alone (LabelNames, LabelValues, Series): every profile type.
pub fn matchers_of(texts: &[String]) -> Result<Vec<Vec<LabelMatcher>>, Invalid> {
    texts.iter().map(|t| selector(t)).collect()
}

/// The range `start`..=`end` (0: open).
pub fn range(
    start: i64,
    end: i64,
) -> Result<(Option<jiff::Timestamp>, Option<jiff::Timestamp>), Invalid> {
    if start != 0 && end != 0 && start > end {
        return Err(Invalid(format!("start {start} is after end {end}")));
    }
    Ok((instant(start, "start")?, instant(end, "end")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_as_prometheus_writes_them() {
        let m = selector(r#"{service_name="web", pod=~"web-.*",env!="dev",x!~'a\'b'}"#).unwrap();
        let got: Vec<(String, MatchOp, String)> = m
            .iter()
            .map(|m| (m.name.clone(), m.op, m.value.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("service_name".into(), MatchOp::Equal, "web".into()),
                ("pod".into(), MatchOp::Regex, "web-.*".into()),
                ("env".into(), MatchOp::NotEqual, "dev".into()),
                ("x".into(), MatchOp::NotRegex, "a'b".into()),
            ]
        );
        let labels = vec![("pod".to_string(), "web-1".to_string())];
        assert!(m[1].matches(&labels));
        assert!(
            !m[1].matches(&[("pod".into(), "xweb-1".into())]),
            "anchored"
        );
        assert!(selector("").unwrap().is_empty());
        assert!(selector("{}").unwrap().is_empty());
        for bad in [
            "service_name=\"x\"",
            "{a=}",
            "{a=\"x\"",
            "{a~\"x\"}",
            "{a=\"x\"} y",
            "{a=~\"(\"}",
        ] {
            let e = selector(bad).unwrap_err();
            assert!(e.0.contains("label_selector"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn type_ids_name_agentprofs_types() {
        let t = type_id("process_cpu:cpu:nanoseconds:cpu:nanoseconds").unwrap();
        assert_eq!(
            (t.profile_type.as_str(), t.sample_type.as_str()),
            ("cpu", "cpu")
        );
        assert_eq!(
            type_id("memory:alloc_space:bytes:space:bytes")
                .unwrap()
                .profile_type,
            "delta-heap"
        );
        assert!(type_id("cpu").is_err());
        assert!(selection("cpu", "{}", 10, 5).is_err());
    }
}
