//! The previous profile against the current one: the previous stacks' keys and cumulative
//! values kept over its own bytes, both profiles parsed at once, each current stack matched
//! with its previous one, and what only the previous profile has counted.

use super::tables::*;
use super::wire::*;
use super::*;
/// The previous profile's stacks in its order: per stack an entry of 16 bytes, its key and
/// its cumulative values in 32 bits each. Each block's entries are written over the block's
/// own bytes as its samples are read (a sample takes 40 bytes or more in any real profile),
/// so that no fresh memory is touched for them.
pub(super) struct Prev {
    pub(super) tables: Tables,
    pub(super) bytes: Vec<u8>,
    /// Per block, its entries when they did not fit over its bytes.
    pub(super) own: Vec<Option<Vec<u8>>>,
    /// Values that do not fit 32 bits (`WIDE` in the entry), by index, in index order.
    pub(super) wide: Vec<(u32, [i64; MAX_CUM])>,
}

pub(super) const ENTRY: usize = 16;
pub(super) const WIDE: u32 = u32::MAX;

impl Prev {
    pub(super) fn len(&self) -> usize {
        self.tables.samples
    }

    #[inline]
    pub(super) fn entry(&self, i: usize) -> &[u8] {
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
    pub(super) fn each_key(&self, mut f: impl FnMut(usize, u64)) {
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
    pub(super) fn key(&self, i: usize) -> u64 {
        let mut k = [0u8; 8];
        k.copy_from_slice(&self.entry(i)[..8]);
        u64::from_le_bytes(k)
    }

    #[inline]
    pub(super) fn values(&self, i: usize) -> [i64; MAX_CUM] {
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

pub(super) const BLOOM_BITS: u64 = 1 << 22;

pub(super) fn bloom_add(bloom: &mut [u64], key: u64) {
    let (a, b) = bloom_bits(key);
    bloom[(a / 64) as usize] |= 1 << (a % 64);
    bloom[(b / 64) as usize] |= 1 << (b % 64);
}

pub(super) fn bloom_has(bloom: &[u64], key: u64) -> bool {
    let (a, b) = bloom_bits(key);
    bloom[(a / 64) as usize] & (1 << (a % 64)) != 0
        && bloom[(b / 64) as usize] & (1 << (b % 64)) != 0
}

#[inline]
pub(super) fn bloom_bits(key: u64) -> (u64, u64) {
    (
        key % BLOOM_BITS,
        (key >> 32).wrapping_mul(0x9e37_79b9) % BLOOM_BITS,
    )
}

pub(super) const CUMULATIVE: [&str; 4] = ["alloc_objects", "alloc_space", "contentions", "delay"];

pub(super) fn cum_of(t: &Tables) -> R<Vec<usize>> {
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
pub(super) type PrevBlock = (Option<Vec<u8>>, Vec<(u32, [i64; MAX_CUM])>);

pub(super) fn prev_block(
    block: &mut [u8],
    first: usize,
    t: &Tables,
    cum: &[usize],
) -> R<PrevBlock> {
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
pub(super) fn cur_block(block: &[u8], t: &Tables, keys: &mut [u64]) -> R<()> {
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

/// A block of samples to read: of the previous profile (its number and bytes), or of the
/// current one (its bytes and where its keys go).
enum Job<'a> {
    Prev(usize, &'a mut [u8]),
    Cur(&'a [u8], &'a mut [u64]),
}

/// Every block of both profiles, alternately one of each, so that both profiles' tables
/// stay warm.
fn block_jobs<'a>(
    pt: &Tables,
    ct: &Tables,
    previous: &'a mut [u8],
    current: &'a [u8],
    keys: &'a mut [u64],
) -> Vec<Job<'a>> {
    let mut prev_jobs = Vec::with_capacity(pt.blocks.len());
    let mut rest: &mut [u8] = previous;
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
    let mut jobs = Vec::with_capacity(prev_jobs.len() + cur_jobs.len());
    let (mut pj, mut cj) = (prev_jobs.into_iter(), cur_jobs.into_iter());
    loop {
        match (pj.next(), cj.next()) {
            (None, None) => break,
            (a, b) => jobs.extend(a.into_iter().chain(b)),
        }
    }
    jobs
}

/// Both profiles' samples read, a block at a time, by two threads taking blocks in turn:
/// the previous profile's entries, and the current profile's keys.
pub(super) fn parse_both(previous: Vec<u8>, current: &[u8]) -> R<(Prev, Tables, Vec<u64>)> {
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
    let jobs = block_jobs(&pt, &ct, &mut bytes, current, &mut keys);
    let queue = std::sync::Mutex::new(jobs.into_iter());
    let work = || -> R<Vec<(usize, PrevBlock)>> {
        let mut done = Vec::new();
        while let Some(job) = crate::sync::lock(&queue).next() {
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
/// there: many of a fresh service's stacks are new to the next profile); a stack it may
/// hold is looked up in an index of every previous key, built the first time one is.
/// Matches each current stack to a previous one; the previous ones taken, as a bitmap.
pub(super) fn match_slots(prev: &Prev, cur: &mut [u64]) -> Vec<u64> {
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
pub(super) fn base_only(prev: &Prev, taken: &[u64]) -> (usize, i64) {
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
pub(super) struct Index {
    pub(super) slots: Vec<u32>,
    pub(super) mask: usize,
}

impl Index {
    pub(super) fn new(prev: &Prev) -> Index {
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
    pub(super) fn find(
        &self,
        prev: &Prev,
        key: u64,
        taken: impl Fn(usize) -> bool,
    ) -> Option<usize> {
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
pub(super) const NONE: u64 = u64::MAX;
