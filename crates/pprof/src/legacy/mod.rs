//! Profiles in the formats that came before profile.proto, which go tool pprof still reads
//! and gperftools, old runtimes and saved `?debug=1` pages still produce: the binary CPU
//! profile (profilez), the text heap profile (heapz, heap_v2, Go's legacy `heap`, growthz),
//! the text contention profile (contentionz, Go's `--- mutex:` / `--- contention:`) and Go's
//! text count profiles (`goroutine profile: total N`, threadcreate). Each becomes the
//! profile go tool pprof makes of it: the same sample types and values (heap samples
//! unsampled as Go unsamples them, contention delays scaled by the CPU frequency), stacks of
//! addresses (adjusted to land on the call), and the memory map that names their binaries.
//! Other legacy formats are named in the refusal, with the way to convert them.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::proto::{Label, Location, Mapping, Profile, Sample, ValueType};

mod cpu;
mod maps;
mod text;

use cpu::parse_cpu;
use text::{parse_contention, parse_go_count, parse_heap};

/// A legacy profile's parts before they become a [`Profile`].
#[derive(Default)]
struct Legacy {
    sample_types: Vec<(&'static str, &'static str)>,
    period_type: (&'static str, &'static str),
    period: i64,
    duration_nanos: i64,
    /// Addresses, in the order first seen.
    addresses: Vec<u64>,
    samples: Vec<LSample>,
    mappings: Vec<LMapping>,
}

struct LSample {
    /// Indexes into `addresses`, leaf first.
    locs: Vec<usize>,
    values: Vec<i64>,
    /// Heap samples: the size of one block (`bytes` numeric label).
    block: Option<i64>,
}

#[derive(Clone)]
struct LMapping {
    start: u64,
    limit: u64,
    offset: u64,
    file: String,
    build_id: String,
}

/// Interns addresses: the index of each.
#[derive(Default)]
struct Addrs {
    index: HashMap<u64, usize>,
}

impl Addrs {
    pub(super) fn get(&mut self, l: &mut Legacy, a: u64) -> usize {
        *self.index.entry(a).or_insert_with(|| {
            l.addresses.push(a);
            l.addresses.len() - 1
        })
    }
}

/// What a legacy profile the parser does not read is, for the refusal.
pub(crate) fn describe_unread(raw: &[u8]) -> Option<&'static str> {
    let head = std::str::from_utf8(&raw[..raw.len().min(256)]).unwrap_or("");
    let first = head.lines().find(|l| !is_space_or_comment(l)).unwrap_or("");
    if first.starts_with("--- threadz") {
        Some("a legacy threadz (thread) profile")
    } else if head.contains("format = java") || first.starts_with("--- heapz") {
        Some("a legacy Java profile")
    } else if first.starts_with("goroutine ") && head.contains("[running]") {
        Some("a Go goroutine dump (?debug=2), which has no counts to profile")
    } else {
        None
    }
}

/// A legacy profile that is malformed: what is wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LegacyError(pub String);

/// The parsers' messages, turned into the error by `?`.
impl From<String> for LegacyError {
    fn from(message: String) -> LegacyError {
        LegacyError(message)
    }
}

impl From<&str> for LegacyError {
    fn from(message: &str) -> LegacyError {
        LegacyError(message.to_string())
    }
}

/// The profile in `raw` if it is one of the legacy formats agentprof reads; `Ok(None)` when
/// it is none of them. A legacy profile that is malformed is an error saying where.
pub fn parse(raw: &[u8]) -> Result<Option<Profile>, LegacyError> {
    if let Some(l) = parse_cpu(raw)? {
        return Ok(Some(l.into_profile()));
    }
    let Ok(text) = std::str::from_utf8(raw) else {
        return Ok(None);
    };
    for parser in [parse_heap, parse_contention, parse_go_count] {
        if let Some(l) = parser(text)? {
            return Ok(Some(l.into_profile()));
        }
    }
    Ok(None)
}

pub(super) fn is_space_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// `.so` libraries, which are never the main binary.
pub(super) fn re(s: &str) -> Regex {
    // The patterns are constants of these files; a test compiles each.
    Regex::new(s).unwrap_or_else(|_| Regex::new("$^").unwrap_or_else(|_| unreachable!()))
}

static LIB: LazyLock<Regex> = LazyLock::new(|| re(r"([.]so$|[.]so[._][0-9]+)"));

impl Legacy {
    /// Go's massageMappings and remapMappingIDs: adjacent pieces of one file merged, the main
    /// binary first, each address given the mapping that holds it (or a fake one).
    fn into_profile(mut self) -> Profile {
        let mut maps = massage_mappings(std::mem::take(&mut self.mappings));
        let (loc_id, used) = self.used_addresses();
        let loc_map = assign_mappings(&mut maps, &self.addresses, &used);
        let mut strings: Vec<String> = vec![String::new()];
        let mut s = |v: &str| -> i64 {
            if let Some(i) = strings.iter().position(|x| x == v) {
                return i as i64;
            }
            strings.push(v.to_string());
            strings.len() as i64 - 1
        };
        let sample_type = self
            .sample_types
            .iter()
            .map(|(t, u)| ValueType {
                r#type: s(t),
                unit: s(u),
            })
            .collect();
        let period_type = Some(ValueType {
            r#type: s(self.period_type.0),
            unit: s(self.period_type.1),
        });
        let bytes_key = s("bytes");
        let mapping = maps
            .iter()
            .enumerate()
            .map(|(i, m)| Mapping {
                id: i as u64 + 1,
                memory_start: m.start,
                memory_limit: m.limit,
                file_offset: m.offset,
                filename: s(&m.file),
                build_id: s(&m.build_id),
                ..Mapping::default()
            })
            .collect();
        let location = used
            .iter()
            .zip(&loc_map)
            .enumerate()
            .map(|(i, (&ai, m))| Location {
                id: i as u64 + 1,
                mapping_id: m.map_or(0, |m| m as u64 + 1),
                address: self.addresses[ai],
                line: Vec::new(),
                is_folded: false,
            })
            .collect();
        let sample = self.samples(&loc_id, bytes_key);
        Profile {
            sample_type,
            sample,
            mapping,
            location,
            function: Vec::new(),
            string_table: strings,
            period_type,
            period: self.period,
            duration_nanos: self.duration_nanos,
            ..Profile::default()
        }
    }
}

impl Legacy {
    /// The samples over the used addresses' location ids; a contention sample's block size
    /// as a `bytes` label (`bytes_key` is that string's index).
    fn samples(&self, loc_id: &[u64], bytes_key: i64) -> Vec<Sample> {
        self.samples
            .iter()
            .map(|x| Sample {
                location_id: x.locs.iter().map(|&a| loc_id[a]).collect(),
                value: x.values.clone(),
                label: x
                    .block
                    .map(|b| Label {
                        key: bytes_key,
                        str: 0,
                        num: b,
                        num_unit: 0,
                    })
                    .into_iter()
                    .collect(),
            })
            .collect()
    }

    /// Only the addresses samples use become locations, in the order samples use them: each
    /// address's location id (0: unused), and the addresses used.
    fn used_addresses(&self) -> (Vec<u64>, Vec<usize>) {
        let mut loc_id = vec![0u64; self.addresses.len()];
        let mut used: Vec<usize> = Vec::new();
        for s in &self.samples {
            for &a in &s.locs {
                if loc_id[a] == 0 {
                    used.push(a);
                    loc_id[a] = used.len() as u64;
                }
            }
        }
        (loc_id, used)
    }
}

/// Adjacent pieces of one file merged, the main binary first (a hugepage mapping before it
/// dropped), a main binary mapped at 0x400000 with its offset taken out.
fn massage_mappings(mappings: Vec<LMapping>) -> Vec<LMapping> {
    let mut maps: Vec<LMapping> = Vec::new();
    for m in mappings {
        if let Some(last) = maps.last_mut()
            && adjacent(last, &m)
        {
            last.limit = m.limit;
            if !m.file.is_empty() {
                last.file = m.file;
            }
            if !m.build_id.is_empty() {
                last.build_id = m.build_id;
            }
            continue;
        }
        maps.push(m);
    }
    if let Some(i) = maps.iter().position(|m| {
        let f = m.file.replace("(deleted)", "");
        let f = f.trim();
        !f.is_empty() && !LIB.is_match(f) && !f.starts_with('[')
    }) {
        maps.swap(0, i);
    }
    if maps.len() > 1
        && maps[0].file.starts_with("/anon_hugepage")
        && maps[0].limit == maps[1].start
    {
        maps.remove(0);
    }
    if let Some(m) = maps.first_mut()
        && m.start.wrapping_sub(m.offset) == 0x400000
    {
        m.start = 0x400000;
        m.offset = 0;
    }
    maps
}

/// The mapping of each used address: the one that holds it, one whose offset reaches back
/// to it (its start moved there), else one fake mapping over everything.
fn assign_mappings(
    maps: &mut Vec<LMapping>,
    addresses: &[u64],
    used: &[usize],
) -> Vec<Option<usize>> {
    let mut fake: Option<usize> = None;
    let mut loc_map = Vec::with_capacity(used.len());
    for &ai in used {
        let a = addresses[ai];
        let mut found = None;
        if a != 0 {
            found = maps.iter().position(|m| m.start <= a && a < m.limit);
            if found.is_none()
                && let Some(i) = maps.iter().position(|m| {
                    m.offset != 0 && m.start.wrapping_sub(m.offset) <= a && a < m.start
                })
            {
                maps[i].start = maps[i].start.wrapping_sub(maps[i].offset);
                maps[i].offset = 0;
                found = Some(i);
            }
            if found.is_none() {
                found = Some(*fake.get_or_insert_with(|| {
                    maps.push(LMapping {
                        start: 0,
                        limit: u64::MAX,
                        offset: 0,
                        file: String::new(),
                        build_id: String::new(),
                    });
                    maps.len() - 1
                }));
            }
        }
        loc_map.push(found);
    }
    loc_map
}

fn adjacent(a: &LMapping, b: &LMapping) -> bool {
    if !a.file.is_empty() && !b.file.is_empty() && a.file != b.file {
        return false;
    }
    if !a.build_id.is_empty() && !b.build_id.is_empty() && a.build_id != b.build_id {
        return false;
    }
    if a.limit != b.start {
        return false;
    }
    if a.offset != 0
        && b.offset != 0
        && a.offset.wrapping_add(a.limit.wrapping_sub(a.start)) != b.offset
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::maps::{BRIEF_MAPS, LOG_PREFIX, PROC_MAPS};
    use super::text::{
        CONTENTION_SAMPLE, COUNT_SAMPLE, COUNT_START, GROWTH_HEADER, HEAP_HEADER, HEAP_SAMPLE, HEX,
        parse_go_int, unsample,
    };
    use super::*;

    #[test]
    fn the_patterns_compile() {
        for r in [
            &HEAP_HEADER,
            &HEAP_SAMPLE,
            &GROWTH_HEADER,
            &CONTENTION_SAMPLE,
            &HEX,
            &COUNT_START,
            &COUNT_SAMPLE,
            &PROC_MAPS,
            &BRIEF_MAPS,
            &LOG_PREFIX,
            &LIB,
        ] {
            assert_ne!(r.as_str(), "$^");
        }
    }

    #[test]
    fn heap_samples_are_unsampled_as_go_unsamples_them() {
        // One 512 KiB block at a 512 KiB rate: seen with probability 1 - 1/e.
        let (c, s) = unsample(1, 524288, 524288);
        assert_eq!((c, s), (1, 829_411));
        assert_eq!(unsample(3, 0, 10), (0, 0));
        assert_eq!(unsample(3, 30, 1), (3, 30));
    }

    /// Found by the fuzz run: a sampling period that overflows in nanoseconds is refused
    /// (heap values whose sums overflow: report's tests).
    #[test]
    fn a_sampling_period_past_64_bits_is_refused() {
        let mut cpu = Vec::new();
        for w in [0u64, 3, 0, u64::MAX / 2, 0, 1, 1, 0x1000, 0, 1, 0] {
            cpu.extend_from_slice(&w.to_le_bytes());
        }
        assert!(parse(&cpu).unwrap_err().0.contains("sampling period"));
    }

    #[test]
    fn go_integers() {
        assert_eq!(parse_go_int("3201000000"), Some(3_201_000_000));
        assert_eq!(parse_go_int("0x10"), Some(16));
        assert_eq!(parse_go_int("010"), Some(8));
        assert_eq!(parse_go_int("x"), None);
    }
}
