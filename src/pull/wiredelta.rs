//! Deltas computed on the protobuf wire bytes, without decoding either profile into
//! messages: the tables (strings, functions, locations) are read in place, every sample's
//! stack becomes a 64-bit key (the frames' function, file and line, and the labels), the
//! previous values of the cumulative types are looked up by key and subtracted, and the
//! samples are written out with their location ids and labels copied byte for byte. About
//! one allocation per distinct previous stack; nothing per frame.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Values per sample this handles (heap has 4 types, the others 2).
const MAX_TYPES: usize = 8;
/// Cumulative types per profile this handles (heap and allocs have 2, mutex and block 2).
const MAX_CUM: usize = 2;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WireError {
    #[error("not a valid pprof profile: {0}")]
    Malformed(&'static str),
    #[error("the baseline's sample types differ")]
    TypesDiffer,
    #[error("more than {MAX_TYPES} sample types")]
    TooManyTypes,
}

type R<T> = Result<T, WireError>;

#[inline(always)]
fn varint(buf: &[u8], at: &mut usize) -> R<u64> {
    // Most values fit one or two bytes.
    if let Some(&b) = buf.get(*at) {
        if b < 0x80 {
            *at += 1;
            return Ok(u64::from(b));
        }
        if let Some(&c) = buf.get(*at + 1)
            && c < 0x80
        {
            *at += 2;
            return Ok(u64::from(b & 0x7f) | (u64::from(c) << 7));
        }
    }
    varint_slow(buf, at)
}

#[inline(never)]
fn varint_slow(buf: &[u8], at: &mut usize) -> R<u64> {
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *buf
            .get(*at)
            .ok_or(WireError::Malformed("truncated varint"))?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift >= 64 {
            return Err(WireError::Malformed("varint too long"));
        }
    }
}

/// One field: number, and either a varint value or a byte range.
enum Field<'a> {
    Varint(u64, u64),
    Bytes(u64, &'a [u8]),
    Other,
}

struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Fields { buf, at: 0 }
    }

    /// The next field and where it started.
    #[inline(always)]
    fn next_field(&mut self) -> Option<R<(usize, Field<'a>)>> {
        if self.at >= self.buf.len() {
            return None;
        }
        Some(self.read_field())
    }

    #[inline(always)]
    fn read_field(&mut self) -> R<(usize, Field<'a>)> {
        let start = self.at;
        let key = varint(self.buf, &mut self.at)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(num, varint(self.buf, &mut self.at)?),
            2 => {
                let len = varint(self.buf, &mut self.at)? as usize;
                let end = self
                    .at
                    .checked_add(len)
                    .filter(|&e| e <= self.buf.len())
                    .ok_or(WireError::Malformed("a field runs past the end"))?;
                let b = &self.buf[self.at..end];
                self.at = end;
                Field::Bytes(num, b)
            }
            1 | 5 => {
                self.at += if wire == 1 { 8 } else { 4 };
                if self.at > self.buf.len() {
                    return Err(WireError::Malformed("truncated field"));
                }
                Field::Other
            }
            _ => return Err(WireError::Malformed("unknown wire type")),
        };
        Ok((start, f))
    }
}

/// A fast 64-bit mix (the keys are hashes already; the map only needs to spread them).
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;

#[inline(always)]
fn mix(h: u64, v: u64) -> u64 {
    // A multiply-xorshift step with good avalanche (as in splitmix64).
    let mut x = (h ^ v).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = 0x517c_c1b7_2722_0a95 ^ b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    let mut w = [0u8; 8];
    w[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(h, u64::from_le_bytes(w))
}

/// A table indexed by a message id: dense ids in a vector, sparse ones in a map.
struct ById {
    dense: Vec<u64>,
    sparse: KeyMap<u64>,
}

impl ById {
    fn new() -> Self {
        ById {
            dense: Vec::new(),
            sparse: KeyMap::default(),
        }
    }
    fn insert(&mut self, id: u64, v: u64) {
        if id < 1 << 22 {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] = v;
        } else {
            self.sparse.insert(id, v);
        }
    }
    #[inline]
    fn get(&self, id: u64) -> u64 {
        if id < 1 << 22 {
            self.dense.get(id as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&id).copied().unwrap_or(0)
        }
    }
}

/// What the tables of one profile say: per location a hash of its frames, the sample types,
/// and the profile's time.
struct Tables {
    locations: ById,
    types: Vec<(u64, u64)>,
    time_nanos: i64,
    duration_nanos: i64,
    strings: Vec<u64>,
    /// Sample messages.
    samples: usize,
    /// Byte ranges of the fields other than samples, time and duration, adjacent ones merged
    /// (Go writes all the tables after the samples: one range).
    others: Vec<(usize, usize)>,
}

fn tables(buf: &[u8]) -> R<Tables> {
    let mut strings: Vec<u64> = Vec::new();
    let mut functions: Vec<(u64, u64, u64)> = Vec::new(); // id, name idx, file idx
    let mut locations: Vec<&[u8]> = Vec::new();
    let mut types = Vec::new();
    let mut time_nanos = 0;
    let mut duration_nanos = 0;
    let mut samples = 0;
    let mut others: Vec<(usize, usize)> = Vec::new();
    let mut f = Fields::new(buf);
    while let Some(field) = f.next_field() {
        let (start, field) = field?;
        if !matches!(field, Field::Bytes(2, _) | Field::Varint(9 | 10, _)) {
            match others.last_mut() {
                Some(last) if last.1 == start => last.1 = f.at,
                _ => others.push((start, f.at)),
            }
        }
        match field {
            Field::Bytes(6, s) => strings.push(hash_bytes(s)),
            Field::Bytes(5, m) => {
                let (mut id, mut name, mut file) = (0, 0, 0);
                let mut g = Fields::new(m);
                while let Some(x) = g.next_field() {
                    match x?.1 {
                        Field::Varint(1, v) => id = v,
                        Field::Varint(2, v) => name = v,
                        Field::Varint(4, v) => file = v,
                        _ => {}
                    }
                }
                functions.push((id, name, file));
            }
            Field::Bytes(4, m) => locations.push(m),
            Field::Bytes(1, m) => {
                let (mut t, mut u) = (0, 0);
                let mut g = Fields::new(m);
                while let Some(x) = g.next_field() {
                    match x?.1 {
                        Field::Varint(1, v) => t = v,
                        Field::Varint(2, v) => u = v,
                        _ => {}
                    }
                }
                types.push((t, u));
            }
            Field::Varint(9, v) => time_nanos = v as i64,
            Field::Varint(10, v) => duration_nanos = v as i64,
            Field::Bytes(2, _) => samples += 1,
            _ => {}
        }
    }
    let s = |i: u64| strings.get(i as usize).copied().unwrap_or(0);
    let mut funcs = ById::new();
    for &(id, name, file) in &functions {
        funcs.insert(id, mix(s(name), s(file)) | 1);
    }
    let mut locs = ById::new();
    for m in locations {
        let (mut id, mut address) = (0, 0);
        let mut h = 0x2545_f491_4f6c_dd1du64;
        let mut lines = 0;
        let mut g = Fields::new(m);
        while let Some(x) = g.next_field() {
            match x?.1 {
                Field::Varint(1, v) => id = v,
                Field::Varint(3, v) => address = v,
                Field::Bytes(4, line) => {
                    lines += 1;
                    let (mut fid, mut ln) = (0, 0);
                    let mut l = Fields::new(line);
                    while let Some(y) = l.next_field() {
                        match y?.1 {
                            Field::Varint(1, v) => fid = v,
                            Field::Varint(2, v) => ln = v,
                            _ => {}
                        }
                    }
                    let fh = funcs.get(fid);
                    // No function: the address is all there is.
                    h = mix(mix(h, if fh == 0 { address } else { fh }), ln);
                }
                _ => {}
            }
        }
        if lines == 0 {
            h = mix(h, address);
        }
        locs.insert(id, h);
    }
    let types = types.into_iter().map(|(t, u)| (s(t), s(u))).collect();
    Ok(Tables {
        locations: locs,
        types,
        time_nanos,
        duration_nanos,
        strings,
        samples,
        others,
    })
}

/// A cheap step for combining many values (FxHash's); `mix` finishes the key.
#[inline(always)]
fn fold(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// One sample message read: its key, how many values, and where its values field is
/// (None when the values are spread over several fields).
struct SampleView {
    key: u64,
    n: usize,
    values_at: Option<(usize, usize)>,
}

/// `sample` for the layout Go and most writers use (packed location ids, packed values,
/// labels, in any order), without the generic field reader; anything else goes to `sample`.
#[inline]
fn sample_fast(m: &[u8], t: &Tables, values: &mut [i64; MAX_TYPES]) -> R<SampleView> {
    let mut h = 0x6a09_e667_f3bc_c908u64;
    let mut n = 0usize;
    let mut values_at = None;
    let mut at = 0usize;
    while at < m.len() {
        let start = at;
        let key = m[at];
        at += 1;
        if !matches!(key, 0x0a | 0x12 | 0x1a) {
            return sample(m, t, values);
        }
        let len = varint(m, &mut at)? as usize;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= m.len())
            .ok_or(WireError::Malformed("a field runs past the end"))?;
        match key {
            0x0a => {
                while at < end {
                    h = fold(h, t.locations.get(varint(&m[..end], &mut at)?));
                }
            }
            0x12 => {
                if values_at.is_some() {
                    return sample(m, t, values);
                }
                values_at = Some((start, end));
                while at < end {
                    let v = varint(&m[..end], &mut at)? as i64;
                    if n < MAX_TYPES {
                        values[n] = v;
                    }
                    n += 1;
                }
            }
            _ => {
                let mut lh = 0x3c6e_f372_fe94_f82bu64;
                while at < end {
                    let k = m[at];
                    at += 1;
                    if k & 7 != 0 {
                        return sample(m, t, values);
                    }
                    let v = varint(&m[..end], &mut at)?;
                    let field = u64::from(k >> 3);
                    let v = if field == 3 {
                        v
                    } else {
                        t.strings.get(v as usize).copied().unwrap_or(0)
                    };
                    lh = fold(fold(lh, field), v);
                }
                h = fold(h, mix(lh, 0));
            }
        }
        at = end;
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(h, n as u64),
        n,
        values_at,
    })
}

/// The key of one sample message and its values (read into `values`).
#[inline]
fn sample(m: &[u8], t: &Tables, values: &mut [i64; MAX_TYPES]) -> R<SampleView> {
    let mut h = 0x6a09_e667_f3bc_c908u64;
    let mut n = 0;
    let mut values_at = None;
    let mut value_fields = 0;
    let mut g = Fields::new(m);
    while let Some(x) = g.next_field() {
        let (start, f) = x?;
        match f {
            Field::Bytes(1, packed) => {
                let mut at = 0;
                while at < packed.len() {
                    h = fold(h, t.locations.get(varint(packed, &mut at)?));
                }
            }
            Field::Varint(1, id) => h = fold(h, t.locations.get(id)),
            Field::Bytes(2, packed) => {
                value_fields += 1;
                values_at = Some((start, g.at));
                let mut at = 0;
                while at < packed.len() {
                    let v = varint(packed, &mut at)? as i64;
                    if n < MAX_TYPES {
                        values[n] = v;
                    }
                    n += 1;
                }
            }
            Field::Varint(2, v) => {
                value_fields += 2;
                if n < MAX_TYPES {
                    values[n] = v as i64;
                }
                n += 1;
            }
            Field::Bytes(3, label) => {
                let mut l = Fields::new(label);
                let mut lh = 0x3c6e_f372_fe94_f82bu64;
                while let Some(y) = l.next_field() {
                    if let (_, Field::Varint(k, v)) = y? {
                        // key, str, unit are string indexes: hash the strings themselves.
                        let v = if k == 3 {
                            v
                        } else {
                            t.strings.get(v as usize).copied().unwrap_or(0)
                        };
                        lh = fold(fold(lh, k), v);
                    }
                }
                h = fold(h, mix(lh, 0));
            }
            _ => {}
        }
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(h, n as u64),
        n,
        values_at: (value_fields == 1).then_some(values_at).flatten(),
    })
}

#[inline]
fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Which sample types only grow, by position.
fn cumulative(types: &[(u64, u64)], names: &[u64]) -> Vec<usize> {
    types
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| names.contains(t))
        .map(|(i, _)| i)
        .collect()
}

/// One sample of the current profile, as the parsing pass leaves it for the writing pass.
struct CurSample {
    /// Where the message is in the profile's bytes.
    start: u32,
    len: u32,
    key: u64,
    /// Where its single values field is, within the message (None: several fields).
    values_at: Option<(u32, u32)>,
}

/// The previous profile's stacks in its order, with their cumulative values.
struct Prev {
    tables: Tables,
    keys: Vec<u64>,
    values: Vec<[i64; MAX_CUM]>,
    /// A Bloom filter of the keys: says for sure when a stack is new.
    bloom: Vec<u64>,
}

const BLOOM_BITS: u64 = 1 << 22;

#[inline]
fn bloom_bits(key: u64) -> (u64, u64) {
    (
        key % BLOOM_BITS,
        (key >> 32).wrapping_mul(0x9e37_79b9) % BLOOM_BITS,
    )
}

const CUMULATIVE: [&str; 4] = ["alloc_objects", "alloc_space", "contentions", "delay"];

fn cum_of(t: &Tables) -> R<Vec<usize>> {
    let names: Vec<u64> = CUMULATIVE
        .iter()
        .map(|n| hash_bytes(n.as_bytes()))
        .collect();
    let cum = cumulative(&t.types, &names);
    if cum.len() > MAX_CUM {
        return Err(WireError::TooManyTypes);
    }
    Ok(cum)
}

fn parse_prev(buf: &[u8]) -> R<Prev> {
    let tables = tables(buf)?;
    let cum = cum_of(&tables)?;
    let mut keys = Vec::with_capacity(tables.samples);
    let mut values = Vec::with_capacity(tables.samples);
    let mut v = [0i64; MAX_TYPES];
    let mut f = Fields::new(buf);
    while let Some(field) = f.next_field() {
        if let (_, Field::Bytes(2, m)) = field? {
            let s = sample_fast(m, &tables, &mut v)?;
            let mut c = [0i64; MAX_CUM];
            for (j, &i) in cum.iter().enumerate() {
                c[j] = v[i];
            }
            keys.push(s.key);
            values.push(c);
        }
    }
    let mut bloom = vec![0u64; (BLOOM_BITS / 64) as usize];
    for &k in &keys {
        let (a, b) = bloom_bits(k);
        bloom[(a / 64) as usize] |= 1 << (a % 64);
        bloom[(b / 64) as usize] |= 1 << (b % 64);
    }
    Ok(Prev {
        tables,
        keys,
        values,
        bloom,
    })
}

fn parse_cur(buf: &[u8]) -> R<(Tables, Vec<CurSample>)> {
    let tables = tables(buf)?;
    if buf.len() > u32::MAX as usize {
        return Err(WireError::Malformed("over 4 GiB"));
    }
    let mut out = Vec::with_capacity(tables.samples);
    let mut v = [0i64; MAX_TYPES];
    let mut f = Fields::new(buf);
    while let Some(field) = f.next_field() {
        if let (_, Field::Bytes(2, m)) = field? {
            let s = sample_fast(m, &tables, &mut v)?;
            let start = (m.as_ptr() as usize - buf.as_ptr() as usize) as u32;
            out.push(CurSample {
                start,
                len: m.len() as u32,
                key: s.key,
                values_at: s.values_at.map(|(a, b)| (a as u32, b as u32)),
            });
        }
    }
    Ok((tables, out))
}

/// `current` minus `previous` for the cumulative sample types (raw protobuf in, raw out).
/// Stacks whose values all become zero are left out; the result covers the time from the
/// previous profile to the current one.
///
/// Both profiles are parsed at once on two threads. Go lists a profile's stacks in the same
/// order every time, new stacks first, so the current profile's j-th stack is usually the
/// previous one's (j - new)-th: matched by position, no table needed. A table of the previous
/// keys is built only when a stack is not where the order says.
pub fn delta(previous: &[u8], current: &[u8]) -> R<Vec<u8>> {
    let (prev, cur) = std::thread::scope(|scope| {
        let p = scope.spawn(|| parse_prev(previous));
        let c = parse_cur(current);
        (
            p.join()
                .unwrap_or(Err(WireError::Malformed("the parser failed"))),
            c,
        )
    });
    let prev = prev?;
    let (cur_t, samples) = cur?;
    if prev.tables.types != cur_t.types {
        return Err(WireError::TypesDiffer);
    }
    let cum = cum_of(&cur_t)?;
    // Which previous slot each current sample subtracts, if any: the one after the last
    // match when its key is there; else none when the Bloom filter says the stack is new;
    // else a search (and past a few searches, a table of every previous key).
    let mut slot_of: Vec<u32> = vec![u32::MAX; samples.len()];
    let mut table: Option<KeyMap<u32>> = None;
    let mut searches = 0;
    let mut cursor = 0usize;
    for (j, s) in samples.iter().enumerate() {
        if prev.keys.get(cursor) == Some(&s.key) {
            slot_of[j] = cursor as u32;
            cursor += 1;
            continue;
        }
        let (a, b) = bloom_bits(s.key);
        let maybe = prev.bloom[(a / 64) as usize] & (1 << (a % 64)) != 0
            && prev.bloom[(b / 64) as usize] & (1 << (b % 64)) != 0;
        if !maybe {
            continue;
        }
        let found = if let Some(t) = &table {
            t.get(&s.key).copied()
        } else if searches < 64 {
            searches += 1;
            prev.keys.iter().position(|&k| k == s.key).map(|i| i as u32)
        } else {
            let mut t: KeyMap<u32> = KeyMap::default();
            t.reserve(prev.keys.len());
            for (i, &k) in prev.keys.iter().enumerate() {
                t.entry(k).or_insert(i as u32);
            }
            let f = t.get(&s.key).copied();
            table = Some(t);
            f
        };
        if let Some(i) = found {
            slot_of[j] = i;
            cursor = i as usize + 1;
        }
    }

    // The fields other than samples, in their order, then the samples, written in two
    // halves on two threads (field order does not matter in protobuf).
    // Samples are written below; time and duration are rewritten after them.
    let mut out = Vec::with_capacity(current.len() + 64);
    for &(a, b) in &cur_t.others {
        out.extend_from_slice(&current[a..b]);
    }
    // Each previous slot is subtracted once: the first current sample that names it takes it.
    let mut taken = vec![false; prev.keys.len()];
    for x in slot_of.iter_mut() {
        if *x != u32::MAX {
            if taken[*x as usize] {
                *x = u32::MAX;
            } else {
                taken[*x as usize] = true;
            }
        }
    }
    let half = samples.len() / 2;
    let write = |range: std::ops::Range<usize>, out: &mut Vec<u8>| -> R<()> {
        let mut packed = Vec::with_capacity(64);
        let mut values = [0i64; MAX_TYPES];
        for j in range {
            let s = &samples[j];
            let m = &current[s.start as usize..(s.start + s.len) as usize];
            let n = match s.values_at {
                Some((vs, ve)) => {
                    // The values field: key, length, then the packed values.
                    let field = &m[vs as usize..ve as usize];
                    let mut at = 0;
                    varint(field, &mut at)?;
                    varint(field, &mut at)?;
                    let mut n = 0;
                    while at < field.len() {
                        let x = varint(field, &mut at)? as i64;
                        if n < MAX_TYPES {
                            values[n] = x;
                        }
                        n += 1;
                    }
                    n.min(MAX_TYPES)
                }
                None => sample(m, &cur_t, &mut values)?.n,
            };
            let slot = slot_of[j];
            if slot != u32::MAX {
                let p = &prev.values[slot as usize];
                for (k, &c) in cum.iter().enumerate() {
                    values[c] -= p[k];
                }
            }
            if values[..n].iter().all(|&x| x == 0) {
                continue;
            }
            packed.clear();
            for &x in &values[..n] {
                put_varint(&mut packed, x as u64);
            }
            let values_field = 1 + varint_len(packed.len() as u64) + packed.len();
            match s.values_at {
                Some((vs, ve)) => {
                    // The message as it was, its values field replaced.
                    let (vs, ve) = (vs as usize, ve as usize);
                    let len = m.len() - (ve - vs) + values_field;
                    out.push(0x12);
                    put_varint(out, len as u64);
                    out.extend_from_slice(&m[..vs]);
                    out.push(0x12);
                    put_varint(out, packed.len() as u64);
                    out.extend_from_slice(&packed);
                    out.extend_from_slice(&m[ve..]);
                }
                None => {
                    let mut body = Vec::with_capacity(m.len() + values_field);
                    let mut g = Fields::new(m);
                    while let Some(x) = g.next_field() {
                        let (st, y) = x?;
                        if !matches!(y, Field::Bytes(2, _) | Field::Varint(2, _)) {
                            body.extend_from_slice(&m[st..g.at]);
                        }
                    }
                    body.push(0x12);
                    put_varint(&mut body, packed.len() as u64);
                    body.extend_from_slice(&packed);
                    out.push(0x12);
                    put_varint(out, body.len() as u64);
                    out.extend_from_slice(&body);
                }
            }
        }
        Ok(())
    };
    // The first half goes straight into `out`, the second into a buffer appended after.
    let (first, second) = std::thread::scope(|scope| {
        let h = scope.spawn(|| {
            let mut buf = Vec::with_capacity(current.len() / 2 + 64);
            write(half..samples.len(), &mut buf).map(|()| buf)
        });
        let a = write(0..half, &mut out);
        (
            a,
            h.join()
                .unwrap_or(Err(WireError::Malformed("the writer failed"))),
        )
    });
    first?;
    out.extend_from_slice(&second?);
    let (t0, t1) = (prev.tables.time_nanos, cur_t.time_nanos);
    let (time, duration) = if t0 > 0 && t1 > t0 {
        (t0, t1 - t0)
    } else {
        (t1, cur_t.duration_nanos)
    };
    if time != 0 {
        out.push(9 << 3);
        put_varint(&mut out, time as u64);
    }
    if duration != 0 {
        out.push(10 << 3);
        put_varint(&mut out, duration as u64);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::decode::{Limits, decode_raw};
    use crate::pprof::model::Pprof;
    use prost::Message;

    fn totals(p: &Pprof) -> Vec<i64> {
        (0..p.sample_types().len())
            .map(|i| p.proto.sample.iter().map(|s| s.value[i]).sum())
            .collect()
    }

    /// The wire delta and the message delta agree, on the fixtures of dd-trace-go uploads
    /// (a profile against itself leaves only in-use values) and on profiles that differ.
    #[test]
    fn agrees_with_the_message_delta() {
        for f in ["delta-heap.pprof", "delta-mutex.pprof", "delta-block.pprof"] {
            let raw = std::fs::read(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/dd-trace-go-upload")
                    .join(f),
            )
            .expect("fixture");
            let p = Pprof::new(decode_raw(&raw, &Limits::default()).expect("decode")).expect("ok");
            // "Now" is the fixture with every value doubled.
            let mut doubled = p.proto.clone();
            for s in &mut doubled.sample {
                for v in &mut s.value {
                    *v *= 2;
                }
            }
            doubled.time_nanos = p.proto.time_nanos + 60_000_000_000;
            let now_raw = doubled.encode_to_vec();
            let now = Pprof::new(doubled).expect("ok");
            let by_messages =
                Pprof::new(super::super::delta::reference::delta(&now, &p).expect("delta"))
                    .expect("ok");
            let wire = delta(&raw, &now_raw).expect("wire delta");
            let by_wire =
                Pprof::new(decode_raw(&wire, &Limits::default()).expect("decode")).expect("ok");
            assert_eq!(totals(&by_wire), totals(&by_messages), "{f}");
            assert_eq!(
                by_wire.proto.sample.len(),
                by_messages.proto.sample.len(),
                "{f}"
            );
            assert_eq!(by_wire.proto.time_nanos, p.proto.time_nanos, "{f}");
            assert_eq!(by_wire.proto.duration_nanos, 60_000_000_000, "{f}");
            // The same, with the stacks now in another order (the lookups then go through
            // the Bloom filter, searches and the table).
            let mut shuffled = Pprof::new(decode_raw(&now_raw, &Limits::default()).expect("d"))
                .expect("ok")
                .proto;
            shuffled.sample.reverse();
            let third = shuffled.sample.len() / 3;
            shuffled.sample.rotate_left(third);
            let by_wire = delta(&raw, &shuffled.encode_to_vec()).expect("wire delta");
            let by_wire =
                Pprof::new(decode_raw(&by_wire, &Limits::default()).expect("decode")).expect("ok");
            assert_eq!(totals(&by_wire), totals(&by_messages), "{f}, reordered");
            // Against itself: only what is in use stays.
            let same = Pprof::new(
                decode_raw(&delta(&raw, &raw).expect("delta"), &Limits::default()).expect("decode"),
            )
            .expect("ok");
            let types = same.sample_types();
            for (i, t) in totals(&same).iter().enumerate() {
                if super::super::delta::is_cumulative(types[i].0) {
                    assert_eq!(*t, 0, "{f} {}", types[i].0);
                }
            }
        }
    }
}
