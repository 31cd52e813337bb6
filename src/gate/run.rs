//! A gate run, from what the flags ask to the two sides measured: the check loaded, its
//! thresholds resolved (flags over `--gate-config` over the check's `gate:` section), the
//! baseline read before any run, the plan (worker processes, A/B rounds, what counts
//! instructions) and the runs. `cmd/gate.rs` parses the flags and prints what this returns.

use std::path::Path;

use crate::checks::{CheckKind, LoadedCheck};
use crate::config::{AgentConfig, LoadOptions};
use crate::error::UsageError;

use super::config::{GateSection, resolve};
use super::error::GateError;
use super::measure::{Extend, Plan, Side, load, measure, measure_ab};
use super::plan::{self, CounterChoice};
use super::{GateConfig, GateStats, Measure, Mode, Verdict, baseline, compare};

/// What a gate run is asked to do (`agentprof gate CHECK …`).
pub struct Request<'a> {
    pub name: &'a str,
    pub options: LoadOptions,
    /// The thresholds the flags set (the last to override).
    pub flags: GateSection,
    pub gate_config: Option<&'a Path>,
    pub baseline: Option<&'a Path>,
    /// `--against DIR|REV`: A/B rounds against that version's checks.
    pub against: Option<&'a str>,
    pub update_baseline: bool,
    pub memory: bool,
    pub compat_base: bool,
    /// `--flamegraph-diff`: stacks taken from extra runs.
    pub stacks: bool,
    pub instance: usize,
    pub counter: Option<CounterChoice>,
    pub max_time: Option<&'a str>,
}

/// What a gate run came to.
pub enum Ran {
    /// Both sides measured, to be compared in `mode` under `cfg`.
    Measured {
        cfg: GateConfig,
        base: Box<GateStats>,
        current: Box<GateStats>,
        mode: Mode,
    },
    /// `--update-baseline`: the baseline file written.
    BaselineWritten,
    /// `--against`'s version has no such check (a change that adds it): nothing to compare.
    NoBaseline(Box<Verdict>),
}

/// Loads, plans and measures what `req` asks; what stops it before a verdict (a flag, a file
/// or a baseline the user must change; a check that cannot be measured) as a `GateError`.
pub fn run(req: &Request) -> Result<Ran, GateError> {
    let config = AgentConfig::load(&req.options)?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let mut plan = Plan {
        name: req.name,
        times: 0,
        processes: plan::PROCESSES,
        instance: req.instance,
        memory: req.memory,
        stacks: req.update_baseline || req.stacks,
        count: None,
        compat_base: req.compat_base,
    };
    let first = load(&config, &plan)?;
    // The first of the check's files with a `gate:` section.
    let mut section = None;
    for p in first.source.paths() {
        section = GateSection::from_check_conf(p)?;
        if section.is_some() {
            break;
        }
    }
    let (cfg, times) = resolve(
        req.flags.clone(),
        req.gate_config,
        section,
        req.against.is_some(),
    )?;
    plan.times = times;
    fits_kind(req, first.kind, cfg.measure)?;
    if first.kind == CheckKind::Exec {
        plan.stacks = false;
    }
    let side = Side {
        config: &config,
        options: &req.options,
    };
    if let Some(against) = req.against {
        // What counts instructions is found before any run, so a machine that has nothing
        // to count with costs no time.
        let counter = plan::counter(&cfg, req.counter, None, None)?;
        plan.count = counter.as_ref();
        return ab(req, cfg, &mut plan, &side, first, against);
    }
    let Some(baseline) = req.baseline else {
        return Err(UsageError::flag("--baseline", "give a baseline file, or --against").into());
    };
    // The baseline is read before the runs, so a missing or unusable one costs no time.
    let wants = baseline::Wants {
        allocations: req.memory,
        stacks: req.stacks,
    };
    let base = match req.update_baseline {
        true => None,
        false => Some(baseline::read_for(baseline, req.name, &cfg, wants)?),
    };
    // Counted as the baseline was, where this machine can.
    let counter = plan::counter(
        &cfg,
        req.counter,
        base.as_ref().and_then(|b| b.instructions_source.as_deref()),
        Some(baseline),
    )?;
    plan.count = counter.as_ref();
    // The timing test must be able to fail: enough processes for the alpha asked for.
    plan.processes = plan::processes(cfg.alpha, base.as_ref().map(|b| (baseline, b)))?;
    plan.times = plan::timed_runs(plan.times, plan.processes);
    let current = measure(&side, &plan, first)?;
    let Some(base) = base else {
        baseline::write(baseline, &current)?;
        return Ok(Ran::BaselineWritten);
    };
    Ok(Ran::Measured {
        cfg,
        base: Box::new(base),
        current: Box::new(current),
        mode: Mode::Baseline,
    })
}

/// `--memory` is for Python checks, `--flamegraph-diff` for checks agentprof runs itself or
/// whose instructions callgrind counts.
fn fits_kind(req: &Request, kind: CheckKind, measure: Measure) -> Result<(), UsageError> {
    let name = req.name;
    if req.memory && kind != CheckKind::Python {
        return Err(UsageError::flag(
            "--memory",
            format!(
                "{name} is not a Python check: --memory compares Python allocations (tracemalloc); RSS is compared for every check"
            ),
        ));
    }
    if req.compat_base && kind != CheckKind::Python {
        return Err(UsageError::flag(
            "--compat-base",
            format!(
                "{name} is not a Python check: --compat-base is for a Python check's base class"
            ),
        ));
    }
    if req.stacks && kind == CheckKind::Exec && measure != Measure::Instructions {
        return Err(UsageError::flag(
            "--flamegraph-diff",
            format!(
                "{name} is an exec plugin: it runs outside agentprof, which takes no stacks of it (with --measure instructions, callgrind's call graph gives them)"
            ),
        ));
    }
    Ok(())
}

/// `--against DIR|REV`: the baseline version's checks directory, or that directory as a git
/// revision has it, run in interleaved rounds with this one.
fn ab(
    req: &Request,
    cfg: GateConfig,
    plan: &mut Plan,
    side: &Side,
    first: LoadedCheck,
    against: &str,
) -> Result<Ran, GateError> {
    let started = std::time::Instant::now();
    let max_time = plan::max_time(req.max_time.unwrap_or(plan::DEFAULT_MAX_TIME))?;
    if first.kind == CheckKind::Builtin {
        return Err(UsageError::flag(
            "--against",
            format!(
                "{} is a built-in check, part of agentprof itself: A/B compares two versions of a plugin's files; gate a built-in with --baseline, or --measure instructions",
                plan.name
            ),
        )
        .into());
    }
    if first.kind == CheckKind::Python
        && !side
            .config
            .checks_path
            .join(format!("{}.py", plan.name))
            .is_file()
    {
        return Err(UsageError::flag(
            "--against",
            format!(
                "{} is an installed integration (datadog_checks.{}), not a file in the checks directory: A/B compares two checks directories",
                plan.name, plan.name
            ),
        )
        .into());
    }
    drop(first);
    let checkout = super::against::Baseline::resolve(against, &side.config.checks_path)?;
    let mut base_config = side.config.clone();
    base_config.checks_path = checkout.checks_dir().to_path_buf();
    // A change that adds the check: the baseline version has none to compare with.
    if !crate::checks::Registry::new(&base_config).has_plugin(plan.name) {
        return Ok(Ran::NoBaseline(Box::new(Verdict::no_baseline(
            plan.name,
            &cfg,
            &checkout.describe(),
        ))));
    }
    let rounds = plan::ab_rounds(cfg.alpha)?;
    plan.processes = rounds;
    let mut base_options = side.options.clone();
    base_options.checks = Some(base_config.checks_path.clone());
    let base_side = Side {
        config: &base_config,
        options: &base_options,
    };
    eprintln!(
        "agentprof: A/B: {} from {} against this tree, {rounds} interleaved rounds",
        plan.name,
        checkout.describe()
    );
    // Timings that cannot tell yet get more rounds, within --max-time (counts are
    // deterministic: their rounds are what was planned).
    let judge = |a: &GateStats, b: &GateStats| {
        compare(a, b, &cfg, Mode::Paired)
            .findings
            .first()
            .is_some_and(|f| f.status == super::Status::CannotTell)
    };
    let extend = (cfg.measure != Measure::Instructions && !max_time.is_zero()).then(|| Extend {
        until: started + max_time,
        max_rounds: plan::MAX_ROUNDS,
        undecided: &judge,
    });
    let (a, b) = measure_ab(&base_side, side, plan, extend.as_ref())?;
    Ok(Ran::Measured {
        cfg,
        base: Box::new(a),
        current: Box::new(b),
        mode: Mode::Paired,
    })
}
