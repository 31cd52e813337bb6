//! One collection of one target: CPU recorded first, the other types fetched when it ends,
//! each decoded within the network limits, the cumulative ones made deltas against the
//! previous collection (the baseline kept compressed in the shared cache), files written,
//! top tables and flamegraphs made, the DataKit figures derived, and the upload sent. `pull`
//! and `k8s` both run it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::delta::{self, DeltaCache, NoDelta};
use super::fetch::{self, endpoint, redact};
use super::{Collection, GoFigures, PullOptions, Pulled, Target, upload, wiredelta};
use crate::pprof::Limits;
use crate::pprof::Pprof;
use crate::sync::lock;

fn sum_of(p: &Pprof, sample_type: &str) -> Option<i64> {
    let i = p
        .sample_types()
        .iter()
        .position(|(t, _)| *t == sample_type)?;
    Some(p.proto.sample.iter().map(|s| s.value[i]).sum())
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
    uploader: Option<&dyn upload::Submit>,
) -> Collection {
    let t = job.target;
    let start = jiff::Timestamp::now();
    let mut pulled = Vec::new();
    let mut figures = GoFigures::default();
    let mut attachments = Vec::new();
    let mut waiting = Vec::new();
    // CPU first: it records for the profile duration; the others are snapshots at its end.
    let mut kinds: Vec<&String> = t.types.iter().filter(|k| *k == "cpu").collect();
    kinds.extend(t.types.iter().filter(|k| *k != "cpu"));
    for kind in kinds {
        // Ctrl-C, SIGTERM or a cancelled job: keep what arrived, fetch nothing more.
        if job.cancel.is_set() {
            break;
        }
        let one = One {
            job,
            opts,
            cache,
            kind,
            limits: Limits::network(opts.body_size_limit_mb),
        };
        pulled.push(one.pull(&mut figures, &mut attachments, &mut waiting));
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
        upload_queued: false,
        upload_error: None,
        upload_waiting: if opts.uploads() { waiting } else { Vec::new() },
    };
    if let Some(up) = uploader
        && !attachments.is_empty()
    {
        let u = upload::Upload {
            attachments,
            tags: upload_tags(job, opts),
            start,
            end,
            family: "go".into(),
        };
        match up.submit(&u) {
            Ok(true) => c.uploaded = Some(true),
            Ok(false) => c.upload_queued = true,
            Err(e) => {
                c.uploaded = Some(false);
                c.upload_error = Some(e.to_string());
            }
        }
    }
    c
}

/// The tags of a collection's upload, as dd-trace-go sets them.
fn upload_tags(job: &Job<'_>, opts: &PullOptions) -> Vec<String> {
    let t = job.target;
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
    tags
}

/// One profile type of one collection.
struct One<'a, 'j> {
    job: &'a Job<'j>,
    opts: &'a PullOptions,
    cache: &'a std::sync::Mutex<DeltaCache>,
    kind: &'a String,
    limits: Limits,
}

/// A fetched profile, the bytes stored (gzip) and what is shown of it (the delta where one
/// was made).
struct Shown {
    gz: Vec<u8>,
    delta_gz: Option<Vec<u8>>,
    /// The totals of the profile and of its delta, for the record.
    totals: crate::pprof::Totals,
    delta_totals: Option<crate::pprof::Totals>,
    shown: Option<Pprof>,
    cumulative: bool,
}

impl One<'_, '_> {
    /// Fetched, decoded, its figures taken, the delta made, files written, the top table
    /// made, and what is uploaded of it set aside.
    fn pull(
        &self,
        figures: &mut GoFigures,
        attachments: &mut Vec<(String, Vec<u8>)>,
        waiting: &mut Vec<String>,
    ) -> Pulled {
        let (kind, t) = (self.kind, self.job.target);
        let url = endpoint(&t.url, kind, t.profile_duration.as_secs().max(1));
        let mut entry = Pulled {
            kind: kind.clone(),
            url: redact(&url),
            ok: false,
            unreachable: false,
            error: None,
            bytes: 0,
            records: 0,
            samples: None,
            files: Vec::new(),
            delta: false,
            no_delta: None,
            fetch_s: 0.0,
            delta_s: None,
            top: None,
            totals: Vec::new(),
        };
        let Some(mut got) = self.fetch(&url, &mut entry, figures) else {
            return entry;
        };
        match kind.as_str() {
            "block" => {
                figures.prof_go_blocked_time = got.shown.as_ref().and_then(|p| sum_of(p, "delay"))
            }
            "mutex" => {
                figures.prof_go_mutex_delay_time =
                    got.shown.as_ref().and_then(|p| sum_of(p, "delay"))
            }
            _ => {}
        }
        // What is drawn and listed goes through go tool pprof's name handling and drop_frames;
        // the files keep the bytes as they came.
        if let Some(p) = got.shown.as_mut()
            && (self.opts.flamegraph || self.opts.top > 0)
        {
            p.prepare_for_report();
        }
        if let Some(out) = &self.opts.out {
            self.write_files(out, &got, &mut entry);
        }
        if self.opts.top > 0
            && let Some(shown) = &got.shown
        {
            let o = crate::pprof::TopOptions {
                nodes: self.opts.top,
                ..Default::default()
            };
            entry.top = crate::pprof::top(shown, &o).ok();
        }
        // What is uploaded: cpu, goroutines and the deltas, as dd-trace-go sends them; heap
        // without its delta too (its live-heap types need none, and dd-trace-go's first
        // upload has heap); the other cumulative types wait for a second collection.
        if self.opts.uploads() {
            if let Some(bytes) = got.delta_gz {
                attachments.push((upload::attachment_name(kind, true), bytes));
            } else if !got.cumulative || kind == "heap" {
                attachments.push((upload::attachment_name(kind, false), got.gz));
            } else {
                waiting.push(kind.to_string());
            }
        }
        entry
    }

    /// The profile fetched (CPU with a progress bar while it records) and decoded, the
    /// figures DataKit derives from the whole profile taken, the delta made; None (the
    /// error in `entry`) when it did not arrive or does not decode.
    fn fetch(
        &self,
        url: &reqwest::Url,
        entry: &mut Pulled,
        figures: &mut GoFigures,
    ) -> Option<Shown> {
        let (kind, t, job) = (self.kind, self.job.target, self.job);
        let bar = (kind == "cpu").then(|| {
            progress(
                t.profile_duration.as_secs(),
                format!("{}: recording CPU", t.service),
            )
        });
        let t0 = Instant::now();
        let res = fetch::fetch(
            job.client,
            url,
            &self.limits,
            (t.http_timeout, t.timeout_setting),
            job.cancel,
        );
        if let Some(Some((bar, h, done))) = bar {
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = h.join();
            bar.finish_and_clear();
        }
        entry.fetch_s = t0.elapsed().as_secs_f64();
        let fetched = match res {
            Ok(f) => f,
            Err(e) => {
                entry.unreachable = matches!(e, crate::pull::fetch::FetchError::Network { .. });
                entry.error = Some(e.to_string());
                return None;
            }
        };
        entry.bytes = fetched.bytes.len();
        let profile = match Pprof::new(fetched.profile) {
            Ok(p) => p,
            Err(e) => {
                entry.error = Some(format!("{}: {e}", entry.url));
                return None;
            }
        };
        entry.records = profile.proto.sample.len();
        let totals = profile.totals();
        entry.samples = counted_samples(&profile);
        entry.ok = true;
        let gz = gzip_of(&fetched.bytes, &fetched.raw);
        let cumulative = delta::needs_delta(&profile);
        take_figures(kind, &profile, figures);
        let mut shown = Some(profile);
        let mut delta_gz = None;
        let mut delta_totals = None;
        if cumulative && let Some((d, raw)) = self.delta(fetched.raw, &gz, &mut shown, entry) {
            delta_totals = Some(d.totals());
            shown = Some(d);
            delta_gz = Some(gzip_raw(&raw));
        }
        Some(Shown {
            gz,
            delta_gz,
            totals,
            delta_totals,
            shown,
            cumulative,
        })
    }

    /// What is reported (top, flamegraph) of a cumulative profile: its delta against the
    /// previous collection, computed on the protobuf bytes (the baseline is kept compressed),
    /// with its raw bytes; None (why in `entry`) when there is none. This snapshot becomes
    /// the baseline either way.
    fn delta(
        &self,
        raw: Vec<u8>,
        gz: &[u8],
        shown: &mut Option<Pprof>,
        entry: &mut Pulled,
    ) -> Option<(Pprof, Vec<u8>)> {
        let key = format!("{}|{}", self.job.cache_key, self.kind);
        let base = lock(self.cache).get(&key).map(<[u8]>::to_vec);
        let mut made = None;
        match base {
            Ok(base_bytes) => {
                let t0 = Instant::now();
                let mut restarted = false;
                let delta = crate::pprof::decompress(&base_bytes, &self.limits)
                    .map_err(|e| e.to_string())
                    .and_then(|base| {
                        wiredelta::delta(base, raw).map_err(|e| {
                            restarted = matches!(e, wiredelta::WireError::BaseOnly { .. });
                            e.to_string()
                        })
                    });
                entry.delta_s = Some(t0.elapsed().as_secs_f64());
                match delta {
                    Ok(raw) => {
                        // One decoded profile at a time: the snapshot's is dropped before
                        // the delta's is built (collections run side by side).
                        *shown = None;
                        match crate::pprof::decode_raw(&raw, &self.limits)
                            .map_err(|e| e.to_string())
                            .and_then(|p| Pprof::new(p).map_err(|e| e.to_string()))
                        {
                            Ok(d) => {
                                entry.delta = true;
                                made = Some((d, raw));
                            }
                            Err(_) => entry.no_delta = Some(NoDelta::BaselineUnusable),
                        }
                    }
                    Err(_) if restarted => entry.no_delta = Some(NoDelta::ProcessRestarted),
                    Err(_) => entry.no_delta = Some(NoDelta::BaselineUnusable),
                }
            }
            Err(why) => entry.no_delta = Some(why),
        }
        lock(self.cache).put(&key, gz.to_vec());
        made
    }

    /// `<kind>-<time>.pb.gz` as it came, `delta-<kind>-<time>.pb.gz`, and with `--flamegraph`
    /// `<kind>-<time>.svg`, under the job's directory.
    fn write_files(&self, out: &std::path::Path, got: &Shown, entry: &mut Pulled) {
        let (kind, t) = (self.kind, self.job.target);
        let stamp = crate::duration::file_stamp();
        let dir = out.join(&self.job.dir);
        // A profile whose file could not be written is a failed one: what the user asked
        // for is not on disk.
        let failed = |entry: &mut Pulled, e: String| {
            entry.ok = false;
            entry.error = Some(e);
        };
        if let Err(e) = std::fs::create_dir_all(&dir) {
            failed(entry, format!("cannot create {}: {e}", dir.display()));
            return;
        }
        let written = |entry: &mut Pulled, f: PathBuf, totals: &crate::pprof::Totals| {
            entry.totals.push(super::FileTotals {
                file: f.clone(),
                totals: totals.clone(),
            });
            entry.files.push(f);
        };
        // New names only: another pull of the same service into the same --out in the same
        // second writes `<kind>-<time>-2.pb.gz` (crate::files).
        let stem = format!("{kind}-{stamp}");
        match crate::files::write_new(&dir, &stem, "pb.gz", &got.gz) {
            Ok(f) => written(entry, f, &got.totals),
            Err(e) => failed(
                entry,
                format!("cannot write {stem}.pb.gz in {}: {e}", dir.display()),
            ),
        }
        if let (Some(bytes), Some(totals)) = (&got.delta_gz, &got.delta_totals) {
            match crate::files::write_new(&dir, &format!("delta-{stem}"), "pb.gz", bytes) {
                Ok(f) => written(entry, f, totals),
                Err(e) => failed(
                    entry,
                    format!("cannot write delta-{stem}.pb.gz in {}: {e}", dir.display()),
                ),
            }
        }
        if self.opts.flamegraph
            && let Some(shown) = &got.shown
        {
            let mut svg = Vec::new();
            let drawn = shown
                .sample_index(None)
                .map_err(|e| e.to_string())
                .and_then(|i| {
                    crate::pprof::write_flamegraph(
                        shown,
                        i,
                        &format!("{} {kind} — {stamp}", t.service),
                        &mut svg,
                    )
                    .map_err(|e| e.to_string())
                })
                .and_then(|()| {
                    crate::files::write_new(&dir, &stem, "svg", &svg).map_err(|e| e.to_string())
                });
            match drawn {
                Ok(f) => entry.files.push(f),
                Err(e) => eprintln!("agentprof: {}: no flamegraph: {e}", entry.url),
            }
        }
    }
}

/// The profile gzipped: as received when it came gzipped, else compressed now.
fn gzip_of(bytes: &[u8], raw: &[u8]) -> Vec<u8> {
    if crate::pprof::sniff(bytes) == crate::pprof::Compression::Gzip {
        return bytes.to_vec();
    }
    gzip_raw(raw)
}

fn gzip_raw(raw: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = std::io::Write::write_all(&mut gz, raw);
    gz.finish().unwrap_or_default()
}

/// The figures DataKit derives from a whole profile of `kind` (block and mutex: from the
/// delta), taken into `figures`.
fn take_figures(kind: &str, profile: &Pprof, figures: &mut GoFigures) {
    match kind {
        "cpu" => {
            if let Some(cpu) = sum_of(profile, "cpu")
                && profile.proto.duration_nanos > 0
            {
                figures.prof_go_cpu_cores = Some(cpu as f64 / profile.proto.duration_nanos as f64);
            }
        }
        // The allocs profile holds the same live-heap types; it stands in only where the
        // heap profile was not pulled (the two are taken at different instants).
        "heap" | "allocs" if kind == "heap" || figures.prof_go_lifetime_heap_bytes.is_none() => {
            let [(_, objects), (_, bytes)] = super::GO_LIVE_HEAP;
            figures.prof_go_lifetime_heap_objects = sum_of(profile, objects);
            figures.prof_go_lifetime_heap_bytes = sum_of(profile, bytes);
        }
        "goroutine" => figures.prof_go_num_goroutine = sum_of(profile, "goroutine"),
        _ => {}
    }
}
