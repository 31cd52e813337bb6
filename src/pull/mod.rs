//! `agentprof pull`: profiles from Go services' `net/http/pprof`, as DataKit's pull mode
//! collects them — CPU recorded for `profile_duration`, the other types fetched when it ends,
//! deltas for the cumulative types, files under `<out>/<service>/`, top tables, flamegraphs,
//! uploads in dd-trace-go's format, and the Go runtime figures DataKit derives.

pub mod delta;
pub mod fetch;
pub mod upload;
pub mod wiredelta;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::Url;
use serde::Serialize;

use crate::pprof::decode::Limits;
use crate::pprof::model::Pprof;

use delta::{DeltaCache, NoDelta};
use fetch::{Tls, endpoint, redact};

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
    pub service: String,
    pub env: Option<String>,
    pub version: Option<String>,
    pub tags: Vec<String>,
    pub tls: Tls,
}

impl Target {
    /// `<service>`, safe as a directory name: where `pull` stores its files under `--out`.
    pub fn dir_name(&self) -> PathBuf {
        PathBuf::from(safe_name(&self.service))
    }
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
    pub spool: PathBuf,
    pub body_size_limit_mb: u64,
    pub delta_cache_mb: u64,
    pub hostname: String,
    /// agentprof.yaml, whose forwarders get the Go runtime figures.
    pub forward: Option<crate::config::AgentConfig>,
}

/// One profile of one collection.
#[derive(Debug, Serialize)]
pub struct Pulled {
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    pub ok: bool,
    pub error: Option<String>,
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
    pub top: Option<crate::pprof::report::TopReport>,
}

/// The Go runtime figures DataKit calls `profiling_metrics`.
#[derive(Debug, Default, Serialize, Clone)]
pub struct GoFigures {
    /// CPU time over wall time of the CPU profile (cores busy).
    pub prof_go_cpu_cores: Option<f64>,
    /// Objects and bytes allocated since the process started (heap or allocs profile).
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

fn sum_of(p: &Pprof, sample_type: &str) -> Option<i64> {
    let i = p
        .sample_types()
        .iter()
        .position(|(t, _)| *t == sample_type)?;
    Some(p.proto.sample.iter().map(|s| s.value[i]).sum())
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
    pub upload_error: Option<String>,
}

/// A target's state across collections.
struct Runner {
    target: Target,
    client: reqwest::blocking::Client,
    seq: u64,
}

/// One collection to make: of which target, where its files go, and what stops it.
pub struct Job<'a> {
    pub target: &'a Target,
    pub client: &'a reqwest::blocking::Client,
    /// The collection's number for this target, from 1.
    pub seq: u64,
    /// Under `out`: `<service>` for pull, `<namespace>/<pod>/<container>` for k8s.
    pub dir: PathBuf,
    /// Names the target's baselines in the delta cache (`<key>|<type>`).
    pub cache_key: String,
    pub cancel: &'a fetch::Cancel,
}

fn progress(
    seconds: u64,
    label: String,
) -> Option<(
    indicatif::ProgressBar,
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
)> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || seconds < 1 {
        return None;
    }
    let bar = indicatif::ProgressBar::new(seconds * 10);
    let style = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {elapsed}/{len}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style.with_key(
        "len",
        move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{seconds}s");
        },
    ));
    bar.set_message(label);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (b, d) = (bar.clone(), std::sync::Arc::clone(&done));
    let t0 = Instant::now();
    let h = std::thread::spawn(move || {
        while !d.load(std::sync::atomic::Ordering::Relaxed) {
            b.set_position((t0.elapsed().as_millis() / 100) as u64);
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    Some((bar, h, done))
}

/// The samples a profile's records hold when its first sample type is `samples/count` (a CPU
/// profile): the sum of that value, go tool pprof's "Total samples".
fn counted_samples(p: &Pprof) -> Option<i64> {
    let (kind, unit) = *p.sample_types().first()?;
    (kind == "samples" && unit == "count").then(|| {
        p.proto
            .sample
            .iter()
            .map(|s| s.value.first().copied().unwrap_or(0))
            .sum()
    })
}

/// Collects every type of the job's target once. The cache and the uploader may be shared
/// by collections on other threads: each is locked only for its own step.
pub fn collect(
    job: &Job<'_>,
    opts: &PullOptions,
    cache: &std::sync::Mutex<DeltaCache>,
    uploader: Option<&std::sync::Mutex<upload::Uploader>>,
) -> Collection {
    let t = job.target;
    let limits = Limits::network(opts.body_size_limit_mb);
    let start = jiff::Timestamp::now();
    let mut pulled = Vec::new();
    let mut figures = GoFigures::default();
    let mut attachments = Vec::new();
    // CPU first: it records for the profile duration; the others are snapshots at its end.
    let mut kinds: Vec<&String> = t.types.iter().filter(|k| *k == "cpu").collect();
    kinds.extend(t.types.iter().filter(|k| *k != "cpu"));
    for kind in kinds {
        // Ctrl-C, SIGTERM or a cancelled job: keep what arrived, fetch nothing more.
        if job.cancel.is_set() {
            break;
        }
        let url = endpoint(&t.url, kind, t.profile_duration.as_secs().max(1));
        let shown = redact(&url);
        let bar = (kind == "cpu").then(|| {
            progress(
                t.profile_duration.as_secs(),
                format!("{}: recording CPU", t.service),
            )
        });
        let t0 = Instant::now();
        let res = fetch::fetch(job.client, &url, &limits, t.http_timeout, job.cancel);
        if let Some(Some((bar, h, done))) = bar {
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = h.join();
            bar.finish_and_clear();
        }
        let fetch_s = t0.elapsed().as_secs_f64();
        let mut entry = Pulled {
            kind: kind.clone(),
            url: shown,
            ok: false,
            error: None,
            bytes: 0,
            records: 0,
            samples: None,
            files: Vec::new(),
            delta: false,
            no_delta: None,
            fetch_s,
            delta_s: None,
            top: None,
        };
        let fetched = match res {
            Ok(f) => f,
            Err(e) => {
                entry.error = Some(e.to_string());
                pulled.push(entry);
                continue;
            }
        };
        entry.bytes = fetched.bytes.len();
        let profile = match Pprof::new(fetched.profile) {
            Ok(p) => p,
            Err(e) => {
                entry.error = Some(format!("{}: {e}", entry.url));
                pulled.push(entry);
                continue;
            }
        };
        entry.records = profile.proto.sample.len();
        entry.samples = counted_samples(&profile);
        entry.ok = true;
        let gz = gzip_of(&fetched.bytes, &fetched.raw);
        // The delta of a cumulative profile against the previous collection, computed on
        // the protobuf bytes; the baseline is kept compressed.
        let mut shown_profile: Option<Pprof> = None;
        let mut delta_raw: Option<Vec<u8>> = None;
        if delta::needs_delta(&profile) {
            let key = format!("{}|{kind}", job.cache_key);
            let base = lock(cache).get(&key).map(<[u8]>::to_vec);
            match base {
                Ok(base_bytes) => {
                    let t0 = Instant::now();
                    let mut restarted = false;
                    let made = crate::pprof::decode::decompress(&base_bytes, &limits)
                        .map_err(|e| e.to_string())
                        .and_then(|base| {
                            wiredelta::delta(base, fetched.raw).map_err(|e| {
                                restarted = matches!(e, wiredelta::WireError::BaseOnly { .. });
                                e.to_string()
                            })
                        });
                    entry.delta_s = Some(t0.elapsed().as_secs_f64());
                    match made.and_then(|raw| {
                        crate::pprof::decode::decode_raw(&raw, &limits)
                            .map_err(|e| e.to_string())
                            .and_then(|p| Pprof::new(p).map_err(|e| e.to_string()))
                            .map(|p| (p, raw))
                    }) {
                        Ok((d, raw)) => {
                            entry.delta = true;
                            shown_profile = Some(d);
                            delta_raw = Some(raw);
                        }
                        Err(_) if restarted => entry.no_delta = Some(NoDelta::ProcessRestarted),
                        Err(_) => entry.no_delta = Some(NoDelta::BaselineUnusable),
                    }
                }
                Err(why) => entry.no_delta = Some(why),
            }
            lock(cache).put(&key, gz.clone());
        }
        let delta_gz = delta_raw.as_deref().map(gzip_raw);
        // Figures DataKit derives.
        match kind.as_str() {
            "cpu" => {
                if let Some(cpu) = sum_of(&profile, "cpu")
                    && profile.proto.duration_nanos > 0
                {
                    figures.prof_go_cpu_cores =
                        Some(cpu as f64 / profile.proto.duration_nanos as f64);
                }
            }
            "heap" | "allocs" => {
                figures.prof_go_lifetime_heap_objects = sum_of(&profile, "alloc_objects");
                figures.prof_go_lifetime_heap_bytes = sum_of(&profile, "alloc_space");
            }
            "block" => {
                figures.prof_go_blocked_time =
                    sum_of(shown_profile.as_ref().unwrap_or(&profile), "delay")
            }
            "mutex" => {
                figures.prof_go_mutex_delay_time =
                    sum_of(shown_profile.as_ref().unwrap_or(&profile), "delay")
            }
            "goroutine" => figures.prof_go_num_goroutine = sum_of(&profile, "goroutine"),
            _ => {}
        }
        // What is drawn and listed goes through go tool pprof's name handling and drop_frames;
        // the files keep the bytes as they came.
        let mut profile = profile;
        if opts.flamegraph || opts.top > 0 {
            match shown_profile.as_mut() {
                Some(d) => d.prepare_for_report(),
                None => profile.prepare_for_report(),
            };
        }
        let stamp = crate::duration::file_stamp();
        if let Some(out) = &opts.out {
            let dir = out.join(&job.dir);
            if let Err(e) = std::fs::create_dir_all(&dir) {
                entry.error = Some(format!("cannot create {}: {e}", dir.display()));
            } else {
                let f = dir.join(format!("{kind}-{stamp}.pb.gz"));
                match std::fs::write(&f, &gz) {
                    Ok(()) => entry.files.push(f),
                    Err(e) => entry.error = Some(format!("cannot write {}: {e}", f.display())),
                }
                if let Some(bytes) = &delta_gz {
                    let f = dir.join(format!("delta-{kind}-{stamp}.pb.gz"));
                    match std::fs::write(&f, bytes) {
                        Ok(()) => entry.files.push(f),
                        Err(e) => entry.error = Some(format!("cannot write {}: {e}", f.display())),
                    }
                }
                if opts.flamegraph {
                    let shown = shown_profile.as_ref().unwrap_or(&profile);
                    let f = dir.join(format!("{kind}-{stamp}.svg"));
                    let drawn = shown
                        .sample_index(None)
                        .map_err(anyhow::Error::msg)
                        .and_then(|i| {
                            let file = std::fs::File::create(&f)?;
                            crate::pprof::diff::write_flamegraph(
                                shown,
                                i,
                                &format!("{} {kind} — {stamp}", t.service),
                                std::io::BufWriter::new(file),
                            )
                        });
                    match drawn {
                        Ok(()) => entry.files.push(f),
                        Err(e) => eprintln!("agentprof: {}: no flamegraph: {e:#}", entry.url),
                    }
                }
            }
        }
        if opts.top > 0 {
            let shown = shown_profile.as_ref().unwrap_or(&profile);
            let o = crate::pprof::report::TopOptions {
                nodes: opts.top,
                ..Default::default()
            };
            entry.top = crate::pprof::report::top(shown, &o).ok();
        }
        // What is uploaded: cpu, goroutines and the deltas, as dd-trace-go sends them.
        if opts.upload.is_some() {
            if let Some(bytes) = delta_gz {
                attachments.push((upload::attachment_name(kind, true), bytes));
            } else if !delta::needs_delta(&profile) {
                attachments.push((upload::attachment_name(kind, false), gz));
            }
        }
        pulled.push(entry);
    }
    let end = jiff::Timestamp::now();
    let mut c = Collection {
        service: t.service.clone(),
        target: redact(&t.url),
        seq: job.seq,
        start: upload::rfc3339_nano(start),
        end: upload::rfc3339_nano(end),
        profiles: pulled,
        figures,
        uploaded: None,
        upload_error: None,
    };
    if let Some(up) = uploader
        && !attachments.is_empty()
    {
        let mut tags = vec![format!("service:{}", t.service)];
        if let Some(e) = &t.env {
            tags.push(format!("env:{e}"));
        }
        if let Some(v) = &t.version {
            tags.push(format!("version:{v}"));
        }
        tags.push(format!("host:{}", opts.hostname));
        tags.push("runtime:go".into());
        tags.push(format!("profile_seq:{}", job.seq - 1));
        tags.extend(t.tags.iter().cloned());
        let u = upload::Upload {
            attachments,
            tags,
            start,
            end,
        };
        match lock(up).send(&u) {
            Ok(()) => c.uploaded = Some(true),
            Err(e) => {
                c.uploaded = Some(false);
                c.upload_error = Some(format!("{e} (spooled; sent before the next upload)"));
            }
        }
    }
    c
}

/// The lock's value, also after a panic elsewhere poisoned it (the data stays consistent:
/// every holder finishes its step before unlocking).
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The profile gzipped: as received when it came gzipped, else compressed now.
fn gzip_of(bytes: &[u8], raw: &[u8]) -> Vec<u8> {
    if crate::pprof::decode::sniff(bytes) == crate::pprof::decode::Compression::Gzip {
        return bytes.to_vec();
    }
    gzip_raw(raw)
}

fn gzip_raw(raw: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = std::io::Write::write_all(&mut gz, raw);
    gz.finish().unwrap_or_default()
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
    out
}

/// Runs every target `opts.count` times (or until a signal), each on its interval. Returns
/// the collections and whether any type failed.
pub fn run(
    targets: Vec<Target>,
    opts: &PullOptions,
    mut sink: impl FnMut(&Collection),
) -> anyhow::Result<(Vec<Collection>, bool)> {
    let mut runners = Vec::new();
    for t in targets {
        let client = fetch::client(t.http_timeout, &t.tls)
            .map_err(|e| crate::error::UsageError::flag("--tls-*", e))?;
        runners.push(Runner {
            target: t,
            client,
            seq: 0,
        });
    }
    let uploader = match &opts.upload {
        Some(u) => Some(
            upload::Uploader::new(
                u.clone(),
                opts.spool.clone(),
                64 << 20,
                Duration::from_secs(30),
            )
            .map_err(|e| crate::error::UsageError::flag("--upload", e))?,
        ),
        None => None,
    }
    .map(std::sync::Mutex::new);
    let mut forwarders = Vec::new();
    let cache = std::sync::Mutex::new(DeltaCache::new((opts.delta_cache_mb << 20) as usize));
    let cancel = fetch::Cancel::default();
    crate::agent::signal::install();
    let started = Instant::now();
    let mut next: Vec<Instant> = runners.iter().map(|_| started).collect();
    let mut done: Vec<u64> = vec![0; runners.len()];
    let mut all = Vec::new();
    let mut failed = false;
    loop {
        if crate::agent::signal::requested() {
            break;
        }
        let live: Vec<usize> = (0..runners.len())
            .filter(|&i| opts.count.is_none_or(|n| done[i] < n))
            .collect();
        let Some(&i) = live.iter().min_by_key(|&&i| next[i]) else {
            break;
        };
        while Instant::now() < next[i] {
            if crate::agent::signal::requested() {
                break;
            }
            std::thread::sleep((next[i] - Instant::now()).min(Duration::from_millis(100)));
        }
        if crate::agent::signal::requested() {
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
            cancel: &cancel,
        };
        let c = collect(&job, opts, &cache, uploader.as_ref());
        done[i] += 1;
        next[i] += runners[i].target.interval;
        failed |= c.profiles.iter().any(|p| !p.ok);
        send_figures(&c, opts, &mut forwarders);
        sink(&c);
        all.push(c);
    }
    if crate::agent::signal::requested() {
        let kept: usize = all
            .iter()
            .map(|c: &Collection| c.profiles.iter().filter(|p| p.ok).count())
            .sum();
        eprintln!(
            "agentprof: stopped by a signal; the {kept} profile(s) already fetched are kept (a second Ctrl-C exits at once)"
        );
    }
    if let Some(u) = &uploader {
        let mut u = lock(u);
        // After a signal the spool keeps what is pending for the next run: no waiting on an
        // intake now.
        if !crate::agent::signal::requested() {
            u.flush_spool();
        }
        let pending = u.pending();
        if pending > 0 {
            eprintln!(
                "agentprof: {pending} upload(s) wait in {} and will be sent by the next run",
                opts.spool.display()
            );
        }
    }
    for f in forwarders.iter_mut() {
        let _ = f.flush();
    }
    Ok((all, failed))
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
    let metrics: Vec<crate::metrics::Metric> = c
        .figures
        .list()
        .into_iter()
        .map(|(name, value)| crate::metrics::Metric {
            metric: format!("profiling_metrics.{name}"),
            mtype: crate::metrics::MetricType::Gauge,
            value,
            tags: vec![format!("service:{}", c.service), "runtime:go".into()],
            host: opts.hostname.clone(),
            timestamp: now,
            run: c.seq as u32,
        })
        .collect();
    let batch = crate::emit::Batch {
        metrics: &metrics,
        service_checks: &[],
        events: &[],
    };
    for f in forwarders.iter_mut() {
        if let Err(e) = f.send(&batch) {
            eprintln!("agentprof: {}: {e}", f.name());
        }
    }
}
