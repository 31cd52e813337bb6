//! Deltas computed on the protobuf wire bytes, without decoding either profile into
//! messages: the tables (strings, functions, locations) are read in place, every sample's
//! stack becomes a 64-bit key (the frames' function, file and line, and the labels), the
//! previous values of the cumulative types are looked up by key and subtracted, and the
//! samples are rewritten over the current profile's own bytes, location ids and labels
//! as they were. Per stack, a key of each profile and the previous cumulative values
//! are kept (20 bytes); nothing is allocated per frame, and no second copy of the profile
//! is made (a fresh page costs more than the arithmetic done on it).

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
    /// Stacks of the baseline with cumulative values that the new snapshot does not have:
    /// counters never lose a stack, so the process restarted (or the snapshots are out of
    /// order), and a delta would silently drop those values.
    #[error(
        "{stacks} stacks of the baseline ({values} in its first cumulative type) are not in the newer snapshot: the process restarted or the snapshots are out of order, so there is no delta to take"
    )]
    BaseOnly { stacks: usize, values: i64 },
}

type R<T> = Result<T, WireError>;

mod rewrite;
mod wire;
use rewrite::rewrite;
use wire::*;

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
    /// Where the field of every `BLOCK`-th sample starts: block k's samples are the ones
    /// from `blocks[k]` to `blocks[k + 1]` (or the end).
    blocks: Vec<usize>,
}

/// Samples per block: the unit of work the threads take in turn, so that the one that runs
/// faster does more of it.
const BLOCK: usize = 4096;

impl Tables {
    fn block(&self, k: usize, len: usize) -> (usize, usize) {
        (
            self.blocks[k],
            self.blocks.get(k + 1).copied().unwrap_or(len),
        )
    }
}

fn tables(buf: &[u8]) -> R<Tables> {
    let mut strings: Vec<u64> = Vec::new();
    let mut functions: Vec<(u64, u64, u64)> = Vec::new(); // id, name idx, file idx
    let mut locations: Vec<&[u8]> = Vec::new();
    let mut types = Vec::new();
    let mut time_nanos = 0;
    let mut duration_nanos = 0;
    let mut samples = 0;
    let mut blocks = Vec::new();
    let mut f = Fields::new(buf);
    loop {
        // Runs of samples, the bulk of a profile, stepped over without the field reader.
        while buf.get(f.at) == Some(&0x12) {
            if samples % BLOCK == 0 {
                blocks.push(f.at);
            }
            let mut at = f.at + 1;
            let len = varint(buf, &mut at)? as usize;
            f.at = at
                .checked_add(len)
                .filter(|&e| e <= buf.len())
                .ok_or(WireError::Malformed("a field runs past the end"))?;
            samples += 1;
        }
        let Some(field) = f.next_field() else {
            break;
        };
        let (start, field) = field?;
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
            Field::Bytes(2, _) => {
                if samples % BLOCK == 0 {
                    blocks.push(start);
                }
                samples += 1;
            }
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
        blocks,
    })
}

/// One sample message read: its key, how many values, and where its values field is
/// (None when the values are spread over several fields).
struct SampleView {
    key: u64,
    n: usize,
    values_at: Option<(usize, usize)>,
}

/// Adds the frames of a packed location-ids field to a stack's hash: each location's hash
/// times a multiplier of its position, summed (no multiply waits on the one before). Kept
/// out of line, so that its few values stay in registers.
#[inline(never)]
fn frames(body: &[u8], locations: &ById, mut sum: u64, mut k: u64) -> R<(u64, u64)> {
    let dense = &locations.dense[..];
    let mut i = 0;
    while i < body.len() {
        // Location ids take one or two bytes in nearly every profile.
        let b = body[i];
        let id = if b < 0x80 {
            i += 1;
            u64::from(b)
        } else if let Some(&c) = body.get(i + 1)
            && c < 0x80
        {
            i += 2;
            u64::from(b & 0x7f) | (u64::from(c) << 7)
        } else {
            varint(body, &mut i)?
        };
        let lh = match dense.get(id as usize) {
            Some(&x) => x,
            None => locations.get(id),
        };
        sum = sum.wrapping_add(lh.wrapping_mul(k));
        k = k.wrapping_add(FRAME_STEP);
    }
    Ok((sum, k))
}

/// Adds one field of a label (key, str and unit are string indexes: the strings' hashes are
/// added; num as it is) to a sample's label sum.
#[inline(always)]
fn label_field(sum: u64, k: u64, field: u64, v: u64, t: &Tables) -> (u64, u64) {
    let v = if field == 3 {
        v
    } else {
        t.strings.get(v as usize).copied().unwrap_or(0)
    };
    (
        sum.wrapping_add((v ^ field.wrapping_mul(LABEL_FIELD)).wrapping_mul(k)),
        k.wrapping_add(FRAME_STEP),
    )
}

/// Told apart: which field of a label a value is, and where one label ends (even, as
/// `FRAME_STEP`).
const LABEL_FIELD: u64 = 0xd6e8_feb8_6659_fd93;
const LABEL_STEP: u64 = 0x3c6e_f372_fe94_f82a;

/// The multiplier of a stack's first frame, and how it changes from frame to frame (even, so
/// that every multiplier is odd; twice an odd number, so that no two frames' multipliers are
/// close in their low bits).
const FRAME_K: u64 = 0x9e37_79b9_7f4a_7c15;
const FRAME_STEP: u64 = 0x2545_f491_4f6c_dd1e;

/// `sample` for the layout Go and most writers use (packed location ids, packed values,
/// labels, in any order), without the generic field reader; anything else goes to `sample`.
/// With `VALUES` false the values are counted, not read; with `KEY` false the frames and
/// labels are stepped over (the key is then meaningless).
#[inline(always)]
fn sample_fast<const VALUES: bool, const KEY: bool>(
    m: &[u8],
    t: &Tables,
    values: &mut [i64; MAX_TYPES],
) -> R<SampleView> {
    let h = 0x6a09_e667_f3bc_c908u64;
    let mut n = 0usize;
    let mut values_at = None;
    let mut at = 0usize;
    // Each frame's hash times a constant of its position, summed: no multiply waits on the
    // one before.
    let (mut sum, mut k) = (0u64, FRAME_K);
    // The labels' fields, the same way, in a sum of their own.
    let (mut lsum, mut lk) = (0u64, FRAME_K);
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
        let body = &m[at..end];
        match key {
            0x0a if !KEY => {}
            0x0a => (sum, k) = frames(body, &t.locations, sum, k)?,
            0x12 => {
                if values_at.is_some() {
                    return sample(m, t, values);
                }
                values_at = Some((start, end));
                if VALUES {
                    let mut i = 0;
                    while i < body.len() {
                        let v = varint(body, &mut i)? as i64;
                        if n < MAX_TYPES {
                            values[n] = v;
                        }
                        n += 1;
                    }
                } else {
                    if body.last().is_some_and(|&b| b >= 0x80) {
                        return Err(WireError::Malformed("truncated varint"));
                    }
                    n = body.iter().filter(|&&b| b < 0x80).count();
                }
            }
            _ if !KEY => {}
            _ => {
                let mut i = 0;
                while i < body.len() {
                    let k = body[i];
                    i += 1;
                    if k & 7 != 0 {
                        return sample(m, t, values);
                    }
                    let v = varint(body, &mut i)?;
                    (lsum, lk) = label_field(lsum, lk, u64::from(k >> 3), v, t);
                }
                lk = lk.wrapping_add(LABEL_STEP);
            }
        }
        at = end;
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(fold(fold(h, sum ^ k), lsum ^ lk), n as u64),
        n,
        values_at,
    })
}

/// The key of one sample message and its values (read into `values`).
#[inline]
fn sample(m: &[u8], t: &Tables, values: &mut [i64; MAX_TYPES]) -> R<SampleView> {
    let (mut sum, mut k) = (0u64, FRAME_K);
    // The labels' fields, the same way, in a sum of their own.
    let (mut lsum, mut lk) = (0u64, FRAME_K);
    let h = 0x6a09_e667_f3bc_c908u64;
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
                    let lh = t.locations.get(varint(packed, &mut at)?);
                    sum = sum.wrapping_add(lh.wrapping_mul(k));
                    k = k.wrapping_add(FRAME_STEP);
                }
            }
            Field::Varint(1, id) => {
                sum = sum.wrapping_add(t.locations.get(id).wrapping_mul(k));
                k = k.wrapping_add(FRAME_STEP);
            }
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
                while let Some(y) = l.next_field() {
                    if let (_, Field::Varint(k, v)) = y? {
                        (lsum, lk) = label_field(lsum, lk, k, v, t);
                    }
                }
                lk = lk.wrapping_add(LABEL_STEP);
            }
            _ => {}
        }
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(fold(fold(h, sum ^ k), lsum ^ lk), n as u64),
        n,
        values_at: (value_fields == 1).then_some(values_at).flatten(),
    })
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

/// The previous profile's stacks in its order: per stack an entry of 16 bytes, its key and
/// its cumulative values in 32 bits each. Each block's entries are written over the block's
/// own bytes as its samples are read (a sample takes 40 bytes or more in any real profile),
/// so that no fresh memory is touched for them.
struct Prev {
    tables: Tables,
    bytes: Vec<u8>,
    /// Per block, its entries when they did not fit over its bytes.
    own: Vec<Option<Vec<u8>>>,
    /// Values that do not fit 32 bits (`WIDE` in the entry), by index, in index order.
    wide: Vec<(u32, [i64; MAX_CUM])>,
}

const ENTRY: usize = 16;
const WIDE: u32 = u32::MAX;

impl Prev {
    fn len(&self) -> usize {
        self.tables.samples
    }

    #[inline]
    fn entry(&self, i: usize) -> &[u8] {
        let (k, j) = (i / BLOCK, (i % BLOCK) * ENTRY);
        match &self.own[k] {
            Some(o) => &o[j..j + ENTRY],
            None => {
                let at = self.tables.blocks[k] + j;
                &self.bytes[at..at + ENTRY]
            }
        }
    }

    /// Every key in order, with its index.
    fn each_key(&self, mut f: impl FnMut(usize, u64)) {
        let mut i = 0;
        for k in 0..self.tables.blocks.len() {
            let count = (self.len() - k * BLOCK).min(BLOCK);
            let entries = match &self.own[k] {
                Some(o) => &o[..],
                None => &self.bytes[self.tables.blocks[k]..],
            };
            for e in entries.chunks_exact(ENTRY).take(count) {
                let mut key = [0u8; 8];
                key.copy_from_slice(&e[..8]);
                f(i, u64::from_le_bytes(key));
                i += 1;
            }
        }
    }

    #[inline]
    fn key(&self, i: usize) -> u64 {
        let mut k = [0u8; 8];
        k.copy_from_slice(&self.entry(i)[..8]);
        u64::from_le_bytes(k)
    }

    #[inline]
    fn values(&self, i: usize) -> [i64; MAX_CUM] {
        let e = &self.entry(i)[8..];
        let v = [0, 1]
            .map(|j| u32::from_le_bytes([e[4 * j], e[4 * j + 1], e[4 * j + 2], e[4 * j + 3]]));
        if v[0] != WIDE {
            return v.map(i64::from);
        }
        match self.wide.binary_search_by_key(&(i as u32), |w| w.0) {
            Ok(i) => self.wide[i].1,
            Err(_) => [0; MAX_CUM],
        }
    }
}

const BLOOM_BITS: u64 = 1 << 22;

fn bloom_add(bloom: &mut [u64], key: u64) {
    let (a, b) = bloom_bits(key);
    bloom[(a / 64) as usize] |= 1 << (a % 64);
    bloom[(b / 64) as usize] |= 1 << (b % 64);
}

fn bloom_has(bloom: &[u64], key: u64) -> bool {
    let (a, b) = bloom_bits(key);
    bloom[(a / 64) as usize] & (1 << (a % 64)) != 0
        && bloom[(b / 64) as usize] & (1 << (b % 64)) != 0
}

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

/// The entries of one block of the previous profile (samples `first..`), written over the
/// block's bytes; should they ever catch up with the reading (samples of under 16 bytes),
/// into a buffer of their own from there on. Also the values that do not fit 32 bits.
type PrevBlock = (Option<Vec<u8>>, Vec<(u32, [i64; MAX_CUM])>);

fn prev_block(block: &mut [u8], first: usize, t: &Tables, cum: &[usize]) -> R<PrevBlock> {
    const _: () = assert!(MAX_CUM == 2 && ENTRY == 8 + 4 * MAX_CUM);
    let mut wide = Vec::new();
    let mut v = [0i64; MAX_TYPES];
    let mut own: Option<Vec<u8>> = None;
    let mut n = 0usize;
    let mut at = 0usize;
    while at < block.len() {
        let mut f = Fields { buf: block, at };
        let (_, field) = f.read_field()?;
        at = f.at;
        let Field::Bytes(2, m) = field else {
            continue;
        };
        let key = sample_fast::<true, true>(m, t, &mut v)?.key;
        let mut c = [0i64; MAX_CUM];
        for (j, &i) in cum.iter().enumerate() {
            c[j] = v[i];
        }
        let mut e = [0u8; ENTRY];
        e[..8].copy_from_slice(&key.to_le_bytes());
        let fits = c.iter().all(|&x| (0..i64::from(WIDE)).contains(&x));
        if !fits {
            wide.push(((first + n) as u32, c));
        }
        for (j, &x) in c.iter().enumerate() {
            let x = if fits { x as u32 } else { WIDE };
            e[8 + 4 * j..12 + 4 * j].copy_from_slice(&x.to_le_bytes());
        }
        match &mut own {
            None if (n + 1) * ENTRY <= at => block[n * ENTRY..(n + 1) * ENTRY].copy_from_slice(&e),
            None => {
                let mut o = Vec::with_capacity(BLOCK * ENTRY);
                o.extend_from_slice(&block[..n * ENTRY]);
                o.extend_from_slice(&e);
                own = Some(o);
            }
            Some(o) => o.extend_from_slice(&e),
        }
        n += 1;
    }
    Ok((own, wide))
}

/// The keys of one block of the current profile's samples.
fn cur_block(block: &[u8], t: &Tables, keys: &mut [u64]) -> R<()> {
    let mut v = [0i64; MAX_TYPES];
    let mut n = 0;
    let mut f = Fields::new(block);
    while let Some(field) = f.next_field() {
        if let (_, Field::Bytes(2, m)) = field? {
            let key = sample_fast::<false, true>(m, t, &mut v)?.key;
            *keys
                .get_mut(n)
                .ok_or(WireError::Malformed("more samples than counted"))? = key;
            n += 1;
        }
    }
    Ok(())
}

/// Both profiles' samples read, a block at a time, by two threads taking blocks in turn:
/// the previous profile's entries, and the current profile's keys.
fn parse_both(previous: Vec<u8>, current: &[u8]) -> R<(Prev, Tables, Vec<u64>)> {
    let (pt, ct) = std::thread::scope(|scope| {
        let p = scope.spawn(|| tables(&previous));
        let c = tables(current);
        (
            p.join()
                .unwrap_or(Err(WireError::Malformed("the parser failed"))),
            c,
        )
    });
    let (pt, ct) = (pt?, ct?);
    if current.len() > u32::MAX as usize || previous.len() > u32::MAX as usize {
        return Err(WireError::Malformed("over 4 GiB"));
    }
    if pt.types != ct.types {
        return Err(WireError::TypesDiffer);
    }
    let cum = cum_of(&pt)?;
    let mut bytes = previous;
    let mut keys = vec![0u64; ct.samples];
    enum Job<'a> {
        Prev(usize, &'a mut [u8]),
        Cur(&'a [u8], &'a mut [u64]),
    }
    let mut prev_jobs = Vec::with_capacity(pt.blocks.len());
    let mut rest: &mut [u8] = &mut bytes;
    let mut taken = 0;
    for k in 0..pt.blocks.len() {
        let (a, b) = pt.block(k, rest.len() + taken);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(a - taken);
        let (block, tail) = tail.split_at_mut(b - a);
        prev_jobs.push(Job::Prev(k, block));
        rest = tail;
        taken = b;
    }
    let mut cur_jobs = Vec::with_capacity(ct.blocks.len());
    for (k, chunk) in keys.chunks_mut(BLOCK).enumerate() {
        let (a, b) = ct.block(k, current.len());
        cur_jobs.push(Job::Cur(&current[a..b], chunk));
    }
    // Alternately one of each, so that both profiles' tables stay warm.
    let mut jobs = Vec::with_capacity(prev_jobs.len() + cur_jobs.len());
    let (mut pj, mut cj) = (prev_jobs.into_iter(), cur_jobs.into_iter());
    loop {
        match (pj.next(), cj.next()) {
            (None, None) => break,
            (a, b) => jobs.extend(a.into_iter().chain(b)),
        }
    }
    let queue = std::sync::Mutex::new(jobs.into_iter());
    let work = || -> R<Vec<(usize, PrevBlock)>> {
        let mut done = Vec::new();
        while let Some(job) = queue.lock().ok().and_then(|mut q| q.next()) {
            match job {
                Job::Prev(k, block) => done.push((k, prev_block(block, k * BLOCK, &pt, &cum)?)),
                Job::Cur(block, keys) => cur_block(block, &ct, keys)?,
            }
        }
        Ok(done)
    };
    let (a, b) = std::thread::scope(|scope| {
        let h = scope.spawn(work);
        let a = work();
        (
            a,
            h.join()
                .unwrap_or(Err(WireError::Malformed("the parser failed"))),
        )
    });
    let mut own: Vec<Option<Vec<u8>>> = vec![None; pt.blocks.len()];
    let mut wide = Vec::new();
    for (k, (o, w)) in a?.into_iter().chain(b?) {
        own[k] = o;
        wide.extend(w);
    }
    wide.sort_unstable_by_key(|w| w.0);
    Ok((
        Prev {
            tables: pt,
            bytes,
            own,
            wide,
        },
        ct,
        keys,
    ))
}

/// Where each current stack's previous values are: for each current sample, the index of
/// the previous sample with the same key, or `NONE`. Each previous sample is subtracted once:
/// when a stack appears several times (two allocations on one line have one key), the
/// current profile's n-th occurrence takes the previous profile's n-th.
///
/// Go lists a profile's stacks in the same order every time, new stacks first, so the
/// current profile's j-th stack is usually the previous one's (j - new)-th: matched by
/// position, no table needed. At the first stack that is not where the order says, a Bloom
/// filter of the previous keys is built, which says for sure when a stack is new (a stack
/// whose allocations were not yet counted in the previous profile has no `bytes` label
/// there: half of a fresh service's stacks can be new to the next profile); a stack it may
/// hold is looked up in an index of every previous key, built the first time one is.
/// Matches each current stack to a previous one; the previous ones taken, as a bitmap.
fn match_slots(prev: &Prev, cur: &mut [u64]) -> Vec<u64> {
    let n = prev.len();
    let mut bloom: Vec<u64> = Vec::new();
    let mut index: Option<Index> = None;
    let mut taken = vec![0u64; n.div_ceil(64)];
    let is_taken = |taken: &[u64], i: usize| taken[i / 64] & (1 << (i % 64)) != 0;
    let mut cursor = 0usize;
    for slot in cur.iter_mut() {
        let key = *slot;
        *slot = NONE;
        let found = if cursor < n && prev.key(cursor) == key && !is_taken(&taken, cursor) {
            Some(cursor)
        } else {
            if bloom.is_empty() {
                bloom = vec![0u64; (BLOOM_BITS / 64) as usize];
                prev.each_key(|_, k| bloom_add(&mut bloom, k));
            }
            if bloom_has(&bloom, key) {
                index
                    .get_or_insert_with(|| Index::new(prev))
                    .find(prev, key, |i| is_taken(&taken, i))
            } else {
                None
            }
        };
        if let Some(i) = found {
            cursor = i + 1;
            taken[i / 64] |= 1 << (i % 64);
            *slot = i as u64;
        }
    }
    taken
}

/// Previous stacks no current one matched that hold a cumulative value: how many, and the
/// sum of their first cumulative value.
fn base_only(prev: &Prev, taken: &[u64]) -> (usize, i64) {
    let (mut stacks, mut values) = (0usize, 0i64);
    for (w, &bits) in taken.iter().enumerate() {
        if bits == u64::MAX {
            continue;
        }
        for b in 0..64 {
            let i = w * 64 + b;
            if i >= prev.len() {
                break;
            }
            if bits & (1 << b) == 0 {
                let v = prev.values(i);
                if v.iter().any(|&x| x != 0) {
                    stacks += 1;
                    values = values.saturating_add(v[0]);
                }
            }
        }
    }
    (stacks, values)
}

/// Every previous key by where it is: open addressing over a power of two of slots (at
/// least twice the keys), each 0 or one more than the index of a previous sample. Keys are
/// hashes already: their bits choose the slot. The keys of a stack that appears several
/// times lie along its probe sequence in index order.
struct Index {
    slots: Vec<u32>,
    mask: usize,
}

impl Index {
    fn new(prev: &Prev) -> Index {
        let size = (2 * prev.len()).next_power_of_two().max(16);
        let mask = size - 1;
        let mut slots = vec![0u32; size];
        prev.each_key(|i, k| {
            let mut h = (k >> 40) as usize & mask;
            while slots[h] != 0 {
                h = (h + 1) & mask;
            }
            slots[h] = i as u32 + 1;
        });
        Index { slots, mask }
    }

    /// The first previous sample with this key that `taken` does not say is taken.
    fn find(&self, prev: &Prev, key: u64, taken: impl Fn(usize) -> bool) -> Option<usize> {
        let mut h = (key >> 40) as usize & self.mask;
        loop {
            let i = (self.slots[h] as usize).checked_sub(1)?;
            if prev.key(i) == key && !taken(i) {
                return Some(i);
            }
            h = (h + 1) & self.mask;
        }
    }
}

/// No previous sample.
const NONE: u64 = u64::MAX;

/// `current` minus `previous` for the cumulative sample types (raw protobuf in, raw out),
/// written over `current`'s own bytes. Stacks whose values all become zero are left out;
/// the result covers the time from the previous profile to the current one.
///
/// Both profiles are parsed at once on two threads, and the result is written in two halves
/// on two threads. Nothing is allocated per stack but its key and the previous stack's
/// cumulative values.
pub fn delta(previous: Vec<u8>, mut current: Vec<u8>) -> R<Vec<u8>> {
    let (prev, cur_t, mut slots) = parse_both(previous, &current)?;
    let cum = cum_of(&cur_t)?;
    let taken = match_slots(&prev, &mut slots);
    let (stacks, values) = base_only(&prev, &taken);
    if stacks > 0 {
        return Err(WireError::BaseOnly { stacks, values });
    }
    // The result is written in two halves, each over its own bytes, on two threads.
    let nb = cur_t.blocks.len();
    let (split, half) = if nb >= 2 {
        (cur_t.blocks[nb / 2], nb / 2 * BLOCK)
    } else {
        (current.len(), cur_t.samples)
    };
    let (a, b) = current.split_at_mut(split);
    let (first, second) = std::thread::scope(|scope| {
        let h = scope.spawn(|| rewrite(b, half, &slots, &prev, &cur_t, &cum));
        let first = rewrite(a, 0, &slots, &prev, &cur_t, &cum);
        (
            first,
            h.join()
                .unwrap_or(Err(WireError::Malformed("the writer failed"))),
        )
    });
    let ((w1, spill1), (w2, spill2)) = (first?, second?);
    let mut out = if spill1.is_empty() && spill2.is_empty() {
        current.copy_within(split..split + w2, w1);
        current.truncate(w1 + w2);
        current
    } else {
        let mut out = Vec::with_capacity(w1 + spill1.len() + w2 + spill2.len() + 32);
        out.extend_from_slice(&current[..w1]);
        out.extend_from_slice(&spill1);
        out.extend_from_slice(&current[split..split + w2]);
        out.extend_from_slice(&spill2);
        out
    };
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
            let wire = delta(raw.clone(), now_raw.clone()).expect("wire delta");
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
            let by_wire = delta(raw.clone(), shuffled.encode_to_vec()).expect("wire delta");
            let by_wire =
                Pprof::new(decode_raw(&by_wire, &Limits::default()).expect("decode")).expect("ok");
            assert_eq!(totals(&by_wire), totals(&by_messages), "{f}, reordered");
            // Against itself: only what is in use stays.
            let same = Pprof::new(
                decode_raw(
                    &delta(raw.clone(), raw.clone()).expect("delta"),
                    &Limits::default(),
                )
                .expect("decode"),
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

    /// A heap profile of `n` stacks `depth` frames deep over 20 functions (all different up
    /// to 20^depth), between two stacks that differ only in their frame's address (two
    /// allocations on one line: one key).
    fn many_stacks(n: usize, scale: i64, depth: u32) -> crate::pprof::proto::Profile {
        use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
        let mut strings: Vec<String> = [
            "",
            "alloc_objects",
            "count",
            "alloc_space",
            "bytes",
            "inuse_objects",
            "inuse_space",
            "main.go",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut function = Vec::new();
        let mut location = Vec::new();
        for i in 0..20u64 {
            strings.push(format!("main.f{i}"));
            function.push(Function {
                id: i + 1,
                name: strings.len() as i64 - 1,
                filename: 7,
                ..Default::default()
            });
            location.push(Location {
                id: i + 1,
                address: 0x1000 + i * 16,
                line: vec![Line {
                    function_id: i + 1,
                    line: 10 + i as i64,
                    column: 0,
                }],
                ..Default::default()
            });
        }
        // Locations 21 and 22: main.f0 line 99 both, two addresses.
        for id in [21u64, 22] {
            location.push(Location {
                id,
                address: 0x9000 + id,
                line: vec![Line {
                    function_id: 1,
                    line: 99,
                    column: 0,
                }],
                ..Default::default()
            });
        }
        let vt = |t, u| ValueType { r#type: t, unit: u };
        let mut sample = vec![Sample {
            location_id: vec![21, 2],
            value: vec![10 * scale, 100 * scale, 1, 8],
            label: vec![],
        }];
        for k in 0..n as u64 {
            sample.push(Sample {
                location_id: (0..depth).map(|d| k / 20u64.pow(d) % 20 + 1).collect(),
                value: vec![(k as i64 + 1) * scale, (k as i64 + 1) * 64 * scale, 1, 64],
                label: vec![],
            });
        }
        sample.push(Sample {
            location_id: vec![22, 2],
            value: vec![50 * scale, 500 * scale, 1, 8],
            label: vec![],
        });
        Profile {
            sample_type: vec![vt(1, 2), vt(3, 4), vt(5, 2), vt(6, 4)],
            sample,
            function,
            location,
            string_table: strings,
            time_nanos: 1_000_000_000 * scale,
            ..Default::default()
        }
    }

    fn by_stack(p: &Pprof) -> std::collections::BTreeMap<Vec<(String, i64)>, Vec<i64>> {
        let mut m = std::collections::BTreeMap::new();
        for (si, s) in p.proto.sample.iter().enumerate() {
            let frames = p.sample_locs[si]
                .iter()
                .flat_map(|&l| p.loc_lines[l as usize].clone())
                .map(|(f, line)| {
                    let name = f.map_or("", |f| p.str(p.proto.function[f].name));
                    (name.to_string(), line)
                })
                .collect();
            let e = m.entry(frames).or_insert_with(|| vec![0; s.value.len()]);
            for (a, b) in e.iter_mut().zip(&s.value) {
                *a += b;
            }
        }
        m
    }

    /// Stacks listed in another order than before go through the Bloom filter, the searches
    /// and the table; a stack that appears twice (one key) takes the previous profile's
    /// values once per occurrence, not twice from the first. Here the second occurrence
    /// takes the larger previous value, so its delta is negative and the sample grows: the
    /// output no longer fits in the current profile's bytes and goes on in a buffer.
    #[test]
    fn reordered_and_repeated_stacks_are_each_subtracted_once() {
        let before = many_stacks(300, 1, 2);
        let mut after = many_stacks(300, 3, 2);
        after.sample.reverse();
        let raw_before = before.encode_to_vec();
        let base = Pprof::new(before).expect("ok");
        let now = Pprof::new(after.clone()).expect("ok");
        let reference =
            Pprof::new(super::super::delta::reference::delta(&now, &base).expect("delta"))
                .expect("ok");
        let wire = delta(raw_before, after.encode_to_vec()).expect("wire delta");
        let wire = Pprof::new(decode_raw(&wire, &Limits::default()).expect("decode")).expect("ok");
        let (got, want) = (by_stack(&wire), by_stack(&reference));
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v))
            .collect();
        assert!(
            differ.is_empty() && got.len() == want.len(),
            "differ: {differ:?}"
        );
        assert_eq!(totals(&wire), totals(&reference));
        // The repeated stack, now first and last: the first (the previous profile's last,
        // 150 allocations now) against the previous first (10); the last (30 now), found
        // through the table, against the previous last (50).
        let (first, last) = (
            &wire.proto.sample[0],
            wire.proto.sample.last().expect("some"),
        );
        assert_eq!([first.value[0], last.value[0]], [150 - 10, 30 - 50]);
    }

    /// Writers other than Go may put the tables before the samples or between them: the
    /// result is the same, each field in its place.
    #[test]
    fn samples_between_other_fields() {
        let before = many_stacks(40, 1, 2);
        let after = many_stacks(40, 2, 2);
        let expected = delta(before.encode_to_vec(), after.encode_to_vec()).expect("delta");
        // The current profile as strings, half the samples, locations, the other half,
        // functions, then the rest.
        let part = |f: &dyn Fn(&mut crate::pprof::proto::Profile)| {
            let mut p = crate::pprof::proto::Profile::default();
            f(&mut p);
            p.encode_to_vec()
        };
        let half = after.sample.len() / 2;
        let mut mixed = Vec::new();
        mixed.extend(part(&|p| p.string_table = after.string_table.clone()));
        mixed.extend(part(&|p| p.sample = after.sample[..half].to_vec()));
        mixed.extend(part(&|p| p.location = after.location.clone()));
        mixed.extend(part(&|p| p.sample = after.sample[half..].to_vec()));
        mixed.extend(part(&|p| p.function = after.function.clone()));
        mixed.extend(part(&|p| {
            p.sample_type = after.sample_type.clone();
            p.time_nanos = after.time_nanos;
        }));
        let got = delta(before.encode_to_vec(), mixed).expect("delta");
        let decode = |b: &[u8]| decode_raw(b, &Limits::default()).expect("decode");
        assert_eq!(decode(&got), decode(&expected));
    }

    /// The previous profile's entries are its stacks' keys and cumulative values, whether
    /// written over its own bytes (samples of 40 bytes and more) or, once they would catch
    /// up with the reading (small samples), into a buffer of their own; values over 32 bits
    /// are kept whole.
    #[test]
    fn previous_entries_over_the_profile_or_beside_it() {
        let heap = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/dd-trace-go-upload/delta-heap.pprof"),
        )
        .expect("fixture");
        let mut small = many_stacks(100, 1, 2);
        small.sample[7].value[1] = 1 << 40;
        small.sample[9].value[0] = -3;
        for (raw, over) in [(heap, true), (small.encode_to_vec(), false)] {
            let t = tables(&raw).expect("tables");
            let cum = cum_of(&t).expect("cum");
            let mut expected = Vec::new();
            let mut f = Fields::new(&raw);
            let mut v = [0i64; MAX_TYPES];
            while let Some(x) = f.next_field() {
                if let (_, Field::Bytes(2, m)) = x.expect("field") {
                    let key = sample(m, &t, &mut v).expect("sample").key;
                    expected.push((key, [v[cum[0]], v[cum[1]]]));
                }
            }
            let (prev, _, _) = parse_both(raw.clone(), &raw).expect("parse");
            assert_eq!(prev.own.iter().all(Option::is_none), over);
            let got: Vec<_> = (0..prev.len())
                .map(|i| (prev.key(i), prev.values(i)))
                .collect();
            assert_eq!(got, expected);
        }
    }

    /// A profile of many blocks: the threads take blocks in turn and write the halves of the
    /// result over their own bytes; the result is the message-level delta's, stack by stack.
    #[test]
    fn profiles_of_many_blocks() {
        let n = 5 * BLOCK + 123;
        let before = many_stacks(n, 1, 4);
        let mut after = many_stacks(n, 3, 4);
        // New stacks first, as Go lists them (699 new ones, each a last stack called from one
        // more frame), and a stretch of stacks out of their order.
        after.sample[2 * BLOCK..3 * BLOCK].reverse();
        let mut fresh: Vec<_> = after.sample[n - 700..n - 1].to_vec();
        for s in &mut fresh {
            s.location_id.push(21);
        }
        after.sample.splice(0..0, fresh);
        // Some stacks no longer in use and without new allocations: left out.
        for s in after.sample.iter_mut().skip(1000).step_by(7) {
            s.value = vec![s.value[0] / 3, s.value[1] / 3, 0, 0];
        }
        let base = Pprof::new(before.clone()).expect("ok");
        let now = Pprof::new(after.clone()).expect("ok");
        let reference =
            Pprof::new(super::super::delta::reference::delta(&now, &base).expect("delta"))
                .expect("ok");
        let wire = delta(before.encode_to_vec(), after.encode_to_vec()).expect("wire delta");
        let big = Limits {
            fields: 10_000_000,
            ..Limits::default()
        };
        let wire = Pprof::new(decode_raw(&wire, &big).expect("decode")).expect("ok");
        assert!(
            wire.proto.sample.len() < n - 500,
            "{}",
            wire.proto.sample.len()
        );
        // The repeated stack stays two samples; the message-level delta merges them.
        assert_eq!(wire.proto.sample.len(), reference.proto.sample.len() + 1);
        let (got, want) = (by_stack(&wire), by_stack(&reference));
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v))
            .take(5)
            .collect();
        assert!(
            differ.is_empty() && got.len() == want.len(),
            "differ: {differ:?}"
        );
    }

    /// A baseline stack the newer snapshot lacks (a restarted process, snapshots out of order)
    /// refuses the delta with the reason instead of a silently smaller total; a stack that
    /// only stopped growing is still there, and is no reason.
    #[test]
    fn a_stack_only_the_baseline_has_refuses_the_delta() {
        let before = many_stacks(50, 2, 3);
        let mut after = many_stacks(50, 3, 3);
        after.sample.remove(17);
        after.sample.remove(30);
        match delta(before.encode_to_vec(), after.encode_to_vec()) {
            Err(WireError::BaseOnly { stacks, values }) => {
                assert_eq!(stacks, 2);
                assert!(values > 0);
            }
            other => panic!("{other:?}"),
        }
        let same = many_stacks(50, 2, 3);
        assert!(delta(before.encode_to_vec(), same.encode_to_vec()).is_ok());
    }

    /// Labels are part of a stack's identity: the same frames with another label are another
    /// stack, and the same label is the same stack whatever the string table's order.
    #[test]
    fn labels_tell_stacks_apart() {
        use crate::pprof::proto::Label;
        let with_labels = |scale: i64, swap: bool| {
            let mut p = many_stacks(3, scale, 2);
            // Two strings for label keys, in either order in the string table.
            let (a, b) = (p.string_table.len() as i64, p.string_table.len() as i64 + 1);
            let (x, y) = if swap { (b, a) } else { (a, b) };
            p.string_table
                .push(if swap { "span" } else { "bytes" }.into());
            p.string_table
                .push(if swap { "bytes" } else { "span" }.into());
            let label = |key: i64, num: i64| Label {
                key,
                num,
                ..Default::default()
            };
            // Frames of sample 1, with three label sets.
            let frames = p.sample[1].location_id.clone();
            p.sample = [
                vec![label(x, 64)],
                vec![label(x, 128)],
                vec![label(x, 64), label(y, 7)],
            ]
            .into_iter()
            .enumerate()
            .map(|(i, labels)| crate::pprof::proto::Sample {
                location_id: frames.clone(),
                value: vec![(i as i64 + 1) * scale, 10 * scale, 1, 64],
                label: labels,
            })
            .collect();
            p
        };
        let before = with_labels(1, false);
        let mut after = with_labels(5, true);
        after.sample.reverse();
        let got = delta(before.encode_to_vec(), after.encode_to_vec()).expect("delta");
        let got = decode_raw(&got, &Limits::default()).expect("decode");
        // Reversed: label sets 3, 2, 1, each less its own previous values.
        let allocs: Vec<i64> = got.sample.iter().map(|s| s.value[0]).collect();
        assert_eq!(allocs, [15 - 3, 10 - 2, 5 - 1]);
        // Keys differ by label value and by label count.
        let t = tables(&before.encode_to_vec()).expect("tables");
        let raw = before.encode_to_vec();
        let mut keys = Vec::new();
        let mut f = Fields::new(&raw);
        let mut v = [0i64; MAX_TYPES];
        while let Some(x) = f.next_field() {
            if let (_, Field::Bytes(2, m)) = x.expect("field") {
                keys.push(
                    sample_fast::<false, true>(m, &t, &mut v)
                        .expect("sample")
                        .key,
                );
            }
        }
        assert!(keys[0] != keys[1] && keys[0] != keys[2] && keys[1] != keys[2]);
    }
}
