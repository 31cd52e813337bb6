//! `agentprof top`, `diff` and `flamegraph`: pprof files read with the limits the user allows.

use std::io::Write;
use std::path::Path;

use crate::cli::{DiffArgs, FlamegraphArgs, ProfileLimitArgs, TopArgs};
use crate::error::UsageError;
use crate::pprof::decode::{Limits, decode};
use crate::pprof::model::Pprof;
use crate::pprof::report::{TopOptions, top as top_report};

use super::Outcome;

fn limits(a: &ProfileLimitArgs) -> Limits {
    Limits {
        body: a.max_size_mb << 20,
        decompressed: a.max_decompressed_mb << 20,
        fields: a.max_fields,
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
    let bytes =
        std::fs::read(path).map_err(|e| UsageError::config(path, format!("cannot read: {e}")))?;
    let hint = |e: &crate::pprof::decode::DecodeError| match e {
        crate::pprof::decode::DecodeError::TooLargeDecompressed { .. } => {
            " (raise it with --max-decompressed-mb)"
        }
        crate::pprof::decode::DecodeError::Budget { .. } => " (raise it with --max-fields)",
        _ => "",
    };
    let proto =
        decode(&bytes, limits).map_err(|e| UsageError::config(path, format!("{e}{}", hint(&e))))?;
    Pprof::new(proto).map_err(|e| UsageError::config(path, e.to_string()).into())
}

pub fn top(args: TopArgs) -> anyhow::Result<Outcome> {
    let p = load(&args.file, &limits(&args.limits))?;
    let opts = TopOptions {
        sample_index: args.sample_index.clone(),
        cum: args.cum,
        nodes: args.nodes.unwrap_or(0),
        ..TopOptions::default()
    };
    let report = top_report(&p, &opts).map_err(|e| UsageError::flag("--sample-index", e))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = serde_json::json!({
            "schema": 1,
            "file": args.file,
            "sample_types": p.sample_types().iter().map(|(t, u)| serde_json::json!({"type": t, "unit": u})).collect::<Vec<_>>(),
            "report": report,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        out.write_all(report.text().as_bytes())?;
    }
    Ok(Outcome::Success)
}

pub fn diff(args: DiffArgs) -> anyhow::Result<Outcome> {
    let lim = limits(&args.limits);
    let base = load(&args.base, &lim)?;
    let new = load(&args.new, &lim)?;
    let report = crate::pprof::diff::diff(
        &base,
        &new,
        args.sample_index.as_deref(),
        args.normalize,
        args.cum,
    )
    .map_err(|e| UsageError::flag("--sample-index", e))?;
    if let Some(svg) = &args.flamegraph {
        let idx = crate::pprof::diff::common_index(&base, &new, args.sample_index.as_deref())
            .map_err(|e| UsageError::flag("--sample-index", e))?;
        let title = format!(
            "{} vs {} — {}",
            args.base.display(),
            args.new.display(),
            report.sample_type
        );
        let file = std::fs::File::create(svg)
            .map_err(|e| UsageError::flag("--flamegraph", format!("{}: {e}", svg.display())))?;
        crate::pprof::diff::write_diff_flamegraph(
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
        let doc = serde_json::json!({
            "schema": 1,
            "base": args.base,
            "new": args.new,
            "report": report,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        out.write_all(report.text(args.nodes).as_bytes())?;
    }
    Ok(Outcome::Success)
}

pub fn flamegraph(args: FlamegraphArgs) -> anyhow::Result<Outcome> {
    let p = load(&args.file, &limits(&args.limits))?;
    let index = p
        .sample_index(args.sample_index.as_deref())
        .map_err(|e| UsageError::flag("--sample-index", e))?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("{} — {}", args.file.display(), p.sample_types()[index].0));
    let file = std::fs::File::create(&args.output)
        .map_err(|e| UsageError::flag("--output", format!("{}: {e}", args.output.display())))?;
    crate::pprof::diff::write_flamegraph(&p, index, &title, std::io::BufWriter::new(file))?;
    eprintln!("agentprof: wrote {}", args.output.display());
    Ok(Outcome::Success)
}
