//! Time and groups: the timeline of a selection (each capture's total of one sample type,
//! per group), and a selection's captures merged into one profile. A capture's total is
//! read from its record where `captures.jsonl` or `uploads.jsonl` states it, else off the
//! file once (kept while the file is unchanged); sample labels need the file decoded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use super::index::{Entry, Figures};
use super::rollup::Part;
use super::select::{Selection, all_keys_match, instant, tags_of};
use super::state::{Loaded, Problem, Ui};
use crate::pprof::Pprof;

/// Totals read off files kept at most, as many as a listing holds (about 250 bytes each);
/// past it the cache starts again.
const FIGURES_KEPT: usize = 200_000;
/// Captures one merge or one timeline of sample labels reads at most.
pub const MAX_CAPTURES: usize = 20_000;
/// Groups a timeline draws at most (the largest; the others are summed into `other`).
const MAX_GROUPS: usize = 12;

/// One capture on the timeline.
#[derive(Serialize)]
pub struct Point {
    pub id: String,
    pub time: String,
    /// The capture's total of the sample type (of the samples the labels select).
    pub value: f64,
    /// Its recording's length (0: not stated).
    pub seconds: f64,
}

#[derive(Serialize)]
pub struct Group {
    /// `key:value` of the group-by, or `all`.
    pub key: String,
    pub total: f64,
    pub points: Vec<Point>,
}

/// The timeline of a selection (`/api/series`, docs/json.md).
#[derive(Serialize, Default)]
pub struct Series {
    pub schema: u32,
    pub selection: String,
    pub sample_type: String,
    pub unit: String,
    pub sample_types: Vec<serde_json::Value>,
    /// Every capture states its length and the type is one of rates (cpu, wall, the
    /// deltas): the page draws value per second.
    pub per_second: bool,
    pub groups: Vec<Group>,
    /// The sample labels the selection's captures carry (from their label index), with
    /// their values (at most 64 a label; `truncated`: it has more), for the page to offer.
    pub labels: Vec<crate::pprof::LabelTotals>,
    pub captures: usize,
    /// Where the totals came from: the records, files read now, files read before.
    pub from_records: usize,
    pub from_files: usize,
    pub from_cache: usize,
    /// Captures that could not be read (their ids, at most 20, with why).
    pub unreadable: Vec<String>,
    pub left_out: usize,
}

impl Series {
    /// The sample type the timeline shows, picked among the first capture's (`asked`: a
    /// name or number; None: the last), noted with the types it has; its index.
    fn take_types(&mut self, f: &Figures, asked: Option<&str>) -> Result<usize, Problem> {
        let i = type_index(f, asked)?;
        let (t, u, _) = &f.types[i];
        self.sample_type = t.clone();
        self.unit = u.clone();
        self.sample_types = f
            .types
            .iter()
            .map(|(t, u, _)| serde_json::json!({"type": t, "unit": u}))
            .collect();
        Ok(i)
    }

    /// A capture that could not be read, said (the first 20).
    fn unreadable(&mut self, p: Problem) {
        if self.unreadable.len() < 20 {
            self.unreadable.push(p.message);
        }
    }

    /// The captures whose figures were read, counted by where they came from, of the sample
    /// type the first of them picks (a capture of other types, another runtime's under one
    /// name, is left out of this type's line); the type's index.
    fn keep_readable<'a>(
        &mut self,
        caps: &[&'a Entry],
        figures: Vec<Result<(Arc<Figures>, Source), Problem>>,
        asked: Option<&str>,
    ) -> Result<(Vec<Readable<'a>>, usize), Problem> {
        let mut kept = Vec::with_capacity(caps.len());
        let mut index = None;
        for (e, f) in caps.iter().zip(figures) {
            let f = match f {
                Ok((f, src)) => {
                    match src {
                        Source::Record => self.from_records += 1,
                        Source::File => self.from_files += 1,
                        Source::Cache => self.from_cache += 1,
                    }
                    f
                }
                Err(p) => {
                    self.unreadable(p);
                    continue;
                }
            };
            let i = match index {
                Some(i) => i,
                None => *index.insert(self.take_types(&f, asked)?),
            };
            if f.types.get(i).map(|t| &t.0) == Some(&self.sample_type) {
                kept.push((*e, f));
            }
        }
        Ok((kept, index.unwrap_or(0)))
    }
}

/// A capture of the timeline and its figures.
type Readable<'a> = (&'a Entry, Arc<Figures>);

/// `f` of every item, in their order, on up to `threads` threads, each taking the next item
/// as it finishes one.
fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let n = threads.min(items.len());
    if n <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let mut got = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            break got;
                        };
                        got.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Whether a type's figure is a rate over the recording, not a snapshot.
fn is_rate(profile_type: &str, sample_type: &str) -> bool {
    let snapshot = sample_type.starts_with("inuse")
        || matches!(
            profile_type,
            "heap" | "goroutine" | "goroutines" | "threadcreate" | "allocs" | "block" | "mutex"
        );
    !snapshot
}

/// The labels of sample `i` as `key`/`value` pairs (a number label as its number).
pub fn sample_labels(p: &Pprof, i: usize) -> Vec<(String, String)> {
    p.proto.sample[i]
        .label
        .iter()
        .map(|l| {
            let v = if l.str != 0 {
                p.str(l.str).to_string()
            } else {
                l.num.to_string()
            };
            (p.str(l.key).to_string(), v)
        })
        .collect()
}

enum Source {
    Record,
    File,
    Cache,
}

impl Ui {
    /// A capture's totals: its record's, else read off its file (once while it is unchanged).
    fn figures_of(&self, e: &Entry) -> Result<(Arc<Figures>, Source), Problem> {
        if let Some(f) = &e.figures {
            return Ok((Arc::clone(f), Source::Record));
        }
        let path = self.listed_file(&e.id)?;
        let meta = std::fs::metadata(&path).map_err(|_| Problem::not_found(&e.id))?;
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        if let Some((m, l, f)) = crate::sync::lock(&self.figures).get(&e.id)
            && (*m, *l) == stamp
        {
            return Ok((Arc::clone(f), Source::Cache));
        }
        let held = self.room(None, meta.len(), 0)?;
        let bytes = crate::config::read_limited(&path, self.limits.body, "--max-size-mb")
            .map_err(|x| Problem::unprocessable(self.scrub(&format!("{}: {x:#}", e.id))))?;
        let stated = crate::pprof::stated_size(&bytes)
            .unwrap_or(self.limits.decompressed)
            .min(self.limits.decompressed);
        let mut held = held;
        held = self.room(Some(held), stated, 0)?;
        let raw = crate::pprof::decompress(&bytes, &self.limits)
            .map_err(|x| Problem::unprocessable(format!("{}: {x}", e.id)))?;
        drop(bytes);
        let t = crate::pprof::totals_without_labels(&raw).ok_or_else(|| {
            Problem::unprocessable(format!("{}: not a well-formed pprof profile", e.id))
        })?;
        drop((raw, held));
        let f = Arc::new(Figures {
            time_nanos: t.time_nanos,
            duration_nanos: t.duration_nanos,
            types: t.types,
            // Read for its totals only: grouping by a sample label reads its samples.
            labels: Vec::new(),
            indexed: false,
        });
        let mut cache = crate::sync::lock(&self.figures);
        if cache.len() >= FIGURES_KEPT {
            cache.clear();
        }
        cache.insert(e.id.clone(), (stamp.0, stamp.1, Arc::clone(&f)));
        Ok((f, Source::File))
    }

    /// Per value of the sample label `group` (None: all samples together), the totals of
    /// the samples `labels` selects, decoded off the file.
    fn label_totals(
        &self,
        e: &Entry,
        labels: &[(String, String)],
        group: Option<&str>,
        index: usize,
    ) -> Result<Vec<(String, f64)>, Problem> {
        let path = self.listed_file(&e.id)?;
        let (p, _held) = self.read_pprof(&e.id, &path, 0)?;
        let mut sums: HashMap<String, f64> = HashMap::new();
        for (i, s) in p.proto.sample.iter().enumerate() {
            let have = sample_labels(&p, i);
            if !labels.is_empty() && !all_keys_match(labels, &have) {
                continue;
            }
            let key = match group {
                None => "all".to_string(),
                Some(g) => have
                    .iter()
                    .find(|(k, _)| k == g)
                    .map_or_else(|| format!("{g}:(none)"), |(k, v)| format!("{k}:{v}")),
            };
            *sums.entry(key).or_default() += s.value.get(index).copied().unwrap_or(0) as f64;
        }
        Ok(sums.into_iter().collect())
    }

    /// A capture's totals of sample type `i` per group: its figure under its tag's group, or
    /// (sample labels selected or grouped by) its samples' read off the file.
    fn capture_totals(
        &self,
        e: &Entry,
        sel: &Selection,
        group_by: Option<&str>,
        figures: &Figures,
        i: usize,
    ) -> Result<Vec<(String, f64)>, Problem> {
        let label_group = group_by.and_then(|g| g.strip_prefix("label:"));
        // From the label index where it answers: grouped by one label, or one label's value
        // selected; two labels together need the samples themselves.
        match (label_group, &sel.labels[..]) {
            (Some(g), []) => {
                if let Some(t) = figures.by_label(g, i) {
                    return Ok(t);
                }
            }
            (None, [(k, v)]) => {
                if let Some(t) = figures.with_label(k, v, i) {
                    return Ok(vec![("all".to_string(), t)]);
                }
            }
            _ => {}
        }
        if !sel.labels.is_empty() || label_group.is_some() {
            return self.label_totals(e, &sel.labels, label_group, i);
        }
        let key = match group_by {
            None | Some("") => "all".to_string(),
            Some(g) => tags_of(e)
                .into_iter()
                .find(|(k, _)| k == g)
                .map_or_else(|| format!("{g}:(none)"), |(k, v)| format!("{k}:{v}")),
        };
        Ok(vec![(key, figures.types[i].2)])
    }

    /// The timeline of a selection: per capture the total of `sample_index` (a name; None:
    /// the last type, go tool pprof's default), grouped by a capture tag's key or, as
    /// `label:KEY`, by a sample label. Files are read on as many threads as the machine has
    /// cores (at most 4), each within the ui's memory budget.
    pub fn series(
        &self,
        sel: &Selection,
        sample_index: Option<&str>,
        group_by: Option<&str>,
    ) -> Result<Series, Problem> {
        self.touch();
        let listing = self.listing();
        let mut caps = sel.captures(&listing.entries);
        let mut out = Series {
            schema: 1,
            selection: sel.describe(),
            captures: caps.len(),
            ..Series::default()
        };
        let by_labels = !sel.labels.is_empty() || group_by.is_some_and(|g| g.starts_with("label:"));
        if by_labels && caps.len() > MAX_CAPTURES {
            out.left_out = caps.len() - MAX_CAPTURES;
            caps.drain(..out.left_out);
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let figures = par_map(&caps, threads, |e| self.figures_of(e));
        let (kept, i) = out.keep_readable(&caps, figures, sample_index)?;

        out.labels = offered_labels(kept.iter().map(|(_, f)| f.as_ref()));
        let totals = par_map(&kept, if by_labels { threads } else { 1 }, |(e, f)| {
            self.capture_totals(e, sel, group_by, f, i)
        });
        let mut groups: HashMap<String, Vec<Point>> = HashMap::new();
        let mut all_stated = true;
        for ((e, figures), totals) in kept.into_iter().zip(totals) {
            let seconds = figures.duration_nanos as f64 / 1e9;
            all_stated &= seconds > 0.0;
            let totals = match totals {
                Ok(t) => t,
                Err(p) => {
                    out.unreadable(p);
                    continue;
                }
            };
            for (key, value) in totals {
                groups.entry(key).or_default().push(Point {
                    id: e.id.clone(),
                    time: e.time.clone(),
                    value,
                    seconds,
                });
            }
        }
        out.per_second = all_stated && is_rate(&sel.profile_type, &out.sample_type);
        out.groups = largest_groups(groups);
        Ok(out)
    }

    /// A selection's captures merged into one profile, as read (not made ready for
    /// reports), with what it holds of the budget beside `pinned`; and how many captures.
    pub fn merge_selection(
        &self,
        sel: &Selection,
        pinned: u64,
    ) -> Result<(Pprof, crate::budget::Reservation, usize), Problem> {
        let listing = self.listing();
        let caps = sel.captures(&listing.entries);
        if caps.is_empty() {
            return Err(Problem {
                status: axum::http::StatusCode::NOT_FOUND,
                message: format!("no capture in the listing is in {}", sel.describe()),
            });
        }
        if caps.len() > MAX_CAPTURES {
            return Err(Problem::bad(format!(
                "{} captures are in {}; a merge reads at most {MAX_CAPTURES}: choose a shorter range",
                caps.len(),
                sel.describe()
            )));
        }
        let n = caps.len();
        let parts = match &self.rollups {
            Some(r) if r.usable() => super::rollup::plan(sel, caps, jiff::Timestamp::now()),
            _ => caps.into_iter().map(Part::Capture).collect(),
        };
        let mut m = crate::pprof::Merger::new();
        let mut held = self.room(None, 1 << 16, pinned)?;
        let mut oldest = None;
        for part in parts {
            match part {
                Part::Capture(e) => {
                    self.add_capture(&mut m, e, &sel.labels, pinned + held.bytes())?;
                }
                Part::Hour { start, captures } => {
                    let Some(rollups) = &self.rollups else {
                        // Planned only with rollups; without, the hour is its captures.
                        for e in &captures {
                            self.add_capture(&mut m, e, &sel.labels, pinned + held.bytes())?;
                        }
                        held = self.grown(held, m.heap_bytes(), pinned)?;
                        continue;
                    };
                    let file = rollups.path(sel, start, &captures);
                    let stored = file
                        .is_file()
                        .then(|| {
                            let name = format!("the hourly rollup {}", file.display());
                            self.read_pprof(&name, &file, pinned + held.bytes()).ok()
                        })
                        .flatten();
                    let (p, one) = match stored {
                        Some(read) => read,
                        None => {
                            let (p, one) = self.merge_hour(&captures, pinned + held.bytes(), &m)?;
                            let gz = crate::pprof::gzip_fast(&prost::Message::encode_to_vec(
                                &p.to_proto(),
                            ));
                            let oldest = *oldest.get_or_insert_with(|| {
                                super::rollup::oldest(sel, &listing.entries)
                            });
                            // One the ui could not read back (over --max-size-mb) is
                            // not kept: the hour is merged from its captures each time.
                            if gz.len() as u64 <= self.limits.body {
                                rollups.store(&file, &gz, oldest);
                            }
                            (p, one)
                        }
                    };
                    let first = captures.first().map_or("", |e| e.id.as_str());
                    add_kept(&mut m, &p, first, &sel.labels)?;
                    drop((p, one));
                }
            }
            held = self.grown(held, m.heap_bytes(), pinned)?;
        }
        let p = m
            .finish()
            .map_err(|x| Problem::unprocessable(x.to_string()))?;
        Ok((p, held, n))
    }

    /// Capture `e` read and its samples that carry `labels` added to `m`; the file and its
    /// decoding held only meanwhile, beside `pinned`.
    fn add_capture(
        &self,
        m: &mut crate::pprof::Merger,
        e: &Entry,
        labels: &[(String, String)],
        pinned: u64,
    ) -> Result<(), Problem> {
        let path = self.listed_file(&e.id)?;
        let (p, _held) = self.read_pprof(&e.id, &path, pinned)?;
        add_kept(m, &p, &e.id, labels)
    }

    /// `held` made to cover `now` bytes (a merge that grew), beside `pinned`.
    fn grown(
        &self,
        held: crate::budget::Reservation,
        now: u64,
        pinned: u64,
    ) -> Result<crate::budget::Reservation, Problem> {
        if now <= held.bytes() {
            return Ok(held);
        }
        let more = now - held.bytes();
        self.room(Some(held), more, pinned)
    }

    /// One hour's captures merged whole (its rollup), held beside `beside` (the merge it
    /// joins) and `pinned`.
    fn merge_hour(
        &self,
        captures: &[&Entry],
        pinned: u64,
        beside: &crate::pprof::Merger,
    ) -> Result<(Pprof, crate::budget::Reservation), Problem> {
        let mut m = crate::pprof::Merger::new();
        let mut held = self.room(None, 1 << 16, pinned)?;
        for e in captures {
            self.add_capture(&mut m, e, &[], pinned + held.bytes())?;
            held = self.grown(held, m.heap_bytes() + beside.heap_bytes(), pinned)?;
        }
        let p = m
            .finish()
            .map_err(|x| Problem::unprocessable(x.to_string()))?;
        Ok((p, held))
    }

    /// The merged profile a selection's id names, made ready for reports and kept while its
    /// captures are the same.
    pub fn merged(&self, id: &str, sel: &Selection, pinned: u64) -> Result<Arc<Loaded>, Problem> {
        let listing = self.listing();
        let stamp = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for e in sel.captures(&listing.entries) {
                (&e.id, e.bytes, &e.time).hash(&mut h);
            }
            (SystemTime::UNIX_EPOCH, h.finish())
        };
        drop(listing);
        self.once(
            format!("profile {id}"),
            || self.kept(id, stamp),
            || {
                let (p, held, _) = self.merge_selection(sel, pinned)?;
                let p = Arc::new(self.loaded(p, held, pinned)?);
                self.keep(id, stamp, &p);
                Ok(p)
            },
        )
    }

    /// What a selection's merged profile says of it: captures, seconds of recording, the
    /// total per second of each sample type.
    pub fn selection_figures(&self, sel: &Selection) -> serde_json::Value {
        let listing = self.listing();
        let caps = sel.captures(&listing.entries);
        let (first, last) = (
            caps.first().map(|e| e.time.clone()),
            caps.last().map(|e| e.time.clone()),
        );
        serde_json::json!({
            "captures": caps.len(),
            "first": first,
            "last": last,
            "from": sel.from.map(|t| t.to_string()),
            "to": sel.to.map(|t| t.to_string()),
        })
    }
}

/// `p`'s samples that carry `labels` (all when none) added to `m`; `id` names the capture in
/// the error.
fn add_kept(
    m: &mut crate::pprof::Merger,
    p: &Pprof,
    id: &str,
    labels: &[(String, String)],
) -> Result<(), Problem> {
    let keep = |i: usize| labels.is_empty() || all_keys_match(labels, &sample_labels(p, i));
    m.add_where(p, keep).map_err(|x| {
        Problem::unprocessable(format!("{id} cannot be merged with those before it: {x}"))
    })
}

/// The sample type a name (or number) picks among a capture's totals; None: the last.
fn type_index(f: &Figures, asked: Option<&str>) -> Result<usize, Problem> {
    if f.types.is_empty() {
        return Err(Problem::unprocessable(
            "the profile has no sample types".into(),
        ));
    }
    let Some(name) = asked.filter(|n| !n.is_empty()) else {
        return Ok(f.types.len() - 1);
    };
    if let Ok(i) = name.parse::<usize>()
        && i < f.types.len()
    {
        return Ok(i);
    }
    f.types
        .iter()
        .position(|(t, _, _)| t == name)
        .ok_or_else(|| {
            let names: Vec<&str> = f.types.iter().map(|(t, _, _)| t.as_str()).collect();
            Problem::bad(format!(
                "sample index {name:?} must be one of: {}",
                names.join(", ")
            ))
        })
}

/// The groups by total, largest first: the first `MAX_GROUPS - 1` as they are, the rest
/// summed by capture into `other`.
/// The labels of captures' indexes together: each key once, its values (no totals) merged
/// up to the index's bound per label.
fn offered_labels<'a>(
    figures: impl Iterator<Item = &'a Figures>,
) -> Vec<crate::pprof::LabelTotals> {
    use crate::pprof::{LabelTotals, LabelValue, MAX_LABEL_VALUES};
    let mut keys: std::collections::BTreeMap<String, (bool, std::collections::BTreeSet<String>)> =
        Default::default();
    for f in figures {
        for l in &f.labels {
            let (truncated, values) = keys.entry(l.key.clone()).or_default();
            *truncated |= l.truncated;
            for v in &l.values {
                if values.len() >= MAX_LABEL_VALUES {
                    *truncated = true;
                    break;
                }
                values.insert(v.value.clone());
            }
        }
    }
    keys.into_iter()
        .map(|(key, (truncated, values))| LabelTotals {
            key,
            truncated,
            values: values
                .into_iter()
                .map(|value| LabelValue {
                    value,
                    totals: Vec::new(),
                })
                .collect(),
        })
        .collect()
}

fn largest_groups(groups: HashMap<String, Vec<Point>>) -> Vec<Group> {
    let mut v: Vec<Group> = groups
        .into_iter()
        .map(|(key, points)| Group {
            total: points.iter().map(|p| p.value).sum(),
            key,
            points,
        })
        .collect();
    v.sort_by(|a, b| b.total.total_cmp(&a.total).then(a.key.cmp(&b.key)));
    if v.len() > MAX_GROUPS {
        let rest = v.split_off(MAX_GROUPS - 1);
        let mut summed: HashMap<String, Point> = HashMap::new();
        for g in rest {
            for p in g.points {
                match summed.get_mut(&p.id) {
                    Some(q) => q.value += p.value,
                    None => {
                        summed.insert(p.id.clone(), p);
                    }
                }
            }
        }
        let by_id: Vec<Point> = summed.into_values().collect();
        v.push(Group {
            key: "other".into(),
            total: by_id.iter().map(|p| p.value).sum(),
            points: by_id,
        });
    }
    for g in &mut v {
        g.points
            .sort_by(|a, b| match (instant(&a.time), instant(&b.time)) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => a.time.cmp(&b.time),
            });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_the_order_on_any_number_of_threads() {
        let items: Vec<u64> = (0..1000).collect();
        for threads in [0, 1, 2, 3, 8] {
            let got = par_map(&items, threads, |x| x * 3);
            assert_eq!(
                got,
                items.iter().map(|x| x * 3).collect::<Vec<_>>(),
                "{threads}"
            );
        }
        assert!(par_map(&[] as &[u64], 4, |x| *x).is_empty());
    }
}
