//! The baseline side of `gate --against`: a directory holding the baseline version of the
//! checks directory, or the checks directory as a git revision has it (extracted to a
//! scratch directory, removed afterwards).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::UsageError;

use super::counted::ScratchDir;
use crate::checks::stdout_of;

crate::error::message_error! {
    /// Why the baseline's checks directory could not be taken from git.
    ExtractError
}

/// How long a git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

pub enum Baseline {
    Dir(PathBuf),
    Revision {
        rev: String,
        commit: String,
        checks: PathBuf,
        _scratch: ScratchDir,
    },
}

/// The files of `rel` (under the repository at `top`; empty: all of it) at `commit`,
/// written under `into` (`git archive`, then `tar`); what failed, when one did.
fn extract(top: &str, commit: &str, rel: &Path, into: &Path) -> Result<(), ExtractError> {
    let tar = into.join("checks.tar");
    let mut archive = vec![
        "archive".to_string(),
        "--format=tar".into(),
        "-o".into(),
        tar.display().to_string(),
        commit.to_string(),
    ];
    if !rel.as_os_str().is_empty() {
        archive.push("--".into());
        archive.push(rel.display().to_string());
    }
    let args: Vec<&str> = archive.iter().map(String::as_str).collect();
    // git archive runs from the repository's top, where the path is relative to.
    stdout_of(
        Command::new("git").arg("-C").arg(top).args(&args),
        &[],
        GIT_TIMEOUT,
    )
    .map_err(|e| e.to_string().lines().last().unwrap_or("").to_string())?;
    stdout_of(
        Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(into),
        &[],
        GIT_TIMEOUT,
    )
    .map_err(|e| format!("cannot unpack them: {e}"))?;
    Ok(())
}

impl Baseline {
    /// `against` as a directory when one is there, else as a revision of the git repository
    /// that holds `checks_path`.
    pub fn resolve(against: &str, checks_path: &Path) -> Result<Baseline, UsageError> {
        let dir = Path::new(against);
        if dir.is_dir() {
            return Ok(Baseline::Dir(dir.to_path_buf()));
        }
        let refuse = |why: String| {
            UsageError::flag(
                "--against",
                format!("{against}: not a directory, and {why}"),
            )
        };
        let checks = std::fs::canonicalize(checks_path).map_err(|e| {
            refuse(format!(
                "the checks directory {} is not there to find its repository ({e})",
                checks_path.display()
            ))
        })?;
        let git = |args: &[&str]| -> Result<String, crate::checks::Error> {
            let out = stdout_of(
                Command::new("git").arg("-C").arg(&checks).args(args),
                &[],
                GIT_TIMEOUT,
            )?;
            Ok(String::from_utf8_lossy(&out).trim().to_string())
        };
        let top = git(&["rev-parse", "--show-toplevel"]).map_err(|e| {
            refuse(format!(
                "{} is not in a git repository ({})",
                checks.display(),
                e.to_string().lines().last().unwrap_or("")
            ))
        })?;
        let commit = git(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{against}^{{commit}}"),
        ])
        .map_err(|_| refuse(format!("not a revision of the repository at {top}")))?;
        let rel = checks
            .strip_prefix(Path::new(&top))
            .map_err(|_| refuse(format!("{} is outside {top}", checks.display())))?
            .to_path_buf();
        let scratch = ScratchDir::new()
            .map_err(|e| refuse(format!("cannot make a scratch directory: {e}")))?;
        let at = scratch.path().join(&rel);
        // A pull request that adds the checks directory: at REV there is none, so no check
        // has a baseline there (an empty directory says so to the caller).
        let tree = format!("{commit}:{}", rel.display());
        if !rel.as_os_str().is_empty() && git(&["cat-file", "-e", &tree]).is_err() {
            std::fs::create_dir_all(&at)
                .map_err(|e| refuse(format!("cannot make a scratch directory: {e}")))?;
            return Ok(Baseline::Revision {
                rev: against.to_string(),
                commit,
                checks: at,
                _scratch: scratch,
            });
        }
        extract(&top, &commit, &rel, scratch.path()).map_err(|e| {
            refuse(format!(
                "{} could not be extracted at {against}: {e}",
                rel.display()
            ))
        })?;
        if !at.is_dir() {
            return Err(refuse(format!(
                "{} does not exist at {against}",
                rel.display()
            )));
        }
        Ok(Baseline::Revision {
            rev: against.to_string(),
            commit,
            checks: at,
            _scratch: scratch,
        })
    }

    /// The baseline's checks directory.
    pub fn checks_dir(&self) -> &Path {
        match self {
            Baseline::Dir(d) => d,
            Baseline::Revision { checks, .. } => checks,
        }
    }

    /// `checks-v1/` or `main (3f2a…)`, for the report.
    pub fn describe(&self) -> String {
        match self {
            Baseline::Dir(d) => d.display().to_string(),
            Baseline::Revision { rev, commit, .. } => {
                format!("{rev} ({})", &commit[..commit.len().min(12)])
            }
        }
    }
}
