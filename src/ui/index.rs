//! What `agentprof ui` lists: every profile under its directories — pprof files as `pull`,
//! `k8s`, `receive` and `start --profile` write them, and pstats dumps of `check --pstats` —
//! with what the directory's layout says (service, or namespace/pod/container) and what
//! `captures.jsonl` / `uploads.jsonl` say (cause, trigger, tags). Only what is found here is
//! ever served: a request names an entry's id, never a path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Most files looked at in one scan, and how deep: a directory tree larger than this is
/// listed in part, and the listing says so.
const MAX_FILES: usize = 200_000;
const MAX_DEPTH: usize = 8;

/// One profile on disk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// `<root index>/<path under the root>`: what the page asks for.
    pub id: String,
    /// The path under its root, as shown.
    pub path: String,
    /// `pprof` or `pstats`.
    pub kind: &'static str,
    /// The profile type its name says (`cpu`, `delta-heap`, `goroutine`, `heap`…).
    #[serde(rename = "type")]
    pub profile_type: String,
    pub service: Option<String>,
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub container: Option<String>,
    /// When it was taken (RFC 3339): the record's, else the name's, else the file's mtime.
    pub time: String,
    pub bytes: u64,
    /// `scheduled`, `resource_threshold`, `static` (k8s), `upload` (receive), or null.
    pub cause: Option<String>,
    pub trigger: Option<serde_json::Value>,
    pub tags: Vec<String>,
    /// Which record described it: `captures.jsonl`, `uploads.jsonl`, or null.
    pub record: Option<&'static str>,
    /// Its totals as its record states them (for the timeline; not in the listing).
    #[serde(skip)]
    pub figures: Option<std::sync::Arc<Figures>>,
}

/// Totals read off files, by id: the file's mtime and length, and what it held.
pub type FiguresCache = HashMap<String, (std::time::SystemTime, u64, std::sync::Arc<Figures>)>;

/// A profile's totals: when it was taken, over how long, and per sample type the sum of
/// its values — what `captures.jsonl` and `uploads.jsonl` record of each file, and what the
/// ui reads off a file the records do not describe.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figures {
    pub time_nanos: i64,
    pub duration_nanos: i64,
    /// (type, unit, total).
    pub types: Vec<(String, String, f64)>,
    /// Per sample label, per value, the totals of the samples carrying it (the record's
    /// `labels`; a file read for its totals is not indexed).
    pub labels: Vec<crate::pprof::LabelTotals>,
    /// Whether `labels` is the index of every label (records before it have none).
    pub indexed: bool,
}

impl Figures {
    /// Per value of sample label `key`, the total of type `i` of the samples carrying it,
    /// and `key:(none)` for the rest; None when the index does not hold the label whole (a
    /// label of too many values, or none of this capture's samples carries it when the
    /// record predates the index: then the file must be read).
    pub fn by_label(&self, key: &str, i: usize) -> Option<Vec<(String, f64)>> {
        if !self.indexed {
            return None;
        }
        let total = self.types.get(i)?.2;
        let none = Vec::new();
        let values = match self.labels.iter().find(|l| l.key == key) {
            Some(l) if l.truncated => return None,
            Some(l) => &l.values,
            None => &none,
        };
        let mut out: Vec<(String, f64)> = values
            .iter()
            .map(|v| {
                (
                    format!("{key}:{}", v.value),
                    v.totals.get(i).copied().unwrap_or(0.0),
                )
            })
            .collect();
        let rest = total - out.iter().map(|(_, v)| v).sum::<f64>();
        if rest != 0.0 {
            out.push((format!("{key}:(none)"), rest));
        }
        Some(out)
    }

    /// The total of type `i` of the samples whose label `key` is `value`; None when the
    /// index does not hold the label whole.
    pub fn with_label(&self, key: &str, value: &str, i: usize) -> Option<f64> {
        if !self.indexed {
            return None;
        }
        match self.labels.iter().find(|l| l.key == key) {
            Some(l) if l.truncated => None,
            Some(l) => Some(
                l.values
                    .iter()
                    .find(|v| v.value == value)
                    .and_then(|v| v.totals.get(i).copied())
                    .unwrap_or(0.0),
            ),
            None => Some(0.0),
        }
    }
}

impl Figures {
    /// A record's `totals` object: `time_nanos`, `duration_nanos`, `types[]` of `type`,
    /// `unit`, `value`.
    fn read(v: &serde_json::Value) -> Option<Figures> {
        let types = v
            .get("types")?
            .as_array()?
            .iter()
            .map(|t| {
                Some((
                    t.get("type")?.as_str()?.to_string(),
                    t.get("unit")?.as_str()?.to_string(),
                    t.get("value")?.as_f64()?,
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Figures {
            time_nanos: v.get("time_nanos").and_then(|x| x.as_i64()).unwrap_or(0),
            duration_nanos: v
                .get("duration_nanos")
                .and_then(|x| x.as_i64())
                .unwrap_or(0),
            types,
            labels: v
                .get("labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default(),
            indexed: v.get("labels").is_some_and(serde_json::Value::is_array),
        })
    }
}

/// What a record line says of one of its files.
#[derive(Debug, Clone, Default)]
struct Said {
    time: Option<String>,
    service: Option<String>,
    namespace: Option<String>,
    pod: Option<String>,
    container: Option<String>,
    cause: Option<String>,
    trigger: Option<serde_json::Value>,
    tags: Vec<String>,
    record: Option<&'static str>,
    figures: Option<std::sync::Arc<Figures>>,
}

/// The listing, and what did not fit in it.
#[derive(Debug, Default, Serialize)]
pub struct Listing {
    pub entries: Vec<Entry>,
    /// Files left out past the scan's bound (0: all were looked at).
    pub left_out: usize,
}

impl Listing {
    /// An ETag of what the listing holds (quoted, as the header carries it).
    pub fn tag(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for e in &self.entries {
            (&e.id, e.bytes, &e.time, &e.cause, &e.tags).hash(&mut h);
        }
        self.left_out.hash(&mut h);
        format!("\"{:016x}\"", h.finish())
    }

    /// What changed from `old` to this listing: the entries new or changed, the ids gone.
    pub fn changes_since<'a>(&'a self, old: &'a Listing) -> (Vec<&'a Entry>, Vec<&'a str>) {
        let was: std::collections::HashMap<&str, &Entry> =
            old.entries.iter().map(|e| (e.id.as_str(), e)).collect();
        let now: std::collections::HashSet<&str> =
            self.entries.iter().map(|e| e.id.as_str()).collect();
        let changed = self
            .entries
            .iter()
            .filter(|e| was.get(e.id.as_str()) != Some(e))
            .collect();
        let gone = old
            .entries
            .iter()
            .map(|e| e.id.as_str())
            .filter(|id| !now.contains(id))
            .collect();
        (changed, gone)
    }
}

/// `cpu-2026-12-01T10:01:00.000Z.pb.gz` → (`cpu`, `2026-12-01T10:01:00.000Z`); a name
/// without a time is all type.
fn split_name(stem: &str) -> (String, Option<String>) {
    let b = stem.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'-'
            && b.len() >= i + 12
            && b[i + 1..i + 5].iter().all(u8::is_ascii_digit)
            && b[i + 5] == b'-'
            && b[i + 8] == b'-'
            && b[i + 11] == b'T'
        {
            return (stem[..i].to_string(), Some(stem[i + 1..].to_string()));
        }
    }
    (stem.to_string(), None)
}

/// The kind of a file by its name, and its name without the extension.
fn kind_of(name: &str) -> Option<(&'static str, &str)> {
    for ext in [".pb.gz", ".pprof", ".pb", ".prof.gz"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return Some(("pprof", stem));
        }
    }
    for ext in [".pstats", ".prof"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return Some(("pstats", stem));
        }
    }
    None
}

/// A record's file path, as the last components that name it under any root
/// (`svc/cpu-….pb.gz`, `ns/pod/container/cpu-….pb.gz`).
fn keys(path: &str) -> impl Iterator<Item = String> + '_ {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (1..=parts.len().min(4)).map(move |n| parts[parts.len() - n..].join("/"))
}

fn str_field(v: &serde_json::Value, k: &str) -> Option<String> {
    v.get(k)
        .and_then(|x| x.as_str())
        .filter(|s| !s.is_empty())
        .map(String::from)
}

fn tags_of(v: &serde_json::Value) -> Vec<String> {
    v.get("tags")
        .and_then(|t| t.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// What one line of captures.jsonl or uploads.jsonl says of each of its files.
fn read_line(line: &str, record: &'static str, out: &mut HashMap<String, Said>) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return;
    };
    let mut said = Said {
        tags: tags_of(&v),
        record: Some(record),
        ..Said::default()
    };
    let mut files = Vec::new();
    if record == "captures.jsonl" {
        said.time = str_field(&v, "time");
        said.namespace = str_field(&v, "namespace");
        said.pod = str_field(&v, "pod");
        said.container = str_field(&v, "container");
        said.service = str_field(&v, "target");
        said.cause = str_field(&v, "cause");
        said.trigger = v.get("trigger").filter(|t| !t.is_null()).cloned();
        for p in v["profiles"].as_array().into_iter().flatten() {
            let totals: Vec<(&str, Figures)> = p["totals"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| Some((t.get("file")?.as_str()?, Figures::read(t)?)))
                .collect();
            for f in p["files"].as_array().into_iter().flatten() {
                if let Some(f) = f.as_str() {
                    let fig = totals.iter().find(|(n, _)| *n == f).map(|(_, t)| t.clone());
                    files.push((f.to_string(), fig));
                }
            }
        }
    } else {
        said.time = str_field(&v, "end").or_else(|| str_field(&v, "received"));
        said.service = str_field(&v, "service");
        said.cause = Some("upload".into());
        for a in v["attachments"].as_array().into_iter().flatten() {
            if let Some(f) = str_field(a, "file") {
                files.push((f, a.get("totals").and_then(Figures::read)));
            }
        }
    }
    for (f, fig) in files {
        let said = Said {
            figures: fig.map(std::sync::Arc::new),
            ..said.clone()
        };
        for k in keys(&f) {
            out.insert(k, said.clone());
        }
    }
}

/// The records of one root, re-read only when a file grew or changed.
#[derive(Default)]
pub struct Records {
    seen: HashMap<PathBuf, (u64, std::time::SystemTime, HashMap<String, Said>)>,
}

/// The bytes of a record file read at most (its last part when larger).
const MAX_RECORD_BYTES: u64 = 64 << 20;

impl Records {
    fn said(&mut self, file: &Path, record: &'static str) -> Option<&HashMap<String, Said>> {
        let meta = std::fs::metadata(file).ok()?;
        let (len, mtime) = (meta.len(), meta.modified().ok()?);
        let fresh = self
            .seen
            .get(file)
            .is_some_and(|(l, m, _)| *l == len && *m == mtime);
        if !fresh {
            let mut map = HashMap::new();
            let text = read_tail(file, MAX_RECORD_BYTES).unwrap_or_default();
            for line in text.lines() {
                read_line(line, record, &mut map);
            }
            self.seen.insert(file.to_path_buf(), (len, mtime, map));
        }
        self.seen.get(file).map(|(_, _, m)| m)
    }
}

fn read_tail(file: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(file)?;
    let len = f.metadata()?.len();
    if len > max {
        f.seek(SeekFrom::Start(len - max))?;
    }
    let mut buf = Vec::with_capacity(len.min(max) as usize);
    f.take(max).read_to_end(&mut buf)?;
    // A cut first line is dropped with the rest of what does not parse.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn rfc3339(t: std::time::SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// Lists the profiles under `roots` (each canonical); files reached through a symbolic link
/// are left out, so nothing outside the roots is ever listed.
pub fn scan(roots: &[PathBuf], records: &mut [Records]) -> Listing {
    let mut listing = Listing::default();
    let mut looked = 0usize;
    for (ri, root) in roots.iter().enumerate() {
        let mut said: HashMap<String, Said> = HashMap::new();
        let files = walk(
            root,
            records.get_mut(ri),
            &mut said,
            &mut looked,
            &mut listing.left_out,
        );
        for (rel, meta) in files {
            listing.entries.extend(entry(ri, rel, &meta, &said));
        }
    }
    // Newest first.
    listing
        .entries
        .sort_by(|a, b| b.time.cmp(&a.time).then(a.id.cmp(&b.id)));
    listing
}

/// The profile files under `root` (paths relative to it, `/`-separated), at most MAX_DEPTH
/// down and MAX_FILES in all (`looked` counts over every root, `left_out` what is past it);
/// what its captures.jsonl and uploads.jsonl say of them goes into `said`.
fn walk(
    root: &Path,
    mut records: Option<&mut Records>,
    said: &mut HashMap<String, Said>,
    looked: &mut usize,
    left_out: &mut usize,
) -> Vec<(String, std::fs::Metadata)> {
    let mut files = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_symlink() {
                continue;
            }
            let path = e.path();
            if ft.is_dir() {
                if depth + 1 < MAX_DEPTH {
                    stack.push((path, depth + 1));
                }
                continue;
            }
            // Regular files only: a FIFO would hang the read, a device is no profile.
            if !ft.is_file() {
                continue;
            }
            *looked += 1;
            if *looked > MAX_FILES {
                *left_out += 1;
                continue;
            }
            // A name that is not UTF-8 could not be named by an id: left out.
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let record = match name.as_str() {
                "captures.jsonl" => Some("captures.jsonl"),
                "uploads.jsonl" => Some("uploads.jsonl"),
                _ => None,
            };
            if let Some(record) = record {
                if let Some(m) = records
                    .as_deref_mut()
                    .and_then(|r| r.said(&path, record).cloned())
                {
                    said.extend(m);
                }
                continue;
            }
            if kind_of(&name).is_none() {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            // The id's path: the components joined by `/`, each as it is (a backslash in a
            // name stays part of that name).
            let parts: Option<Vec<&str>> =
                rel.components().map(|c| c.as_os_str().to_str()).collect();
            let Some(parts) = parts else { continue };
            files.push((parts.join("/"), meta));
        }
    }
    files
}

/// One file's entry: what the records said of it, else what its place and name say.
fn entry(
    ri: usize,
    rel: String,
    meta: &std::fs::Metadata,
    said: &HashMap<String, Said>,
) -> Option<Entry> {
    let name = rel.rsplit('/').next().unwrap_or(&rel);
    let (kind, stem) = kind_of(name)?;
    let (profile_type, name_time) = split_name(stem);
    // Its longest key only: a shorter one (the file name alone) could be another
    // pod's file of the same name.
    let s = keys(&rel)
        .last()
        .and_then(|k| said.get(&k).cloned())
        .unwrap_or_default();
    // The layout: <service>/<file> (pull, receive) or <ns>/<pod>/<container>/<file> (k8s).
    let dirs: Vec<&str> = rel.split('/').collect();
    let dirs = &dirs[..dirs.len() - 1];
    let (mut service, mut namespace, mut pod, mut container) = (None, None, None, None);
    match dirs {
        [ns, p, c] => {
            namespace = Some(ns.to_string());
            pod = Some(p.to_string());
            container = Some(c.to_string());
        }
        [.., svc] => service = Some(svc.to_string()),
        [] => {}
    }
    let time = s
        .time
        .clone()
        .or(name_time)
        .unwrap_or_else(|| meta.modified().map(rfc3339).unwrap_or_default());
    Some(Entry {
        id: format!("{ri}/{rel}"),
        kind,
        profile_type,
        service: s.service.or(service),
        namespace: s.namespace.or(namespace),
        pod: s.pod.or(pod),
        container: s.container.or(container),
        time,
        bytes: meta.len(),
        cause: s.cause,
        trigger: s.trigger,
        tags: s.tags,
        record: s.record,
        figures: s.figures,
        path: rel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_type_and_time() {
        assert_eq!(
            split_name("delta-heap-2026-12-01T10:01:00.000Z"),
            (
                "delta-heap".to_string(),
                Some("2026-12-01T10:01:00.000Z".to_string())
            )
        );
        assert_eq!(split_name("agent"), ("agent".to_string(), None));
        assert_eq!(kind_of("cpu-x.pb.gz"), Some(("pprof", "cpu-x")));
        assert_eq!(kind_of("check.pstats"), Some(("pstats", "check")));
        assert_eq!(kind_of("notes.txt"), None);
    }
}
