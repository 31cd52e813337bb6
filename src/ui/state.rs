//! What the page's server keeps between requests: the listing (rescanned when it is a second
//! old), the last listings sent (for `?since=`), the last few decoded profiles and drawn
//! flamegraphs, and one decoding at a time per profile however many requests ask for it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::index::{Listing, Records, scan};
use crate::pprof::decode::Limits;
use crate::pprof::graph::Nodes;
use crate::pprof::model::Pprof;

/// A listing is rescanned when it is older than this.
const LISTING_TTL: Duration = Duration::from_millis(1000);
/// Decoded profiles kept for the next request (the page asks for a profile's top table
/// and its flamegraph one after the other).
const CACHE: usize = 6;

/// A decoded profile and its report nodes, built once for its top table and its flamegraphs
/// (the page asks for both at once).
pub struct Loaded {
    pub p: Pprof,
    nodes: std::sync::OnceLock<Nodes>,
}

impl Loaded {
    pub fn nodes(&self) -> &Nodes {
        self.nodes.get_or_init(|| Nodes::new(&self.p))
    }
}

impl std::ops::Deref for Loaded {
    type Target = Pprof;
    fn deref(&self) -> &Pprof {
        &self.p
    }
}

/// A decoded profile with the id, mtime and length it was read at.
type Cached = (String, std::time::SystemTime, u64, Arc<Loaded>);
/// A flamegraph drawn: of which decoded profile, which sample type, the SVG.
type Drawn = (Arc<Loaded>, usize, Arc<Svg>);

/// A drawn flamegraph's SVG, and its gzip-compressed form, made once the first client that
/// takes gzip asks (the page asks twice: a prefetch, then the frame).
pub struct Svg {
    pub plain: bytes::Bytes,
    gzipped: std::sync::OnceLock<bytes::Bytes>,
}

impl Svg {
    pub fn new(plain: Vec<u8>) -> Svg {
        Svg {
            plain: plain.into(),
            gzipped: std::sync::OnceLock::new(),
        }
    }

    pub fn gzipped(&self) -> bytes::Bytes {
        self.gzipped
            .get_or_init(|| crate::pprof::gzip_fast(&self.plain).into())
            .clone()
    }
}
/// Two profiles to compare and the sample types compared.
pub(super) type Pair = (Arc<Loaded>, Arc<Loaded>, (usize, usize));

pub struct Ui {
    pub roots: Vec<PathBuf>,
    pub limits: Limits,
    listing: Mutex<Option<(Instant, Arc<Listing>)>>,
    /// The last few listings sent, by ETag: a page that has one is sent what changed.
    pub(super) sent: Mutex<std::collections::VecDeque<(String, Arc<Listing>)>>,
    records: Mutex<Vec<Records>>,
    cache: Mutex<Vec<Cached>>,
    /// Flamegraphs drawn lately: of which decoded profile, which sample type.
    drawn: Mutex<Vec<Drawn>>,
    /// Ids being decoded, each with the lock its other askers wait on.
    loading: Mutex<std::collections::HashMap<String, Arc<Mutex<()>>>>,
}

impl Ui {
    pub fn new(roots: Vec<PathBuf>, limits: Limits) -> Ui {
        let records = roots.iter().map(|_| Records::default()).collect();
        Ui {
            roots,
            limits,
            listing: Mutex::new(None),
            sent: Mutex::new(std::collections::VecDeque::new()),
            records: Mutex::new(records),
            cache: Mutex::new(Vec::new()),
            loading: Mutex::new(std::collections::HashMap::new()),
            drawn: Mutex::new(Vec::new()),
        }
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
            .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
        Ok((path, bytes))
    }

    /// What `cached` finds, else `make`'s, made by one request at a time per `key`: the
    /// page asks for a profile's table and flamegraph at once, and for the flamegraph twice
    /// (ahead, then in its frame); one does the work, the others wait for it and find it.
    fn once<T>(
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
        let path = self.file(id)?;
        let meta = std::fs::metadata(&path).map_err(|_| Problem::not_found(id))?;
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        let cached = || {
            let cache = crate::sync::lock(&self.cache);
            cache
                .iter()
                .find(|(i, m, l, _)| i == id && (*m, *l) == stamp)
                .map(|(_, _, _, p)| Arc::clone(p))
        };
        self.once(format!("profile {id}"), cached, || {
            let p = crate::pprof::load(&path, &self.limits)
                .map_err(|e| Problem::unprocessable(format!("{id}: {e:#}")))?;
            let p = Arc::new(Loaded {
                p,
                nodes: std::sync::OnceLock::new(),
            });
            let mut cache = crate::sync::lock(&self.cache);
            cache.retain(|(i, _, _, _)| i != id);
            if cache.len() >= CACHE {
                cache.remove(0);
            }
            cache.push((id.to_string(), stamp.0, stamp.1, Arc::clone(&p)));
            Ok(p)
        })
    }

    /// The flamegraph of a listed profile's sample type (`None`: the default), from the
    /// last few drawn while the profile is unchanged.
    pub fn flamegraph(&self, id: &str, sample_index: Option<&str>) -> Result<Arc<Svg>, Problem> {
        let p = self.profile(id)?;
        let index = p.sample_index(sample_index).map_err(Problem::bad)?;
        let cached = || {
            crate::sync::lock(&self.drawn)
                .iter()
                .find(|(pp, i, _)| Arc::ptr_eq(pp, &p) && *i == index)
                .map(|(_, _, svg)| Arc::clone(svg))
        };
        self.once(format!("flamegraph {index} {id}"), cached, || {
            let title = format!("{id} — {}", p.sample_types()[index].0);
            let mut out = Vec::new();
            crate::pprof::diff::write_flamegraph_with(&p, p.nodes(), index, &title, &mut out)
                .map_err(|e| Problem::unprocessable(format!("{e:#}")))?;
            let out = Arc::new(Svg::new(out));
            let mut drawn = crate::sync::lock(&self.drawn);
            if drawn.len() >= CACHE {
                drawn.remove(0);
            }
            drawn.push((Arc::clone(&p), index, Arc::clone(&out)));
            Ok(out)
        })
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
    pub(super) fn bad(message: String) -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            message,
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
