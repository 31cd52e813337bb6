//! `agentprof top`, `diff` and `flamegraph`: pprof files read with the limits the user allows.

use std::io::Write;
use std::path::Path;

use crate::cli::{DeltaArgs, DiffArgs, FlamegraphArgs, NameFilterArgs, ProfileLimitArgs, TopArgs};
use crate::error::UsageError;
use crate::pprof::NameFilter;
use crate::pprof::Pprof;
use crate::pprof::SourceAccess;
use crate::pprof::{Error as PprofError, Limits, decode_pprof};
use crate::pprof::{TopOptions, top_filtered};

use super::Outcome;

pub(crate) fn limits(a: &ProfileLimitArgs) -> Limits {
    Limits {
        body: a.max_size_mb << 20,
        decompressed: a.max_decompressed_mb << 20,
        fields: a.max_fields,
        memory: a.max_memory_mb << 20,
    }
}

/// Reads and checks a profile file; what is wrong with it is a usage error naming the file.
pub fn load(path: &Path, limits: &Limits) -> anyhow::Result<Pprof> {
    let meta = std::fs::metadata(path)
        .map_err(|e| UsageError::config(path, format!("cannot read: {e}")))?;
    if meta.len() > limits.body {
        return Err(UsageError::config(
            path,
            format!(
                "{} bytes is over the {}-byte limit (raise it with --max-size-mb)",
                meta.len(),
                limits.body
            ),
        )
        .into());
    }
    let bytes = crate::config::read_limited(path, limits.body, "--max-size-mb")?;
    let hint = |e: &PprofError| match e {
        PprofError::TooLargeDecompressed { .. } => " (raise it with --max-decompressed-mb)",
        PprofError::Budget { .. } => " (raise it with --max-fields)",
        PprofError::Memory { .. } => " (raise it with --max-memory-mb)",
        _ => "",
    };
    let mut p = decode_pprof(&bytes, limits)
        .map_err(|e| UsageError::config(path, format!("{e}{}", hint(&e))))?;
    // Names and drop_frames as go tool pprof reads them, so the rows are the same.
    if let Some(warning) = p.prepare_for_report() {
        eprintln!("agentprof: {}: {warning}", path.display());
    }
    Ok(p)
}

/// The name filters of the flags, compiled; a bad expression is a usage error naming its flag.
pub(crate) fn name_filter(a: &NameFilterArgs) -> anyhow::Result<NameFilter> {
    NameFilter::new(
        a.focus.as_deref(),
        a.ignore.as_deref(),
        a.hide.as_deref(),
        a.show.as_deref(),
    )
    .map_err(|e| match &e {
        PprofError::Filter { name, .. } => UsageError::flag(format!("--{name}"), &e).into(),
        _ => anyhow::Error::from(e),
    })
}

fn symbol(flag: &str, re: &str) -> anyhow::Result<regex::Regex> {
    crate::pprof::compile_regex("argument", Some(re))
        .map_err(|e| UsageError::flag(flag, e.to_string()))?
        .ok_or_else(|| {
            UsageError::flag(flag, "an empty expression matches every function; give one").into()
        })
}

/// go tool pprof prints its filter warnings on stderr; so does agentprof.
fn warn(warnings: &[&str]) {
    for w in warnings {
        eprintln!("agentprof: {w}");
    }
}

pub fn top(args: TopArgs) -> anyhow::Result<Outcome> {
    let filter = name_filter(&args.filter)?;
    let peek = args
        .peek
        .as_deref()
        .map(|r| symbol("--peek", r))
        .transpose()?;
    let list = args
        .list
        .as_deref()
        .map(|r| symbol("--list", r))
        .transpose()?;
    let p = load(&args.file, &limits(&args.limits))?;
    let opts = TopOptions {
        sample_index: args.sample_index.clone(),
        cum: args.cum,
        nodes: args.nodes.unwrap_or(0),
        node_fraction: args.node_fraction,
        ..TopOptions::default()
    };
    let sample_types = p
        .sample_types()
        .iter()
        .map(|(t, u)| serde_json::json!({"type": t, "unit": u}))
        .collect::<Vec<_>>();
    let (report, text) = if let Some(rx) = &peek {
        let (r, w) =
            crate::pprof::peek(&p, &filter, rx, &opts).map_err(|e| refused("--peek", e))?;
        warn(&w);
        let text = r.text();
        (serde_json::to_value(r)?, text)
    } else if let Some(rx) = &list {
        let access = SourceAccess::Go {
            search_path: args.source_path.clone().unwrap_or_default(),
            trim_path: args.trim_path.clone().unwrap_or_default(),
        };
        let (r, w) = crate::pprof::list(&p, &filter, rx, args.sample_index.as_deref(), &access)
            .map_err(|e| refused("--list", e))?;
        warn(&w);
        let text = r.text();
        (serde_json::to_value(r)?, text)
    } else {
        let (r, w) =
            top_filtered(&p, &filter, &opts).map_err(|e| UsageError::flag("--sample-index", e))?;
        warn(&w);
        let text = r.text();
        (serde_json::to_value(r)?, text)
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = serde_json::json!({
            "schema": 1,
            "file": args.file,
            "sample_types": sample_types,
            "report": report,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    Ok(Outcome::Success)
}

/// A report refused: a bad sample index, or an expression that matches no function.
fn refused(flag: &str, e: PprofError) -> anyhow::Error {
    match e {
        PprofError::NoMatches(_) => UsageError::flag(flag, e).into(),
        e if e.is_sample_index() => UsageError::flag("--sample-index", e).into(),
        e => e.into(),
    }
}

pub fn diff(args: DiffArgs) -> anyhow::Result<Outcome> {
    let lim = limits(&args.limits);
    let base = load(&args.base, &lim)?;
    let new = load(&args.new, &lim)?;
    let files = format!("{} and {}", args.base.display(), args.new.display());
    let refused = |e: PprofError| -> anyhow::Error {
        match e {
            PprofError::Mismatch(m) => {
                UsageError::config(&files, format!("cannot be compared: {m}")).into()
            }
            e if e.is_sample_index() => UsageError::flag("--sample-index", e).into(),
            e => e.into(),
        }
    };
    if !args.normalize
        && let Some(note) = lengths_differ(base.proto.duration_nanos, new.proto.duration_nanos)
    {
        eprintln!("agentprof: note: {note}");
    }
    let mut report = crate::pprof::diff(
        &base,
        &new,
        args.sample_index.as_deref(),
        args.normalize,
        args.cum,
    )
    .map_err(refused)?;
    if let Some(svg) = &args.flamegraph {
        let idx = crate::pprof::common_index(&base, &new, args.sample_index.as_deref())
            .map_err(refused)?;
        let title = format!(
            "{} vs {} — {}",
            args.base.display(),
            args.new.display(),
            report.sample_type
        );
        let file = std::fs::File::create(svg)
            .map_err(|e| UsageError::flag("--flamegraph", format!("{}: {e}", svg.display())))?;
        crate::pprof::write_diff_flamegraph(
            &base,
            &new,
            idx,
            args.normalize,
            &title,
            std::io::BufWriter::new(file),
        )?;
        eprintln!("agentprof: wrote {}", svg.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        // As top --json: every changed function unless -n says otherwise.
        let rows_total = report.rows.len();
        if let Some(n) = args.nodes.filter(|&n| n > 0) {
            report.rows.truncate(n);
        }
        let doc = serde_json::json!({
            "schema": 1,
            "base": args.base,
            "new": args.new,
            "rows_total": rows_total,
            "report": report,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        out.write_all(report.text(args.nodes.unwrap_or(30)).as_bytes())?;
    }
    Ok(Outcome::Success)
}

/// Captures of different lengths (more than 10 % apart): a diff without --normalize counts the
/// longer one's extra time as a change, which the note says, with the flag that scales it out.
fn lengths_differ(base_ns: i64, new_ns: i64) -> Option<String> {
    if base_ns <= 0 || new_ns <= 0 {
        return None;
    }
    let ratio = new_ns as f64 / base_ns as f64;
    if (0.9..=1.0 / 0.9).contains(&ratio) {
        return None;
    }
    let secs = |ns: i64| crate::duration::human(std::time::Duration::from_nanos(ns as u64));
    Some(format!(
        "the base covers {} and the new profile {} ({ratio:.2}×): the changes below include that difference; --normalize scales the base to the new profile's total",
        secs(base_ns),
        secs(new_ns)
    ))
}

pub fn flamegraph(args: FlamegraphArgs) -> anyhow::Result<Outcome> {
    let filter = name_filter(&args.filter)?;
    let p = load(&args.file, &limits(&args.limits))?;
    let p = if filter.is_empty() {
        p
    } else {
        let (kept, matched) = filter.apply(&p);
        warn(&matched.warnings(&filter));
        kept
    };
    let index = p
        .sample_index(args.sample_index.as_deref())
        .map_err(|e| UsageError::flag("--sample-index", e))?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("{} — {}", args.file.display(), p.sample_types()[index].0));
    let file = std::fs::File::create(&args.output)
        .map_err(|e| UsageError::flag("--output", format!("{}: {e}", args.output.display())))?;
    crate::pprof::write_flamegraph(&p, index, &title, std::io::BufWriter::new(file))?;
    eprintln!("agentprof: wrote {}", args.output.display());
    Ok(Outcome::Success)
}

/// The delta of two snapshots, computed as `pull` computes it: on the protobuf bytes, the
/// baseline read from its compressed form as the delta cache keeps it.
pub fn delta(args: DeltaArgs) -> anyhow::Result<Outcome> {
    let lim = limits(&args.limits);
    let new = load(&args.new, &lim)?;
    if !crate::pull::delta::needs_delta(&new) {
        return Err(UsageError::config(
            &args.new,
            "no cumulative sample type (alloc_objects, alloc_space, contentions, delay): a delta means nothing here",
        )
        .into());
    }
    drop(new);
    let read = |p: &Path| -> anyhow::Result<Vec<u8>> {
        Ok(crate::config::read_limited(p, lim.body, "--max-size-mb")?)
    };
    let (base_bytes, new_bytes) = (read(&args.base)?, read(&args.new)?);
    let t0 = std::time::Instant::now();
    let base_raw = crate::pprof::decompress(&base_bytes, &lim)
        .map_err(|e| UsageError::config(&args.base, e.to_string()))?;
    let new_raw = crate::pprof::decompress(&new_bytes, &lim)
        .map_err(|e| UsageError::config(&args.new, e.to_string()))?;
    let inflate_s = t0.elapsed().as_secs_f64();
    crate::pprof::prescan(&base_raw, lim.fields)
        .map_err(|e| UsageError::config(&args.base, e.to_string()))?;
    let (base_len, new_len) = (base_raw.len(), new_raw.len());
    let t1 = std::time::Instant::now();
    let out = crate::pull::wiredelta::delta(base_raw, new_raw)
        .map_err(|e| UsageError::config(&args.base, e.to_string()))?;
    let delta_s = t1.elapsed().as_secs_f64();
    let d = crate::pprof::decode_raw(&out, &lim)
        .map_err(|e| anyhow::anyhow!("the delta does not read back: {e}"))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&out)?;
    std::fs::write(&args.output, gz.finish()?)
        .map_err(|e| UsageError::flag("--output", format!("{}: {e}", args.output.display())))?;
    let doc = serde_json::json!({
        "schema": 1,
        "output": args.output,
        "base_bytes": base_len,
        "new_bytes": new_len,
        "delta_samples": d.sample.len(),
        "inflate_s": inflate_s,
        "delta_s": delta_s,
    });
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &doc)?;
        writeln!(stdout)?;
    } else {
        writeln!(
            stdout,
            "{}: {} stacks with changes; {} (the newer snapshot) less {} (the base) in {:.1} ms (inflating both took {:.1} ms)",
            args.output.display(),
            d.sample.len(),
            crate::render::units::human_bytes(new_len as f64),
            crate::render::units::human_bytes(base_len as f64),
            delta_s * 1e3,
            inflate_s * 1e3
        )?;
    }
    Ok(Outcome::Success)
}
