//! The stacks of a Python check's runs and what each cost in wall and CPU time, however
//! they were sampled; written as an ordinary pprof profile (`samples/count`,
//! `cpu/nanoseconds`, `wall/nanoseconds`, a `thread` label), which `go tool pprof`, top,
//! flamegraph, diff and the ui read like any other.

use std::collections::HashMap;

use crate::pprof::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use crate::profile::Strings;

/// The file name of agentprof's host program in the worker (it is run from stdin).
pub const HOST_FILE: &str = "<stdin>";
/// What the host's own frames (the `aggregator` module a check submits through) are called.
pub const HOST_NAME: &str = "agentprof-python-host";

/// One Python frame as the profile names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SampledFrame {
    /// The function's qualified name (`MyCheck.check`; the plain name before 3.11).
    pub function: String,
    pub file: String,
    pub line: i32,
    /// `co_firstlineno`: where the function starts.
    pub first_line: i32,
}

/// Samples of one stack: how many, and the wall and CPU nanoseconds they stand for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Values {
    pub count: u64,
    pub wall_ns: u64,
    pub cpu_ns: u64,
}

impl Values {
    fn add(&mut self, o: Values) {
        self.count += o.count;
        self.wall_ns += o.wall_ns;
        self.cpu_ns += o.cpu_ns;
    }
}

/// Every sample of the runs so far.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    frames: Vec<SampledFrame>,
    frame_ids: HashMap<SampledFrame, u32>,
    /// (thread, frame ids innermost first) -> values, in the order first seen.
    stacks: Vec<(String, Vec<u32>, Values)>,
    stack_ids: HashMap<(String, Vec<u32>), usize>,
    pub frequency_hz: u32,
    /// Wall time sampled, summed over runs.
    pub duration_ns: u64,
    pub start_unix_ns: i64,
    /// Runs sampled, and how many of them ended early (timed out, the worker died).
    pub runs: u32,
    pub partial_runs: u32,
    /// Stacks that changed while being read and were dropped.
    pub torn: u64,
    /// The sampler thread's own CPU in the worker (the in-worker sampler only).
    pub sampler_cpu_ns: u64,
    /// Which sampler ran and where.
    pub method: String,
}

impl Samples {
    pub fn new(frequency_hz: u32) -> Samples {
        Samples {
            frequency_hz,
            start_unix_ns: crate::duration::unix_now_ns(),
            ..Samples::default()
        }
    }

    /// The id of `frame`, a new one the first time it is seen.
    pub fn intern(&mut self, frame: SampledFrame) -> u32 {
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }

    /// Adds a stack (frame ids, innermost first) of `thread`.
    pub fn add(&mut self, thread: &str, stack: &[u32], v: Values) {
        if stack.is_empty() {
            return;
        }
        // Looked up by borrowed parts first: most samples repeat a stack already seen.
        let key = (thread.to_string(), stack.to_vec());
        match self.stack_ids.get(&key) {
            Some(&i) => self.stacks[i].2.add(v),
            None => {
                self.stack_ids.insert(key, self.stacks.len());
                self.stacks.push((thread.to_string(), stack.to_vec(), v));
            }
        }
    }

    /// The samples of another set (one run's) added to these, with its time and counts.
    pub fn absorb(&mut self, other: &Samples) {
        for (thread, stack, v) in &other.stacks {
            let ids: Vec<u32> = stack
                .iter()
                .map(|&i| self.intern(other.frames[i as usize].clone()))
                .collect();
            self.add(thread, &ids, *v);
        }
        self.torn += other.torn;
        self.sampler_cpu_ns += other.sampler_cpu_ns;
        self.duration_ns += other.duration_ns;
    }

    pub fn total(&self) -> Values {
        let mut t = Values::default();
        for (_, _, v) in &self.stacks {
            t.add(*v);
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Forgets the samples (a warm-up run's), keeping how they are taken.
    pub fn clear(&mut self) {
        *self = Samples {
            method: std::mem::take(&mut self.method),
            ..Samples::new(self.frequency_hz)
        };
    }

    /// The samples as profile.proto: sample types samples/count, cpu/nanoseconds and
    /// wall/nanoseconds (the last, wall, is what pprof tools show unless told otherwise), one
    /// function per name and file, one location per line.
    pub fn to_proto(&self) -> Profile {
        let mut strings = Strings::default();
        strings.id("");
        let vt = |s: &mut Strings, t: &str, u: &str| ValueType {
            r#type: s.id(t),
            unit: s.id(u),
        };
        let sample_type = vec![
            vt(&mut strings, "samples", "count"),
            vt(&mut strings, "cpu", "nanoseconds"),
            vt(&mut strings, "wall", "nanoseconds"),
        ];
        let period_type = vt(&mut strings, "wall", "nanoseconds");
        let thread_key = strings.id("thread");
        let mut functions: Vec<Function> = Vec::new();
        let mut function_ids: HashMap<(&str, &str), u64> = HashMap::new();
        let mut locations = Vec::with_capacity(self.frames.len());
        for (i, f) in self.frames.iter().enumerate() {
            let next = functions.len() as u64 + 1;
            let fid = *function_ids
                .entry((f.function.as_str(), f.file.as_str()))
                .or_insert(next);
            if fid == next {
                let name = strings.id(&f.function);
                functions.push(Function {
                    id: fid,
                    name,
                    system_name: name,
                    filename: strings.id(&f.file),
                    start_line: i64::from(f.first_line),
                });
            }
            locations.push(Location {
                id: i as u64 + 1,
                mapping_id: 1,
                address: 0,
                line: vec![Line {
                    function_id: fid,
                    line: i64::from(f.line),
                    column: 0,
                }],
                is_folded: false,
            });
        }
        let sample = self
            .stacks
            .iter()
            .map(|(thread, stack, v)| Sample {
                location_id: stack.iter().map(|&i| u64::from(i) + 1).collect(),
                value: vec![v.count as i64, v.cpu_ns as i64, v.wall_ns as i64],
                label: vec![Label {
                    key: thread_key,
                    str: strings.id(thread),
                    num: 0,
                    num_unit: 0,
                }],
            })
            .collect();
        let mapping = Mapping {
            id: 1,
            filename: strings.id("python"),
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            ..Default::default()
        };
        Profile {
            sample_type,
            sample,
            mapping: vec![mapping],
            location: locations,
            function: functions,
            string_table: strings.table,
            time_nanos: self.start_unix_ns,
            duration_nanos: self.duration_ns as i64,
            period_type: Some(period_type),
            period: 1_000_000_000 / i64::from(self.frequency_hz.max(1)),
            ..Default::default()
        }
    }

    /// The samples from the in-worker sampler's reply to a run: `[[thread, [[file, name,
    /// line, first_line], …innermost first], count, wall_ns, cpu_ns], …]`.
    pub fn from_reply(reply: &serde_json::Value, frequency_hz: u32) -> Samples {
        let mut s = Samples::new(frequency_hz);
        for row in reply["stacks"].as_array().into_iter().flatten() {
            let thread = row[0].as_str().unwrap_or("main");
            let ids: Vec<u32> = row[1]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    s.intern(frame_named(
                        f[0].as_str().unwrap_or("?"),
                        f[1].as_str().unwrap_or("?"),
                        f[2].as_i64().unwrap_or(0) as i32,
                        f[3].as_i64().unwrap_or(0) as i32,
                    ))
                })
                .collect();
            let v = Values {
                count: row[2].as_u64().unwrap_or(0),
                wall_ns: row[3].as_u64().unwrap_or(0),
                cpu_ns: row[4].as_u64().unwrap_or(0),
            };
            s.add(thread, &ids, v);
        }
        s.sampler_cpu_ns = reply["sampler_cpu_ns"].as_u64().unwrap_or(0);
        s.torn = reply["dropped"].as_u64().unwrap_or(0);
        s
    }
}

/// One function of the top table: its wall and CPU time as the leaf (flat) and anywhere on
/// the stack (cum, once per sample however deep it recurses): `go tool pprof -top -cum`'s
/// rows of the profile's `wall` and `cpu` sample types (`pprof::top_nodes`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FunctionTime {
    pub function: String,
    /// File and first line of the function where it was first seen.
    pub file: String,
    pub line: i32,
    pub flat_wall_ns: u64,
    pub cum_wall_ns: u64,
    pub flat_cpu_ns: u64,
    pub cum_cpu_ns: u64,
}

impl Samples {
    /// The `n` functions with the most cumulative wall time, in go tool pprof's order, with
    /// their CPU time beside; and how many functions there are in all.
    pub fn top(&self, n: usize) -> (Vec<FunctionTime>, usize) {
        use crate::pprof::{TopOptions, top_nodes};
        let Ok(p) = crate::pprof::Pprof::new(self.to_proto()) else {
            return (Vec::new(), 0);
        };
        let nodes = |index: &str, nodes: usize| {
            let opts = TopOptions {
                sample_index: Some(index.to_string()),
                cum: true,
                nodes,
                node_fraction: 0.0,
                edge_fraction: 0.0,
            };
            top_nodes(&p, &opts).unwrap_or_default()
        };
        let (wall, functions) = nodes("wall", n);
        let (cpu, _) = nodes("cpu", 0);
        let cpu: HashMap<&str, (i64, i64)> = cpu
            .iter()
            .map(|t| (t.name.as_str(), (t.flat, t.cum)))
            .collect();
        let rows = wall
            .iter()
            .map(|t| {
                let first = self.frames.iter().find(|f| f.function == t.name);
                let (flat_cpu, cum_cpu) = cpu.get(t.name.as_str()).copied().unwrap_or_default();
                FunctionTime {
                    function: t.name.clone(),
                    file: first.map(|f| f.file.clone()).unwrap_or_default(),
                    line: first.map_or(0, |f| f.first_line),
                    flat_wall_ns: t.flat.unsigned_abs(),
                    cum_wall_ns: t.cum.unsigned_abs(),
                    flat_cpu_ns: flat_cpu.unsigned_abs(),
                    cum_cpu_ns: cum_cpu.unsigned_abs(),
                }
            })
            .collect();
        (rows, functions)
    }
}

impl Samples {
    /// `root;…;leaf WALL_NS` lines, each frame as `function (file's name:line)`.
    pub fn folded(&self) -> Vec<String> {
        self.stacks
            .iter()
            .map(|(_, stack, v)| {
                let frames: Vec<String> = stack
                    .iter()
                    .rev()
                    .map(|&i| {
                        let f = &self.frames[i as usize];
                        let file = f.file.rsplit('/').next().unwrap_or(&f.file);
                        crate::redact::flame_frame(&format!("{} ({file}:{})", f.function, f.line))
                    })
                    .collect();
                format!("{} {}", frames.join(";"), v.wall_ns)
            })
            .collect()
    }
}

/// A frame as the profile names it: the host's own file by the host's name.
pub fn frame_named(file: &str, function: &str, line: i32, first_line: i32) -> SampledFrame {
    SampledFrame {
        function: function.to_string(),
        file: if file == HOST_FILE { HOST_NAME } else { file }.to_string(),
        line,
        first_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::Pprof;

    #[test]
    fn a_profile_pprof_reads_with_wall_last() {
        let mut s = Samples::new(100);
        let leaf = s.intern(frame_named("/c/check.py", "C.check", 12, 10));
        let root = s.intern(frame_named(HOST_FILE, "submit_metric", 3, 1));
        s.add(
            "main",
            &[leaf, root],
            Values {
                count: 2,
                wall_ns: 20,
                cpu_ns: 15,
            },
        );
        s.add(
            "main",
            &[leaf, root],
            Values {
                count: 1,
                wall_ns: 10,
                cpu_ns: 0,
            },
        );
        s.add(
            "tid 7",
            &[leaf],
            Values {
                count: 1,
                wall_ns: 10,
                cpu_ns: 10,
            },
        );
        assert_eq!(
            s.total(),
            Values {
                count: 4,
                wall_ns: 40,
                cpu_ns: 25
            }
        );
        let p = Pprof::new(s.to_proto()).expect("a valid profile");
        let proto = s.to_proto();
        assert_eq!(proto.sample.len(), 2, "one sample per thread and stack");
        assert_eq!(proto.sample[0].value, vec![3, 15, 30]);
        let names: Vec<&str> = proto
            .function
            .iter()
            .map(|f| proto.string_table[f.filename as usize].as_str())
            .collect();
        assert_eq!(names, ["/c/check.py", HOST_NAME]);
        drop(p);
    }
}
