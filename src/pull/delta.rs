//! Deltas of cumulative profiles, computed client-side as dd-trace-go does: for the sample
//! types that only grow (`alloc_objects`, `alloc_space`, `contentions`, `delay`) the value of
//! a stack is its value now minus its value in the previous collection; `inuse_*`, goroutine
//! and cpu values stay as they are. Go's server-side `?seconds=` would subtract inuse_* too,
//! which is wrong for a heap. Stacks match by their frames (function, file, line) and labels,
//! not by addresses.
//!
//! Baselines are the previous collection's compressed bytes, kept in an LRU bounded in bytes
//! (each entry also counts a fixed overhead). A collection with no baseline (the first one,
//! or after its baseline was evicted) emits no delta and becomes the next one's baseline.

use std::collections::HashMap;

use crate::pprof::Pprof;

/// What every cached baseline costs besides its bytes (key, bookkeeping).
pub const ENTRY_OVERHEAD: usize = 256;

/// Sample types whose values only grow.
pub fn is_cumulative(sample_type: &str) -> bool {
    matches!(
        sample_type,
        "alloc_objects" | "alloc_space" | "contentions" | "delay"
    )
}

/// True when a profile of these sample types needs a delta.
pub fn needs_delta(p: &Pprof) -> bool {
    p.sample_types().iter().any(|(t, _)| is_cumulative(t))
}

/// Why no delta was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoDelta {
    /// The first collection of this target and type.
    FirstCollection,
    /// Its baseline was evicted to stay within the cache budget.
    DeltaCacheEvicted,
    /// The previous profile alone is larger than the cache budget.
    DeltaCacheLimit,
    /// The baseline could not be read back or its sample types differ.
    BaselineUnusable,
    /// The baseline holds stacks the new snapshot does not (the process restarted): the new
    /// snapshot becomes the baseline, and this collection is kept as it came.
    ProcessRestarted,
}

struct Entry {
    bytes: Vec<u8>,
    used: u64,
}

/// Previous compressed profiles by key (target and type), at most `budget` bytes in all.
pub struct DeltaCache {
    budget: usize,
    used_bytes: usize,
    clock: u64,
    entries: HashMap<String, Entry>,
    /// Keys whose baseline was evicted (their next collection says so).
    evicted: std::collections::HashSet<String>,
    /// Keys whose last profile did not fit at all.
    too_big: std::collections::HashSet<String>,
    pub evictions: u64,
}

impl DeltaCache {
    pub fn new(budget_bytes: usize) -> DeltaCache {
        DeltaCache {
            budget: budget_bytes,
            used_bytes: 0,
            clock: 0,
            entries: HashMap::new(),
            evicted: Default::default(),
            too_big: Default::default(),
            evictions: 0,
        }
    }

    fn cost(key: &str, bytes: &[u8]) -> usize {
        bytes.len() + key.len() + ENTRY_OVERHEAD
    }

    pub fn used(&self) -> usize {
        self.used_bytes
    }

    /// Baselines kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The baseline of `key`, or why there is none.
    pub fn get(&mut self, key: &str) -> Result<&[u8], NoDelta> {
        self.clock += 1;
        let clock = self.clock;
        match self.entries.get_mut(key) {
            Some(e) => {
                e.used = clock;
                Ok(&e.bytes)
            }
            None if self.too_big.contains(key) => Err(NoDelta::DeltaCacheLimit),
            None if self.evicted.contains(key) => Err(NoDelta::DeltaCacheEvicted),
            None => Err(NoDelta::FirstCollection),
        }
    }

    /// Makes `bytes` the baseline of `key`, evicting the least recently used others to fit.
    pub fn put(&mut self, key: &str, bytes: Vec<u8>) {
        self.remove(key);
        self.evicted.remove(key);
        let cost = Self::cost(key, &bytes);
        if cost > self.budget {
            self.too_big.insert(key.to_string());
            return;
        }
        self.too_big.remove(key);
        while self.used_bytes + cost > self.budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.remove(&oldest);
            self.evicted.insert(oldest);
            self.evictions += 1;
        }
        self.clock += 1;
        self.used_bytes += cost;
        self.entries.insert(
            key.to_string(),
            Entry {
                bytes,
                used: self.clock,
            },
        );
    }

    /// Forgets `key`'s baseline (a target that went away).
    pub fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.used_bytes -= Self::cost(key, &e.bytes);
        }
    }
}

/// The message-level delta: what `wiredelta` computes on the bytes, written plainly over
/// decoded profiles. Kept as the reference the byte-level one is tested against.
#[cfg(test)]
pub(crate) mod reference {
    use std::collections::HashMap;
    use std::hash::{BuildHasher, Hash, Hasher};

    use super::is_cumulative;
    use crate::pprof::Pprof;
    use crate::pprof::proto::{Profile, Sample};

    /// A stack's identity: per location a hash of its lines' (function, file, line), and a hash
    /// of the sample's labels.
    fn location_hashes(p: &Pprof, seed: &std::collections::hash_map::RandomState) -> Vec<u64> {
        p.proto
            .location
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut h = seed.build_hasher();
                for &(f, line) in &p.loc_lines[i] {
                    match f {
                        Some(f) => {
                            let func = &p.proto.function[f];
                            p.str(func.name).hash(&mut h);
                            p.str(func.filename).hash(&mut h);
                        }
                        None => {
                            // No function: the address is all there is.
                            l.address.hash(&mut h);
                        }
                    }
                    line.hash(&mut h);
                }
                if l.line.is_empty() {
                    l.address.hash(&mut h);
                }
                h.finish()
            })
            .collect()
    }

    fn sample_key(
        p: &Pprof,
        si: usize,
        locs: &[u64],
        seed: &std::collections::hash_map::RandomState,
    ) -> u64 {
        let mut h = seed.build_hasher();
        for &l in p.sample_locs(si) {
            locs[l as usize].hash(&mut h);
        }
        for lab in &p.proto.sample[si].label {
            p.str(lab.key).hash(&mut h);
            p.str(lab.str).hash(&mut h);
            lab.num.hash(&mut h);
            p.str(lab.num_unit).hash(&mut h);
        }
        h.finish()
    }

    /// `current` minus `base` for the cumulative sample types; the other values as they are.
    /// Stacks whose values are all zero after the subtraction are left out. The result covers
    /// the time from the base to now. None when the two profiles' sample types differ.
    pub fn delta(current: &Pprof, base: &Pprof) -> Option<Profile> {
        let types = current.sample_types();
        if types != base.sample_types() {
            return None;
        }
        let cumulative: Vec<usize> = types
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| is_cumulative(t))
            .map(|(i, _)| i)
            .collect();
        let seed = std::collections::hash_map::RandomState::new();
        let base_locs = location_hashes(base, &seed);
        let mut previous: HashMap<u64, Vec<i64>> = HashMap::with_capacity(base.proto.sample.len());
        for (si, s) in base.proto.sample.iter().enumerate() {
            let key = sample_key(base, si, &base_locs, &seed);
            match previous.get_mut(&key) {
                Some(v) => {
                    for &c in &cumulative {
                        v[c] += s.value[c];
                    }
                }
                None => {
                    previous.insert(key, s.value.clone());
                }
            }
        }
        let cur_locs = location_hashes(current, &seed);
        // Samples of the same stack are merged first, so the subtraction sees one value each.
        let mut order: Vec<u64> = Vec::with_capacity(current.proto.sample.len());
        let mut merged: HashMap<u64, Sample> = HashMap::with_capacity(current.proto.sample.len());
        for (si, s) in current.proto.sample.iter().enumerate() {
            let key = sample_key(current, si, &cur_locs, &seed);
            match merged.get_mut(&key) {
                Some(m) => {
                    for (a, b) in m.value.iter_mut().zip(&s.value) {
                        *a += *b;
                    }
                }
                None => {
                    order.push(key);
                    let s = Sample {
                        location_id: current.location_ids(si),
                        ..s.clone()
                    };
                    merged.insert(key, s);
                }
            }
        }
        let mut samples = Vec::with_capacity(order.len());
        for key in order {
            let Some(mut s) = merged.remove(&key) else {
                continue;
            };
            if let Some(prev) = previous.get(&key) {
                for &c in &cumulative {
                    s.value[c] -= prev[c];
                }
            }
            if s.value.iter().any(|&v| v != 0) {
                samples.push(s);
            }
        }
        let mut out = Profile {
            sample: Vec::new(),
            ..current.proto.clone()
        };
        out.sample = samples;
        let (t0, t1) = (base.proto.time_nanos, current.proto.time_nanos);
        if t0 > 0 && t1 > t0 {
            out.time_nanos = t0;
            out.duration_nanos = t1 - t0;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

    /// A heap-like profile: stacks [a], [b, a], values per stack.
    fn heap(values: &[(&[u64], [i64; 4])], time: i64) -> Pprof {
        let strings: Vec<String> = [
            "",
            "alloc_objects",
            "count",
            "alloc_space",
            "bytes",
            "inuse_objects",
            "inuse_space",
            "main.a",
            "main.b",
            "main.go",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let vt = |t, u| ValueType { r#type: t, unit: u };
        let p = Profile {
            sample_type: vec![vt(1, 2), vt(3, 4), vt(5, 2), vt(6, 4)],
            function: vec![
                Function {
                    id: 1,
                    name: 7,
                    filename: 9,
                    ..Default::default()
                },
                Function {
                    id: 2,
                    name: 8,
                    filename: 9,
                    ..Default::default()
                },
            ],
            location: vec![
                Location {
                    id: 1,
                    address: 0x1000 + time as u64,
                    line: vec![Line {
                        function_id: 1,
                        line: 10,
                        column: 0,
                    }],
                    ..Default::default()
                },
                Location {
                    id: 2,
                    address: 0x2000 + time as u64,
                    line: vec![Line {
                        function_id: 2,
                        line: 20,
                        column: 0,
                    }],
                    ..Default::default()
                },
            ],
            sample: values
                .iter()
                .map(|(locs, v)| Sample {
                    location_id: locs.to_vec(),
                    value: v.to_vec(),
                    label: vec![],
                })
                .collect(),
            string_table: strings,
            time_nanos: time,
            ..Default::default()
        };
        Pprof::new(p).expect("valid")
    }

    #[test]
    fn alloc_values_are_subtracted_by_stack_and_inuse_stays() {
        // Addresses differ between the two (as across a re-exec): frames still match.
        let base = heap(
            &[(&[1], [10, 1000, 5, 500]), (&[2, 1], [4, 400, 4, 400])],
            100,
        );
        let now = heap(
            &[
                (&[1], [15, 1500, 6, 600]),
                (&[2, 1], [4, 400, 1, 100]),
                (&[2], [3, 30, 3, 30]),
            ],
            200,
        );
        let d = reference::delta(&now, &base).expect("delta");
        let values: Vec<Vec<i64>> = d.sample.iter().map(|s| s.value.clone()).collect();
        assert_eq!(
            values,
            vec![vec![5, 500, 6, 600], vec![0, 0, 1, 100], vec![3, 30, 3, 30]]
        );
        assert_eq!((d.time_nanos, d.duration_nanos), (100, 100));
        // Nothing allocated and nothing in use: the stack is left out.
        let idle = heap(&[(&[1], [10, 1000, 0, 0])], 300);
        let base2 = heap(&[(&[1], [10, 1000, 0, 0])], 200);
        assert!(
            reference::delta(&idle, &base2)
                .expect("delta")
                .sample
                .is_empty()
        );
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_says_why_a_baseline_is_missing() {
        let mut c = DeltaCache::new(3 * (1000 + ENTRY_OVERHEAD + 2));
        assert_eq!(c.get("t1").unwrap_err(), NoDelta::FirstCollection);
        for k in ["t1", "t2", "t3"] {
            c.put(k, vec![0; 1000]);
        }
        assert!(c.get("t1").is_ok()); // t2 is now the least recently used
        c.put("t4", vec![0; 1000]);
        assert!(c.used() <= 3 * (1000 + ENTRY_OVERHEAD + 2));
        assert_eq!(c.get("t2").unwrap_err(), NoDelta::DeltaCacheEvicted);
        assert!(c.get("t1").is_ok() && c.get("t4").is_ok());
        c.put("huge", vec![0; 10_000]);
        assert_eq!(c.get("huge").unwrap_err(), NoDelta::DeltaCacheLimit);
        assert_eq!(c.evictions, 1);
    }
}
