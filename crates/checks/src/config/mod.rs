//! agentprof.yaml and conf.d: where agentprof finds its settings and each check's instances.

mod agent;
mod checkconf;
mod log;
mod tags;
mod yaml11;

pub use agent::{AgentConfig, ApiKey, HistogramConfig, LoadOptions};
pub use checkconf::{CheckConf, InstanceCommon, find_key_line, suggest};
pub use log::{Level, parse_size};
pub use tags::validate_tag;

use std::io::Read;
use std::path::Path;

use crate::Error;

/// Largest configuration file agentprof reads; real ones are a few KiB.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Reads a configuration file, refusing one over `MAX_CONFIG_BYTES` before reading it.
/// Reads a file the user named, never more than `limit` bytes: the bound holds while reading,
/// so /dev/zero, a FIFO or a file that grows cannot take memory without end. `raise` says how
/// to allow more (a flag), or is empty.
pub fn read_limited(path: &Path, limit: u64, raise: &str) -> Result<Vec<u8>, Error> {
    let cannot = |e: std::io::Error| Error::config(path, format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        let how = if raise.is_empty() {
            String::new()
        } else {
            format!(" (raise it with {raise})")
        };
        return Err(Error::config(
            path,
            format!("more than the {limit}-byte limit{how}"),
        ));
    }
    Ok(bytes)
}

pub fn read_config_text(path: &Path) -> Result<String, Error> {
    let cannot = |e: std::io::Error| Error::config(path, format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut text = String::new();
    // Read one byte past the limit, so a file that grows meanwhile is caught too.
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::config(
            path,
            format!(
                "larger than {} MiB; is this a configuration file?",
                MAX_CONFIG_BYTES >> 20
            ),
        ));
    }
    check_nesting(path, &text)?;
    Ok(text)
}

/// A check file's text as agentprof reads one from disk: nesting refused first, then parsed.
/// How to start NAME's configuration in `confd`: the command that copies its example when
/// the example is there (a clone of agentprof, or after `agentprof init`), else `init`, which
/// writes it.
pub fn start_from_example(confd: &Path, name: &str) -> String {
    let example = confd.join(format!("{name}.yaml.example"));
    let target = confd.join(format!("{name}.yaml"));
    if example.is_file() {
        format!(
            "start from its example: `cp {} {}`, then edit it",
            example.display(),
            target.display()
        )
    } else {
        format!(
            "`agentprof init` writes {}; copy it to {} and edit it",
            example.display(),
            target.display()
        )
    }
}

pub fn parse_check_file(path: &Path, text: String) -> Result<CheckConf, Error> {
    check_nesting(path, &text)?;
    CheckConf::parse(path, text)
}

/// Deeper than this, a configuration is not one: the YAML parser's time grows with the
/// square of the depth, so a few MiB of `[[[[` would hold agentprof for minutes.
const MAX_NESTING: usize = 64;

/// Refuses nesting past `MAX_NESTING` (flow `[`/`{` or indentation) before the YAML parser
/// sees the text, with the line where it happens.
fn check_nesting(path: &Path, text: &str) -> Result<(), Error> {
    let refuse = |line: usize, what: &str| Error::ConfigAt {
        path: path.to_path_buf(),
        line,
        column: 1,
        message: format!(
            "{what} nested more than {MAX_NESTING} levels deep; is this a configuration file?"
        ),
    };
    let mut depth = 0usize;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches([' ', '\t', '-']).len();
        if indent > MAX_NESTING * 8 {
            return Err(refuse(i + 1, "blocks"));
        }
        let (mut quote, mut prev) = (None, ' ');
        for c in line.chars() {
            match (quote, c) {
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q && prev != '\\' => quote = None,
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return Err(refuse(i + 1, "brackets"));
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            prev = c;
        }
    }
    Ok(())
}

/// Where persistent caches live: $AGENTPROF_STATE_DIR, else $XDG_STATE_HOME/agentprof, else
/// ~/.local/state/agentprof.
pub fn state_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("AGENTPROF_STATE_DIR").filter(|d| !d.is_empty()) {
        return std::path::PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return std::path::PathBuf::from(d).join("agentprof");
    }
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".local/state/agentprof")
}
