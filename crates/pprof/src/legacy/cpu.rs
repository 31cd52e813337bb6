//! The binary CPU profile (profilez, what gperftools writes).

use super::LegacyError;
use std::collections::HashMap;

use super::maps::parse_maps;
use super::{Addrs, LSample, Legacy};

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
pub(super) fn parse_cpu(b: &[u8]) -> Result<Option<Legacy>, LegacyError> {
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
            return Err(LegacyError(
                "a legacy Java CPU profile, which agentprof does not read".into(),
            ));
        }
        if h[2] != 0 {
            continue;
        }
        let period = i64::try_from(h[3])
            .ok()
            .and_then(|p| p.checked_mul(1000))
            .ok_or("the sampling period is out of range")?;
        return cpu_samples(rest, word, period).map(Some);
    }
    Ok(None)
}

fn cpu_samples(mut b: &[u8], word: Word, period: i64) -> Result<Legacy, LegacyError> {
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
            return Err(LegacyError(format!(
                "a CPU sample claims {depth} frames, more than the {} bytes left",
                t.len()
            )));
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
