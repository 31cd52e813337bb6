//! The Python check the gate tests run: its cost (loop size, calls, memory kept or only
//! touched, metrics) is set by its configuration.

use crate::support::Sandbox;

pub const WORK: &str = r#"
from datadog_checks.base import AgentCheck

KEPT = []

class WorkCheck(AgentCheck):
    def check(self, instance):
        total = 0
        for i in range(int(instance.get("work", 20000))):
            total += i * i
        for _ in range(int(instance.get("extra_calls", 0))):
            self._noop()
        KEPT.append(bytearray(int(instance.get("keep_kib", 0)) * 1024))
        scratch = [bytes(1024) for _ in range(int(instance.get("scratch_kib", 0)))]
        del scratch
        self.gauge("work.total", total)
        if not instance.get("drop_metric"):
            self.gauge("work.extra", 1)

    def _noop(self):
        return 1
"#;

/// The check's conf: every option at its neutral value except those in `set`, so the
/// instance (which the base class copies every run) is the same size in every variant.
pub fn setup(sb: &Sandbox, set: &[(&str, &str)]) {
    let mut opts = [
        ("work", "20000"),
        ("extra_calls", "0"),
        ("keep_kib", "0"),
        ("scratch_kib", "0"),
        ("drop_metric", "false"),
    ];
    for (k, v) in set {
        opts.iter_mut().find(|(key, _)| key == k).unwrap().1 = v;
    }
    let inst: Vec<String> = opts.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    sb.write("checks/work.py", WORK);
    sb.write(
        "conf.d/work.yaml",
        &format!("instances:\n  - {{{}}}\n", inst.join(", ")),
    );
}

pub fn gate(sb: &Sandbox, py: &str, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["gate", "work", "--baseline", "base.json", "--python", py];
    args.extend_from_slice(extra);
    sb.run(&args)
}

/// `gate work --against AGAINST` (A/B) with its report in `format`.
pub fn gate_against(sb: &Sandbox, py: &str, against: &str, format: &str) -> crate::support::Run {
    sb.run(&[
        "gate",
        "work",
        "--against",
        against,
        "--python",
        py,
        "--format",
        format,
    ])
}

/// The finding of a `--format json` report named `figure`.
pub fn finding(doc: &serde_json::Value, figure: &str) -> serde_json::Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == figure)
        .cloned()
        .unwrap_or_else(|| panic!("no {figure} in {doc}"))
}
