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
    fn get(&mut self, l: &mut Legacy, a: u64) -> usize {
        *self.index.entry(a).or_insert_with(|| {
            l.addresses.push(a);
            l.addresses.len() - 1
        })
    }
}

/// What a legacy profile the parser does not read is, for the refusal.
pub fn describe_unread(raw: &[u8]) -> Option<&'static str> {
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

/// The profile in `raw` if it is one of the legacy formats agentprof reads; `Ok(None)` when
/// it is none of them. A legacy profile that is malformed is an error saying where.
pub fn parse(raw: &[u8]) -> Result<Option<Profile>, String> {
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

fn is_space_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

// ---- the binary CPU profile ----

type Word = fn(&[u8]) -> Option<(u64, &[u8])>;

fn w32l(b: &[u8]) -> Option<(u64, &[u8])> {
    let (h, t) = b.split_first_chunk::<4>()?;
    Some((u64::from(u32::from_le_bytes(*h)), t))
}
fn w32b(b: &[u8]) -> Option<(u64, &[u8])> {
    let (h, t) = b.split_first_chunk::<4>()?;
    Some((u64::from(u32::from_be_bytes(*h)), t))
}
fn w64l(b: &[u8]) -> Option<(u64, &[u8])> {
    let (h, t) = b.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*h), t))
}
fn w64b(b: &[u8]) -> Option<(u64, &[u8])> {
    let (h, t) = b.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*h), t))
}

/// The header is five words: 0, 3, 0 (C++; 1 is Java), the sampling period in microseconds,
/// 0 — in 32 or 64 bits, either byte order. Samples follow (count, depth, addresses), ended
/// by 0, 1, 0; then the memory map as text.
fn parse_cpu(b: &[u8]) -> Result<Option<Legacy>, String> {
    for word in [w32l as Word, w32b, w64l, w64b] {
        let mut rest = b;
        let mut h = [0u64; 5];
        let mut ok = true;
        for v in &mut h {
            match word(rest) {
                Some((x, t)) => {
                    *v = x;
                    rest = t;
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok || h[0] != 0 || h[1] != 3 || h[3] == 0 || h[4] != 0 {
            continue;
        }
        if h[2] == 1 {
            return Err("a legacy Java CPU profile, which agentprof does not read".into());
        }
        if h[2] != 0 {
            continue;
        }
        let period = i64::try_from(h[3]).map_err(|_| "the sampling period is out of range")? * 1000;
        return cpu_samples(rest, word, period).map(Some);
    }
    Ok(None)
}

fn cpu_samples(mut b: &[u8], word: Word, period: i64) -> Result<Legacy, String> {
    let mut l = Legacy {
        sample_types: vec![("samples", "count"), ("cpu", "nanoseconds")],
        period_type: ("cpu", "nanoseconds"),
        period,
        ..Legacy::default()
    };
    let mut addrs = Addrs::default();
    while !b.is_empty() {
        let (count, t) = word(b).ok_or("a CPU sample is cut short")?;
        let (depth, t) = word(t).ok_or("a CPU sample is cut short")?;
        if depth > (t.len() / 4) as u64 {
            return Err(format!(
                "a CPU sample claims {depth} frames, more than the {} bytes left",
                t.len()
            ));
        }
        let mut stack = Vec::with_capacity(depth as usize);
        let mut t = t;
        for _ in 0..depth {
            let (a, r) = word(t).ok_or("a CPU sample's stack is cut short")?;
            stack.push(a);
            t = r;
        }
        b = t;
        if count == 0 && depth == 1 && stack[0] == 0 {
            break;
        }
        let locs = stack
            .iter()
            .enumerate()
            .map(|(i, &a)| addrs.get(&mut l, if i > 0 { a.wrapping_sub(1) } else { a }))
            .collect();
        let count = i64::try_from(count).map_err(|_| "a sample count is out of range")?;
        l.samples.push(LSample {
            locs,
            values: vec![count, count.saturating_mul(period)],
            block: None,
        });
    }
    // A frame below the leaf that nearly every sample shares was pushed by the signal
    // handler: up to two such frames are taken out, as go tool pprof does.
    let margin = l.samples.len() / 32;
    for _ in 0..2 {
        let mut second: HashMap<u64, usize> = HashMap::new();
        let mut order: Vec<u64> = Vec::new();
        for s in &l.samples {
            if s.locs.len() > 1 {
                let a = l.addresses[s.locs[1]];
                let e = second.entry(a).or_insert(0);
                if *e == 0 {
                    order.push(a);
                }
                *e += 1;
            }
        }
        // Go ranges over a map here: with a margin, two frames could qualify, and Go takes
        // whichever it meets first; the most common one is the one that matters.
        order.sort_by_key(|a| std::cmp::Reverse(second[a]));
        if let Some(&a) = order
            .iter()
            .find(|a| second[*a] >= l.samples.len().saturating_sub(margin))
        {
            for s in &mut l.samples {
                if s.locs.len() > 1 && l.addresses[s.locs[1]] == a {
                    s.locs.remove(1);
                }
            }
        }
    }
    l.mappings = parse_maps(&String::from_utf8_lossy(b));
    // The leaf repeated from the signal context (its copy adjusted by -1) is dropped.
    for s in &mut l.samples {
        if s.locs.len() > 1 && l.addresses[s.locs[0]] == l.addresses[s.locs[1]].wrapping_add(1) {
            s.locs.remove(1);
        }
    }
    Ok(l)
}

// ---- text formats ----

static HEAP_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)")
});
static HEAP_SAMPLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)"));
static GROWTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ (growthz?|fragmentationz?)")
});
static CONTENTION_SAMPLE: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) *(\d+) @([ x0-9a-f]*)"));
static HEX: LazyLock<Regex> = LazyLock::new(|| re(r"0x[0-9a-f]+"));
static COUNT_START: LazyLock<Regex> = LazyLock::new(|| re(r"\A(\S+) profile: total \d+\z"));
static COUNT_SAMPLE: LazyLock<Regex> = LazyLock::new(|| re(r"\A(\d+) @(( 0x[0-9a-f]+)+)\z"));

fn re(s: &str) -> Regex {
    // The patterns are constants of this file; a test compiles each.
    Regex::new(s).unwrap_or_else(|_| Regex::new("$^").unwrap_or_else(|_| unreachable!()))
}

fn is_map_sentinel(line: &str) -> bool {
    line.contains("--- Memory map: ---") || line.contains("MAPPED_LIBRARIES:")
}

fn hex_addresses(s: &str, line_no: usize) -> Result<Vec<u64>, String> {
    HEX.find_iter(s)
        .map(|m| {
            u64::from_str_radix(&m.as_str()[2..], 16)
                .map_err(|_| format!("line {line_no}: {} is not a 64-bit address", m.as_str()))
        })
        .collect()
}

fn int(s: &str, line_no: usize) -> Result<i64, String> {
    s.parse()
        .map_err(|_| format!("line {line_no}: {s} is not a number"))
}

/// Go's unsampling of a heap sample taken at an average rate of one per `rate` bytes: each
/// block of size S was seen with probability 1 - e^(-S/rate).
fn unsample(count: i64, size: i64, rate: i64) -> (i64, i64) {
    if count == 0 || size == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count, size);
    }
    let avg = size as f64 / count as f64;
    let scale = 1.0 / (1.0 - (-avg / rate as f64).exp());
    ((count as f64 * scale) as i64, (size as f64 * scale) as i64)
}

fn parse_heap(text: &str) -> Result<Option<Legacy>, String> {
    let Some(first) = text.lines().next() else {
        return Ok(None);
    };
    let (v2, rate, has_alloc) = if let Some(h) = HEAP_HEADER.captures(first) {
        let g = |i: usize| h.get(i).map_or("", |m| m.as_str());
        let mut rate = if g(6).is_empty() { 0 } else { int(g(6), 1)? };
        let has_alloc = (g(3) != g(1) && g(3) != "0") || (g(4) != g(2) && g(4) != "0");
        let v2 = match g(5) {
            "heapz_v2" | "heap_v2" => true,
            "heapprofile" => {
                rate = 1;
                false
            }
            "heap" => {
                rate /= 2;
                true
            }
            _ => return Ok(None),
        };
        (v2, rate, has_alloc)
    } else if GROWTH_HEADER.is_match(first) {
        (false, 1, false)
    } else {
        return Ok(None);
    };
    let mut l = Legacy {
        sample_types: if has_alloc {
            vec![
                ("alloc_objects", "count"),
                ("alloc_space", "bytes"),
                ("inuse_objects", "count"),
                ("inuse_space", "bytes"),
            ]
        } else {
            vec![("objects", "count"), ("space", "bytes")]
        },
        period_type: ("space", "bytes"),
        period: rate,
        ..Legacy::default()
    };
    let mut addrs = Addrs::default();
    let all: Vec<&str> = text.lines().collect();
    let mut i = 1;
    while i < all.len() {
        let line_no = i + 1;
        let line = all[i].trim();
        if is_map_sentinel(line) {
            break;
        }
        i += 1;
        if is_space_or_comment(line) {
            continue;
        }
        let c = HEAP_SAMPLE
            .captures(line)
            .ok_or_else(|| format!("line {line_no}: not a heap sample: {line}"))?;
        let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
        let mut values = Vec::with_capacity(4);
        let mut block = 0;
        let mut add = |count: &str, size: &str, what: &str| -> Result<(), String> {
            let (mut count, mut size) = (int(count, line_no)?, int(size, line_no)?);
            if count == 0 && size != 0 {
                return Err(format!(
                    "line {line_no}: {what} count was 0 but {what} bytes was {size}"
                ));
            }
            if count != 0 {
                block = size.checked_div(count).unwrap_or(i64::MAX);
                if v2 {
                    (count, size) = unsample(count, size, rate);
                }
            }
            values.extend([count, size]);
            Ok(())
        };
        if has_alloc {
            add(g(3), g(4), "allocation")?;
        }
        add(g(1), g(2), "inuse")?;
        let stack = hex_addresses(g(5), line_no)?;
        let locs = stack
            .iter()
            .map(|&a| addrs.get(&mut l, a.wrapping_sub(1)))
            .collect();
        l.samples.push(LSample {
            locs,
            values,
            block: Some(block),
        });
    }
    l.mappings = maps_after_sentinel(&all[i.min(all.len())..].join("\n"));
    Ok(Some(l))
}

/// The memory map after its sentinel line (if there is one).
fn maps_after_sentinel(rest: &str) -> Vec<LMapping> {
    match rest.lines().position(is_map_sentinel) {
        Some(i) => parse_maps(&rest.lines().skip(i + 1).collect::<Vec<_>>().join("\n")),
        None => Vec::new(),
    }
}

fn parse_contention(text: &str) -> Result<Option<Legacy>, String> {
    let all: Vec<&str> = text.lines().collect();
    let Some(first) = all.first() else {
        return Ok(None);
    };
    if !(first.starts_with("--- contentionz ")
        || first.starts_with("--- mutex:")
        || first.starts_with("--- contention:"))
    {
        return Ok(None);
    }
    let mut l = Legacy {
        sample_types: vec![("contentions", "count"), ("delay", "nanoseconds")],
        period_type: ("contentions", "count"),
        period: 1,
        ..Legacy::default()
    };
    let mut cpu_hz = 0i64;
    let mut i = 1;
    while i < all.len() {
        let line = all[i].trim();
        if is_space_or_comment(line) {
            i += 1;
            continue;
        }
        if line.starts_with("---") {
            break;
        }
        let Some((key, val)) = line.split_once('=') else {
            break;
        };
        let (key, val) = (key.trim(), val.trim());
        let num = || {
            parse_go_int(val)
                .ok_or_else(|| format!("line {}: {key} = {val} is not a number", i + 1))
        };
        match key {
            "cycles/second" => cpu_hz = num()?,
            "sampling period" => l.period = num()?,
            "ms since reset" => l.duration_nanos = num()?.saturating_mul(1_000_000),
            "discarded samples" => {}
            "format" | "resolution" => {
                return Err(format!(
                    "line {}: a contention profile with `{key} = {val}` (a Java profile), which agentprof does not read",
                    i + 1
                ));
            }
            _ => {
                return Err(format!(
                    "line {}: unknown contention attribute {key}",
                    i + 1
                ));
            }
        }
        i += 1;
    }
    let mut addrs = Addrs::default();
    while i < all.len() {
        let line = all[i].trim();
        if line.starts_with("---") {
            break;
        }
        if !is_space_or_comment(line) {
            let c = CONTENTION_SAMPLE
                .captures(line)
                .ok_or_else(|| format!("line {}: not a contention sample: {line}", i + 1))?;
            let mut delay = int(&c[1], i + 1)?;
            let mut count = int(&c[2], i + 1)?;
            if l.period > 0 {
                if cpu_hz > 0 {
                    let ghz = cpu_hz as f64 / 1e9;
                    delay = (delay as f64 * l.period as f64 / ghz) as i64;
                }
                count = count.saturating_mul(l.period);
            }
            let stack = hex_addresses(&c[3], i + 1)?;
            let locs = stack
                .iter()
                .map(|&a| addrs.get(&mut l, a.wrapping_sub(1)))
                .collect();
            l.samples.push(LSample {
                locs,
                values: vec![count, delay],
                block: None,
            });
        }
        i += 1;
    }
    l.mappings = maps_after_sentinel(&all[i.min(all.len())..].join("\n"));
    Ok(Some(l))
}

/// Go's `strconv.ParseInt(s, 0, 64)`: decimal, or 0x/0o/0b prefixed, or a leading 0 for octal.
fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let s = s.replace('_', "");
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()?
    } else if let Some(o) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        i64::from_str_radix(o, 8).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

fn parse_go_count(text: &str) -> Result<Option<Legacy>, String> {
    let all: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < all.len() && is_space_or_comment(all[i]) {
        i += 1;
    }
    let Some(c) = all.get(i).and_then(|l| COUNT_START.captures(l)) else {
        return Ok(None);
    };
    let kind: &'static str = match &c[1] {
        "goroutine" => "goroutine",
        "threadcreate" => "threadcreate",
        other => {
            return Err(format!(
                "a Go `{other} profile` in text, which agentprof does not read"
            ));
        }
    };
    let mut l = Legacy {
        sample_types: vec![(kind, "count")],
        period_type: (kind, "count"),
        period: 1,
        ..Legacy::default()
    };
    let mut addrs = Addrs::default();
    i += 1;
    while i < all.len() {
        let line = all[i];
        if is_space_or_comment(line) {
            i += 1;
            continue;
        }
        if line.starts_with("---") {
            break;
        }
        let c = COUNT_SAMPLE
            .captures(line)
            .ok_or_else(|| format!("line {}: not a `N @ 0x…` count sample: {line}", i + 1))?;
        let n = parse_go_int(&c[1]).ok_or_else(|| format!("line {}: bad count", i + 1))?;
        let mut locs = Vec::new();
        for a in c[2].split_whitespace() {
            let a = u64::from_str_radix(a.trim_start_matches("0x"), 16)
                .map_err(|_| format!("line {}: {a} is not an address", i + 1))?;
            locs.push(addrs.get(&mut l, a.wrapping_sub(1)));
        }
        l.samples.push(LSample {
            locs,
            values: vec![n],
            block: None,
        });
        i += 1;
    }
    l.mappings = maps_after_sentinel(&all[i.min(all.len())..].join("\n"));
    Ok(Some(l))
}

// ---- memory maps ----

static PROC_MAPS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:0x)?([[:xdigit:]]+)[\s-]?\s*(?:0x)?([[:xdigit:]]+):?(?:\s+([-rwxp]+))?(?:\s+([[:xdigit:]]+))?\s+[[:xdigit:]]+:[[:xdigit:]]+\s+[[:digit:]]+(?:\s+(\S+))?",
    )
});
static BRIEF_MAPS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:0x)?([[:xdigit:]]+)[\s-]?\s*(?:0x)?([[:xdigit:]]+):?(?:\s+([-rwxp]+))?(?:\s+(\S+))?(?:\s+\(@([[:xdigit:]]+)\))?(?:\s+([[:xdigit:]]+))?",
    )
});
static LOG_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(r"^[^\[\]]+:[0-9]+]\s"));

/// The executable mappings of a `/proc/PID/maps`-like text (or the brief `start-end file`
/// form), `$attr` assignments substituted as Go substitutes them.
fn parse_maps(text: &str) -> Vec<LMapping> {
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

/// `.so` libraries, which are never the main binary.
static LIB: LazyLock<Regex> = LazyLock::new(|| re(r"([.]so$|[.]so[._][0-9]+)"));

impl Legacy {
    /// Go's massageMappings and remapMappingIDs: adjacent pieces of one file merged, the main
    /// binary first, each address given the mapping that holds it (or a fake one).
    fn into_profile(mut self) -> Profile {
        let mut maps: Vec<LMapping> = Vec::new();
        for m in std::mem::take(&mut self.mappings) {
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
        // Only the addresses samples use become locations, in the order samples use them.
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
        let mut fake: Option<usize> = None;
        let mut loc_map = Vec::with_capacity(used.len());
        for &ai in &used {
            let a = self.addresses[ai];
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
        let sample = self
            .samples
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
            .collect();
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

    #[test]
    fn go_integers() {
        assert_eq!(parse_go_int("3201000000"), Some(3_201_000_000));
        assert_eq!(parse_go_int("0x10"), Some(16));
        assert_eq!(parse_go_int("010"), Some(8));
        assert_eq!(parse_go_int("x"), None);
    }
}
