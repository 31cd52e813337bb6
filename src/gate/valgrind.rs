//! Instruction counts under valgrind's callgrind, where the kernel offers no hardware
//! counter (see `instructions.rs`):
//! - built-ins: agentprof itself runs under callgrind, in a child mode that loads the check
//!   and brackets each run's call (on its one thread) with client requests, so none of the
//!   runner's own measuring is counted;
//! - Python checks: the worker runs under callgrind and brackets `check.run()` the same way
//!   (host.py), so the worker's start, imports and replies are not counted;
//! - exec plugins: each run's whole process tree runs under callgrind.
//!
//! Client requests are valgrind's documented interface: a fixed instruction sequence that
//! does nothing natively and that valgrind intercepts. Each bracket dumps the counts to a file
//! of its own; the first bracket is an empty one, whose count (the bracket's own cost, a few
//! thousand instructions) is taken off each run's.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::callgrind::{self, CacheHits, CallGraph, FunctionCost};
use super::counted::{COUNT_TIMEOUT, CountError, Counted, ScratchDir, WARM_UPS};
use super::error::GateError;
use crate::checks::stdout_of;
use crate::checks::{CheckKind, LoadedCheck, Runnable};
use crate::config::{AgentConfig, LoadOptions};
use crate::progress::Progress;

/// The environment variable that starts agentprof in its counting child mode: its value is
/// the [`ChildSpec`] as JSON.
pub const CHILD_ENV: &str = "AGENTPROF_COUNT_CHILD";

/// Callgrind's client requests (valgrind/callgrind.h): VG_USERREQ_TOOL_BASE('C', 'T') + n.
const CALLGRIND: u64 = 0x4354_0000;
const DUMP_STATS: u64 = CALLGRIND;
const TOGGLE_COLLECT: u64 = CALLGRIND + 2;
const START_INSTRUMENTATION: u64 = CALLGRIND + 4;
/// valgrind.h's VG_USERREQ__RUNNING_ON_VALGRIND: how many valgrinds deep (0 natively).
const RUNNING_ON_VALGRIND: u64 = 0x1001;

/// One client request: its answer, or 0 when not running under valgrind.
#[cfg(target_arch = "x86_64")]
fn client_request(request: u64) -> u64 {
    let args: [u64; 6] = [request, 0, 0, 0, 0, 0];
    let mut answer: u64 = 0;
    // SAFETY: valgrind's "special instruction preamble" (four rotations of rdi by 128 bits
    // in all, which leave it as it was) and `xchg rbx, rbx` (which changes nothing). Natively
    // they only spend cycles; under valgrind they hand `args` to it, which reads the six
    // words and writes its answer to rdx. rdi is declared clobbered; memory is read.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") answer,
            inout("rdi") 0u64 => _,
            options(nostack, preserves_flags),
        );
    }
    answer
}

#[cfg(not(target_arch = "x86_64"))]
fn client_request(_request: u64) -> u64 {
    0
}

/// valgrind and its arguments: callgrind writing `DIR/cg.PID[.N]`, following children
/// (an interpreter started through a wrapper script, a plugin's own children); with
/// `bracketed`, nothing counted or instrumented until the client requests say so.
fn command(dir: &Path, bracketed: bool) -> Vec<String> {
    let mut v = vec![
        "valgrind".to_string(),
        "--tool=callgrind".into(),
        "-q".into(),
        "--trace-children=yes".into(),
        // Where each access was served (L1, last level, memory), for estimated cycles,
        // in caches of one size on every machine (32 KiB L1s, an 8 MiB last level), so
        // that a baseline made on one runner compares with another's counts.
        "--cache-sim=yes".into(),
        "--I1=32768,8,64".into(),
        "--D1=32768,8,64".into(),
        "--LL=8388608,16,64".into(),
        format!("--callgrind-out-file={}/cg.%p", dir.display()),
    ];
    if bracketed {
        v.push("--collect-atstart=no".into());
        v.push("--instr-atstart=no".into());
    }
    v
}

/// What the counting child needs to load the check as the gate did.
#[derive(Debug, Serialize, Deserialize)]
struct ChildSpec {
    options: LoadOptions,
    name: String,
    instance: usize,
    runs: u32,
}

/// Counts under valgrind (see the module's documentation).
pub(super) fn count(
    opts: &LoadOptions,
    loaded: LoadedCheck,
    instance: usize,
    runs: u32,
    progress: &mut Progress,
) -> Result<Counted, CountError> {
    let dir = ScratchDir::new().map_err(|e| CountError::io("a scratch directory", e))?;
    match loaded.kind {
        CheckKind::Builtin => {
            let spec = ChildSpec {
                options: opts.clone(),
                name: loaded.name.clone(),
                instance,
                runs,
            };
            let argv = command(dir.path(), true);
            let exe =
                std::env::current_exe().map_err(|e| CountError::io("agentprof's own path", e))?;
            let spec = serde_json::to_string(&spec)
                .map_err(|e| CountError::check(&loaded.name, e.to_string()))?;
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]).arg(exe).env(CHILD_ENV, spec);
            stdout_of(&mut cmd, &[], COUNT_TIMEOUT).map_err(|e| {
                CountError::check(&loaded.name, format!("counting under valgrind: {e}"))
            })?;
            progress.set(u64::from(runs) + 1);
            per_run(dumps_of(dir.path(), None)?, runs)
        }
        CheckKind::Python => count_python(dir.path(), loaded, instance, runs, progress),
        CheckKind::Exec => count_exec(dir.path(), loaded, instance, runs, progress),
    }
}

fn count_python(
    dir: &Path,
    loaded: LoadedCheck,
    instance: usize,
    runs: u32,
    progress: &mut Progress,
) -> Result<Counted, CountError> {
    let host = loaded
        .python
        .clone()
        .ok_or_else(|| CountError::check(&loaded.name, "no Python worker"))?;
    let mut h = crate::sync::lock_unless_poisoned(&host)
        .ok_or_else(|| CountError::check(&loaded.name, "the Python worker is unusable"))?;
    // The same hash seed in every counted worker: Python's string hashing moves dict and set
    // layouts, and with them the instructions a run takes.
    let mut wrapper = vec!["env".to_string(), "PYTHONHASHSEED=0".to_string()];
    wrapper.extend(command(dir, true));
    // The interpreter's own executable, past wrapper scripts (pyenv's shims): valgrind then
    // follows one exec, not the shell script's dozens of processes.
    if let Ok(out) = stdout_of(
        Command::new(h.interpreter()).args(["-c", "import sys; print(sys.executable)"]),
        &[],
        Duration::from_secs(30),
    ) {
        let exe = String::from_utf8_lossy(&out).trim().to_string();
        if !exe.is_empty() && Path::new(&exe).is_file() {
            h.set_interpreter(exe);
        }
    }
    h.run_under(wrapper);
    h.count_start()
        .map_err(|e| CountError::check(&loaded.name, format!("counting under valgrind: {e}")))?;
    let pid = h.worker_pid();
    for run in 1..=runs + WARM_UPS {
        let r = h.run_counted(instance, COUNT_TIMEOUT, crate::checks::Counting::Valgrind);
        if let Err(e) = r {
            return Err(CountError::run_failed(&loaded.name, run, &e));
        }
        progress.inc();
    }
    h.run_under(Vec::new());
    drop(h);
    per_run(dumps_of(dir, pid)?, runs)
}

fn count_exec(
    dir: &Path,
    loaded: LoadedCheck,
    instance: usize,
    runs: u32,
    progress: &mut Progress,
) -> Result<Counted, CountError> {
    let name = loaded.name.clone();
    let Some((_, Runnable::External(check))) = loaded.instances.into_iter().nth(instance) else {
        return Err(CountError::check(&name, format!("no instance {instance}")));
    };
    let inv = check
        .invocation()
        .ok_or_else(|| CountError::check(&name, "not one program per run"))?;
    let mut out = Vec::new();
    let mut functions = Vec::new();
    let mut cache = Vec::new();
    let mut graph = CallGraph::default();
    for run in 1..=runs + WARM_UPS {
        let sub = dir.join(format!("run{run}"));
        std::fs::create_dir_all(&sub).map_err(|e| CountError::io("a scratch directory", e))?;
        let argv = command(&sub, false);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).arg(&inv.program).args(&inv.args);
        let stdin = inv.stdin.clone();
        stdout_of(&mut cmd, &stdin, COUNT_TIMEOUT)
            .map_err(|e| CountError::check(&name, format!("run {run} under valgrind: {e}")))?;
        // Every process of the run's tree.
        let dumps = summaries(&sub)?;
        if run > WARM_UPS {
            out.push(dumps.iter().map(|d| d.total).sum());
            let mut hits = CacheHits::default();
            let mut simulated = true;
            for d in &dumps {
                match &d.cache {
                    Some(c) => hits.add(c),
                    None => simulated = false,
                }
            }
            if simulated {
                cache.push(hits);
            }
            for d in &dumps {
                graph.add(&d.graph);
            }
            functions.extend(dumps.into_iter().map(|d| d.functions));
        }
        progress.inc();
    }
    // Cache hits only when every counted run had them.
    if cache.len() != out.len() {
        cache.clear();
    }
    Ok(Counted {
        per_run: out,
        by_function: callgrind::per_run(&functions, runs as usize),
        cache_per_run: cache,
        stacks: callgrind::fold(&graph, runs as usize),
    })
}

/// The counting child (agentprof under callgrind, [`CHILD_ENV`] set): loads the check,
/// then brackets an empty call, the warm-up run and each counted run. Its exit status: 0,
/// 1 when a run failed (said on stderr), 2 when the check could not be loaded.
pub fn child(spec: &str) -> u8 {
    match child_runs(spec) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agentprof: {e}");
            if matches!(e, GateError::Usage(_)) {
                2
            } else {
                1
            }
        }
    }
}

fn child_runs(spec: &str) -> Result<(), GateError> {
    let spec: ChildSpec = serde_json::from_str(spec)
        .map_err(|e| CountError::check("the counting child", format!("its request: {e}")))?;
    let config = AgentConfig::load(&spec.options)?;
    let loaded = crate::checks::Registry::new(&config).load(&spec.name)?;
    let Some((_, Runnable::InProcess(mut check))) = loaded.instances.into_iter().nth(spec.instance)
    else {
        let what = format!("instance {} is not a built-in's", spec.instance);
        return Err(CountError::check(&spec.name, what).into());
    };
    if client_request(RUNNING_ON_VALGRIND) == 0 {
        return Err(CountError::check(&spec.name, "not running under valgrind").into());
    }
    client_request(START_INSTRUMENTATION);
    bracket(|| ());
    for run in 1..=spec.runs + WARM_UPS {
        let mut sink = crate::metrics::Sink::default();
        bracket(|| check.run(&mut sink))
            .map_err(|e| CountError::run_failed(&spec.name, run, &e))?;
    }
    Ok(())
}

/// `work`, with callgrind collecting only while it runs; its counts dumped after.
fn bracket<T>(work: impl FnOnce() -> T) -> T {
    client_request(TOGGLE_COLLECT);
    let out = std::hint::black_box(work());
    client_request(TOGGLE_COLLECT);
    client_request(DUMP_STATS);
    out
}

/// The dumps of a bracketed process (the overhead bracket, the warm-ups, the counted runs)
/// made into counts per counted run, each less the overhead, and the counted runs'
/// functions.
fn per_run(dumps: Vec<Dump>, runs: u32) -> Result<Counted, CountError> {
    let want = (runs + WARM_UPS) as usize + 1;
    if dumps.len() != want {
        return Err(CountError::Files(format!(
            "callgrind wrote {} counts where {want} were expected (an empty bracket, {WARM_UPS} warm-ups and {runs} runs)",
            dumps.len()
        )));
    }
    let overhead = dumps[0].total;
    let overhead_cache = dumps[0].cache;
    let counted = &dumps[1 + WARM_UPS as usize..];
    let functions: Vec<_> = counted.iter().map(|d| d.functions.clone()).collect();
    let mut graph = CallGraph::default();
    for d in counted {
        graph.add(&d.graph);
    }
    Ok(Counted {
        per_run: counted
            .iter()
            .map(|d| (d.total - overhead).max(0.0))
            .collect(),
        by_function: callgrind::per_run(&functions, counted.len()),
        cache_per_run: match overhead_cache {
            Some(o) => counted
                .iter()
                .map_while(|d| d.cache.map(|c| c.less(&o)))
                .collect(),
            None => Vec::new(),
        },
        stacks: callgrind::fold(&graph, counted.len()),
    })
}

/// The numbered dumps (`cg.PID.N`, N from 1) of the one process that made them (or of
/// `pid`), in order.
fn dumps_of(dir: &Path, pid: Option<u32>) -> Result<Vec<Dump>, CountError> {
    let mut numbered: Vec<(u32, Dump)> = summaries(dir)?
        .into_iter()
        .filter(|d| pid.is_none_or(|want| d.pid == want))
        .filter_map(|d| Some((d.part?, d)))
        .collect();
    let pids: std::collections::BTreeSet<u32> = numbered.iter().map(|x| x.1.pid).collect();
    if pids.len() > 1 {
        return Err(CountError::Files(format!(
            "callgrind counts came from {} processes, not one",
            pids.len()
        )));
    }
    numbered.sort_by_key(|x| x.0);
    Ok(numbered.into_iter().map(|x| x.1).collect())
}

/// One callgrind file: its process, its dump number (`cg.PID.N`), its instructions, each
/// function's, and its cache hits (when simulated).
struct Dump {
    pid: u32,
    part: Option<u32>,
    total: f64,
    functions: std::collections::HashMap<String, FunctionCost>,
    cache: Option<CacheHits>,
    graph: CallGraph,
}

/// Every callgrind file in `dir`, each read once.
fn summaries(dir: &Path) -> Result<Vec<Dump>, CountError> {
    let io = |e| CountError::io(&format!("callgrind's files in {}", dir.display()), e);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(rest) = name.strip_prefix("cg.") else {
            continue;
        };
        let (pid, part) = match rest.split_once('.') {
            Some((p, n)) => (p.parse().ok(), n.parse().ok()),
            None => (rest.parse().ok(), None),
        };
        let Some(pid) = pid else { continue };
        match read_dump(&path) {
            Ok((total, functions, cache, graph)) => out.push(Dump {
                pid,
                part,
                total,
                functions,
                cache,
                graph,
            }),
            // A process killed while it wrote its last, unnumbered file (a worker stopped
            // after its runs) left it unfinished; its counts were dumped already.
            Err(_) if part.is_none() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// What one callgrind file holds: its instructions, each function's, its cache hits.
type DumpCounts = (
    f64,
    std::collections::HashMap<String, FunctionCost>,
    Option<CacheHits>,
    CallGraph,
);

/// A callgrind file's `summary:` (or `totals:`) line, its instructions (Ir), its functions'
/// costs and its cache hits.
fn read_dump(path: &Path) -> Result<DumpCounts, CountError> {
    let text = crate::config::read_limited(path, 256 << 20, "")
        .map_err(|e| CountError::Files(e.to_string()))?;
    let text = String::from_utf8_lossy(&text);
    let total = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .ok_or_else(|| CountError::Files(format!("{}: no summary line", path.display())))?;
    let graph = callgrind::call_graph(&text);
    Ok((
        total,
        graph.functions(),
        callgrind::cache_hits(&text),
        graph,
    ))
}
