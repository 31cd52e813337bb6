//! A call profile: stacks of frames with a count, from any sampler. Top tables, flamegraphs
//! and pprof files are all made from this one model.

use std::collections::HashMap;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// Sampled CPU stacks of native code (pprof-rs on agentprof itself).
    Cpu,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The demangled name, as people read it.
    pub function: String,
    /// The symbol as the linker knows it (mangled), when there is one: pprof's `system_name`,
    /// so that pprof tools show `function` as it is instead of simplifying it again.
    pub system_name: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// One distinct stack and how many samples hit it. `locations` are leaf first; each location
/// lists its frames innermost first (more than one when calls were inlined).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub locations: Vec<Vec<usize>>,
    pub count: u64,
}

#[derive(Debug, Clone)]
pub struct CallProfile {
    pub kind: ProfileKind,
    /// Interned frames; samples refer to them by index.
    pub frames: Vec<Frame>,
    pub samples: Vec<Sample>,
    /// Nanoseconds one sample stands for (1e9 / frequency).
    pub period_ns: u64,
    pub frequency_hz: u32,
    /// Wall time covered by sampling, summed over runs.
    pub duration_ns: u64,
    pub start_unix_ns: i64,
    frame_ids: HashMap<Frame, usize>,
    sample_ids: HashMap<Vec<Vec<usize>>, usize>,
}

impl CallProfile {
    pub fn new(kind: ProfileKind, frequency_hz: u32, start_unix_ns: i64) -> Self {
        CallProfile {
            kind,
            frames: Vec::new(),
            samples: Vec::new(),
            period_ns: 1_000_000_000 / u64::from(frequency_hz.max(1)),
            frequency_hz,
            duration_ns: 0,
            start_unix_ns,
            frame_ids: HashMap::new(),
            sample_ids: HashMap::new(),
        }
    }

    /// `intern` that copies the frame only when it is new.
    pub fn intern_ref(&mut self, frame: &Frame) -> usize {
        if let Some(&id) = self.frame_ids.get(frame) {
            return id;
        }
        self.intern(frame.clone())
    }

    pub fn intern(&mut self, frame: Frame) -> usize {
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len();
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }

    /// Adds `count` samples of a stack (leaf first), merging with an identical stack.
    pub fn add(&mut self, locations: Vec<Vec<usize>>, count: u64) {
        if count == 0 {
            return;
        }
        match self.sample_ids.get(&locations) {
            Some(&i) => self.samples[i].count += count,
            None => {
                self.sample_ids
                    .insert(locations.clone(), self.samples.len());
                self.samples.push(Sample { locations, count });
            }
        }
    }

    pub fn total_samples(&self) -> u64 {
        self.samples.iter().map(|s| s.count).sum()
    }

    /// Frames of a sample from leaf to root, inlined frames expanded.
    pub fn stack<'a>(&'a self, sample: &'a Sample) -> impl Iterator<Item = &'a Frame> + 'a {
        sample
            .locations
            .iter()
            .flat_map(|loc| loc.iter().map(|&i| &self.frames[i]))
    }
}
