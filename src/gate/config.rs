//! The gate's thresholds: defaults, a check conf's `gate:` section, `--gate-config FILE`
//! and flags, each overriding the one before.
//!
//! ```yaml
//! gate:
//!   times: 20          # timed runs
//!   threshold: 15      # percent slower before a timing can fail
//!   alpha: 0.01        # significance of the timing test
//!   min_slowdown_us: 50 # a slowdown of fewer microseconds per run never fails
//!   rss_slope_kib: 256 # RSS growth per run that is a leak
//!   peak_rss_pct: 25
//!   calls_pct: 1
//!   alloc_pct: 1
//!   series_pct: 0
//!   strict: true       # a metric that disappeared fails
//!   measure: cpu       # cpu, wall or instructions: what the verdict on cost rests on
//! ```

use std::path::Path;

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::{GateConfig, Measure};
use crate::config::find_key_line;
use crate::error::UsageError;

pub const DEFAULT_TIMES: u32 = 10;

/// One source of thresholds; what it leaves out comes from the sources before it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSection {
    pub times: Option<u32>,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub min_slowdown_us: Option<f64>,
    pub rss_slope_kib: Option<f64>,
    pub peak_rss_pct: Option<f64>,
    pub calls_pct: Option<f64>,
    pub alloc_pct: Option<f64>,
    pub series_pct: Option<f64>,
    pub strict: Option<bool>,
    pub measure: Option<Measure>,
}

/// A check conf or gate file that may have a `gate:` section among its other keys.
#[derive(Deserialize)]
struct WithSection {
    #[serde(default)]
    gate: Option<GateSection>,
}

impl GateSection {
    /// The `gate:` section of a check's conf file, if it has one.
    pub fn from_check_conf(path: &Path) -> Result<Option<GateSection>, UsageError> {
        let text = crate::config::read_config_text(path)?;
        let doc: WithSection =
            serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?;
        if let Some(s) = &doc.gate {
            s.validate(path, &text)?;
        }
        Ok(doc.gate)
    }

    /// A `--gate-config` file: a `gate:` section, or the same keys at the top level.
    pub fn from_file(path: &Path) -> Result<GateSection, UsageError> {
        let text = crate::config::read_config_text(path)?;
        let value: Value =
            serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?;
        let section = match &value {
            Value::Null => GateSection::default(),
            Value::Mapping(m) if m.contains_key("gate") => {
                let doc: WithSection =
                    serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?;
                doc.gate.unwrap_or_default()
            }
            Value::Mapping(_) => {
                serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?
            }
            _ => {
                return Err(UsageError::config(
                    path,
                    "expected a mapping of gate settings (threshold: 10, alpha: 0.01, …)",
                ));
            }
        };
        section.validate(path, &text)?;
        Ok(section)
    }

    /// The first problem of this section, as `what is wrong` for the key named.
    fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(t) = self.times
            && !(3..=10000).contains(&t)
        {
            return Some(("times", format!("{t} is not in 3..=10000")));
        }
        if let Some(a) = self.alpha
            && !(a > 0.0 && a < 1.0)
        {
            return Some(("alpha", format!("{a} is not between 0 and 1")));
        }
        for (key, v) in [
            ("threshold", self.threshold),
            ("min_slowdown_us", self.min_slowdown_us),
            ("rss_slope_kib", self.rss_slope_kib),
            ("peak_rss_pct", self.peak_rss_pct),
            ("calls_pct", self.calls_pct),
            ("alloc_pct", self.alloc_pct),
            ("series_pct", self.series_pct),
        ] {
            if let Some(v) = v
                && !(v >= 0.0 && v.is_finite())
            {
                return Some((key, format!("{v} is not a number ≥ 0")));
            }
        }
        None
    }

    fn validate(&self, path: &Path, text: &str) -> Result<(), UsageError> {
        match self.problem() {
            None => Ok(()),
            Some((key, why)) => Err(UsageError::at(
                path,
                find_key_line(text, key).unwrap_or(1),
                1,
                format!("gate.{key}: {why}"),
            )),
        }
    }

    /// `self` with what `over` sets replacing it.
    fn overridden_by(self, over: GateSection) -> GateSection {
        GateSection {
            times: over.times.or(self.times),
            threshold: over.threshold.or(self.threshold),
            alpha: over.alpha.or(self.alpha),
            min_slowdown_us: over.min_slowdown_us.or(self.min_slowdown_us),
            rss_slope_kib: over.rss_slope_kib.or(self.rss_slope_kib),
            peak_rss_pct: over.peak_rss_pct.or(self.peak_rss_pct),
            calls_pct: over.calls_pct.or(self.calls_pct),
            alloc_pct: over.alloc_pct.or(self.alloc_pct),
            series_pct: over.series_pct.or(self.series_pct),
            strict: over.strict.or(self.strict),
            measure: over.measure.or(self.measure),
        }
    }
}

/// The thresholds and the number of timed runs: defaults, then the check conf's `gate:`
/// section, then `--gate-config` (`gate_config`), then the flags' (`flags`).
///
/// A threshold no source sets is the measure's default, `paired` (A/B rounds) or not.
pub fn resolve(
    flags: GateSection,
    gate_config: Option<&Path>,
    check_conf: Option<GateSection>,
    paired: bool,
) -> Result<(GateConfig, u32), UsageError> {
    if let Some((key, why)) = flags.problem() {
        return Err(UsageError::flag(
            format!("--{}", key.replace('_', "-")),
            why,
        ));
    }
    let file = match gate_config {
        Some(p) => GateSection::from_file(p)?,
        None => GateSection::default(),
    };
    let s = check_conf
        .unwrap_or_default()
        .overridden_by(file)
        .overridden_by(flags);
    let d = GateConfig::default();
    let measure = s.measure.unwrap_or(d.measure);
    let cfg = GateConfig {
        measure,
        time_threshold: s
            .threshold
            .map_or(measure.default_threshold(paired), |p| p / 100.0),
        alpha: s.alpha.unwrap_or(d.alpha),
        min_slowdown_s: s.min_slowdown_us.map_or(d.min_slowdown_s, |u| u * 1e-6),
        rss_slope_bytes: s.rss_slope_kib.map_or(d.rss_slope_bytes, |k| k * 1024.0),
        peak_rss_threshold: s.peak_rss_pct.map_or(d.peak_rss_threshold, |p| p / 100.0),
        calls_threshold: s.calls_pct.map_or(d.calls_threshold, |p| p / 100.0),
        alloc_threshold: s.alloc_pct.map_or(d.alloc_threshold, |p| p / 100.0),
        series_threshold: s.series_pct.map_or(d.series_threshold, |p| p / 100.0),
        strict: s.strict.unwrap_or(d.strict),
    };
    Ok((cfg, s.times.unwrap_or(DEFAULT_TIMES)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gate.yaml");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn sections_read_from_a_check_conf_and_a_file_with_their_errors_located() {
        let (_d, p) = write("instances:\n  - {}\ngate:\n  threshold: 25\n  strict: true\n");
        let s = GateSection::from_check_conf(&p).unwrap().unwrap();
        assert_eq!((s.threshold, s.strict), (Some(25.0), Some(true)));
        let (_d, p) = write("instances:\n  - {}\n");
        assert!(GateSection::from_check_conf(&p).unwrap().is_none());
        let (_d, p) = write("alpha: 0.05\ntimes: 20\n");
        let s = GateSection::from_file(&p).unwrap();
        assert_eq!((s.alpha, s.times), (Some(0.05), Some(20)));
        let (_d, p) = write("gate:\n  calls_pct: 5\n");
        assert_eq!(GateSection::from_file(&p).unwrap().calls_pct, Some(5.0));
        let (_d, p) = write("gate:\n  threshold: 10\n  treshold: 5\n");
        let e = GateSection::from_file(&p).unwrap_err().to_string();
        assert!(e.contains("gate.yaml:3:") && e.contains("treshold"), "{e}");
        let (_d, p) = write("instances:\n  - {}\ngate:\n  alpha: 2\n");
        let e = GateSection::from_check_conf(&p).unwrap_err().to_string();
        assert!(
            e.contains("gate.yaml:4:1: gate.alpha: 2 is not between 0 and 1"),
            "{e}"
        );
        let (_d, p) = write("- 1\n");
        assert!(GateSection::from_file(&p).is_err());
    }

    #[test]
    fn later_sources_override_earlier_ones_key_by_key() {
        let conf = GateSection {
            threshold: Some(30.0),
            alpha: Some(0.05),
            ..Default::default()
        };
        let flags = GateSection {
            threshold: Some(5.0),
            ..Default::default()
        };
        let s = conf.overridden_by(flags);
        assert_eq!((s.threshold, s.alpha), (Some(5.0), Some(0.05)));
    }
}
