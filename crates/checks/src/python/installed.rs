//! Integrations installed in the chosen interpreter, found as the Agent's loader finds them:
//! the package `datadog_checks.NAME` on the interpreter's `sys.path` (a wheel, an
//! integrations-core checkout installed with `pip install -e .`, or `PYTHONPATH`).
//!
//! Finding one costs a Python start, so it is asked only when a name could be an installed
//! integration: never for a built-in when no interpreter was chosen.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;

/// Longest the interpreter may take to say what is installed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Largest answer read from the probe.
const PROBE_MAX_BYTES: usize = 4 << 20;

/// Packages under `datadog_checks` that are libraries, not integrations.
const NOT_INTEGRATIONS: &[&str] = &["base", "checks", "dev", "downloader", "utils", "tests"];

/// One installed integration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// The check's name: `NAME` of `datadog_checks.NAME`.
    pub name: String,
    /// The package's directory.
    pub path: PathBuf,
    /// `__version__` of its `__about__.py`.
    pub version: Option<String>,
    /// `data/conf.yaml.example`, when it ships one.
    pub example: Option<PathBuf>,
}

/// The probe: prints a JSON list of installed integrations (all of them, or the one named in
/// argv[1]). It reads `__about__.py` as text and imports no integration, so it is fast and an
/// integration that fails to import is still listed (and fails later, with its error). A
/// package is listed only when one of its modules defines a check class (a class deriving
/// from `…Check`), so library packages such as datadog-checks-base's `stubs` are not.
const PROBE: &str = r#"
import importlib.util, json, os, pkgutil, re, sys
skip = set(sys.argv[2].split(","))
def about(d):
    try:
        with open(os.path.join(d, "__about__.py"), encoding="utf-8", errors="replace") as f:
            m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read())
            return m.group(1) if m else None
    except OSError:
        return None
CHECK_CLASS = re.compile(r"^class\s+\w+\s*\([^)]*Check\w*\s*[,)]", re.M)
def holds_check(d):
    # A class deriving from a check base (AgentCheck, OpenMetricsBaseCheckV2, ...) in one of
    # the package's own modules, read as text: nothing is imported.
    try:
        names = [n for n in os.listdir(d) if n.endswith(".py")]
    except OSError:
        return False
    for n in names:
        try:
            with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                if CHECK_CLASS.search(f.read(1 << 20)):
                    return True
        except OSError:
            pass
    return False
def entry(name, d):
    ex = os.path.join(d, "data", "conf.yaml.example")
    return {"name": name, "path": d, "version": about(d), "example": ex if os.path.isfile(ex) else None}
out = []
try:
    import datadog_checks
    paths = list(getattr(datadog_checks, "__path__", []))
except Exception:
    paths = []
if sys.argv[1]:
    try:
        spec = importlib.util.find_spec("datadog_checks." + sys.argv[1]) if paths else None
    except Exception:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        out.append(entry(sys.argv[1], list(spec.submodule_search_locations)[0]))
else:
    seen = set()
    for m in pkgutil.iter_modules(paths):
        d = os.path.join(m.module_finder.path, m.name)
        if m.ispkg and m.name not in skip and m.name not in seen and holds_check(d):
            seen.add(m.name)
            out.append(entry(m.name, d))
    out.sort(key=lambda e: e["name"])
sys.stdout.write(json.dumps(out))
"#;

/// Installed integrations in `python`: the one called `name`, or every one when `name` is
/// None. An interpreter that cannot be run or answers nonsense is an error naming it.
pub fn find(python: &str, name: Option<&str>) -> Result<Vec<Installed>, Error> {
    if name.is_some_and(|n| NOT_INTEGRATIONS.contains(&n)) {
        return Ok(Vec::new());
    }
    let out = super::super::child::run_bounded(
        Command::new(python)
            .arg("-c")
            .arg(PROBE)
            .arg(name.unwrap_or(""))
            .arg(NOT_INTEGRATIONS.join(",")),
        &[],
        PROBE_TIMEOUT,
        PROBE_MAX_BYTES,
    )
    .map_err(|e| Error::Installed(format!("`{python}` listing installed integrations: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Installed(format!(
            "`{python}` could not list installed integrations: {}",
            err.lines().last().unwrap_or("no message")
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::Installed(format!(
            "`{python}` listing installed integrations answered nonsense: {e}"
        ))
    })
}
