//! Running a check for the gate: timed runs as the Agent runs the check (no profiler, no
//! allocation tracing), spread over fresh loads; then, untimed, the runs that count calls
//! (cProfile), trace allocations (tracemalloc), sample stacks or count instructions. The A/B
//! mode runs two versions of a check in interleaved rounds on the same machine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::checks::PythonHost;
use crate::checks::{CheckKind, LoadedCheck, Registry, Runner};
use crate::config::{AgentConfig, LoadOptions};
use crate::error::UsageError;

use super::GateStats;
use super::error::GateError;
use super::instructions::Counter;

/// Sampling frequency of a built-in check's stacks for `--flamegraph-diff`; those runs are
/// extra runs after the timed ones, so the sampling costs the timings nothing.
const STACK_HZ: u32 = 4999;
const STACK_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// The machine's speed right now for code that does not wait: thread CPU seconds of a fixed
/// integer loop, the median of seven. The gate divides a check's run times by it, so a machine
/// that slowed down as a whole does not look like a slower check. (Python checks time a
/// pure-Python loop in their worker instead.)
pub fn calibrate_native() -> f64 {
    let cpu = thread_cpu_s;
    let mut times = [0.0f64; 7];
    for t in &mut times {
        let t0 = cpu();
        let (mut x, mut acc) = (0x9E37_79B9_7F4A_7C15u64, 0u64);
        for i in 0..1_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            acc = acc.wrapping_add(x ^ i);
        }
        std::hint::black_box(acc);
        *t = cpu() - t0;
    }
    times.sort_by(f64::total_cmp);
    times[3]
}

/// The calling thread's CPU time so far, in seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

type Host = Option<Arc<Mutex<PythonHost>>>;

/// What each kind of check's calibration times.
fn calibration_loop(kind: CheckKind) -> &'static str {
    match kind {
        CheckKind::Python => "python-smallint-30000",
        _ => "native-xorshift-1000000",
    }
}

fn calibrate(kind: CheckKind, host: &Host) -> Option<f64> {
    match host {
        Some(h) if kind == CheckKind::Python => {
            crate::sync::lock_unless_poisoned(h).and_then(|mut h| h.calibrate().ok())
        }
        _ => Some(calibrate_native()),
    }
}

/// `name (file.py:12)` -> `name (file.py)`: a diff of two versions of a check must not see
/// every function below an inserted line as new.
fn without_line(frame: &str) -> std::borrow::Cow<'_, str> {
    if let Some(open) = frame.rfind(" (")
        && let Some(colon) = frame[open..].rfind(':')
        && frame.ends_with(')')
        && frame[open + colon + 1..frame.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return format!("{})", &frame[..open + colon]).into();
    }
    frame.into()
}

/// Folded `stack value` lines, their values in `unit_ns` nanoseconds over `runs` runs, as
/// `stack ns-per-run` lines (frames' line numbers dropped, equal stacks merged).
fn per_run(lines: &[String], unit_ns: f64, runs: usize, strip_lines: bool) -> Vec<String> {
    let mut merged: HashMap<String, f64> = HashMap::new();
    for line in lines {
        let Some((stack, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let key = if strip_lines {
            stack
                .split(';')
                .map(without_line)
                .collect::<Vec<_>>()
                .join(";")
        } else {
            stack.to_string()
        };
        *merged.entry(key).or_default() += v * unit_ns / runs.max(1) as f64;
    }
    prune(&mut merged);
    let mut out: Vec<String> = merged
        .into_iter()
        .filter(|(_, ns)| *ns >= 0.5)
        .map(|(s, ns)| format!("{s} {}", ns.round() as u64))
        .collect();
    out.sort();
    out
}

/// Stacks under 1/5000 of the total go to their caller's stack (its last frame cut), until
/// none is left or they are one frame deep: the baseline stays small (cProfile's caller paths
/// fan out into thousands of tiny stacks) and every frame keeps its width.
fn prune(stacks: &mut HashMap<String, f64>) {
    let floor = stacks.values().sum::<f64>() / 5000.0;
    for _ in 0..256 {
        let small: Vec<String> = stacks
            .iter()
            .filter(|(k, v)| **v < floor && k.contains(';'))
            .map(|(k, _)| k.clone())
            .collect();
        if small.is_empty() {
            break;
        }
        for k in small {
            let Some(v) = stacks.remove(&k) else { continue };
            let parent = k.rsplit_once(';').map_or("", |(p, _)| p).to_string();
            *stacks.entry(parent).or_default() += v;
        }
    }
}

/// What the gate runs.
pub struct Plan<'a> {
    pub name: &'a str,
    /// Timed runs in all (baseline mode), or per side (A/B).
    pub times: u32,
    /// Fresh loads the timed runs are spread over (A/B: rounds, each loading both sides).
    pub processes: u32,
    pub instance: usize,
    /// Python: trace allocations in extra runs (`--memory`).
    pub memory: bool,
    /// Stacks for a differential flamegraph, from extra runs.
    pub stacks: bool,
    /// Count instructions in extra runs under valgrind.
    pub count: Option<&'a Counter>,
    /// Python: time the check on agentprof's compatible AgentCheck when the interpreter has
    /// no importable datadog_checks_base (else that is refused).
    pub compat_base: bool,
}

/// More A/B rounds while `undecided(base, current)` holds, until `until` or `max_rounds`.
pub struct Extend<'a> {
    pub until: std::time::Instant,
    pub max_rounds: u32,
    pub undecided: &'a dyn Fn(&GateStats, &GateStats) -> bool,
}

/// One side of a measurement: where its configuration comes from.
pub struct Side<'a> {
    pub config: &'a AgentConfig,
    pub options: &'a LoadOptions,
}

pub fn load(config: &AgentConfig, plan: &Plan) -> Result<LoadedCheck, GateError> {
    let loaded = Registry::new(config).load(plan.name)?;
    if plan.instance >= loaded.instances.len() {
        return Err(UsageError::flag(
            "--instance",
            format!(
                "{} has {} instance(s)",
                loaded.source,
                loaded.instances.len()
            ),
        )
        .into());
    }
    Ok(loaded)
}

/// The timed runs of one fresh load: warm-up, calibration before and after (baseline mode),
/// `runs` runs with nothing but the runner's own measuring around them.
struct Timed {
    records: Vec<crate::profile::RunRecord>,
    wall: Option<f64>,
    cpu: Option<f64>,
    slope: Option<f64>,
    calibration: Option<f64>,
}

fn timed_load(
    config: &AgentConfig,
    plan: &Plan,
    loaded: LoadedCheck,
    runs: u32,
    calibrated: bool,
    progress: &mut crate::progress::Progress,
) -> Result<Timed, GateError> {
    let kind = loaded.kind;
    let kind_label = kind.label();
    let (mut runner, host, warm) = warmed(config, plan, loaded, None, false)?;
    progress.inc();
    let before = calibrated.then(|| calibrate(kind, &host)).flatten();
    let mut records = Vec::with_capacity(runs as usize);
    for run in 1..=runs {
        records.push(runner.run(0, run));
        progress.inc();
    }
    let after = calibrated.then(|| calibrate(kind, &host)).flatten();
    let (slope, wall, cpu) = load_figures(plan.name, kind_label, &warm, &records, kind.persists());
    Ok(Timed {
        records,
        wall,
        cpu,
        slope,
        calibration: before.zip(after).map(|(a, b)| (a + b) / 2.0),
    })
}

/// The machine's CPU time so far, busy and in all (seconds over all CPUs, from the first
/// line of /proc/stat: stolen time counts as busy, it is other work on the host), and
/// agentprof's own with its reaped children's.
fn machine_time() -> Option<(f64, f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<f64> = line
        .split_whitespace()
        .take(8)
        .map(|x| x.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    if v.len() < 8 {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    if hz <= 0.0 {
        return None;
    }
    // user nice system idle iowait irq softirq steal
    let busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
    let all = busy + (v[3] + v[4]) / hz;
    let own = [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN]
        .iter()
        .map(|who| {
            // SAFETY: getrusage writes into the rusage we own.
            let mut u: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(*who, &mut u) };
            let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            s(u.ru_utime) + s(u.ru_stime)
        })
        .sum();
    Some((busy, all, own))
}

/// The share of the machine's CPU time between `start` and now that was not agentprof's
/// (nor its children's): other work beside the gate. A child is counted when it is reaped,
/// with what it spent before `start` (the first worker's start-up): the share errs low, by a
/// few points over a gate's seconds, never high.
fn others_busy(start: Option<(f64, f64, f64)>) -> Option<f64> {
    let (b0, a0, o0) = start?;
    let (b1, a1, o1) = machine_time()?;
    let all = a1 - a0;
    (all > 0.0).then(|| (((b1 - b0) - (o1 - o0)) / all).clamp(0.0, 1.0))
}

/// Runs the check: `times` timed runs of one instance, spread over `processes` fresh loads
/// (for Python checks, worker processes), each after a warm-up run, with the machine's speed
/// measured before and after each load's runs; then the untimed extra passes.
pub fn measure(side: &Side, plan: &Plan, first: LoadedCheck) -> Result<GateStats, GateError> {
    let processes = plan.processes.min(plan.times).max(1);
    let per = plan.times.div_ceil(processes);
    let kind = first.kind;
    let steps = per * processes + processes;
    let mut progress = crate::progress::Progress::new(u64::from(steps), &format!("{}:", plan.name));
    let mut stats = GateStats::empty(plan.name, kind.label());
    let mut records = Vec::with_capacity((per * processes) as usize);
    let mut next = Some(first);
    let started = machine_time();
    for _ in 0..processes {
        let loaded = match next.take() {
            Some(l) => l,
            None => load(side.config, plan)?,
        };
        let t = timed_load(side.config, plan, loaded, per, true, &mut progress)?;
        add_load(&mut stats, &t);
        stats.calibration_s.extend(t.calibration);
        records.extend(t.records);
    }
    progress.finish();
    stats.others_busy = others_busy(started);
    stats.absorb_records(&records);
    stats.calibration_loop = Some(calibration_loop(kind).to_string());
    extra_passes(side, plan, kind, per, &mut stats)?;
    Ok(stats)
}

fn add_load(stats: &mut GateStats, t: &Timed) {
    stats.wall_process_medians.extend(t.wall);
    stats.cpu_process_medians.extend(t.cpu);
    stats.rss_slope_per_process.extend(t.slope);
}

/// A/B: `plan.processes` rounds, each loading both versions fresh (A first, or B first,
/// alternately) and timing `per` runs of each, one of A then one of B (or B then A,
/// alternately), so that neither the order of loading nor a machine speeding up or slowing
/// down within a round favours one. Round i's medians of both sides are at index i of their
/// process medians: the pairs the verdict compares. `plan.processes` rounds run, then more
/// while `extend` says the answer is not told yet.
pub fn measure_ab(
    a: &Side,
    b: &Side,
    plan: &Plan,
    extend: Option<&Extend>,
) -> Result<(GateStats, GateStats), GateError> {
    let rounds = plan.processes.max(1);
    let per = plan.times.div_ceil(rounds).max(5);
    let first_a = load(a.config, plan)?;
    let kind = first_a.kind;
    let first_b = load(b.config, plan)?;
    same_kind(plan.name, kind, first_b.kind)?;
    let steps = 2 * (per + 1) * rounds;
    let mut progress =
        crate::progress::Progress::new(u64::from(steps), &format!("{} A/B:", plan.name));
    let started = std::time::Instant::now();
    let mut stats = [
        GateStats::empty(plan.name, kind.label()),
        GateStats::empty(plan.name, kind.label()),
    ];
    let mut records: [Vec<crate::profile::RunRecord>; 2] = [Vec::new(), Vec::new()];
    let mut firsts = [Some(first_a), Some(first_b)];
    let sides = [a, b];
    let mut round = 0;
    loop {
        if round >= rounds {
            // The planned rounds are done: more while the answer is not told and a round
            // (as long as the rounds so far took, on average) fits in the time left.
            let Some(x) = extend else { break };
            let per_round = started.elapsed() / round.max(1);
            let fits = std::time::Instant::now() + per_round <= x.until;
            if round >= x.max_rounds || !fits || !(x.undecided)(&stats[0], &stats[1]) {
                break;
            }
            if round == rounds {
                progress.println(&format!(
                    "agentprof: A/B: {rounds} rounds could not tell yet; adding rounds until they can (--max-time)"
                ));
            }
            progress.extend(u64::from(2 * (per + 1)));
        }
        // Both versions loaded and warmed, then their runs alternate one by one (A B B A …):
        // a machine whose speed moves while the round runs moves both sides alike. Which is
        // loaded first alternates too: the version loaded second ran 3–8 % faster than the
        // same check loaded first (the same check on both sides read −4.7 %, interval
        // 0.930–0.974, over 83 rounds that always loaded A first).
        let load_order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut live = Vec::with_capacity(2);
        for s in load_order {
            let loaded = match firsts[s].take() {
                Some(l) => l,
                None => load(sides[s].config, plan)?,
            };
            live.push(warmed(sides[s].config, plan, loaded, None, false)?);
            progress.inc();
        }
        if load_order[0] == 1 {
            live.swap(0, 1);
        }
        let mut runs: [Vec<crate::profile::RunRecord>; 2] = [Vec::new(), Vec::new()];
        for i in 0..per {
            let order = if (i + round) % 2 == 0 { [0, 1] } else { [1, 0] };
            for s in order {
                runs[s].push(live[s].0.run(0, i + 1));
                progress.inc();
            }
        }
        for (s, ((_, _, warm), timed)) in live.iter().zip(runs).enumerate() {
            let (slope, wall, cpu) =
                load_figures(plan.name, kind.label(), warm, &timed, kind.persists());
            if wall.is_none() || cpu.is_none() {
                return Err(GateError::RoundFailed {
                    check: plan.name.to_string(),
                    round: round + 1,
                    side: if s == 0 {
                        "A (--against)"
                    } else {
                        "B (this tree)"
                    },
                });
            }
            let t = Timed {
                records: timed,
                wall,
                cpu,
                slope,
                calibration: None,
            };
            add_load(&mut stats[s], &t);
            records[s].extend(t.records);
        }
        round += 1;
    }
    progress.finish();
    let [mut sa, mut sb] = stats;
    sa.absorb_records(&records[0]);
    sb.absorb_records(&records[1]);
    extra_passes(a, plan, kind, per, &mut sa)?;
    extra_passes(b, plan, kind, per, &mut sb)?;
    Ok((sa, sb))
}

/// A/B compares two versions of one kind of check: an error for a check that changed kind.
fn same_kind(name: &str, there: CheckKind, here: CheckKind) -> Result<(), UsageError> {
    if there == here {
        return Ok(());
    }
    Err(UsageError::flag(
        "--against",
        format!(
            "{name} is a {} check there and a {} check here: A/B compares two versions of one kind",
            there.label(),
            here.label()
        ),
    ))
}

/// The untimed passes, each on a fresh load: cProfile's call counts and stacks (Python),
/// tracemalloc's traced bytes (`--memory`), sampled stacks (built-ins), instruction counts.
fn extra_passes(
    side: &Side,
    plan: &Plan,
    kind: CheckKind,
    per: u32,
    stats: &mut GateStats,
) -> Result<(), GateError> {
    let runs = per.max(3);
    if kind == CheckKind::Python {
        let loaded = load(side.config, plan)?;
        let (mut runner, host, _) = warmed(side.config, plan, loaded, Some(1000), false)?;
        let ok = (1..=runs)
            .filter(|&run| runner.run(0, run).error.is_none())
            .count();
        if let Some(p) = host.as_ref().and_then(|h| {
            crate::sync::lock_unless_poisoned(h).and_then(|mut h| h.pstats(20, false).ok())
        }) {
            let n = ok.max(1) as f64;
            stats.python_calls_per_run = Some(p.total_calls as f64 / n);
            stats.python_top = super::measured::top_calls(&p, n);
        }
        if plan.stacks {
            let mut progress =
                crate::progress::Progress::new(u64::from(per), &format!("{}: stacks", plan.name));
            if let Some(s) = python_sampled_stacks(side.config, plan, per, &mut progress)? {
                stats.stacks_ns_per_run = s;
            }
            progress.finish();
        }
    }
    if plan.memory {
        let loaded = load(side.config, plan)?;
        let (mut runner, _, _) = warmed(side.config, plan, loaded, None, true)?;
        let records: Vec<_> = (1..=runs).map(|run| runner.run(0, run)).collect();
        stats.absorb_traced(&records);
    }
    if plan.stacks && kind == CheckKind::Builtin {
        let mut progress =
            crate::progress::Progress::new(u64::from(per), &format!("{}: stacks", plan.name));
        if let Some(s) = sampled_stacks(side.config, plan, per, &mut progress)? {
            stats.stacks_ns_per_run = s;
        }
        progress.finish();
    }
    if let Some(counter) = plan.count {
        // Eight counted runs at least: the mean's own uncertainty is part of the verdict.
        let runs = runs.max(8);
        let loaded = load(side.config, plan)?;
        let mut progress = crate::progress::Progress::new(
            u64::from(runs) + 1,
            &format!("{}: counting instructions under valgrind", plan.name),
        );
        let counts = super::instructions::count(
            counter,
            side.options,
            loaded,
            plan.instance,
            runs,
            &mut progress,
        )?;
        progress.finish();
        stats.instructions_per_run = counts.per_run;
        stats.instructions_by_function = counts.by_function;
        stats.cache_hits_per_run = counts.cache_per_run;
        stats.instruction_stacks_per_run = counts.stacks;
        stats.instructions_source = Some(counter.source());
    }
    Ok(())
}

/// One load's figures: the slope of its RSS after each run (the warm-up's first), and the
/// medians of its timed runs' wall and CPU time.
fn load_figures(
    name: &str,
    kind_label: &str,
    warm: &crate::profile::RunRecord,
    timed: &[crate::profile::RunRecord],
    persists: bool,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let mine = GateStats::from_records(name, kind_label, timed);
    let runs: Vec<&crate::profile::RunRecord> = std::iter::once(warm).chain(timed).collect();
    let rss = crate::profile::leak::rss_series(&runs, persists);
    (
        crate::gate::stats::slope(&rss),
        crate::gate::stats::median(&mine.wall_s),
        crate::gate::stats::median(&mine.cpu_s),
    )
}

/// The warm-up run (`Runner::warm_up`), which must succeed, as must the reset of the Python
/// host's statistics: call counts and stacks are of the timed runs.
fn warm_up(
    runner: &mut Runner,
    host: &Option<Arc<Mutex<PythonHost>>>,
    name: &str,
) -> Result<crate::profile::RunRecord, GateError> {
    let (warm, reset) = runner.warm_up(host.as_ref());
    let warm = warm
        .into_iter()
        .next()
        .ok_or_else(|| GateError::NoInstance {
            check: name.to_string(),
        })?;
    if let Some(e) = &warm.error {
        return Err(GateError::WarmUp {
            check: name.to_string(),
            why: e.to_string(),
        });
    }
    reset.map_err(|e| GateError::Worker {
        check: name.to_string(),
        why: e.to_string(),
    })?;
    Ok(warm)
}

/// A runner of `loaded` (its Python worker started), sampled at `profile_hz` (cProfile for
/// Python) or tracing allocations with `memory`, after its warm-up run.
fn warmed(
    config: &AgentConfig,
    plan: &Plan,
    loaded: LoadedCheck,
    profile_hz: Option<u32>,
    memory: bool,
) -> Result<(Runner, Host, crate::profile::RunRecord), GateError> {
    let host = loaded.python.clone();
    if let Some(h) = &host {
        crate::checks::start_python(h)?;
        let worker = crate::sync::lock(h);
        let on_compat = worker
            .loaded
            .as_ref()
            .is_some_and(|l| l.base == crate::checks::COMPAT_BASE);
        if !plan.compat_base && on_compat {
            let python = worker.interpreter().to_string();
            return Err(UsageError::flag(
                "--python",
                format!(
                    "{python} has no importable datadog_checks_base, so {} would be timed on agentprof's compatible AgentCheck, not the base class the Agent runs it on. Install it: {python} -m pip install \"datadog-checks-base[deps]\" (or give --compat-base to gate on agentprof's)",
                    plan.name
                ),
            )
            .into());
        }
    }
    let mut runner =
        Runner::new(loaded, config, Some(plan.instance), profile_hz, memory).without_memory_lines();
    let warm = warm_up(&mut runner, &host, plan.name)?;
    Ok((runner, host, warm))
}

/// A built-in check's stacks per run: a fresh load sampled at STACK_HZ over at least `per`
/// runs and about half a second (built-ins run for microseconds).
fn sampled_stacks(
    config: &AgentConfig,
    plan: &Plan,
    per: u32,
    progress: &mut crate::progress::Progress,
) -> Result<Option<Vec<String>>, GateError> {
    let mut sampled = Runner::new(
        load(config, plan)?,
        config,
        Some(plan.instance),
        Some(STACK_HZ),
        false,
    );
    let ok = runs_for_stacks(&mut sampled, per, progress);
    Ok(sampled.finish_profile().map(|(profile, _)| {
        let lines = crate::profile::folded(&profile);
        per_run(&lines, 1e9 / f64::from(STACK_HZ), ok, false)
    }))
}

/// A Python check's stacks per run: a fresh load whose runs are sampled (wall time, read
/// from outside the worker where it can be), at least `per` runs and about `STACK_TIME`.
fn python_sampled_stacks(
    config: &AgentConfig,
    plan: &Plan,
    per: u32,
    progress: &mut crate::progress::Progress,
) -> Result<Option<Vec<String>>, GateError> {
    let loaded = load(config, plan)?;
    if let Some(h) = &loaded.python {
        crate::sync::lock(h).set_profiler(crate::checks::Profiler::Sample {
            hz: PYTHON_STACK_HZ,
        });
    }
    let (mut runner, host, _) = warmed(config, plan, loaded, Some(PYTHON_STACK_HZ), false)?;
    let ok = runs_for_stacks(&mut runner, per, progress);
    Ok(host.as_ref().and_then(|h| {
        let h = crate::sync::lock_unless_poisoned(h)?;
        let lines = h.samples()?.folded();
        Some(per_run(&lines, 1.0, ok, true))
    }))
}

/// Runs the first instance at least `per` times and for about `STACK_TIME`; how many runs
/// succeeded.
fn runs_for_stacks(
    runner: &mut Runner,
    per: u32,
    progress: &mut crate::progress::Progress,
) -> usize {
    let (mut ok, started) = (0, std::time::Instant::now());
    for run in 1..=100_000 {
        ok += usize::from(runner.run(0, run).error.is_none());
        if run == per {
            (0..per).for_each(|_| progress.inc());
        }
        if run >= per && started.elapsed() > STACK_TIME {
            break;
        }
    }
    ok
}

/// How often a Python check's untimed runs are sampled for `--flamegraph-diff`.
const PYTHON_STACK_HZ: u32 = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_become_nanoseconds_per_run_without_line_numbers() {
        let lines = vec![
            "<module> (work.py:3);check (work.py:10);_noop (work.py:20) 30".to_string(),
            "<module> (work.py:3);check (work.py:11);_noop (work.py:21) 10".to_string(),
            "<built-in method len> 4".to_string(),
        ];
        let out = per_run(&lines, 1e3, 2, true);
        assert_eq!(
            out,
            vec![
                "<built-in method len> 2000".to_string(),
                "<module> (work.py);check (work.py);_noop (work.py) 20000".to_string(),
            ]
        );
        assert_eq!(without_line("f (a:b.py:x)"), "f (a:b.py:x)");
        assert!(calibrate_native() > 0.0);
    }

    /// The machine's busy time, read off /proc/stat (in ticks), holds a spin of 0.3 s of this
    /// thread's CPU less a tick or two, as does agentprof's own (getrusage); the share left to
    /// others is a share. (Not busy ≥ own: own counts children when they are reaped, with CPU
    /// they spent before the interval.)
    #[cfg(target_os = "linux")]
    #[test]
    fn the_machines_busy_time_holds_agentprofs_own() {
        let start = machine_time().expect("/proc/stat");
        // 0.3 s of this thread's CPU, however busy the machine (at most a minute of waiting).
        let thread_cpu = thread_cpu_s;
        let (t0, wall) = (thread_cpu(), std::time::Instant::now());
        let mut x = 0u64;
        while thread_cpu() - t0 < 0.3 && wall.elapsed() < std::time::Duration::from_secs(60) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let end = machine_time().expect("/proc/stat");
        let (busy, spun) = (end.0 - start.0, thread_cpu() - t0);
        assert!(spun >= 0.3, "this thread's CPU {spun}");
        assert!(busy >= spun - 0.05, "busy {busy} < this thread's {spun}");
        assert!(
            end.2 - start.2 >= spun - 0.01,
            "agentprof's own holds this thread's"
        );
        let share = others_busy(Some(start)).expect("a share");
        assert!((0.0..=1.0).contains(&share), "{share}");
    }
}
