//! What the page's server keeps between requests: the listing (rescanned when it is a second
//! old), the last listings sent (for `?since=`), decoded profiles and drawn flamegraphs, and
//! one decoding at a time per profile however many requests ask for it. Every profile being
//! read or kept holds its bytes of one memory budget (`ui --memory-mb`): a file's bytes, its
//! decompressed size (stated, checked as it decompresses) and its decoded model's estimate
//! are reserved before they are held; what is kept is given back least recently used first
//! when a new profile needs the room, and without room a request gets 503. The process's
//! resident memory is held to the budget above what it held at start, too (`room`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::index::{Listing, Records, scan};
use super::svg::{Svg, with_frame_picker};
use crate::pprof::Limits;
use crate::pprof::Nodes;
use crate::pprof::Pprof;

/// A listing is rescanned when it is older than this.
const LISTING_TTL: Duration = Duration::from_millis(1000);
/// Decoded profiles and drawn flamegraphs kept at most (the memory budget bounds them first).
const CACHE: usize = 32;
/// How long a request waits for room in the memory budget before it gets 503.
pub(super) const ROOM_WAIT: Duration = Duration::from_secs(10);

/// A decoded profile and its report nodes, built once for its top table and its flamegraphs
/// (the page asks for both at once), with what it holds of the memory budget.
pub struct Loaded {
    pub p: Pprof,
    nodes: std::sync::OnceLock<Nodes>,
    _held: crate::budget::Reservation,
}

impl Loaded {
    pub fn nodes(&self) -> &Nodes {
        self.nodes.get_or_init(|| Nodes::new(&self.p))
    }

    /// What it holds of the memory budget.
    pub fn held(&self) -> u64 {
        self._held.bytes()
    }
}

impl std::ops::Deref for Loaded {
    type Target = Pprof;
    fn deref(&self) -> &Pprof {
        &self.p
    }
}

/// A decoded profile with the id, mtime and length it was read at, and when it was last
/// asked for.
pub(super) type Cached = (String, std::time::SystemTime, u64, Arc<Loaded>, Instant);
/// A flamegraph drawn: of which decoded profile, which sample type, the SVG, last asked for.
pub(super) type Drawn = (Arc<Loaded>, u64, Arc<Svg>, Instant);

/// Two profiles to compare and the sample types compared.
pub(super) type Pair = (Arc<Loaded>, Arc<Loaded>, (usize, usize));

pub struct Ui {
    pub roots: Vec<PathBuf>,
    /// Directories the source view may read (none: it shows no source text).
    pub sources: Vec<PathBuf>,
    /// It listens on a loopback address only: without `--source-path` the source view reads
    /// the files at the paths a profile records.
    pub local: bool,
    /// Hourly rollups of the captures, kept on disk (`ui --cache-dir`).
    pub rollups: Option<super::rollup::Rollups>,
    pub limits: Limits,
    /// What profiles being read and kept may hold together.
    pub(super) memory: crate::budget::Budget,
    /// What the process may hold resident at most: the budget above what it held when it
    /// started. The reservations are estimates, and memory freed stays with the allocator
    /// for a while: a new profile is let in only while the process's resident memory leaves
    /// it room under this too.
    pub(super) ceiling: u64,
    pub(super) listing: Mutex<Option<(Instant, Arc<Listing>)>>,
    /// The last few listings sent, by ETag: a page that has one is sent what changed.
    pub(super) sent: Mutex<std::collections::VecDeque<(String, Arc<Listing>)>>,
    records: Mutex<Vec<Records>>,
    pub(super) cache: Mutex<Vec<Cached>>,
    /// Flamegraphs drawn lately: of which decoded profile, which sample type.
    pub(super) drawn: Mutex<Vec<Drawn>>,
    /// Ids being decoded, each with the lock its other askers wait on.
    loading: Mutex<std::collections::HashMap<String, Arc<Mutex<()>>>>,
    /// Totals read off files the records do not describe, by id, with the file's mtime and
    /// length.
    pub(super) figures: Mutex<super::index::FiguresCache>,
    /// When the server started, and the last request for a profile (ms after it).
    epoch: Instant,
    last_request_ms: std::sync::atomic::AtomicU64,
}

impl Ui {
    pub fn new(roots: Vec<PathBuf>, limits: Limits, memory: u64) -> Ui {
        let records = roots.iter().map(|_| Records::default()).collect();
        Ui {
            roots,
            sources: Vec::new(),
            local: true,
            rollups: None,
            limits,
            memory: crate::budget::Budget::new(memory),
            ceiling: crate::procstat::self_rss()
                .unwrap_or(0)
                .saturating_add(memory),
            listing: Mutex::new(None),
            sent: Mutex::new(std::collections::VecDeque::new()),
            records: Mutex::new(records),
            cache: Mutex::new(Vec::new()),
            loading: Mutex::new(std::collections::HashMap::new()),
            drawn: Mutex::new(Vec::new()),
            figures: Mutex::default(),
            epoch: Instant::now(),
            last_request_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Marks a request for a profile now.
    pub(super) fn touch(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_request_ms
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long since the last request for a profile.
    pub fn idle_for(&self) -> Duration {
        let last = self
            .last_request_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        self.epoch
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }

    /// The current listing (rescanned past its time to live).
    pub fn listing(&self) -> Arc<Listing> {
        let mut l = crate::sync::lock(&self.listing);
        if let Some((at, listing)) = l.as_ref()
            && at.elapsed() < LISTING_TTL
        {
            return Arc::clone(listing);
        }
        let mut records = crate::sync::lock(&self.records);
        let fresh = Arc::new(scan(&self.roots, &mut records));
        *l = Some((Instant::now(), Arc::clone(&fresh)));
        fresh
    }

    /// The file of a listed id, checked again: a regular file under its root.
    fn file(&self, id: &str) -> Result<PathBuf, Problem> {
        let listing = self.listing();
        if !listing.entries.iter().any(|e| e.id == id) {
            return Err(Problem::not_found(id));
        }
        self.listed_file(id)
    }

    /// The file of an id taken from the listing, checked again: a regular file under its
    /// root.
    pub(super) fn listed_file(&self, id: &str) -> Result<PathBuf, Problem> {
        let (ri, rel) = id.split_once('/').ok_or_else(|| Problem::not_found(id))?;
        let root = ri
            .parse::<usize>()
            .ok()
            .and_then(|i| self.roots.get(i))
            .ok_or_else(|| Problem::not_found(id))?;
        let path = root.join(rel);
        let real = std::fs::canonicalize(&path).map_err(|_| Problem::not_found(id))?;
        let meta = std::fs::symlink_metadata(&path).map_err(|_| Problem::not_found(id))?;
        if !real.starts_with(root) || !meta.is_file() {
            return Err(Problem::not_found(id));
        }
        Ok(real)
    }

    /// The bytes of a listed id's file, read within the size limit; its path too.
    pub(super) fn bytes(&self, id: &str) -> Result<(PathBuf, Vec<u8>), Problem> {
        let path = self.file(id)?;
        let bytes = crate::config::read_limited(&path, self.limits.body, "--max-size-mb")
            .map_err(|e| Problem::unprocessable(self.scrub(&format!("{id}: {e:#}"))))?;
        Ok((path, bytes))
    }

    /// A profile's id as a title shows it: its path under its root, after the root's own
    /// name when several roots are served (`ROOT_INDEX/…` is the page's key, not a name).
    pub(super) fn label(&self, id: &str) -> String {
        if let Some(Ok(sel)) = super::select::Selection::parse_id(id) {
            return sel.describe();
        }
        let Some((ri, rel)) = id.split_once('/') else {
            return id.to_string();
        };
        if self.roots.len() <= 1 {
            return rel.to_string();
        }
        let root = ri
            .parse::<usize>()
            .ok()
            .and_then(|i| self.roots.get(i))
            .and_then(|r| r.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        match root {
            Some(name) => format!("{name}/{rel}"),
            None => rel.to_string(),
        }
    }

    /// A message without the server's own paths: each root is named by its index, as ids
    /// name it.
    pub(super) fn scrub(&self, message: &str) -> String {
        let mut m = message.to_string();
        for (i, r) in self.roots.iter().enumerate() {
            m = m.replace(&format!("{}/", r.display()), &format!("{i}/"));
            m = m.replace(&r.display().to_string(), &format!("{i}"));
        }
        m
    }

    /// A profile file read and decoded within the memory budget: its bytes, then what it
    /// states it holds decompressed (what it may hold, when it does not say), then its decoded
    /// model's estimate are reserved before each is held. The model as read, and what it
    /// holds of the budget.
    pub(super) fn read_pprof(
        &self,
        id: &str,
        path: &std::path::Path,
        pinned: u64,
    ) -> Result<(Pprof, crate::budget::Reservation), Problem> {
        let unprocessable = |e: String| Problem::unprocessable(self.scrub(&format!("{id}: {e}")));
        let size = std::fs::metadata(path)
            .map_err(|_| Problem::not_found(id))?
            .len();
        if size > self.limits.body {
            return Err(unprocessable(format!(
                "{size} bytes is over the {}-byte limit (ui --max-size-mb)",
                self.limits.body
            )));
        }
        let mut held = self.room(None, size, pinned)?;
        let bytes = crate::config::read_limited(path, self.limits.body, "--max-size-mb")
            .map_err(|e| unprocessable(format!("{e:#}")))?;
        let limit = self.limits.decompressed;
        let stated = crate::pprof::stated_size(&bytes).filter(|n| *n <= limit);
        let first = stated.unwrap_or(limit.min(bytes.len() as u64 * 16)).max(1);
        held = self.room(Some(held), first, pinned)?;
        let at = |n: u64| Limits {
            decompressed: n,
            ..self.limits
        };
        let raw = match crate::pprof::decompress(&bytes, &at(first)) {
            Err(crate::pprof::Error::TooLargeDecompressed { .. }) if first < limit => {
                held = self.room(Some(held), limit - first, pinned)?;
                crate::pprof::decompress(&bytes, &at(limit))
            }
            other => other,
        }
        .map_err(|e| unprocessable(e.to_string()))?;
        drop(bytes);
        // The decoded model (with agentprof's index of it) is what is kept; its estimate
        // covers the decoding's peak.
        let scan = crate::pprof::memory_estimate(&raw, &self.limits);
        let model = scan.as_ref().map_or(raw.len() as u64 * 4, |s| s.memory);
        held = self.room(Some(held), model, pinned)?;
        let p = crate::pprof::decode_scanned(&raw, &self.limits, scan)
            .map_err(|e| unprocessable(e.to_string()))?;
        Ok((p, held))
    }

    /// [`Ui::read_pprof`], made ready for reports and charged at what it keeps.
    fn load_within(
        &self,
        id: &str,
        path: &std::path::Path,
        pinned: u64,
    ) -> Result<Loaded, Problem> {
        let (p, held) = self.read_pprof(id, path, pinned)?;
        self.loaded(p, held, pinned)
    }

    /// A decoded profile made ready for reports (go tool pprof's names, drop_frames) with
    /// its report nodes, charged at what it holds, counted allocation by allocation, not at
    /// the estimate made before decoding (which must cover the decoding's own peak).
    pub(super) fn loaded(
        &self,
        mut p: Pprof,
        mut held: crate::budget::Reservation,
        pinned: u64,
    ) -> Result<Loaded, Problem> {
        p.prepare_for_report();
        let nodes = Nodes::new(&p);
        let kept = p.heap_bytes() + nodes.heap_bytes();
        if kept > held.bytes() {
            let more = kept - held.bytes();
            held = self.room(Some(held), more, pinned)?;
        }
        held.shrink_to(kept);
        Ok(Loaded {
            p,
            nodes: std::sync::OnceLock::from(nodes),
            _held: held,
        })
    }

    /// What `cached` finds, else `make`'s, made by one request at a time per `key`: the
    /// page asks for a profile's table and flamegraph at once, and for the flamegraph twice
    /// (ahead, then in its frame); one does the work, the others wait for it and find it.
    pub(super) fn once<T>(
        &self,
        key: String,
        cached: impl Fn() -> Option<T>,
        make: impl FnOnce() -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        if let Some(v) = cached() {
            return Ok(v);
        }
        let gate = Arc::clone(
            crate::sync::lock(&self.loading)
                .entry(key.clone())
                .or_default(),
        );
        let made = {
            let _one = crate::sync::lock(&gate);
            match cached() {
                Some(v) => Ok(v),
                None => make(),
            }
        };
        let mut loading = crate::sync::lock(&self.loading);
        if loading.get(&key).is_some_and(|g| Arc::ptr_eq(g, &gate)) {
            loading.remove(&key);
        }
        made
    }

    /// The decoded profile of a listed pprof id (from the cache while the file is unchanged).
    pub fn profile(&self, id: &str) -> Result<Arc<Loaded>, Problem> {
        self.profile_beside(id, 0)
    }

    /// [`Ui::profile`] for a request that holds `pinned` bytes of the budget already (the
    /// other profile of a compare, which cannot be given back while it is compared).
    pub fn profile_beside(&self, id: &str, pinned: u64) -> Result<Arc<Loaded>, Problem> {
        self.touch();
        if let Some(sel) = super::select::Selection::parse_id(id) {
            return self.merged(id, &sel.map_err(Problem::bad)?, pinned);
        }
        let path = self.file(id)?;
        let meta = std::fs::metadata(&path).map_err(|_| Problem::not_found(id))?;
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        self.once(
            format!("profile {id}"),
            || self.kept(id, stamp),
            || {
                let p = Arc::new(self.load_within(id, &path, pinned)?);
                self.keep(id, stamp, &p);
                Ok(p)
            },
        )
    }

    /// A decoded profile kept, by its id and the stamp it was read at.
    pub(super) fn keep(&self, id: &str, stamp: (std::time::SystemTime, u64), p: &Arc<Loaded>) {
        {
            let mut cache = crate::sync::lock(&self.cache);
            cache.retain(|(i, _, _, _, _)| i != id);
            if cache.len() >= CACHE {
                cache.remove(0);
            }
            cache.push((
                id.to_string(),
                stamp.0,
                stamp.1,
                Arc::clone(p),
                Instant::now(),
            ));
        }
    }

    /// The kept profile of `id` read at `stamp`, marked used.
    pub(super) fn kept(
        &self,
        id: &str,
        stamp: (std::time::SystemTime, u64),
    ) -> Option<Arc<Loaded>> {
        let mut cache = crate::sync::lock(&self.cache);
        cache
            .iter_mut()
            .find(|(i, m, l, _, _)| i == id && (*m, *l) == stamp)
            .map(|(_, _, _, p, used)| {
                *used = Instant::now();
                Arc::clone(p)
            })
    }

    /// The flamegraph of a listed profile's sample type (`None`: the default), from the
    /// last few drawn while the profile is unchanged.
    pub fn flamegraph(
        &self,
        id: &str,
        sample_index: Option<&str>,
        (icicle, frames): (bool, usize),
    ) -> Result<Arc<Svg>, Problem> {
        self.touch();
        let p = self.profile(id)?;
        let index = p.sample_index(sample_index).map_err(Problem::bad)?;
        // Kept by sample type, direction and frames drawn.
        let look = ((frames as u64) << 32) | ((index as u64) << 1) | u64::from(icicle);
        let cached = || {
            crate::sync::lock(&self.drawn)
                .iter_mut()
                .find(|(pp, i, _, _)| Arc::ptr_eq(pp, &p) && *i == look)
                .map(|(_, _, svg, used)| {
                    *used = Instant::now();
                    Arc::clone(svg)
                })
        };
        self.once(format!("flamegraph {look} {id}"), cached, || {
            let title = format!("{} — {}", self.label(id), p.sample_types()[index].0);
            let mut out = Vec::new();
            let folded = crate::pprof::write_flamegraph_look(
                &p,
                p.nodes(),
                index,
                &title,
                look_of(icicle, frames),
                &mut out,
            )
            .map_err(|e| Problem::unprocessable(self.scrub(&format!("{e:#}"))))?;
            let out = with_frame_picker(out);
            // Kept within the budget too: an SVG can be tens of MiB.
            let held = self.room(None, out.len() as u64, 0)?;
            let out = Arc::new(Svg {
                _held: Some(held),
                folded,
                ..Svg::new(out)
            });
            let mut drawn = crate::sync::lock(&self.drawn);
            if drawn.len() >= CACHE {
                drawn.remove(0);
            }
            drawn.push((Arc::clone(&p), look, Arc::clone(&out), Instant::now()));
            Ok(out)
        })
    }
}

impl Ui {
    /// Room for a filtered copy of `p` while a report is made of it (a filter's profile is
    /// as large as the one it filters, at most).
    pub fn room_like(&self, p: &Loaded) -> Result<crate::budget::Reservation, Problem> {
        self.room(None, p.held(), 0)
    }

    /// The flamegraph of what `filter` keeps of a listed profile (drawn for this request;
    /// the unfiltered one is kept, these are not). Its frames tell the page which function
    /// a right-click chose.
    pub fn flamegraph_filtered(
        &self,
        id: &str,
        sample_index: Option<&str>,
        filter: &crate::pprof::NameFilter,
        (icicle, frames): (bool, usize),
    ) -> Result<Svg, Problem> {
        let p = self.profile(id)?;
        let index = p.sample_index(sample_index).map_err(Problem::bad)?;
        let _room = self.room_like(&p)?;
        let (kept, _) = filter.apply(&p);
        let title = format!(
            "{} — {} (filtered)",
            self.label(id),
            p.sample_types()[index].0
        );
        let mut out = Vec::new();
        let nodes = crate::pprof::Nodes::new(&kept);
        let folded = crate::pprof::write_flamegraph_look(
            &kept,
            &nodes,
            index,
            &title,
            look_of(icicle, frames),
            &mut out,
        )
        .map_err(|e| Problem::unprocessable(self.scrub(&format!("{e:#}"))))?;
        Ok(Svg {
            folded,
            ..Svg::new(with_frame_picker(out))
        })
    }
}

/// Frames a flamegraph of the page draws unless asked for more (`frames=`): past it the
/// narrowest fold into their callers, and the picture and the `x-agentprof-folded` header
/// say how many. Measured in Chromium on a 113,430-frame profile (`cargo run --example
/// ui_bench -- --large`): 3,000 frames open in 0.85 s and search in 0.17 s; 6,000 open in
/// 1.1 s, 12,000 in 2.0 s; all of them (30 MB) in 4–5 s, and a search did not finish in
/// two minutes.
pub const MAX_FRAMES: usize = 3_000;
/// The most a request may ask for.
pub const MOST_FRAMES: usize = 200_000;

fn look_of(icicle: bool, frames: usize) -> crate::pprof::Look {
    crate::pprof::Look {
        icicle,
        max_frames: Some(frames.clamp(100, MOST_FRAMES)),
        ..Default::default()
    }
}

/// A request that cannot be answered, as JSON with the reason.
#[derive(Debug)]
pub struct Problem {
    pub(super) status: StatusCode,
    pub(super) message: String,
}

impl Problem {
    pub(super) fn not_found(id: &str) -> Problem {
        Problem {
            status: StatusCode::NOT_FOUND,
            message: format!("no profile {id:?} in the listing"),
        }
    }
    pub(super) fn unprocessable(message: String) -> Problem {
        Problem {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message,
        }
    }
    pub(super) fn bad(message: impl std::fmt::Display) -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            message: message.to_string(),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message }).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}
