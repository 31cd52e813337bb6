//! `agentprof pull`: profiles from Go services' `net/http/pprof`, as DataKit's pull mode
//! collects them — CPU recorded for `profile_duration`, the other types fetched when it ends,
//! deltas for the cumulative types, files under `<out>/<service>/`, top tables, flamegraphs,
//! uploads in dd-trace-go's format, and the Go runtime figures DataKit derives.

mod collect;
pub(crate) mod delta;
pub(crate) mod fetch;
pub(crate) mod otlp;
pub(crate) mod upload;
pub mod wiredelta;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::sync::lock;
use reqwest::Url;
use serde::Serialize;

pub use collect::{Job, collect};
use delta::{DeltaCache, NoDelta};
use fetch::{Tls, redact};

/// Shortest interval between collections, as DataKit requires.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);

/// One service to collect from.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub types: Vec<String>,
    pub profile_duration: Duration,
    pub interval: Duration,
    pub http_timeout: Duration,
    /// What the user calls `http_timeout` where they set it, for messages: `--http-timeout`
    /// for pull, `request_timeout` for a k8s rule.
    pub timeout_setting: &'static str,
    pub service: String,
    pub env: Option<String>,
    pub version: Option<String>,
    pub tags: Vec<String>,
    pub tls: Tls,
}

impl Target {
    /// `<service>`, safe as a directory name: where `pull` stores its files under `--out`.
    pub fn dir_name(&self) -> PathBuf {
        PathBuf::from(dir_name(&self.service))
    }
}

/// `--out` made, and its record file `name` (`captures.jsonl`, `uploads.jsonl`) opened for
/// appending: where `k8s` and `receive` write one JSON line per capture or upload. A file
/// whose last line was cut (the process killed or the machine stopped mid-write) is mended
/// as `cut` says, so that the next record is a line of its own, never glued to the cut one.
pub fn open_records(
    out: &Path,
    name: &str,
    cut: CutLine,
) -> Result<(std::fs::File, Option<u64>), crate::error::UsageError> {
    let cannot = |e: std::io::Error| {
        crate::error::UsageError::flag("--out", format!("{}: {e}", out.display()))
    };
    std::fs::create_dir_all(out).map_err(cannot)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(out.join(name))
        .map_err(cannot)?;
    let dropped = mend_cut_line(&mut f, cut).map_err(cannot)?;
    Ok((f, dropped))
}

/// `line` and its newline appended to a record file in one write (synced with `sync`): a
/// write that fails part way (the disk filled) is taken back off, so that the next record is
/// not glued to a fragment and the caller may write it again whole.
pub fn append_record(f: &mut std::fs::File, line: &str, sync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let before = f.metadata()?.len();
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    let written = f
        .write_all(text.as_bytes())
        .and_then(|()| if sync { f.sync_data() } else { Ok(()) });
    if written.is_err() {
        let _ = f.set_len(before);
    }
    written
}

/// What becomes of a record file's last line when a crash cut it short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutLine {
    /// Ended with a newline and kept (`k8s`: the capture's files were written before its
    /// line, and nothing else says they exist).
    Keep,
    /// Taken off (`receive`: an upload is marked done in its queue only after its whole line
    /// is written and synced, so the upload of a cut line is replayed and its line written
    /// again whole — keeping the cut one would say it was stored twice).
    Drop,
}

/// `f` ended after its last whole line: a newline appended to a cut line (`Keep`) or the cut
/// line truncated away (`Drop`, whose byte count is returned).
fn mend_cut_line(f: &mut std::fs::File, cut: CutLine) -> std::io::Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(None);
    }
    f.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    if cut == CutLine::Keep {
        f.write_all(b"\n")?;
        return Ok(None);
    }
    // The cut line's start: after the last newline before it, read backwards a block at a time.
    let mut block = vec![0u8; 64 << 10];
    let mut end = len;
    let keep = loop {
        if end == 0 {
            break 0;
        }
        let from = end.saturating_sub(block.len() as u64);
        let part = &mut block[..(end - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(part)?;
        if let Some(at) = part.iter().rposition(|&b| b == b'\n') {
            break from + at as u64 + 1;
        }
        end = from;
    };
    f.set_len(keep)?;
    f.sync_data()?;
    Ok(Some(len - keep))
}

pub use crate::pprof::fasthash::fnv64a;

/// The longest name part agentprof makes (filesystems take 255 bytes; a time stamp and an
/// extension are added to it).
const MAX_PART: usize = 120;

/// Files agentprof writes itself beside the directories it names after services.
const OWN_FILES: &[&str] = &["uploads.jsonl", "captures.jsonl"];

/// `name` as one path part, the same every time: `safe_name`, and when that changed the
/// name, its hash added (`a b` is `a_b-<hash>`, never the directory of `a_b`); cut to
/// `MAX_PART` bytes with its hash when longer; set apart with a `_` when it would be one of
/// agentprof's own files or hidden.
pub fn dir_name(name: &str) -> String {
    let safe = safe_name(name);
    let hash = || format!("{:08x}", fnv64a(name.as_bytes()) as u32);
    let mut out = if safe != name {
        format!("{safe}-{}", hash())
    } else {
        safe
    };
    if out.len() > MAX_PART {
        let keep = MAX_PART - 9;
        out = format!("{}-{}", &out[..keep], hash());
    }
    if out.starts_with('.') || OWN_FILES.contains(&out.as_str()) {
        out.insert(0, '_');
    }
    out
}

/// `name` with everything but letters, digits, `-`, `_` and `.` made `_`: safe as a path part.
pub fn safe_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s == "." || s == ".." {
        format!("_{s}")
    } else {
        s
    }
}

/// What the whole run does besides collecting.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Collections per target; None runs until SIGINT/SIGTERM.
    pub count: Option<u64>,
    pub out: Option<PathBuf>,
    /// Print each profile's top N rows (0: no table).
    pub top: usize,
    pub flamegraph: bool,
    pub upload: Option<Url>,
    /// `--otlp`: each collection also (or only) as OTLP profiles.
    pub otlp: Option<otlp::OtlpTarget>,
    /// The dd-trace upload's spool; the OTLP export's is `otlp/` under it.
    pub spool: PathBuf,
    /// One upload request's longest time (`--upload-timeout`; None: 30 s).
    pub upload_timeout: Option<Duration>,
    pub body_size_limit_mb: u64,
    pub delta_cache_mb: u64,
    pub hostname: String,
    /// agentprof.yaml, whose forwarders get the Go runtime figures.
    pub forward: Option<crate::config::AgentConfig>,
    /// What is kept under `out` (`--retention-mb`, `--retention-days`), enforced after each
    /// collection: the oldest files go first.
    pub retention: crate::retention::Retention,
}

impl PullOptions {
    /// Whether collections are uploaded anywhere (`--upload` or `--otlp`).
    pub fn uploads(&self) -> bool {
        self.upload.is_some() || self.otlp.is_some()
    }
}

/// One profile of one collection.
#[derive(Debug, Serialize)]
pub struct Pulled {
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    pub ok: bool,
    pub error: Option<String>,
    /// The failure was the network's: the server could not be reached or never answered.
    pub unreachable: bool,
    /// Compressed bytes received.
    pub bytes: usize,
    /// Sample records in the profile (distinct stacks and labels, as `go tool pprof -raw`
    /// lists them).
    pub records: usize,
    /// The samples those records hold where the first sample type is `samples/count` (CPU),
    /// as go tool pprof's "Total samples"; None for other types.
    pub samples: Option<i64>,
    pub files: Vec<PathBuf>,
    /// The delta against the previous collection was made (cumulative types only).
    pub delta: bool,
    pub no_delta: Option<NoDelta>,
    pub fetch_s: f64,
    /// Time to make the delta (inflating the baseline and subtracting).
    pub delta_s: Option<f64>,
    /// With --top: the rows of the profile shown (the delta when there is one).
    pub top: Option<crate::pprof::TopReport>,
    /// Each pprof file written, with its totals (the ui's timeline reads them here).
    pub totals: Vec<FileTotals>,
}

/// A file written and its totals per sample type.
#[derive(Debug, Serialize, Clone)]
pub struct FileTotals {
    pub file: PathBuf,
    #[serde(flatten)]
    pub totals: crate::pprof::Totals,
}

/// The heap profile's sample types behind `prof_go_lifetime_heap_objects` and
/// `prof_go_lifetime_heap_bytes`: the live heap as of the last garbage collection
/// (`inuse_objects`, `inuse_space`), which is what DataKit documents the figures to be ("total
/// size of live objects in the heap"), not the allocations since start. The one definition
/// `pull`, `k8s` and `receive` use.
pub const GO_LIVE_HEAP: [(&str, &str); 2] = [
    ("prof_go_lifetime_heap_objects", "inuse_objects"),
    ("prof_go_lifetime_heap_bytes", "inuse_space"),
];

/// The Go runtime figures DataKit calls `profiling_metrics`.
#[derive(Debug, Default, Serialize, Clone)]
pub struct GoFigures {
    /// CPU time over wall time of the CPU profile (cores busy).
    pub prof_go_cpu_cores: Option<f64>,
    /// The live heap's objects and bytes ([`GO_LIVE_HEAP`]).
    pub prof_go_lifetime_heap_objects: Option<i64>,
    pub prof_go_lifetime_heap_bytes: Option<i64>,
    /// Nanoseconds goroutines spent blocked (block profile): within the collection when a
    /// delta exists, else since block profiling started.
    pub prof_go_blocked_time: Option<i64>,
    /// Nanoseconds of mutex wait (mutex profile), the same way.
    pub prof_go_mutex_delay_time: Option<i64>,
    /// Goroutines when the goroutine profile was taken (its type is `goroutine`).
    pub prof_go_num_goroutine: Option<i64>,
}

impl GoFigures {
    fn list(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        let mut add = |n, x: Option<f64>| {
            if let Some(x) = x {
                v.push((n, x));
            }
        };
        add("prof_go_cpu_cores", self.prof_go_cpu_cores);
        add(
            "prof_go_lifetime_heap_objects",
            self.prof_go_lifetime_heap_objects.map(|x| x as f64),
        );
        add(
            "prof_go_lifetime_heap_bytes",
            self.prof_go_lifetime_heap_bytes.map(|x| x as f64),
        );
        add(
            "prof_go_blocked_time",
            self.prof_go_blocked_time.map(|x| x as f64),
        );
        add(
            "prof_go_mutex_delay_time",
            self.prof_go_mutex_delay_time.map(|x| x as f64),
        );
        add(
            "prof_go_num_goroutine",
            self.prof_go_num_goroutine.map(|x| x as f64),
        );
        v
    }
}

/// One collection of one target.
#[derive(Debug, Serialize)]
pub struct Collection {
    pub service: String,
    pub target: String,
    pub seq: u64,
    pub start: String,
    pub end: String,
    pub profiles: Vec<Pulled>,
    pub figures: GoFigures,
    pub uploaded: Option<bool>,
    /// The upload is in the spool, sent by a sender of its own (k8s): not known yet.
    pub upload_queued: bool,
    pub upload_error: Option<String>,
    /// Cumulative types not in this upload: they have no delta yet (a first collection, or
    /// a baseline lost), and are sent from the next collection on.
    pub upload_waiting: Vec<String>,
}

/// A target's state across collections.
struct Runner {
    target: Target,
    client: reqwest::blocking::Client,
    seq: u64,
}

/// Prints one collection as text.
pub fn render(c: &Collection) -> String {
    let mut out = format!(
        "{} #{} ({}) {} .. {}\n",
        c.service, c.seq, c.target, c.start, c.end
    );
    for p in &c.profiles {
        if p.ok {
            let delta = match (p.delta, p.no_delta) {
                (true, _) => " (delta since the previous collection)".to_string(),
                (false, Some(NoDelta::FirstCollection)) => {
                    " (first collection: no delta yet)".to_string()
                }
                (false, Some(why)) => format!(
                    " (no delta: {})",
                    serde_json::to_value(why)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                ),
                _ => String::new(),
            };
            let held = match p.samples {
                Some(n) => format!(" ({n} samples)"),
                None => String::new(),
            };
            out.push_str(&format!(
                "  {:<12} {:>9} B {:>7} records{held} {:>6.2}s{delta}\n",
                p.kind, p.bytes, p.records, p.fetch_s
            ));
            for f in &p.files {
                out.push_str(&format!("      {}\n", f.display()));
            }
        } else {
            out.push_str(&format!(
                "  {:<12} FAILED: {}\n",
                p.kind,
                p.error.as_deref().unwrap_or("unknown error")
            ));
        }
        if let Some(t) = &p.top {
            for line in t.text().lines() {
                out.push_str("    ");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    for (name, v) in c.figures.list() {
        out.push_str(&format!("  {name} = {v}\n"));
    }
    if let Some(e) = &c.upload_error {
        out.push_str(&format!("  upload FAILED: {e}\n"));
    } else if c.uploaded == Some(true) {
        out.push_str("  uploaded\n");
    }
    if !c.upload_waiting.is_empty() {
        out.push_str(&format!(
            "  not uploaded yet: {} (no delta until a second collection)\n",
            c.upload_waiting.join(", ")
        ));
    }
    out
}

/// Runs every target `opts.count` times (or until a signal), each on its interval, and at
/// the end sends what waits in the spool. Returns whether any type failed.
pub fn run(
    targets: Vec<Target>,
    opts: &PullOptions,
    sink: impl FnMut(&Collection),
) -> Result<Failures, crate::error::UsageError> {
    let uploaders: Vec<std::sync::Mutex<upload::Uploader>> = uploaders(opts)?
        .into_iter()
        .map(std::sync::Mutex::new)
        .collect();
    let cache = std::sync::Mutex::new(DeltaCache::new((opts.delta_cache_mb << 20) as usize));
    crate::signal::install();
    let cancel = fetch::Cancel::default();
    let shared = Shared {
        cache: &cache,
        uploader: (!uploaders.is_empty()).then_some(&uploaders as &dyn upload::Submit),
        cancel: &cancel,
    };
    let (failed, kept) = run_with(targets, opts, &shared, sink)?;
    if crate::signal::requested() {
        eprintln!(
            "agentprof: stopped by a signal; the {kept} profile(s) already fetched are kept (a second Ctrl-C exits at once)"
        );
    }
    for u in &uploaders {
        let mut u = lock(u);
        // After a signal the spool keeps what is pending for the next run: no waiting on an
        // intake now.
        if !crate::signal::requested() {
            u.flush_spool();
        }
        let pending = u.pending();
        if pending > 0 {
            eprintln!(
                "agentprof: {pending} upload(s) wait in {} and will be sent by the next run",
                u.spool.dir().display()
            );
        }
    }
    Ok(failed)
}

/// The uploaders of `--upload` (dd-trace's format, in `spool`) and `--otlp` (OTLP profiles,
/// in `spool/otlp`), each with 64 MiB of spool and `upload_timeout` (30 s) per request.
pub fn uploaders(opts: &PullOptions) -> Result<Vec<upload::Uploader>, crate::error::UsageError> {
    let flag = crate::error::UsageError::flag;
    let timeout = opts.upload_timeout.unwrap_or(upload::DEFAULT_TIMEOUT);
    let mut out = Vec::new();
    if let Some(u) = &opts.upload {
        out.push(
            upload::Uploader::new(u.clone(), opts.spool.clone(), 64 << 20, timeout)
                .map_err(|e| flag("--upload", e))?,
        );
    }
    if let Some(t) = &opts.otlp {
        out.push(
            upload::Uploader::new(t.url.clone(), opts.spool.join("otlp"), 64 << 20, timeout)
                .map_err(|e| flag("--otlp", e))?
                .with_format(upload::Format::Otlp {
                    original: t.original_payload,
                })
                .with_secret_headers(t.headers.clone()),
        );
    }
    Ok(out)
}

/// The end of a pull in which a server could not be reached or never answered (exit 3).
#[derive(Debug, thiserror::Error)]
#[error(
    "pull: a server could not be reached or never answered (each failure is shown above; what was collected is kept)"
)]
pub struct Unreachable;

/// What failed over a pull's collections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Failures {
    /// A profile could not be fetched or read.
    pub any: bool,
    /// A server could not be reached or never answered (a network failure: exit 3).
    pub network: bool,
}

/// What collections share with others running beside them: the delta cache, the uploader,
/// and what stops them (a signal, or the owner's cancel).
pub struct Shared<'a> {
    pub cache: &'a std::sync::Mutex<DeltaCache>,
    pub uploader: Option<&'a dyn upload::Submit>,
    pub cancel: &'a fetch::Cancel,
}

/// The loop of `run`: every target on its interval, one collection at a time, until each
/// ran `opts.count` times or `shared.cancel` is set. Returns whether any type failed and
/// how many profiles were fetched.
pub fn run_with(
    targets: Vec<Target>,
    opts: &PullOptions,
    shared: &Shared<'_>,
    mut sink: impl FnMut(&Collection),
) -> Result<(Failures, usize), crate::error::UsageError> {
    let mut runners = Vec::new();
    for t in targets {
        let client = fetch::client(t.http_timeout, &t.tls)
            .map_err(|e| crate::error::UsageError::flag(e.key(), e))?;
        runners.push(Runner {
            target: t,
            client,
            seq: 0,
        });
    }
    let mut forwarders = Vec::new();
    let cancel = shared.cancel;
    let started = Instant::now();
    let mut next: Vec<Instant> = runners.iter().map(|_| started).collect();
    let mut done: Vec<u64> = vec![0; runners.len()];
    let mut failed = Failures::default();
    let mut kept = 0;
    loop {
        if cancel.is_set() {
            break;
        }
        let live: Vec<usize> = (0..runners.len())
            .filter(|&i| opts.count.is_none_or(|n| done[i] < n))
            .collect();
        let Some(&i) = live.iter().min_by_key(|&&i| next[i]) else {
            break;
        };
        while Instant::now() < next[i] {
            if cancel.is_set() {
                break;
            }
            std::thread::sleep((next[i] - Instant::now()).min(Duration::from_millis(100)));
        }
        if cancel.is_set() {
            break;
        }
        let r = &mut runners[i];
        r.seq += 1;
        let job = Job {
            target: &r.target,
            client: &r.client,
            seq: r.seq,
            dir: r.target.dir_name(),
            cache_key: redact(&r.target.url),
            cancel,
        };
        let c = collect(&job, opts, shared.cache, shared.uploader);
        done[i] += 1;
        next[i] += runners[i].target.interval;
        failed.any |= c.profiles.iter().any(|p| !p.ok);
        failed.network |= c.profiles.iter().any(|p| p.unreachable);
        kept += c.profiles.iter().filter(|p| p.ok).count();
        send_figures(&c, opts, &mut forwarders);
        sink(&c);
        if let Some(out) = &opts.out {
            let d = opts.retention.enforce(out);
            if d.files > 0 {
                eprintln!(
                    "agentprof: pull: retention: deleted the {} oldest file(s) ({} bytes) under {}",
                    d.files,
                    d.bytes,
                    out.display()
                );
            }
        }
    }
    for f in forwarders.iter_mut() {
        let _ = f.flush();
    }
    Ok((failed, kept))
}

fn send_figures(
    c: &Collection,
    opts: &PullOptions,
    forwarders: &mut Vec<Box<dyn crate::emit::Forwarder>>,
) {
    let Some(config) = &opts.forward else {
        return;
    };
    if forwarders.is_empty() {
        match crate::emit::configured(config) {
            Ok(f) if !f.is_empty() => *forwarders = f,
            _ => return,
        }
    }
    let now = jiff::Timestamp::now().as_second() as f64;
    let metrics = crate::emit::profiling_gauges(
        c.figures.list(),
        &[format!("service:{}", c.service), "runtime:go".into()],
        &opts.hostname,
        now,
        c.seq as u32,
    );
    let batch = crate::emit::Batch {
        metrics: &metrics,
        service_checks: &[],
        events: &[],
    };
    crate::emit::send_all(forwarders, &batch, |name, e| {
        eprintln!("agentprof: {name}: {e}");
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record file whose last line was cut gets its newline before the next record (`Keep`)
    /// or loses the cut line (`Drop`, even one longer than the block it is read back in, or
    /// the only line); an empty one and a whole one are left as they are.
    #[test]
    fn a_cut_last_record_is_ended_or_taken_off_before_the_next() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{{\"b\":\"{}", "x".repeat(200_000));
        let cases: [(&str, String, &str, CutLine, Option<u64>); 6] = [
            ("", String::new(), "", CutLine::Keep, None),
            ("", String::new(), "", CutLine::Drop, None),
            (
                "{\"a\":1}\n",
                String::new(),
                "{\"a\":1}\n",
                CutLine::Drop,
                None,
            ),
            (
                "{\"a\":1}\n",
                "{\"b\":".into(),
                "{\"a\":1}\n{\"b\":\n",
                CutLine::Keep,
                None,
            ),
            (
                "{\"a\":1}\n",
                long.clone(),
                "{\"a\":1}\n",
                CutLine::Drop,
                Some(long.len() as u64),
            ),
            ("", long.clone(), "", CutLine::Drop, Some(long.len() as u64)),
        ];
        for (whole, cut, now, how, dropped) in cases {
            std::fs::write(dir.path().join("r.jsonl"), format!("{whole}{cut}")).unwrap();
            let (mut f, said) = open_records(dir.path(), "r.jsonl", how).unwrap();
            assert_eq!(said, dropped, "{how:?} of {whole:?}");
            assert_eq!(
                std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap(),
                now,
                "{how:?}"
            );
            f.write_all(b"{\"c\":3}\n").unwrap();
            let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
            assert_eq!(text, format!("{now}{{\"c\":3}}\n"));
        }
    }

    /// Names that map to one safe name stay apart; a name no filesystem holds is cut; a
    /// service named as agentprof's own files is set apart.
    #[test]
    fn directory_names_never_collide_and_always_fit() {
        assert_eq!(dir_name("web-api"), "web-api");
        assert_ne!(dir_name("a b"), dir_name("a_b"));
        assert!(dir_name("a b").starts_with("a_b-"));
        let long = "x".repeat(300);
        assert!(dir_name(&long).len() <= MAX_PART);
        assert_ne!(dir_name(&long), dir_name(&"x".repeat(301)));
        assert_eq!(dir_name("uploads.jsonl"), "_uploads.jsonl");
        assert_eq!(dir_name(&long), dir_name(&long), "the same every time");
    }
}
