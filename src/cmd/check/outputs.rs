//! What `agentprof check` writes: the report on stdout, and the files its flags ask for
//! (flamegraph, pprof, pstats, the collector.log block, the flare).

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use crate::checks::PythonHost;
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::profile::{CallProfile, write_flamegraph};
use crate::render::{self, CheckReport, ProfileView, Style};

use super::CheckOptions;

/// `--pstats` and `--flamegraph` of a Python check, from its cProfile statistics.
pub(super) fn write_python_outputs(
    opts: &CheckOptions,
    report: &CheckReport,
    host: &Arc<Mutex<PythonHost>>,
) -> anyhow::Result<()> {
    if let Some(path) = &opts.pstats {
        let written = crate::sync::lock(host).dump_pstats(path);
        match written {
            Ok(()) => eprintln!("agentprof: wrote {} (python -m pstats {0})", path.display()),
            Err(e) => {
                return Err(UsageError::flag(
                    "--pstats",
                    format!("cannot write {}: {e}", path.display()),
                )
                .into());
            }
        }
    }
    if let Some(path) = &opts.flamegraph {
        let folded = match &report.profile {
            Some(ProfileView::Pstats(v)) => v.report.folded.clone(),
            _ => Vec::new(),
        };
        if folded.is_empty() {
            eprintln!(
                "agentprof: --flamegraph: no cProfile data, so {} was not written",
                path.display()
            );
            return Ok(());
        }
        let file = std::fs::File::create(path).map_err(|e| {
            UsageError::flag(
                "--flamegraph",
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        let mut o = inferno::flamegraph::Options::default();
        o.title = format!("agentprof check {} — cProfile", report.check);
        o.count_name = "µs".into();
        inferno::flamegraph::from_lines(
            &mut o,
            folded.iter().map(String::as_str),
            std::io::BufWriter::new(file),
        )
        .map_err(|e| anyhow::anyhow!("cannot draw the flamegraph: {e}"))?;
        eprintln!("agentprof: wrote {}", path.display());
    }
    Ok(())
}

/// `--pprof` and `--flamegraph` of a Python check's sampled runs (wall time drawn; the
/// pprof file has CPU time too: `go tool pprof -sample_index=cpu`).
fn write_python_samples(
    opts: &CheckOptions,
    report: &CheckReport,
    host: &Arc<Mutex<PythonHost>>,
) -> anyhow::Result<()> {
    if opts.pprof.is_none() && opts.flamegraph.is_none() {
        return Ok(());
    }
    let proto = match crate::sync::lock(host).samples() {
        Some(s) if !s.is_empty() => s.to_proto(),
        _ => {
            eprintln!(
                "agentprof: --profile: no stack of the check was sampled, so no profile file was written; run it more times (--times)"
            );
            return Ok(());
        }
    };
    if let Some(path) = &opts.pprof {
        let bytes = crate::pprof::gzip_fast(&prost::Message::encode_to_vec(&proto));
        std::fs::write(path, bytes).map_err(|e| {
            UsageError::flag("--pprof", format!("cannot write {}: {e}", path.display()))
        })?;
        eprintln!(
            "agentprof: wrote {} ({} samples; wall time, and cpu: go tool pprof -sample_index=cpu)",
            path.display(),
            proto.sample.iter().map(|s| s.value[0]).sum::<i64>()
        );
    }
    if let Some(path) = &opts.flamegraph {
        let p = crate::pprof::Pprof::new(proto)
            .map_err(|e| anyhow::anyhow!("the sampled profile does not check: {e}"))?;
        let file = std::fs::File::create(path).map_err(|e| {
            UsageError::flag(
                "--flamegraph",
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        let title = format!("agentprof check {} — wall time, sampled", report.check);
        crate::pprof::write_flamegraph(&p, 2, &title, std::io::BufWriter::new(file))?;
        eprintln!("agentprof: wrote {}", path.display());
    }
    Ok(())
}

/// The report as the tables print it (`--json` is written through its spool).
pub(super) fn rendered(report: &CheckReport, opts: &CheckOptions) -> String {
    render::table::render(report, Style::detect(opts.bordered))
}

pub(super) fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// `--flare`: the report with secrets scrubbed, in `checks/check_NAME_TIMESTAMP.log` under
/// the log file's directory (as the Agent keeps it beside its logs), else under agentprof's
/// state directory.
pub(super) fn write_flare(config: &AgentConfig, check: &str, text: &str) -> anyhow::Result<()> {
    let base = config
        .log_file
        .as_ref()
        .and_then(|f| f.parent())
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(crate::config::state_dir);
    let dir = base.join("checks");
    let stamp = jiff::Zoned::now().strftime("%Y-%m-%d_%H-%M-%S");
    let path = dir.join(format!("check_{check}_{stamp}.log"));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, crate::redact::scrub(text).as_bytes()));
    match written {
        Ok(()) => {
            eprintln!("agentprof: wrote {} (secrets scrubbed)", path.display());
            Ok(())
        }
        Err(e) => {
            Err(UsageError::flag("--flare", format!("cannot write {}: {e}", path.display())).into())
        }
    }
}

pub(super) fn write_outputs(
    opts: &CheckOptions,
    config: &AgentConfig,
    report: &CheckReport,
    profile: Option<&CallProfile>,
    python_host: Option<&Arc<Mutex<PythonHost>>>,
) -> anyhow::Result<()> {
    if let Some(log) = opts.log.as_ref().or(config.log_file.as_ref()) {
        render::collector_log::append(log, &report.records).map_err(|e| {
            UsageError::flag("--log", format!("cannot append to {}: {e}", log.display()))
        })?;
    }
    if let Some(host) = python_host {
        if !opts.cprofile {
            return write_python_samples(opts, report, host);
        }
        return write_python_outputs(opts, report, host);
    }
    let Some(profile) = profile else {
        return Ok(());
    };
    if let Some(path) = &opts.pprof {
        let bytes = crate::profile::encode_gzip(profile).context("encoding the pprof profile")?;
        std::fs::write(path, bytes).map_err(|e| {
            UsageError::flag("--pprof", format!("cannot write {}: {e}", path.display()))
        })?;
        eprintln!(
            "agentprof: wrote {} ({} samples)",
            path.display(),
            profile.total_samples()
        );
    }
    if let Some(path) = &opts.flamegraph {
        if profile.total_samples() == 0 {
            eprintln!(
                "agentprof: --flamegraph: no CPU samples were taken, so {} was not written; sample more runs (--times)",
                path.display()
            );
        } else {
            let file = std::fs::File::create(path).map_err(|e| {
                UsageError::flag(
                    "--flamegraph",
                    format!("cannot write {}: {e}", path.display()),
                )
            })?;
            let title = format!(
                "agentprof check {} — {} samples",
                report.check,
                profile.total_samples()
            );
            write_flamegraph(profile, &title, std::io::BufWriter::new(file))?;
            eprintln!("agentprof: wrote {}", path.display());
        }
    }
    Ok(())
}
