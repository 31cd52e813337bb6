//! `agentprof init [DIR]`: the example configurations and the plugin checks agentprof ships,
//! written out, so an installed binary (`cargo install`) has them too: conf.d's
//! `*.yaml.example`, checks/ (http_check.py, directory.py, file_age.sh) and
//! agentprof.yaml.example, as in the repository.

use std::io::Write;
use std::path::Path;

use crate::error::UsageError;

use super::Outcome;

/// Every shipped file, by its path in the repository (a test keeps the list complete).
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "conf.d/agent_metrics.yaml.example",
        include_str!("../../conf.d/agent_metrics.yaml.example"),
    ),
    (
        "conf.d/cpu.yaml.example",
        include_str!("../../conf.d/cpu.yaml.example"),
    ),
    (
        "conf.d/directory.yaml.example",
        include_str!("../../conf.d/directory.yaml.example"),
    ),
    (
        "conf.d/disk.yaml.example",
        include_str!("../../conf.d/disk.yaml.example"),
    ),
    (
        "conf.d/file_age.yaml.example",
        include_str!("../../conf.d/file_age.yaml.example"),
    ),
    (
        "conf.d/http_check.yaml.example",
        include_str!("../../conf.d/http_check.yaml.example"),
    ),
    (
        "conf.d/io.yaml.example",
        include_str!("../../conf.d/io.yaml.example"),
    ),
    (
        "conf.d/load.yaml.example",
        include_str!("../../conf.d/load.yaml.example"),
    ),
    (
        "conf.d/memory.yaml.example",
        include_str!("../../conf.d/memory.yaml.example"),
    ),
    (
        "conf.d/network.yaml.example",
        include_str!("../../conf.d/network.yaml.example"),
    ),
    (
        "conf.d/process.yaml.example",
        include_str!("../../conf.d/process.yaml.example"),
    ),
    (
        "conf.d/profile.yaml.example",
        include_str!("../../conf.d/profile.yaml.example"),
    ),
    (
        "conf.d/uptime.yaml.example",
        include_str!("../../conf.d/uptime.yaml.example"),
    ),
    ("checks/README.md", include_str!("../../checks/README.md")),
    (
        "checks/directory.py",
        include_str!("../../checks/directory.py"),
    ),
    (
        "checks/file_age.sh",
        include_str!("../../checks/file_age.sh"),
    ),
    (
        "checks/http_check.py",
        include_str!("../../checks/http_check.py"),
    ),
    (
        "agentprof.yaml.example",
        include_str!("../../agentprof.yaml.example"),
    ),
];

/// Writes every shipped file under `dir`. A file already there with the same content is left
/// alone; one that differs is kept unless `force` (the user may have edited it).
pub fn run(dir: &Path, force: bool) -> anyhow::Result<Outcome> {
    let mut stdout = std::io::stdout().lock();
    let (mut wrote, mut same, mut kept) = (0, 0, Vec::new());
    for (rel, text) in SHIPPED {
        let path = dir.join(rel);
        match std::fs::read(&path) {
            Ok(old) if old == text.as_bytes() => {
                same += 1;
                continue;
            }
            Ok(_) if !force => {
                kept.push(path.display().to_string());
                continue;
            }
            _ => {}
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                UsageError::flag("DIR", format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&path, text).map_err(|e| {
            UsageError::flag("DIR", format!("cannot write {}: {e}", path.display()))
        })?;
        if rel.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
        let _ = writeln!(stdout, "wrote {}", path.display());
        wrote += 1;
    }
    let _ = writeln!(
        stdout,
        "{wrote} written, {same} already there; copy conf.d/NAME.yaml.example to conf.d/NAME.yaml to configure a check, then `agentprof check NAME` in {}",
        dir.display()
    );
    if !kept.is_empty() {
        eprintln!(
            "agentprof: kept {} file{} that differ from agentprof's (--force overwrites): {}",
            kept.len(),
            if kept.len() == 1 { "" } else { "s" },
            kept.join(", ")
        );
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example and plugin in the repository is in the list, so `init` writes them all.
    #[test]
    fn every_shipped_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk = vec!["agentprof.yaml.example".to_string()];
        for d in ["conf.d", "checks"] {
            for e in std::fs::read_dir(root.join(d)).unwrap().flatten() {
                on_disk.push(format!("{d}/{}", e.file_name().to_string_lossy()));
            }
        }
        on_disk.sort();
        let mut listed: Vec<String> = SHIPPED.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
    }
}
