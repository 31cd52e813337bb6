//! The text formats: heap (heapz, heap_v2, Go's legacy heap, growthz), contention
//! (contentionz, Go's mutex and contention) and Go's count profiles (goroutine, threadcreate).

use super::LegacyError;
use std::sync::LazyLock;

use regex::Regex;

use super::maps::parse_maps;
use super::{Addrs, LMapping, LSample, Legacy, is_space_or_comment, re};

pub(super) static HEAP_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)")
});
pub(super) static HEAP_SAMPLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)"));
pub(super) static GROWTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ (growthz?|fragmentationz?)")
});
pub(super) static CONTENTION_SAMPLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d+) *(\d+) @([ x0-9a-f]*)"));
pub(super) static HEX: LazyLock<Regex> = LazyLock::new(|| re(r"0x[0-9a-f]+"));
pub(super) static COUNT_START: LazyLock<Regex> =
    LazyLock::new(|| re(r"\A(\S+) profile: total \d+\z"));
pub(super) static COUNT_SAMPLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"\A(\d+) @(( 0x[0-9a-f]+)+)\z"));

pub(super) fn is_map_sentinel(line: &str) -> bool {
    line.contains("--- Memory map: ---") || line.contains("MAPPED_LIBRARIES:")
}

fn hex_addresses(s: &str, line_no: usize) -> Result<Vec<u64>, LegacyError> {
    HEX.find_iter(s)
        .map(|m| {
            u64::from_str_radix(&m.as_str()[2..], 16).map_err(|_| {
                LegacyError(format!(
                    "line {line_no}: {} is not a 64-bit address",
                    m.as_str()
                ))
            })
        })
        .collect()
}

/// The locations of a stack of return addresses, each moved back by one to land on its call.
fn call_sites(addrs: &mut Addrs, l: &mut Legacy, stack: &[u64]) -> Vec<usize> {
    stack
        .iter()
        .map(|&a| addrs.get(l, a.wrapping_sub(1)))
        .collect()
}

fn int(s: &str, line_no: usize) -> Result<i64, LegacyError> {
    s.parse()
        .map_err(|_| LegacyError(format!("line {line_no}: {s} is not a number")))
}

/// Go's unsampling of a heap sample taken at an average rate of one per `rate` bytes: each
/// block of size S was seen with probability 1 - e^(-S/rate).
pub(super) fn unsample(count: i64, size: i64, rate: i64) -> (i64, i64) {
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

/// A heap profile's header line: whether its counts are sampled (to unsample), the
/// sampling rate, whether it has allocation figures besides in-use ones; None when the line
/// is no heap profile's.
fn heap_header(first: &str) -> Result<Option<(bool, i64, bool)>, LegacyError> {
    Ok(if let Some(h) = HEAP_HEADER.captures(first) {
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
        Some((v2, rate, has_alloc))
    } else if GROWTH_HEADER.is_match(first) {
        Some((false, 1, false))
    } else {
        None
    })
}

pub(super) fn parse_heap(text: &str) -> Result<Option<Legacy>, LegacyError> {
    let Some(first) = text.lines().next() else {
        return Ok(None);
    };
    let Some((v2, rate, has_alloc)) = heap_header(first)? else {
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
        let mut add = |count: &str, size: &str, what: &str| -> Result<(), LegacyError> {
            let (mut count, mut size) = (int(count, line_no)?, int(size, line_no)?);
            if count == 0 && size != 0 {
                return Err(LegacyError(format!(
                    "line {line_no}: {what} count was 0 but {what} bytes was {size}"
                )));
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
        let locs = call_sites(&mut addrs, &mut l, &hex_addresses(g(5), line_no)?);
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

/// A contention profile's `key = value` lines after its first: the cycle rate, the sampling
/// period and the duration (into `l`); the cycle rate and the index of the first sample line.
fn contention_header(all: &[&str], l: &mut Legacy) -> Result<(i64, usize), LegacyError> {
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
                return Err(LegacyError(format!(
                    "line {}: a contention profile with `{key} = {val}` (a Java profile), which agentprof does not read",
                    i + 1
                )));
            }
            _ => {
                return Err(LegacyError(format!(
                    "line {}: unknown contention attribute {key}",
                    i + 1
                )));
            }
        }
        i += 1;
    }
    Ok((cpu_hz, i))
}

pub(super) fn parse_contention(text: &str) -> Result<Option<Legacy>, LegacyError> {
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
    let (cpu_hz, mut i) = contention_header(&all, &mut l)?;
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
            let locs = call_sites(&mut addrs, &mut l, &hex_addresses(&c[3], i + 1)?);
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
pub(super) fn parse_go_int(s: &str) -> Option<i64> {
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

pub(super) fn parse_go_count(text: &str) -> Result<Option<Legacy>, LegacyError> {
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
            return Err(LegacyError(format!(
                "a Go `{other} profile` in text, which agentprof does not read"
            )));
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
