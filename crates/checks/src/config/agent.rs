//! agentprof.yaml: searched in --config, $AGENTPROF_CONFIG, ./agentprof.yaml,
//! /etc/agentprof/agentprof.yaml; DD_HOSTNAME and DD_TAGS override as in the Datadog Agent.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::validate_tag;
use crate::Error;

use super::checkconf::{find_key_line, suggest};

/// The Agent version Python checks see by default: checks compare it with the Agent
/// versions their features need, so it is an Agent 7 one, not agentprof's own.
pub const AGENT_VERSION: &str = "7.60.0";

/// `7.60.0`: two or three dot-separated numbers, then an optional `-suffix`.
fn is_version(v: &str) -> bool {
    let core = v.split_once('-').map_or(v, |(c, _)| c);
    let parts: Vec<&str> = core.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()))
        && v.len() <= 64
        && !v.contains(|c: char| c.is_control() || c.is_whitespace())
}

/// Keys agentprof.yaml understands; anything else warns, as the Agent does with typos.
const KNOWN_KEYS: &[&str] = &[
    "hostname",
    "tags",
    "developer_mode",
    "confd_path",
    "checks_path",
    "log_file",
    "python",
    "collector_profile_interval",
    "histogram_aggregates",
    "histogram_percentiles",
    "dogstatsd_url",
    "metrics_file",
    "log_file_max_size",
    "log_file_max_rolls",
    "api_key",
    "site",
    "dd_url",
    "profile_dir",
    "log_level",
    "check_runners",
    "agent_version",
    // Read by `agentprof receive` (receive::config).
    "receive",
];

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct AgentConfigFile {
    hostname: Option<String>,
    tags: Vec<String>,
    developer_mode: bool,
    confd_path: Option<PathBuf>,
    checks_path: Option<PathBuf>,
    log_file: Option<PathBuf>,
    python: Option<String>,
    collector_profile_interval: Option<u32>,
    histogram_aggregates: Option<Vec<String>>,
    histogram_percentiles: Option<Vec<f64>>,
    dogstatsd_url: Option<String>,
    metrics_file: Option<PathBuf>,
    log_file_max_size: Option<serde_yaml_ng::Value>,
    log_file_max_rolls: Option<u32>,
    api_key: Option<String>,
    site: Option<String>,
    dd_url: Option<String>,
    profile_dir: Option<PathBuf>,
    log_level: Option<String>,
    check_runners: Option<usize>,
    agent_version: Option<String>,
}

/// Which histogram aggregates a run flushes (`.max`, `.median`, `.avg`, `.count`, `.95percentile`).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramConfig {
    pub aggregates: Vec<String>,
    pub percentiles: Vec<f64>,
}

impl Default for HistogramConfig {
    fn default() -> Self {
        HistogramConfig {
            aggregates: vec!["max".into(), "median".into(), "avg".into(), "count".into()],
            percentiles: vec![0.95],
        }
    }
}

/// A Datadog API key: its Debug and Display never show it.
#[derive(Clone, PartialEq)]
pub struct ApiKey(pub String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The settings every command works from, resolved once.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The file the settings came from, if any.
    pub source: Option<PathBuf>,
    pub hostname: String,
    pub tags: Vec<String>,
    pub developer_mode: bool,
    pub confd_path: PathBuf,
    pub checks_path: PathBuf,
    pub log_file: Option<PathBuf>,
    pub python: String,
    /// True when the interpreter was chosen (`--python`, $AGENTPROF_PYTHON, `python:`): then
    /// an installed integration may replace a built-in of the same name.
    pub python_chosen: bool,
    pub collector_profile_interval: u32,
    pub histogram: HistogramConfig,
    /// `agentprof start` sends metrics here: `udp://HOST:PORT` or a unix datagram socket path.
    pub dogstatsd_url: Option<String>,
    /// `agentprof start` appends one JSON metric per line here.
    pub metrics_file: Option<PathBuf>,
    /// collector.log is rotated past this many bytes (default 10 MiB)...
    pub log_file_max_size: u64,
    /// ...keeping this many old files (default 1).
    pub log_file_max_rolls: u32,
    /// Datadog API key (`api_key`, $DD_API_KEY). Never printed: Debug shows it redacted.
    pub api_key: Option<ApiKey>,
    /// Datadog site (`site`, $DD_SITE; default datadoghq.com).
    pub site: String,
    /// Overrides the API base URL (`dd_url`).
    pub dd_url: Option<String>,
    /// collector.log's level (`log_level`); `None`: debug in developer mode, else info.
    pub log_level: Option<String>,
    /// Where `agentprof start --profile` writes the agent's flamegraph and pprof at stop.
    pub profile_dir: PathBuf,
    /// Threads `agentprof start` runs built-in checks on (`check_runners`, default 4).
    pub check_runners: usize,
    /// The Datadog Agent version Python checks are told they run in
    /// (`datadog_agent.get_version()`; `agent_version`, default [`AGENT_VERSION`]).
    pub agent_version: String,
    /// Problems worth a warning that do not stop the command (unknown keys).
    pub warnings: Vec<String>,
}

/// What the command line says about where configuration lives.
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize)]
pub struct LoadOptions {
    pub config: Option<PathBuf>,
    pub confd: Option<PathBuf>,
    pub checks: Option<PathBuf>,
    /// `--python`: wins over $AGENTPROF_PYTHON and `python:`.
    pub python: Option<String>,
}

const ENV_CONFIG: &str = "AGENTPROF_CONFIG";

impl AgentConfig {
    /// Where checks are looked for, as absolute paths, each said missing when it is, and how
    /// others are chosen: for the messages of a check that is not found.
    pub fn check_dirs_said(&self) -> String {
        let said = |p: &Path| {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            if p.is_dir() {
                abs.display().to_string()
            } else {
                format!("{} (does not exist)", abs.display())
            }
        };
        format!(
            "configurations in {}, plugins in {} (without --confd/--checks or agentprof.yaml's confd_path/checks_path: ./conf.d and ./checks, else /etc/agentprof/conf.d and /etc/agentprof/checks.d)",
            said(&self.confd_path),
            said(&self.checks_path)
        )
    }

    /// Finds and reads agentprof.yaml, then applies environment and flag overrides.
    pub fn load(opts: &LoadOptions) -> Result<AgentConfig, Error> {
        let explicit = opts.config.clone().or_else(|| {
            std::env::var_os(ENV_CONFIG)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        let source = match explicit {
            Some(path) => {
                if !path.is_file() {
                    let flag = if opts.config.is_some() {
                        "--config"
                    } else {
                        ENV_CONFIG
                    };
                    return Err(Error::flag(
                        flag,
                        format!("{} does not exist or is not a file", path.display()),
                    ));
                }
                Some(path)
            }
            None => ["agentprof.yaml", "/etc/agentprof/agentprof.yaml"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file()),
        };
        let (file, warnings) = match &source {
            Some(path) => read_file(path)?,
            None => (AgentConfigFile::default(), Vec::new()),
        };
        Self::resolve(source, file, warnings, opts)
    }

    fn resolve(
        source: Option<PathBuf>,
        file: AgentConfigFile,
        warnings: Vec<String>,
        opts: &LoadOptions,
    ) -> Result<AgentConfig, Error> {
        let base = source
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let rel = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        let cfg_path = source
            .clone()
            .unwrap_or_else(|| PathBuf::from("agentprof.yaml"));

        let hostname = hostname(file.hostname, &cfg_path)?;
        if let Some(n) = file.log_file_max_rolls
            && n > MAX_ROLLS
        {
            return Err(Error::config(
                &cfg_path,
                format!("log_file_max_rolls: {n} is outside 0 to {MAX_ROLLS}"),
            ));
        }

        let tags = resolve_tags(file.tags, &cfg_path)?;
        let agent_version = resolve_agent_version(file.agent_version, &cfg_path)?;

        let confd_path = opts
            .confd
            .clone()
            .or(file.confd_path.map(rel))
            .unwrap_or_else(|| default_dir("conf.d", "/etc/agentprof/conf.d"));
        check_dirs(opts)?;
        let checks_path = opts
            .checks
            .clone()
            .or(file.checks_path.map(rel))
            .unwrap_or_else(|| default_dir("checks", "/etc/agentprof/checks.d"));

        let histogram = resolve_histogram(
            file.histogram_aggregates,
            file.histogram_percentiles,
            &cfg_path,
        )?;

        let log_file_max_size = resolve_max_size(file.log_file_max_size.as_ref(), &cfg_path)?;
        let chosen_python = chosen_python(opts, file.python);
        Ok(AgentConfig {
            source,
            hostname,
            tags,
            developer_mode: file.developer_mode,
            confd_path,
            checks_path,
            log_file: file.log_file.map(rel),
            python_chosen: chosen_python.is_some(),
            python: chosen_python.unwrap_or_else(|| "python3".into()),
            collector_profile_interval: file.collector_profile_interval.unwrap_or(20),
            check_runners: file.check_runners.unwrap_or(4).clamp(1, 64),
            agent_version,
            histogram,
            dogstatsd_url: file.dogstatsd_url.filter(|u| !u.is_empty()),
            metrics_file: file.metrics_file.map(rel),
            log_file_max_size,
            log_file_max_rolls: file.log_file_max_rolls.unwrap_or(1),
            api_key: api_key(file.api_key),
            site: site(file.site),
            dd_url: file.dd_url.filter(|u| !u.trim().is_empty()),
            profile_dir: file
                .profile_dir
                .map(rel)
                .unwrap_or_else(|| PathBuf::from("profiles")),
            log_level: resolve_log_level(file.log_level, &cfg_path)?,
            warnings,
        })
    }
}

/// `agent_version:`, an Agent version (the one agentprof reports as when not given).
fn resolve_agent_version(v: Option<String>, cfg_path: &Path) -> Result<String, Error> {
    match v {
        None => Ok(AGENT_VERSION.to_string()),
        Some(v) if is_version(&v) => Ok(v),
        Some(v) => Err(Error::config(
            cfg_path,
            format!(
                "agent_version: {:?} is not an Agent version (e.g. {AGENT_VERSION})",
                crate::redact::printable(&v)
            ),
        )),
    }
}

/// `DD_API_KEY`, else agentprof.yaml's `api_key`; none when blank.
fn api_key(configured: Option<String>) -> Option<ApiKey> {
    std::env::var("DD_API_KEY")
        .ok()
        .or(configured)
        .filter(|k| !k.trim().is_empty())
        .map(ApiKey)
}

/// `DD_SITE`, else agentprof.yaml's `site`, else datadoghq.com.
fn site(configured: Option<String>) -> String {
    std::env::var("DD_SITE")
        .ok()
        .or(configured)
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "datadoghq.com".into())
}

/// agentprof.yaml's `log_level`, checked to be a level.
fn resolve_log_level(level: Option<String>, cfg_path: &Path) -> Result<Option<String>, Error> {
    level
        .map(|l| {
            super::Level::parse(&l)
                .map(|_| l)
                .map_err(|e| Error::config(cfg_path, format!("log_level: {e}")))
        })
        .transpose()
}

/// Rotated log files kept at most (each is stat'ed at a rotation).
const MAX_ROLLS: u32 = 1000;

/// `DD_HOSTNAME`, else agentprof.yaml's `hostname`, else the system's. A configured one must
/// be a host name as the Agent accepts it (letters, digits, `-`, `_`, `.`; at most 255): it
/// goes into every DogStatsD datagram and API series, where a newline, `|` or `#` would
/// forge metrics of its own.
fn hostname(configured: Option<String>, cfg_path: &Path) -> Result<String, Error> {
    let from_env = std::env::var("DD_HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty());
    let (name, source) = match (from_env, configured.filter(|h| !h.trim().is_empty())) {
        (Some(h), _) => (h, None),
        (None, Some(h)) => (h, Some(cfg_path)),
        (None, None) => return Ok(system_hostname()),
    };
    let valid = name.len() <= 255
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        return Ok(name);
    }
    let why = format!(
        "{:?} is not a host name (letters, digits, '-', '_' and '.', at most 255 characters)",
        crate::redact::printable(&name)
    );
    Err(match source {
        Some(path) => Error::config(path, format!("hostname: {why}")),
        None => Error::flag("DD_HOSTNAME", why),
    })
}

/// The Python named by `--python`, else `AGENTPROF_PYTHON`, else agentprof.yaml's `python`.
fn chosen_python(opts: &LoadOptions, configured: Option<String>) -> Option<String> {
    opts.python
        .clone()
        .filter(|p| !p.is_empty())
        .or_else(|| std::env::var("AGENTPROF_PYTHON").ok())
        .filter(|p| !p.is_empty())
        .or(configured.filter(|p| !p.is_empty()))
}

/// The configured tags and `DD_TAGS`'s, each checked.
fn resolve_tags(mut tags: Vec<String>, cfg_path: &Path) -> Result<Vec<String>, Error> {
    if let Ok(env_tags) = std::env::var("DD_TAGS") {
        tags.extend(env_tags.split_whitespace().map(str::to_string));
    }
    for tag in &tags {
        if let Err(why) = validate_tag(tag) {
            return Err(Error::config(
                cfg_path,
                format!("tags: `{tag}` is not a valid tag: {why}"),
            ));
        }
    }
    Ok(tags)
}

/// `--confd` and `--checks`, when given, name directories.
fn check_dirs(opts: &LoadOptions) -> Result<(), Error> {
    for (flag, dir) in [("--confd", &opts.confd), ("--checks", &opts.checks)] {
        if let Some(d) = dir
            && !d.is_dir()
        {
            return Err(Error::flag(
                flag,
                format!("{} is not a directory", d.display()),
            ));
        }
    }
    Ok(())
}

/// `histogram_aggregates` and `histogram_percentiles`, checked, over the Agent's defaults.
fn resolve_histogram(
    aggregates: Option<Vec<String>>,
    percentiles: Option<Vec<f64>>,
    cfg_path: &Path,
) -> Result<HistogramConfig, Error> {
    let mut histogram = HistogramConfig::default();
    if let Some(aggs) = aggregates {
        for a in &aggs {
            if !["max", "min", "median", "avg", "sum", "count"].contains(&a.as_str()) {
                return Err(Error::config(
                    cfg_path,
                    format!(
                        "histogram_aggregates: unknown aggregate `{a}` (use max, min, median, avg, sum, count)"
                    ),
                ));
            }
        }
        histogram.aggregates = aggs;
    }
    if let Some(pcts) = percentiles {
        for p in &pcts {
            if !(*p > 0.0 && *p < 1.0) {
                return Err(Error::config(
                    cfg_path,
                    format!(
                        "histogram_percentiles: {p} is not between 0 and 1 (write 0.95 for the 95th)"
                    ),
                ));
            }
        }
        histogram.percentiles = pcts;
    }
    Ok(histogram)
}

/// `log_file_max_size` as bytes (a number or a size such as `10MB`; 10 MiB when unset).
fn resolve_max_size(v: Option<&serde_yaml_ng::Value>, cfg_path: &Path) -> Result<u64, Error> {
    Ok(match v {
        None => 10 << 20,
        Some(v) => {
            let text = match v {
                serde_yaml_ng::Value::Number(n) => n.to_string(),
                serde_yaml_ng::Value::String(s) => s.clone(),
                other => format!("{other:?}"),
            };
            super::parse_size(&text)
                .map_err(|e| Error::config(cfg_path, format!("log_file_max_size: {e}")))?
        }
    })
}

fn read_file(path: &Path) -> Result<(AgentConfigFile, Vec<String>), Error> {
    let text = super::read_config_text(path)?;
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| Error::yaml(path, &e))?;
    let mut warnings = Vec::new();
    match &value {
        serde_yaml_ng::Value::Null => return Ok((AgentConfigFile::default(), warnings)),
        serde_yaml_ng::Value::Mapping(map) => {
            for key in map.keys() {
                let key = key.as_str().unwrap_or("?");
                if !KNOWN_KEYS.contains(&key) {
                    let at = find_key_line(&text, key)
                        .map(|l| format!(":{l}"))
                        .unwrap_or_default();
                    warnings.push(format!(
                        "{}{at}: unknown option `{key}`{}",
                        path.display(),
                        suggest(key, KNOWN_KEYS.iter().copied())
                    ));
                }
            }
        }
        _ => {
            return Err(Error::config(
                path,
                "expected a mapping of settings (hostname:, tags:, confd_path: …)",
            ));
        }
    }
    let file: AgentConfigFile =
        serde_yaml_ng::from_str(&text).map_err(|e| Error::yaml(path, &e))?;
    Ok((file, warnings))
}

fn default_dir(local: &str, system: &str) -> PathBuf {
    let local = PathBuf::from(local);
    if local.is_dir() || !Path::new(system).is_dir() {
        local
    } else {
        PathBuf::from(system)
    }
}

/// The machine's host name, as the Agent reports it when none is configured.
pub fn system_hostname() -> String {
    #[cfg(target_os = "linux")]
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            return h.to_string();
        }
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length and gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if let Ok(s) = std::str::from_utf8(&buf[..end]) {
            return s.to_string();
        }
    }
    "localhost".into()
}
