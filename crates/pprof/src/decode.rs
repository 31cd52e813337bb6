//! Reading pprof input that may come from anywhere: a body-size limit, decompression (gzip,
//! zstd or an lz4 frame, sniffed from the magic bytes; anything else is raw protobuf) that stops at a limit
//! while inflating, a pre-scan of the protobuf wire format that counts fields and packed
//! elements against a budget before anything is decoded, then prost. Each refusal says why.
//! Every limit is checked before the allocation it protects, so no input can make agentprof
//! allocate past it.

use std::io::Read;

use prost::Message;

mod scan;

pub use scan::{Scan, memory_estimate, prescan};

pub use crate::totals::{
    LabelTotals, LabelValue, MAX_LABEL_VALUES, Totals, totals, totals_without_labels,
};

use super::model::Pprof;
use super::proto::{Label, Profile, ProfileWithoutSamples, Sample};
use super::wire::{Fields, WireValue, put_varint, varint};
use crate::Error;

const MIB: u64 = 1 << 20;

/// How much a profile may weigh, compressed and not, and how many protobuf fields and packed
/// elements it may hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub body: u64,
    pub decompressed: u64,
    pub fields: u64,
    /// Memory the decoded profile may take, estimated from its messages and elements before
    /// anything is allocated (`memory_estimate`).
    pub memory: u64,
}

impl Limits {
    /// Limits for anything that came over the network: `body_size_limit_mb` (default 32),
    /// decompressed at most min(body limit, 8 MiB), 100,000 fields and elements.
    pub fn network(body_size_limit_mb: u64) -> Limits {
        let body = body_size_limit_mb.max(1) * MIB;
        Limits {
            body,
            decompressed: body.min(8 * MIB),
            fields: 100_000,
            memory: 256 * MIB,
        }
    }

    /// Defaults for a local file the user names (`top`, `diff`, `flamegraph`); flags change them.
    pub fn local() -> Limits {
        Limits {
            body: 256 * MIB,
            decompressed: 1024 * MIB,
            fields: 100_000_000,
            memory: 2048 * MIB,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::network(32)
    }
}

/// How the bytes were compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    Gzip,
    Zstd,
    Lz4,
    None,
}

pub fn sniff(bytes: &[u8]) -> Compression {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else if bytes.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        Compression::Lz4
    } else {
        Compression::None
    }
}

/// What compressed bytes say it holds decompressed, before it is decompressed:
/// gzip's ISIZE (the last member's size mod 2^32), a zstd frame's content size, an lz4
/// frame's content size, or the bytes themselves when uncompressed. None when it does not
/// say; the decompression is bounded by what was reserved either way.
pub fn stated_size(data: &[u8]) -> Option<u64> {
    match sniff(data) {
        Compression::None => Some(data.len() as u64),
        Compression::Gzip => {
            let tail: [u8; 4] = data.get(data.len().checked_sub(4)?..)?.try_into().ok()?;
            Some(u64::from(u32::from_le_bytes(tail)))
        }
        Compression::Zstd => zstd_content_size(data),
        Compression::Lz4 => lz4_content_size(data),
    }
}

/// A zstd frame header's Frame_Content_Size (RFC 8878 3.1.1.1), when present.
fn zstd_content_size(d: &[u8]) -> Option<u64> {
    let fhd = *d.get(4)?;
    let fcs_flag = fhd >> 6;
    let single_segment = fhd & 0x20 != 0;
    let did_flag = fhd & 0x03;
    let mut at = 5 + usize::from(!single_segment);
    at += [0, 1, 2, 4][usize::from(did_flag)];
    let size = match (fcs_flag, single_segment) {
        (0, false) => return None,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let b = d.get(at..at + size)?;
    let mut v = 0u64;
    for (i, x) in b.iter().enumerate() {
        v |= u64::from(*x) << (8 * i);
    }
    Some(if size == 2 { v + 256 } else { v })
}

/// An lz4 frame descriptor's Content Size, when its flag says it is there.
fn lz4_content_size(d: &[u8]) -> Option<u64> {
    let flg = *d.get(4)?;
    if flg & 0x08 == 0 {
        return None;
    }
    let b: [u8; 8] = d.get(6..14)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The uncompressed protobuf bytes of `bytes`, within `limits`.
pub fn decompress(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, Error> {
    match decoder(bytes, limits)? {
        Some((r, what)) => bounded(r, limits.decompressed, what, stated_size(bytes)),
        None => Ok(bytes.to_vec()),
    }
}

/// Reads at most `limit` bytes, in chunks, refusing input that has more.
fn bounded(
    r: impl Read,
    limit: u64,
    what: &'static str,
    stated: Option<u64>,
) -> Result<Vec<u8>, Error> {
    // Room for what the stream states it holds (within the limit): no doubling on the way.
    let room = stated.filter(|n| *n <= limit).unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
    let mut r = r.take(limit + 1);
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::Corrupt(what, stream_error(&e, out.len()))),
        };
        if out.len() as u64 + n as u64 > limit {
            return Err(Error::TooLargeDecompressed { limit });
        }
        out.extend_from_slice(&chunk[..n]);
    }
    Ok(out)
}

/// Decompressed pieces handed from the decompressing thread to the scanning one.
const CHUNK: usize = 256 * 1024;

/// Compressed input from this size on is decompressed on a thread of its own while this one
/// scans what has come out (a thread costs about 50 µs; a megabyte takes milliseconds).
const OVERLAP_FROM: usize = 256 * 1024;

/// The decompressed bytes of `bytes` and their pre-scan ([`memory_estimate`]), as
/// `decompress` then `memory_estimate` give them: the decompression runs on another thread
/// while this one scans each piece that has come out, so the scan costs no time of its own
/// on a machine with a second core. A decompression error comes first, as it would.
pub(crate) fn decompress_scanned(
    bytes: &[u8],
    limits: &Limits,
) -> Result<(Vec<u8>, Result<Scan, Error>), Error> {
    let one_after_the_other = |bytes: &[u8]| {
        let raw = decompress(bytes, limits)?;
        let scan = memory_estimate(&raw, limits);
        Ok((raw, scan))
    };
    if bytes.len() < OVERLAP_FROM {
        return one_after_the_other(bytes);
    }
    // Raw protobuf has nothing to decompress.
    let Some((r, what)) = decoder(bytes, limits)? else {
        return one_after_the_other(bytes);
    };
    let limit = limits.decompressed;
    let room = stated_size(bytes).filter(|n| *n <= limit).unwrap_or(0);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        let inflater = scope.spawn(move || -> Result<(), Error> {
            let mut r = r.take(limit + 1);
            let mut total = 0u64;
            loop {
                let mut chunk = vec![0u8; CHUNK];
                let mut filled = 0;
                while filled < CHUNK {
                    match r.read(&mut chunk[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            let at = usize::try_from(total).unwrap_or(usize::MAX) + filled;
                            return Err(Error::Corrupt(what, stream_error(&e, at)));
                        }
                    }
                }
                total += filled as u64;
                if total > limit {
                    return Err(Error::TooLargeDecompressed { limit });
                }
                if filled == 0 {
                    return Ok(());
                }
                chunk.truncate(filled);
                if tx.send(chunk).is_err() {
                    return Ok(());
                }
            }
        });
        let mut out = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
        let mut scan = scan::Incremental::default();
        for chunk in rx {
            out.extend_from_slice(&chunk);
            scan.advance(&out, limits.fields);
        }
        match inflater.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::Corrupt(what, "the decompressor failed".into()));
            }
        }
        let scan = scan.finish(&out, limits);
        Ok((out, scan))
    })
}

/// A decompressed stream, and the compression's name for its errors.
type Decoder<'a> = (Box<dyn Read + Send + 'a>, &'static str);

/// A reader of `bytes`' decompressed stream; None for raw protobuf. The input's own size,
/// and an empty input, are refused here.
fn decoder<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Option<Decoder<'a>>, Error> {
    let size = bytes.len() as u64;
    if size > limits.body {
        return Err(Error::TooLarge {
            size,
            limit: limits.body,
        });
    }
    if bytes.is_empty() {
        return Err(Error::Empty);
    }
    Ok(Some(match sniff(bytes) {
        Compression::Gzip => (Box::new(flate2::read::MultiGzDecoder::new(bytes)), "gzip"),
        Compression::Zstd => {
            // The window is capped too: a frame may ask for a window of gigabytes.
            let window = limits.decompressed.max(1 << 10);
            let dec = ruzstd::decoding::StreamingDecoder::new_with_max_window_size(bytes, window)
                .map_err(|e| Error::Corrupt("zstd", e.to_string()))?;
            (Box::new(dec), "zstd")
        }
        Compression::Lz4 => (Box::new(lz4_flex::frame::FrameDecoder::new(bytes)), "lz4"),
        Compression::None => {
            if size > limits.decompressed {
                return Err(Error::TooLargeDecompressed {
                    limit: limits.decompressed,
                });
            }
            return Ok(None);
        }
    }))
}

/// `[section]` or `[[array.of.tables]]` alone on a line: TOML, not a JSON array.
fn is_toml_table(line: &str) -> bool {
    let l = line.trim();
    let inner = l
        .strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .or_else(|| l.strip_prefix('[').and_then(|r| r.strip_suffix(']')));
    inner.is_some_and(|k| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-. \"".contains(c))
            && k.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '"')
    })
}

/// A decompressor's error in words: a stream that ends early says so and how much came out
/// of it; anything else is its innermost cause (the decompressors' outer messages embed
/// their internals' debug text).
fn stream_error(e: &std::io::Error, decoded: usize) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    let mut cut = e.kind() == std::io::ErrorKind::UnexpectedEof;
    while let Some(next) = cur.source() {
        if next
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
        {
            cut = true;
        }
        cur = next;
    }
    let text = cur.to_string();
    if cut || text.contains("incomplete") {
        format!("the data ends early (cut?): {decoded} bytes came out before the end")
    } else {
        text
    }
}

/// What a body that is not protobuf looks like, for the message that refuses it.
pub fn describe_non_profile(bytes: &[u8]) -> Option<String> {
    // marshal's dict, keyed by (file, line, function) tuples: what cProfile and pstats write.
    if matches!(bytes.first(), Some(0x7b | 0xfb))
        && matches!(bytes.get(1), Some(0x28 | 0x29 | 0xa8 | 0xa9))
    {
        return Some(
            "a Python pstats dump (cProfile statistics): read it with `python -m pstats FILE` or snakeviz".into(),
        );
    }
    let head = &bytes[..bytes.len().min(512)];
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // A cut in the middle of a UTF-8 sequence at the 512th byte.
        (1..4).find_map(|cut| std::str::from_utf8(&head[..head.len().saturating_sub(cut)]).ok())
    })?;
    let t = text.trim_start();
    if t.is_empty()
        || !t
            .chars()
            .take(64)
            .all(|c| !c.is_control() || c.is_whitespace())
    {
        return None;
    }
    let first_line: String = t
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(120)
        .collect();
    let lower = t.to_ascii_lowercase();
    Some(
        if lower.starts_with("<!doctype html")
            || lower.starts_with("<html")
            || lower.starts_with('<')
        {
            "an HTML page (a login page or a proxy's error page?)".to_string()
        } else if is_toml_table(&first_line) {
            format!("a TOML document: {first_line}")
        } else if t.starts_with('{') || t.starts_with('[') {
            format!("a JSON document: {first_line}")
        } else {
            format!("text: {first_line}")
        },
    )
}

/// The profile with its string table made valid UTF-8 as go tool pprof's reader tolerates it
/// (bytes that are not UTF-8 become U+FFFD), every other field copied as it was.
fn lossy_strings(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 64);
    let mut fields = Fields::new(raw);
    loop {
        let start = fields.offset();
        let Some(Ok((field, value))) = fields.next() else {
            break;
        };
        match value {
            WireValue::Bytes(body) if field == 6 => {
                let text = String::from_utf8_lossy(body);
                put_varint(&mut out, (6 << 3) | 2);
                put_varint(&mut out, text.len() as u64);
                out.extend_from_slice(text.as_bytes());
            }
            _ => out.extend_from_slice(&raw[start..fields.offset()]),
        }
    }
    out
}

/// The length-delimited top-level fields of a profile: (field number, payload), up to the
/// first field that cannot be read.
fn top_fields(raw: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    Fields::new(raw)
        .map_while(Result::ok)
        .filter_map(|(field, value)| match value {
            WireValue::Bytes(body) => Some((field, body)),
            _ => None,
        })
}

/// How to turn a profile agentprof does not read into one it does.
const CONVERT: &str =
    "if go tool pprof reads it, convert it: `go tool pprof -proto FILE > out.pb.gz`";

/// Decodes a profile from raw or compressed bytes within `limits`: profile.proto, or one of
/// the legacy formats go tool pprof still reads (see [`super::legacy`]), as go tool pprof
/// tries them: protobuf first.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Profile, Error> {
    let raw = decompress(bytes, limits)?;
    decode_raw_or_legacy(&raw, limits)
}

/// Decompressed bytes decoded: profile.proto, else a legacy format go tool pprof reads.
pub(crate) fn decode_raw_or_legacy(raw: &[u8], limits: &Limits) -> Result<Profile, Error> {
    match decode_raw(raw, limits) {
        Ok(p) => Ok(p),
        Err(e @ (Error::Malformed(_) | Error::NotAProfile(_))) => match super::legacy::parse(raw) {
            Ok(Some(p)) => Ok(p),
            Err(why) => Err(Error::Legacy(why.0)),
            Ok(None) => Err(match super::legacy::describe_unread(raw) {
                Some(what) => {
                    Error::NotAProfile(format!("{what}, which agentprof does not read; {CONVERT}"))
                }
                None => match e {
                    Error::Malformed(m) => Error::Malformed(format!(
                        "{m} (neither profile.proto nor a legacy format agentprof reads; {CONVERT})"
                    )),
                    other => other,
                },
            }),
        },
        Err(e) => Err(e),
    }
}

/// [`decode`] and [`Pprof::new`] at once, for a report: the samples' location ids go
/// straight into the model's one array instead of a vector per sample (one allocation per
/// sample, and memory touched once, were much of `agentprof top`'s time on a large profile). A profile this reader does not take (an id past 32 bits,
/// a field of a wire type it should not have, anything malformed) is read the ordinary way,
/// with the same errors.
pub fn decode_pprof(bytes: &[u8], limits: &Limits) -> Result<Pprof, Error> {
    let (raw, scan) = decompress_scanned(bytes, limits)?;
    decode_scanned(&raw, limits, scan)
}

/// Decodes a profile's decompressed bytes with the pre-scan a caller already made of `raw` (the ui charges its
/// memory estimate to the budget before decoding), so it is not made twice.
pub fn decode_scanned(
    raw: &[u8],
    limits: &Limits,
    scan: Result<Scan, Error>,
) -> Result<Pprof, Error> {
    if let Ok(scan) = scan
        && let Some(p) = read_apart(raw, &scan)
    {
        return p;
    }
    Pprof::new(decode_raw_or_legacy(raw, limits)?)
}

/// The profile with its samples read apart from prost's reading of the rest; None when the
/// ordinary reader is to read it.
fn read_apart(raw: &[u8], scan: &Scan) -> Option<Result<Pprof, Error>> {
    if raw.is_empty() || scan.strings_not_utf8 {
        return None;
    }
    let room = |n: u64| usize::try_from(n).unwrap_or(0);
    let mut rest = ProfileWithoutSamples::default();
    rest.location.reserve_exact(room(scan.locations));
    rest.function.reserve_exact(room(scan.functions));
    rest.string_table.reserve_exact(room(scan.strings));
    rest.merge(raw).ok()?;
    let mut samples = Vec::with_capacity(room(scan.samples));
    let mut ids = Vec::with_capacity(room(scan.sample_locations));
    let mut spans = Vec::with_capacity(room(scan.samples));
    for (field, body) in top_fields(raw) {
        if field == 2 {
            let start = ids.len();
            samples.push(sample_apart(body, &mut ids)?);
            spans.push((start, ids.len()));
        }
    }
    if rest.sample_type.is_empty() && samples.is_empty() && rest.string_table.is_empty() {
        return None;
    }
    Some(Pprof::with_location_ids(
        rest.with_samples(samples),
        ids,
        spans,
    ))
}

/// One sample's message: its values and labels, its packed location ids appended to `ids`.
fn sample_apart(body: &[u8], ids: &mut Vec<u32>) -> Option<Sample> {
    let mut s = Sample::default();
    for item in Fields::new(body) {
        let (field, value) = item.ok()?;
        match (field, value) {
            // A list element written alone (Go's encoder writes lists of one or two so).
            (1, WireValue::Varint(v)) => ids.push(u32::try_from(v).ok()?),
            (2, WireValue::Varint(v)) => s.value.push(v as i64),
            (_, WireValue::Varint(_)) => {}
            (1, WireValue::Bytes(data)) => {
                let mut p = 0;
                while p < data.len() {
                    ids.push(u32::try_from(varint(data, &mut p)?).ok()?);
                }
            }
            (2, WireValue::Bytes(data)) => {
                s.value
                    .reserve_exact(data.iter().filter(|&&b| b < 0x80).count());
                let mut p = 0;
                while p < data.len() {
                    s.value.push(varint(data, &mut p)? as i64);
                }
            }
            (3, WireValue::Bytes(data)) => s.label.push(Label::decode(data).ok()?),
            (1..=3, _) => return None,
            _ => {}
        }
    }
    Some(s)
}

/// Decodes uncompressed protobuf bytes within `limits.fields`.
pub fn decode_raw(raw: &[u8], limits: &Limits) -> Result<Profile, Error> {
    if raw.is_empty() {
        return Err(Error::Empty);
    }
    let scan = match memory_estimate(raw, limits) {
        Ok(s) => s,
        Err(e) => {
            return Err(match (&e, describe_non_profile(raw)) {
                (Error::Malformed(_), Some(what)) => Error::NotAProfile(what),
                _ => e,
            });
        }
    };
    let repaired;
    let raw = if !scan.strings_not_utf8 {
        raw
    } else {
        repaired = lossy_strings(raw);
        &repaired[..]
    };
    // Room for what the scan counted (within the memory it was allowed), then one pass.
    let mut p = Profile::default();
    let room = |n: u64| usize::try_from(n).unwrap_or(0);
    p.sample.reserve_exact(room(scan.samples));
    p.location.reserve_exact(room(scan.locations));
    p.function.reserve_exact(room(scan.functions));
    p.string_table.reserve_exact(room(scan.strings));
    p.merge(raw).map_err(|e| Error::Malformed(e.to_string()))?;
    if p.sample_type.is_empty() && p.sample.is_empty() && p.string_table.is_empty() {
        return Err(match describe_non_profile(raw) {
            Some(what) => Error::NotAProfile(what),
            None => Error::NotAProfile("no sample types and no strings".into()),
        });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of reading a profile for a report give the same model, or the same error.
    fn same_both_ways(bytes: &[u8]) {
        let limits = Limits::local();
        let apart = decode_pprof(bytes, &limits);
        let whole = decode(bytes, &limits).and_then(Pprof::new);
        match (apart, whole) {
            (Ok(a), Ok(w)) => {
                assert_eq!(a.to_proto(), w.to_proto());
                assert_eq!(a.proto, w.proto, "location_id emptied both ways");
            }
            (Err(a), Err(w)) => assert_eq!(a.to_string(), w.to_string()),
            (a, w) => panic!("{:?} vs {:?}", a.err(), w.err()),
        }
    }

    fn taken_apart(raw: &[u8]) -> bool {
        memory_estimate(raw, &Limits::local())
            .is_ok_and(|scan| read_apart(raw, &scan).is_some_and(|p| p.is_ok()))
    }

    #[test]
    fn samples_read_apart_are_the_samples_prost_reads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/dd-trace-go-upload");
        let mut apart = 0;
        for f in std::fs::read_dir(&dir).expect("fixtures").flatten() {
            if f.path().extension().is_some_and(|e| e == "pprof") {
                let bytes = std::fs::read(f.path()).expect("fixture");
                same_both_ways(&bytes);
                apart += usize::from(taken_apart(
                    &decompress(&bytes, &Limits::local()).expect("raw"),
                ));
            }
        }
        assert_eq!(apart, 5, "fixtures read apart");
        // Labels, an empty sample, and a location id past 32 bits (read the ordinary way).
        let label = |k, v| Label {
            key: k,
            str: v,
            ..Label::default()
        };
        let mut p = Profile {
            sample_type: vec![crate::proto::ValueType { r#type: 1, unit: 2 }],
            string_table: ["", "samples", "count", "k", "v"]
                .map(String::from)
                .to_vec(),
            location: vec![crate::proto::Location {
                id: 1,
                ..Default::default()
            }],
            sample: vec![
                Sample {
                    location_id: vec![1, 1],
                    value: vec![3],
                    label: vec![label(3, 4)],
                },
                Sample {
                    location_id: vec![],
                    value: vec![0],
                    label: vec![],
                },
            ],
            ..Profile::default()
        };
        let raw = p.encode_to_vec();
        assert!(taken_apart(&raw));
        same_both_ways(&raw);
        p.location[0].id = 1 << 40;
        p.sample[0].location_id = vec![1 << 40];
        let raw = p.encode_to_vec();
        assert!(!taken_apart(&raw));
        same_both_ways(&raw);
        // A sample naming a location that is not there: the same error both ways.
        p.sample[0].location_id = vec![7];
        same_both_ways(&p.encode_to_vec());
        // Location ids and a value written one at a time (field 1 as a varint, twice), as Go
        // writes short lists; then a value of the wrong wire type (read the ordinary way).
        let sample = [0x08, 0x01, 0x08, 0x01, 0x12, 0x01, 0x05];
        let mut raw = Profile {
            location: vec![crate::proto::Location {
                id: 1,
                ..Default::default()
            }],
            ..p.clone()
        };
        raw.sample.clear();
        let mut raw = raw.encode_to_vec();
        let base = raw.clone();
        raw.extend_from_slice(&[0x12, sample.len() as u8]);
        raw.extend_from_slice(&sample);
        assert!(taken_apart(&raw));
        same_both_ways(&raw);
        let mut raw = base;
        let sample = [0x08, 0x01, 0x15, 0, 0, 0, 0];
        raw.extend_from_slice(&[0x12, sample.len() as u8]);
        raw.extend_from_slice(&sample);
        assert!(!taken_apart(&raw));
        same_both_ways(&raw);
    }

    /// A profile of `samples` samples and as many strings of pseudo-random letters (so that
    /// gzip keeps it large), one of them not UTF-8 when `bad_utf8`.
    fn big_profile(samples: usize, bad_utf8: bool) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut strings: Vec<String> = vec!["".into(), "samples".into(), "count".into()];
        for _ in 0..samples {
            strings.push(
                (0..24)
                    .map(|_| (b'a' + (next() % 26) as u8) as char)
                    .collect(),
            );
        }
        let p = Profile {
            sample_type: vec![crate::proto::ValueType { r#type: 1, unit: 2 }],
            string_table: strings,
            location: (1..=50)
                .map(|id| crate::proto::Location {
                    id,
                    ..Default::default()
                })
                .collect(),
            sample: (0..samples)
                .map(|i| Sample {
                    location_id: (0..(i % 7 + 1) as u64)
                        .map(|d| 1 + (next() + d) % 50)
                        .collect(),
                    value: vec![(next() % 1000) as i64],
                    label: vec![],
                })
                .collect(),
            ..Profile::default()
        };
        let mut raw = p.encode_to_vec();
        if bad_utf8 {
            // The first letter of the first random string, made a lone continuation byte.
            let at = raw
                .windows(6)
                .position(|w| w == b"\x05count")
                .expect("count")
                + 8;
            raw[at] = 0x80;
        }
        raw
    }

    /// The scan made while another thread decompresses is the scan of the whole: the same
    /// bytes, counts, estimate and UTF-8 verdict, the same errors (a cut stream, a budget).
    #[test]
    fn the_scan_while_decompressing_is_the_scan_of_the_whole() {
        let limits = Limits::local();
        for bad in [false, true] {
            let raw = big_profile(40_000, bad);
            let gz = crate::gzip_fast(&raw);
            assert!(gz.len() >= OVERLAP_FROM, "{} bytes", gz.len());
            let (got, scan) = decompress_scanned(&gz, &limits).expect("decompressed");
            assert_eq!(got, raw);
            let whole = memory_estimate(&raw, &limits).expect("scanned");
            assert_eq!(scan.expect("scanned"), whole);
            assert_eq!(whole.strings_not_utf8, bad);
            // Any split of the bytes into pieces scans the same.
            let mut inc = scan::Incremental::default();
            let mut at = 0;
            let mut step = 1;
            while at < raw.len() {
                at = (at + step).min(raw.len());
                step = step * 7 % 4093 + 1;
                inc.advance(&raw[..at], limits.fields);
            }
            assert_eq!(inc.finish(&raw, &limits).expect("scanned"), whole);
        }
        let raw = big_profile(40_000, false);
        let gz = crate::gzip_fast(&raw);
        // A stream cut short: decompress's error.
        let cut = &gz[..gz.len() * 2 / 3];
        assert_eq!(
            decompress_scanned(cut, &limits).map(|_| ()).unwrap_err(),
            decompress(cut, &limits).map(|_| ()).unwrap_err()
        );
        // A budget of fields: memory_estimate's error.
        let tight = Limits {
            fields: 10_000,
            ..limits
        };
        let (_, scan) = decompress_scanned(&gz, &tight).expect("decompressed");
        assert_eq!(
            scan.unwrap_err(),
            memory_estimate(&raw, &tight).unwrap_err()
        );
        // Garbage between two fields in the middle: the same malformed field, at the same byte.
        let mut fields = Fields::new(&raw);
        while fields.offset() < raw.len() / 2 {
            fields.next();
        }
        let mid = fields.offset();
        let bad = [&raw[..mid], &[0x07; 8], &raw[mid..]].concat();
        let (_, scan) = decompress_scanned(&crate::gzip_fast(&bad), &limits).expect("decompressed");
        assert_eq!(
            scan.unwrap_err(),
            memory_estimate(&bad, &limits).unwrap_err()
        );
    }

    #[test]
    fn compressed_parts_say_their_size_before_they_are_decompressed() {
        let raw = vec![7u8; 300_000];
        let gz = crate::gzip_fast(&raw);
        assert_eq!(stated_size(&gz), Some(300_000));
        let mut lz = lz4_flex::frame::FrameEncoder::with_frame_info(
            lz4_flex::frame::FrameInfo::new().content_size(Some(300_000)),
            Vec::new(),
        );
        std::io::Write::write_all(&mut lz, &raw).expect("lz4");
        let lz = lz.finish().expect("lz4");
        assert_eq!(stated_size(&lz), Some(300_000));
        // A zstd frame with a single segment and a 4-byte content size: 300,000.
        let mut zs = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1010_0000];
        zs.extend_from_slice(&300_000u32.to_le_bytes());
        assert_eq!(stated_size(&zs), Some(300_000));
        assert_eq!(stated_size(b"plain"), Some(5));
    }
    use std::io::Write;

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/dd-trace-go-upload")
            .join(name);
        std::fs::read(p).expect("fixture")
    }

    #[test]
    fn every_dd_trace_go_fixture_decodes_within_the_network_limits() {
        for f in [
            "cpu.pprof",
            "delta-heap.pprof",
            "delta-mutex.pprof",
            "delta-block.pprof",
            "goroutines.pprof",
        ] {
            let p = decode(&fixture(f), &Limits::default()).expect(f);
            assert!(!p.sample_type.is_empty(), "{f}");
        }
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).expect("write");
        }
        let bomb = gz.finish().expect("gzip");
        assert!(bomb.len() < 200_000);
        let e = decode(&bomb, &Limits::default()).unwrap_err();
        assert_eq!(e, Error::TooLargeDecompressed { limit: 8 << 20 });
    }

    #[test]
    fn zstd_raw_and_gzip_give_the_same_profile() {
        // dd-trace-go uploads raw protobuf; Go's net/http/pprof serves gzip.
        let raw = fixture("cpu.pprof");
        assert_eq!(sniff(&raw), Compression::None);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&raw).expect("gzip");
        let gz = gz.finish().expect("gzip");
        assert_eq!(sniff(&gz), Compression::Gzip);
        let from_raw = decode(&raw, &Limits::default()).expect("raw decodes");
        assert_eq!(from_raw, decode(&gz, &Limits::default()).expect("gz"));
        let zst = ruzstd::encoding::compress_to_vec(
            &raw[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(sniff(&zst), Compression::Zstd);
        assert_eq!(from_raw, decode(&zst, &Limits::default()).expect("zstd"));
        // A zstd bomb stops at the limit too.
        let zeros = vec![0u8; 16 << 20];
        let bomb = ruzstd::encoding::compress_to_vec(
            &zeros[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(
            decode(&bomb, &Limits::default()).unwrap_err(),
            Error::TooLargeDecompressed { limit: 8 << 20 }
        );
    }

    #[test]
    fn the_budget_is_counted_before_decoding() {
        let raw = decompress(&fixture("cpu.pprof"), &Limits::default()).expect("raw");
        let n = prescan(&raw, u64::MAX).expect("scan");
        assert!(n > 1000);
        let tight = Limits {
            fields: n - 1,
            ..Limits::default()
        };
        assert_eq!(
            decode(&raw, &tight).unwrap_err(),
            Error::Budget { budget: n - 1 }
        );
        assert!(decode(&raw, &Limits { fields: n, ..tight }).is_ok());
    }

    #[test]
    fn truncated_and_foreign_bodies_are_refused_with_a_reason() {
        let raw = decompress(&fixture("goroutines.pprof"), &Limits::default()).expect("raw");
        let cut = &raw[..raw.len() - 7];
        assert!(matches!(
            decode(cut, &Limits::default()),
            Err(Error::Malformed(_))
        ));
        let html = b"<!DOCTYPE html><html><body>Sign in</body></html>";
        assert!(
            decode(html, &Limits::default())
                .unwrap_err()
                .to_string()
                .contains("HTML")
        );
        let go = b"profile duration exceeds server's WriteTimeout\n";
        let e = decode(go, &Limits::default()).unwrap_err().to_string();
        assert!(e.contains("exceeds server's WriteTimeout"), "{e}");
        let json = br#"{"error": "unauthorized"}"#;
        assert!(
            decode(json, &Limits::default())
                .unwrap_err()
                .to_string()
                .contains("JSON")
        );
        let e = decode(&[1, 2, 3], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no protobuf field can start at byte 0")
                && e.contains("go tool pprof -proto FILE > out.pb.gz")
                && !e.contains("field number 0"),
            "{e}"
        );
        let small = Limits {
            body: 10,
            ..Limits::default()
        };
        assert_eq!(
            decompress(&[0u8; 11], &small).unwrap_err(),
            Error::TooLarge {
                size: 11,
                limit: 10
            }
        );
    }
}
