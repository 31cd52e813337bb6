//! Memory maps after a legacy profile's samples: `/proc/PID/maps` lines or the brief
//! `start-end file` form, with `$attr` substitution.

use std::sync::LazyLock;

use regex::Regex;

use super::LMapping;
use super::re;

pub(super) static PROC_MAPS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:0x)?([[:xdigit:]]+)[\s-]?\s*(?:0x)?([[:xdigit:]]+):?(?:\s+([-rwxp]+))?(?:\s+([[:xdigit:]]+))?\s+[[:xdigit:]]+:[[:xdigit:]]+\s+[[:digit:]]+(?:\s+(\S+))?",
    )
});
pub(super) static BRIEF_MAPS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:0x)?([[:xdigit:]]+)[\s-]?\s*(?:0x)?([[:xdigit:]]+):?(?:\s+([-rwxp]+))?(?:\s+(\S+))?(?:\s+\(@([[:xdigit:]]+)\))?(?:\s+([[:xdigit:]]+))?",
    )
});
pub(super) static LOG_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^[^\[\]]+:[0-9]+]\s"));

/// The executable mappings of a `/proc/PID/maps`-like text (or the brief `start-end file`
/// form), `$attr` assignments substituted as Go substitutes them.
pub(super) fn parse_maps(text: &str) -> Vec<LMapping> {
    let mut out = Vec::new();
    let mut attrs: Vec<(String, String)> = Vec::new();
    for raw in text.lines() {
        let mut line = match LOG_PREFIX.find(raw) {
            Some(m) => raw[m.end()..].to_string(),
            None => raw.to_string(),
        };
        for (k, v) in &attrs {
            line = line.replace(k.as_str(), v);
        }
        let (start, end, perm, offset, file, build) = if let Some(c) = PROC_MAPS.captures(&line) {
            let g = |i: usize| c.get(i).map_or(String::new(), |m| m.as_str().to_string());
            (g(1), g(2), g(3), g(4), g(5), String::new())
        } else if let Some(c) = BRIEF_MAPS.captures(&line) {
            let g = |i: usize| c.get(i).map_or(String::new(), |m| m.as_str().to_string());
            (g(1), g(2), g(3), g(5), g(4), g(6))
        } else {
            if let Some((k, v)) = line.split_once('=') {
                attrs.push((format!("${}", k.trim()), v.trim().to_string()));
            }
            continue;
        };
        if !perm.is_empty() && !perm.contains('x') {
            continue;
        }
        let (Ok(start), Ok(limit)) = (
            u64::from_str_radix(&start, 16),
            u64::from_str_radix(&end, 16),
        ) else {
            if let Some((k, v)) = line.split_once('=') {
                attrs.push((format!("${}", k.trim()), v.trim().to_string()));
            }
            continue;
        };
        let offset = if offset.is_empty() {
            0
        } else {
            match u64::from_str_radix(&offset, 16) {
                Ok(o) => o,
                Err(_) => continue,
            }
        };
        out.push(LMapping {
            start,
            limit,
            offset,
            file,
            build_id: build,
        });
    }
    out
}
