//! `agentprof completions SHELL` and `agentprof man`: generated from the same clap definition
//! as the parser, committed under completions/ and man/, checked for staleness by a test.

use std::io::Write;
use std::path::Path;

use anyhow::Context as _;
use clap_complete::Shell as CompleteShell;

use crate::cli::Shell;
use crate::error::UsageError;

use super::Outcome;

fn to_clap(shell: Shell) -> CompleteShell {
    match shell {
        Shell::Bash => CompleteShell::Bash,
        Shell::Zsh => CompleteShell::Zsh,
        Shell::Fish => CompleteShell::Fish,
        Shell::Elvish => CompleteShell::Elvish,
        Shell::Powershell => CompleteShell::PowerShell,
    }
}

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(
        to_clap(shell),
        &mut <crate::cli::Cli as clap::CommandFactory>::command(),
        "agentprof",
        &mut out,
    );
    out
}

/// Where the script for `shell` lives in completions/.
pub fn completion_file_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "agentprof.bash",
        Shell::Zsh => "_agentprof",
        Shell::Fish => "agentprof.fish",
        Shell::Elvish => "agentprof.elv",
        Shell::Powershell => "_agentprof.ps1",
    }
}

/// `agentprof.1` and `agentprof-SUB.1` for each subcommand, as (file name, roff bytes).
pub fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let root = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut pages = Vec::new();
    let mut buf = Vec::new();
    clap_mangen::Man::new(root.clone()).render(&mut buf)?;
    pages.push(("agentprof.1".to_string(), buf));
    for sub in root.get_subcommands() {
        let name = format!("agentprof-{}", sub.get_name());
        let version = root.get_version().unwrap_or_default().to_owned();
        let cmd = sub.clone().name(name.clone()).version(version);
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        pages.push((format!("{name}.1"), buf));
    }
    Ok(pages)
}

pub fn completions(shell: Shell) -> anyhow::Result<Outcome> {
    std::io::stdout().write_all(&completion_script(shell))?;
    Ok(Outcome::Success)
}

pub fn man(out: &Path) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(out)
        .map_err(|e| UsageError::flag("--out", format!("cannot create {}: {e}", out.display())))?;
    let mut stdout = std::io::stdout().lock();
    for (name, bytes) in man_pages()? {
        let path = out.join(&name);
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        // A closed stdout (`| head`) ends the listing quietly; the pages are written anyway.
        writeln!(stdout, "{}", path.display())?;
    }
    Ok(Outcome::Success)
}
