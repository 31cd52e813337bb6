//! `agentprof pull`: targets from the command line or from conf.d/profile.yaml (DataKit's
//! fields), checked before anything is fetched; then the collections.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::cli::PullArgs;
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::pull::fetch::{TYPES, Tls, parse_target};
use crate::pull::{MIN_INTERVAL, PullOptions, Target};

use super::{Outcome, confd_options};

/// Default time between collections, as dd-trace-go's.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

crate::error::message_error! {
    /// What is wrong with a pull target's setting (a flag's value or a profile.yaml entry's).
    SpecError
}

/// Tags in the upload are comma-separated: a name may not hold a comma, colon or newline, a
/// value not a comma or newline.
fn check_tag(tag: &str) -> Result<(), SpecError> {
    let (k, v) = tag
        .split_once(':')
        .ok_or_else(|| format!("tag {tag:?}: write it as key:value"))?;
    if k.is_empty() || k.contains([',', '\n']) {
        return Err(
            format!("tag {tag:?}: a name cannot be empty or hold a comma or newline").into(),
        );
    }
    if v.contains([',', '\n']) {
        return Err(format!("tag {tag:?}: a value cannot hold a comma or newline").into());
    }
    Ok(())
}

fn duration(text: &str, what: &str) -> Result<Duration, SpecError> {
    crate::duration::parse(text, 1.0).map_err(|e| SpecError(format!("{what}: {e}")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    instances: Vec<ProfileInstance>,
    #[serde(default)]
    init_config: Option<serde_yaml_ng::Value>,
    /// The rules `agentprof k8s` reads; `pull` collects the static `instances` only.
    #[serde(default)]
    kubernetes: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Tags {
    Map(BTreeMap<String, String>),
    List(Vec<String>),
}

/// A target in DataKit's `[[inputs.profile.go]]` fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileInstance {
    url: String,
    interval: Option<String>,
    profile_duration: Option<String>,
    http_timeout: Option<String>,
    service: Option<String>,
    env: Option<String>,
    version: Option<String>,
    enabled_types: Option<Vec<String>>,
    tags: Option<Tags>,
    #[serde(default = "yes")]
    enabled: bool,
    tls_open: Option<bool>,
    tls_ca: Option<std::path::PathBuf>,
    tls_cert: Option<std::path::PathBuf>,
    tls_key: Option<std::path::PathBuf>,
    #[serde(default)]
    insecure_skip_verify: bool,
}

fn yes() -> bool {
    true
}

struct Spec<'a> {
    url: &'a str,
    types: Vec<String>,
    profile_duration: Duration,
    interval: Duration,
    http_timeout: Option<Duration>,
    service: Option<String>,
    env: Option<String>,
    version: Option<String>,
    tags: Vec<String>,
    tls: Tls,
}

fn target(s: Spec<'_>) -> Result<Target, SpecError> {
    let url = parse_target(s.url).map_err(|e| format!("URL: {e}"))?;
    let mut types = Vec::new();
    for t in &s.types {
        let t = t.trim().to_ascii_lowercase();
        let t = if t == "goroutines" {
            "goroutine".into()
        } else {
            t
        };
        if !TYPES.contains(&t.as_str()) {
            return Err(format!("profile type {t:?}: use {}", TYPES.join(", ")).into());
        }
        if !types.contains(&t) {
            types.push(t);
        }
    }
    if types.is_empty() {
        return Err("no profile type to pull".into());
    }
    if s.profile_duration < Duration::from_secs(1) {
        return Err("profile duration: at least 1s".into());
    }
    if s.interval < MIN_INTERVAL {
        return Err(format!(
            "interval {}: at least 10s",
            crate::duration::human(s.interval)
        )
        .into());
    }
    let http_timeout = s
        .http_timeout
        .unwrap_or(s.profile_duration + Duration::from_secs(10));
    if types.iter().any(|t| t == "cpu") && http_timeout <= s.profile_duration {
        return Err(format!(
            "http timeout {} must exceed the profile duration {}",
            crate::duration::human(http_timeout),
            crate::duration::human(s.profile_duration)
        )
        .into());
    }
    for t in &s.tags {
        check_tag(t)?;
    }
    let service = s
        .service
        .filter(|x| !x.is_empty())
        .unwrap_or_else(|| url.host_str().unwrap_or("service").to_string());
    for (what, v) in [
        ("service", Some(&service)),
        ("env", s.env.as_ref()),
        ("version", s.version.as_ref()),
    ] {
        if let Some(v) = v {
            check_tag(&format!("{what}:{v}"))?;
        }
    }
    Ok(Target {
        url,
        types,
        profile_duration: s.profile_duration,
        interval: s.interval,
        http_timeout,
        timeout_setting: "--http-timeout",
        service,
        env: s.env,
        version: s.version,
        tags: s.tags,
        tls: s.tls,
    })
}

fn from_file(path: &Path) -> anyhow::Result<Vec<Target>> {
    let text = crate::config::read_config_text(path)?;
    // The `kubernetes:` rules are checked here too, so a mistake in them is found now, and
    // the user is told that pull does not collect them.
    if let Some(k) = crate::k8s::config::K8sConfig::parse(path, &text)? {
        eprintln!(
            "agentprof: {}: pull collects the `instances:` only, not the `kubernetes:` rules ({})",
            path.display(),
            k.rules.len()
        );
    }
    let targets = static_targets(path, &text)?;
    if targets.is_empty() {
        return Err(UsageError::config(path, "no enabled target under `instances:`").into());
    }
    Ok(targets)
}

/// The enabled static targets (`instances:`) of profile.yaml's text, checked; `agentprof
/// k8s` collects them too, beside its rules.
pub(super) fn static_targets(path: &Path, text: &str) -> anyhow::Result<Vec<Target>> {
    let file: ProfileFile =
        serde_yaml_ng::from_str(text).map_err(|e| UsageError::yaml(path, &e))?;
    let _ = (file.init_config, file.kubernetes);
    let mut targets = Vec::new();
    for (i, inst) in file.instances.into_iter().enumerate() {
        if !inst.enabled {
            continue;
        }
        let at = |e: SpecError| UsageError::config(path, format!("instance {}: {e}", i + 1));
        let d = |v: &Option<String>, def: Duration, what| -> Result<Duration, UsageError> {
            v.as_deref()
                .map_or(Ok(def), |t| duration(t, what))
                .map_err(at)
        };
        let tags = match inst.tags {
            Some(Tags::Map(m)) => m.into_iter().map(|(k, v)| format!("{k}:{v}")).collect(),
            Some(Tags::List(l)) => l,
            None => Vec::new(),
        };
        let tls = Tls {
            ca: inst.tls_ca,
            cert: inst.tls_cert,
            key: inst.tls_key,
            insecure_skip_verify: inst.insecure_skip_verify,
        };
        if inst.tls_open == Some(false) && (tls.ca.is_some() || tls.cert.is_some()) {
            eprintln!(
                "agentprof: warning: {}: instance {}: tls_open is false; the tls_* files are ignored",
                path.display(),
                i + 1
            );
        }
        let spec = Spec {
            url: &inst.url,
            types: inst.enabled_types.unwrap_or_else(|| {
                ["cpu", "goroutine", "heap", "mutex", "block"]
                    .map(String::from)
                    .to_vec()
            }),
            profile_duration: d(
                &inst.profile_duration,
                Duration::from_secs(10),
                "profile_duration",
            )?,
            interval: d(&inst.interval, DEFAULT_INTERVAL, "interval")?,
            http_timeout: inst
                .http_timeout
                .as_deref()
                .map(|t| duration(t, "http_timeout"))
                .transpose()
                .map_err(at)?,
            service: inst.service,
            env: inst.env,
            version: inst.version,
            tags,
            tls: if inst.tls_open == Some(false) {
                Tls::default()
            } else {
                tls
            },
        };
        targets.push(target(spec).map_err(at)?);
    }
    Ok(targets)
}

/// The one target of `agentprof pull URL`, from the flags.
fn url_target(args: &PullArgs, url: &str) -> anyhow::Result<crate::pull::Target> {
    let flag = UsageError::flag;
    let profile_duration =
        duration(&args.profile_duration, "").map_err(|e| flag("--profile-duration", e))?;
    let interval = match &args.interval {
        Some(i) => duration(i, "").map_err(|e| flag("--interval", e))?,
        None => DEFAULT_INTERVAL,
    };
    let http_timeout = args
        .http_timeout
        .as_deref()
        .map(|t| duration(t, ""))
        .transpose()
        .map_err(|e| flag("--http-timeout", e))?;
    target(Spec {
        url,
        types: args.types.clone(),
        profile_duration,
        interval,
        http_timeout,
        service: args.service.clone(),
        env: args.env.clone(),
        version: args.version.clone(),
        tags: args.tags.clone(),
        tls: Tls {
            ca: args.tls_ca.clone(),
            cert: args.tls_cert.clone(),
            key: args.tls_key.clone(),
            insecure_skip_verify: args.insecure_skip_verify,
        },
    })
    .map_err(|e| flag("pull", e).into())
}

pub fn run(args: PullArgs) -> anyhow::Result<Outcome> {
    let config = AgentConfig::load(&confd_options(&args.config))?;
    let targets = match &args.url {
        Some(url) => vec![url_target(&args, url)?],
        None => {
            let path =
                crate::config::CheckConf::find(&config.confd_path, "profile").ok_or_else(|| {
                    UsageError::config(
                        &config.confd_path,
                        format!(
                            "no URL given and no profile.yaml here: give a URL (`agentprof pull http://HOST:6060`), or list targets in profile.yaml: {}",
                            crate::config::start_from_example(&config.confd_path, "profile")
                        ),
                    )
                })?;
            from_file(&path)?
        }
    };
    let opts = options(&args, config)?;
    if opts.out.is_none() && !opts.uploads() {
        eprintln!(
            "agentprof: pull: without --out the profiles are read and summarised, and nothing is kept (--out DIR keeps them)"
        );
    }
    let json = args.json;
    let failed = crate::pull::run(targets, &opts, |c| {
        let mut out = std::io::stdout().lock();
        let _ = if json {
            serde_json::to_writer(&mut out, c)
                .map_err(std::io::Error::other)
                .and_then(|()| writeln!(out))
        } else {
            out.write_all(crate::pull::render(c).as_bytes())
        };
    })?;
    if failed.network {
        // As the README's exit codes say: 3 when a server could not be reached or never
        // answered; what was collected was printed above.
        return Err(crate::pull::Unreachable.into());
    }
    Ok(if failed.any {
        Outcome::RunFailed
    } else {
        Outcome::Success
    })
}

/// What the run does besides collecting, from the flags: how many collections, where
/// files and uploads go, the limits.
fn options(args: &PullArgs, config: AgentConfig) -> anyhow::Result<PullOptions> {
    let count = if args.once {
        Some(1)
    } else if args.count.is_some() {
        args.count
    } else if args.interval.is_some() || args.url.is_none() {
        None
    } else {
        Some(1)
    };
    let upload = args
        .upload
        .as_deref()
        .map(parse_upload)
        .transpose()
        .map_err(|e| UsageError::flag("--upload", e))?;
    let otlp = otlp_target(
        args.otlp.as_deref(),
        &args.otlp_headers,
        args.otlp_original_payload,
        "--otlp",
    )?;
    Ok(PullOptions {
        otlp,
        upload_timeout: Some(upload_timeout(&args.upload_timeout, "--upload-timeout")?),
        count,
        out: args.out.clone(),
        top: args.top.unwrap_or(0),
        flamegraph: args.flamegraph,
        upload,
        spool: args
            .spool
            .clone()
            .unwrap_or_else(|| crate::config::state_dir().join("upload-spool")),
        body_size_limit_mb: args.body_size_limit_mb,
        delta_cache_mb: args.delta_cache_mb,
        hostname: config.hostname.clone(),
        forward: Some(config),
        retention: crate::retention::Retention {
            max_bytes: args.retention_mb.map(|m| m << 20),
            max_age: args
                .retention_days
                .map(|d| std::time::Duration::from_secs(d * 86_400)),
        },
    })
}

/// `--upload-timeout`, `--forward-timeout`: a request's whole time, at least 100 ms and at
/// most an hour (a zero would fail every upload; a day would hold the spool's sender).
pub(super) fn upload_timeout(text: &str, flag: &'static str) -> Result<Duration, UsageError> {
    let d = crate::duration::parse(text, 1.0).map_err(|e| UsageError::flag(flag, e))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(3600) {
        return Err(UsageError::flag(
            flag,
            format!("{text}: between 100ms and 1h"),
        ));
    }
    Ok(d)
}

/// The OTLP target of `flag` (`--otlp`, `--forward-otlp`) and `--otlp-header`s.
pub(super) fn otlp_target(
    url: Option<&str>,
    headers: &[String],
    original_payload: bool,
    flag: &'static str,
) -> Result<Option<crate::pull::otlp::OtlpTarget>, UsageError> {
    let Some(url) = url else {
        if !headers.is_empty() || original_payload {
            return Err(UsageError::flag(
                "--otlp-header",
                format!("--otlp-header and --otlp-original-payload go with {flag}"),
            ));
        }
        return Ok(None);
    };
    let url = crate::pull::otlp::endpoint(url).map_err(|e| UsageError::flag(flag, e))?;
    let headers = headers
        .iter()
        .map(|h| crate::pull::otlp::header(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| UsageError::flag("--otlp-header", e))?;
    Ok(Some(crate::pull::otlp::OtlpTarget {
        url,
        headers,
        original_payload,
    }))
}

pub(super) fn parse_upload(text: &str) -> Result<reqwest::Url, SpecError> {
    let u = reqwest::Url::parse(text).map_err(|e| format!("not a URL ({e})"))?;
    match u.scheme() {
        "http" | "https" => Ok(u),
        s => Err(format!("scheme {s}: use http or https").into()),
    }
}
