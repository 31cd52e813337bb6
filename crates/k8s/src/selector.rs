//! Kubernetes label selectors in their string form (`app=web,tier!=cache,env in (prod,stage),
//! !canary`), parsed and checked as the API server checks them, and matched against a pod's
//! labels.

use std::collections::BTreeMap;

use crate::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// `key=value`, `key==value`, `key in (a,b)`.
    In,
    /// `key!=value`, `key notin (a,b)`.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    pub key: String,
    pub op: Op,
    pub values: Vec<String>,
}

/// A parsed selector: every requirement must hold. Empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, Error> {
        let mut out = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(Error::EmptyRequirement);
            }
            out.push(requirement(part)?);
        }
        Ok(Selector(out))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| {
            let v = labels.get(&r.key);
            match r.op {
                Op::In => v.is_some_and(|v| r.values.contains(v)),
                Op::NotIn => v.is_none_or(|v| !r.values.contains(v)),
                Op::Exists => v.is_some(),
                Op::DoesNotExist => v.is_none(),
            }
        })
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, Error> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(Error::UnopenedParenthesis(i + 1));
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(Error::UnclosedParenthesis);
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn requirement(part: &str) -> Result<Requirement, Error> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Requirement {
            key: key.into(),
            op: Op::DoesNotExist,
            values: vec![],
        });
    }
    for (sep, op) in [("!=", Op::NotIn), ("==", Op::In), ("=", Op::In)] {
        if let Some((k, v)) = part.split_once(sep) {
            let (k, v) = (k.trim(), v.trim());
            check_key(k)?;
            check_value(v)?;
            return Ok(Requirement {
                key: k.into(),
                op,
                values: vec![v.into()],
            });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = words[0];
        let rest = words[1].trim_start();
        for (kw, op) in [("notin", Op::NotIn), ("in", Op::In)] {
            if let Some(list) = rest.strip_prefix(kw) {
                let list = list.trim();
                let inner = list
                    .strip_prefix('(')
                    .and_then(|l| l.strip_suffix(')'))
                    .ok_or_else(|| Error::ListWithoutParentheses {
                        part: part.to_string(),
                        op: kw,
                        key: key.to_string(),
                    })?;
                check_key(key)?;
                let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
                if values.iter().all(String::is_empty) {
                    return Err(Error::EmptyList(part.to_string()));
                }
                for v in &values {
                    check_value(v)?;
                }
                return Ok(Requirement {
                    key: key.into(),
                    op,
                    values,
                });
            }
        }
        return Err(Error::Unrecognised(part.to_string()));
    }
    check_key(part)?;
    Ok(Requirement {
        key: part.into(),
        op: Op::Exists,
        values: vec![],
    })
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters, alphanumerics with `-`, `_`, `.` inside.
pub fn check_key(key: &str) -> Result<(), Error> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && !is_dns_subdomain(p)
    {
        return Err(Error::KeyPrefix(key.to_string()));
    }
    if !is_name(name) {
        return Err(Error::KeyName(key.to_string()));
    }
    Ok(())
}

/// A label value: empty, or a name as in [`check_key`].
pub fn check_value(v: &str) -> Result<(), Error> {
    if v.is_empty() || is_name(v) {
        Ok(())
    } else {
        Err(Error::Value(v.to_string()))
    }
}

fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_string_form_parses_and_matches() {
        let s = Selector::parse(
            "app.kubernetes.io/name=guancedb, app.kubernetes.io/component==select,tier!=cache,env in (prod, stage),zone notin (z1),canary,!debug",
        )
        .unwrap();
        assert_eq!(s.0.len(), 7);
        let pod = labels(&[
            ("app.kubernetes.io/name", "guancedb"),
            ("app.kubernetes.io/component", "select"),
            ("env", "prod"),
            ("canary", ""),
        ]);
        assert!(s.matches(&pod));
        let mut other = pod.clone();
        other.insert("debug".into(), "1".into());
        assert!(!s.matches(&other));
        assert!(Selector::parse("").unwrap().matches(&BTreeMap::new()));
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        for (bad, says) in [
            ("app=", ""),
            ("a,,b", "empty requirement"),
            ("env in prod", "parentheses"),
            ("env in (prod", "not closed"),
            ("Bad_Prefix.io/x=y", "prefix"),
            ("-x=y", "name"),
            ("app=white space", "label value"),
            ("env in ()", "empty"),
            ("app ~ web", "expected"),
        ] {
            match Selector::parse(bad) {
                Ok(s) => assert!(says.is_empty(), "{bad} parsed as {s:?}"),
                Err(e) => assert!(e.to_string().contains(says), "{bad}: {e}"),
            }
        }
    }
}
