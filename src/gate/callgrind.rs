//! What each function's instructions were in callgrind's files (`gate --measure
//! instructions` counted by valgrind), and how they changed between two sides: the "why" of
//! an instruction-count regression, as `callgrind_annotate` would show it per function.
//!
//! A callgrind file (its documented format, `callgrind-format`) names each function once
//! (`fn=(id) name`, later `fn=(id)`), then lists cost lines (`position Ir`): a function's own
//! cost is the sum of its cost lines, and the cost line after a `calls=` line is the
//! inclusive cost of that call, added to the caller's inclusive cost only.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// A function's instructions per run: its own and with what it called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCost {
    pub own: f64,
    pub inclusive: f64,
}

/// Where a run's memory accesses were served, from callgrind's cache simulation
/// (`--cache-sim=yes`): instruction fetches and data reads and writes that hit the first-level
/// caches, the last-level cache, or went to memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheHits {
    pub l1: f64,
    pub ll: f64,
    pub ram: f64,
}

impl CacheHits {
    /// Cycles as Gungraun (iai-callgrind) estimates them: an L1 hit 1, an LL hit 5, a memory
    /// access 35.
    pub fn estimated_cycles(&self) -> f64 {
        self.l1 + 5.0 * self.ll + 35.0 * self.ram
    }

    /// `self` less `other`, each at least 0 (a run's less the empty bracket's).
    pub fn less(&self, other: &CacheHits) -> CacheHits {
        CacheHits {
            l1: (self.l1 - other.l1).max(0.0),
            ll: (self.ll - other.ll).max(0.0),
            ram: (self.ram - other.ram).max(0.0),
        }
    }

    pub fn add(&mut self, other: &CacheHits) {
        self.l1 += other.l1;
        self.ll += other.ll;
        self.ram += other.ram;
    }
}

/// The cache hits of a callgrind file's `events:` and `summary:` (or `totals:`) lines; None
/// when it was written without the cache simulation.
pub fn cache_hits(text: &str) -> Option<CacheHits> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))?
        .split_whitespace()
        .collect();
    let totals: Vec<f64> = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })?
        .split_whitespace()
        .map(|v| v.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    // A file may leave out trailing events that are 0.
    let get = |name: &str| -> Option<f64> {
        let at = events.iter().position(|e| *e == name)?;
        Some(totals.get(at).copied().unwrap_or(0.0))
    };
    let accesses = get("Ir")? + get("Dr")? + get("Dw")?;
    let l1_misses = get("I1mr")? + get("D1mr")? + get("D1mw")?;
    let ll_misses = get("ILmr")? + get("DLmr")? + get("DLmw")?;
    Some(CacheHits {
        l1: (accesses - l1_misses).max(0.0),
        ll: (l1_misses - ll_misses).max(0.0),
        ram: ll_misses,
    })
}

/// Each function's own instructions and each call edge's inclusive instructions (caller,
/// callee) in one callgrind file: the call graph a flamegraph of instructions is folded from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallGraph {
    pub own: HashMap<String, f64>,
    pub calls: HashMap<(String, String), f64>,
}

impl CallGraph {
    /// Per function name (functions of one name in several objects summed): its own and
    /// inclusive instructions (its own and its calls', recursive ones included).
    pub fn functions(&self) -> HashMap<String, FunctionCost> {
        let mut out: HashMap<String, FunctionCost> = HashMap::new();
        for (f, c) in &self.own {
            let cost = out.entry(f.clone()).or_default();
            cost.own += c;
            cost.inclusive += c;
        }
        for ((f, _), c) in &self.calls {
            out.entry(f.clone()).or_default().inclusive += c;
        }
        out
    }

    /// `other`'s costs added to these.
    pub fn add(&mut self, other: &CallGraph) {
        for (f, c) in &other.own {
            *self.own.entry(f.clone()).or_default() += c;
        }
        for (e, c) in &other.calls {
            *self.calls.entry(e.clone()).or_default() += c;
        }
    }
}

/// The call graph of a callgrind file (the module's reading of the format: the cost line
/// after a `calls=` line is the inclusive cost of those calls to the last `cfn=`). Lines it
/// cannot read are skipped.
pub fn call_graph(text: &str) -> CallGraph {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut g = CallGraph::default();
    let mut positions = 1;
    let mut current: Option<&str> = None;
    let mut callee: Option<&str> = None;
    let mut after_call = false;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("positions:") {
            positions = p.split_whitespace().count().max(1);
        } else if let Some(spec) = line.strip_prefix("fn=") {
            current = resolve(&mut names, spec.trim());
            after_call = false;
        } else if let Some(spec) = line.strip_prefix("cfn=") {
            callee = resolve(&mut names, spec.trim());
        } else if line.starts_with("calls=") {
            after_call = true;
        } else if line
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'*'))
        {
            let ir = line
                .split_whitespace()
                .nth(positions)
                .and_then(|v| v.parse::<u64>().ok());
            if let (Some(f), Some(ir)) = (current, ir) {
                let ir = ir as f64;
                if after_call {
                    // A call with no `cfn=` before it is counted as the function's own call.
                    let to = callee.unwrap_or(f);
                    *g.calls.entry((f.to_string(), to.to_string())).or_default() += ir;
                } else {
                    *g.own.entry(f.to_string()).or_default() += ir;
                }
            }
            after_call = false;
        }
    }
    g
}

/// A call graph folded into stacks (`root;…;leaf N`, N instructions per run over `runs`):
/// from each function nothing calls (or whose cost its callers do not account for), each
/// call edge's inclusive cost followed down,
/// each function's own cost shared among its calls in proportion to what each brought it —
/// the usual reading of a call graph that does not keep whole stacks (as gprof's). A
/// recursive call is not followed again on its own path; frames under 1/2000 of the
/// total are left out; at most 64 frames deep.
pub fn fold(g: &CallGraph, runs: usize) -> Vec<String> {
    let n = runs.max(1) as f64;
    let mut incoming: HashMap<&str, f64> = HashMap::new();
    let mut out_edges: HashMap<&str, Vec<(&str, f64)>> = HashMap::new();
    for ((from, to), c) in &g.calls {
        if from != to {
            *incoming.entry(to.as_str()).or_default() += c;
            out_edges
                .entry(from.as_str())
                .or_default()
                .push((to.as_str(), *c));
        }
    }
    for v in out_edges.values_mut() {
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    }
    let inclusive = |f: &str| -> f64 {
        g.own.get(f).copied().unwrap_or(0.0)
            + out_edges
                .get(f)
                .map_or(0.0, |v| v.iter().map(|(_, c)| c).sum::<f64>())
    };
    let total: f64 = g.own.values().sum();
    let floor = total / 2000.0;
    // The roots: what nothing calls, and what was running when counting began (a bracket
    // opened inside an interpreter's eval loop, which its own recursion also calls) — each
    // with the part of its cost its callers do not account for.
    let mut roots: Vec<(&str, f64)> = g
        .own
        .keys()
        .map(String::as_str)
        .chain(out_edges.keys().copied())
        .map(|f| (f, inclusive(f) - incoming.get(f).copied().unwrap_or(0.0)))
        .filter(|&(_, unexplained)| unexplained >= floor && unexplained > 0.0)
        .collect();
    roots.sort_unstable_by(|a, b| a.0.cmp(b.0));
    roots.dedup_by(|a, b| a.0 == b.0);
    let mut lines: HashMap<String, f64> = HashMap::new();
    let mut path: Vec<&str> = Vec::new();
    for (r, budget) in roots {
        walk(
            r, budget, &inclusive, &out_edges, g, floor, &mut path, &mut lines,
        );
    }
    let mut v: Vec<String> = lines
        .into_iter()
        .filter(|(_, c)| *c / n >= 0.5)
        .map(|(stack, c)| format!("{stack} {}", (c / n).round() as u64))
        .collect();
    v.sort();
    v
}

/// `f` reached with `budget` of its inclusive cost: its own share as a line, its calls
/// followed with theirs.
#[allow(clippy::too_many_arguments)]
fn walk<'a>(
    f: &'a str,
    budget: f64,
    inclusive: &dyn Fn(&str) -> f64,
    out_edges: &HashMap<&'a str, Vec<(&'a str, f64)>>,
    g: &CallGraph,
    floor: f64,
    path: &mut Vec<&'a str>,
    lines: &mut HashMap<String, f64>,
) {
    const DEPTH: usize = 64;
    let whole = inclusive(f);
    if budget < floor || whole <= 0.0 {
        return;
    }
    // The caller's figure for the call leads (a file whose callee counted less than its
    // callers say it cost keeps the callers' total).
    let scale = budget / whole;
    path.push(f);
    let mut own = g.own.get(f).copied().unwrap_or(0.0) * scale;
    for &(callee, c) in out_edges.get(f).map(Vec::as_slice).unwrap_or_default() {
        if path.len() >= DEPTH || path.contains(&callee) || c * scale < floor {
            // Not followed: its cost stays in this frame.
            own += c * scale;
            continue;
        }
        walk(
            callee,
            c * scale,
            inclusive,
            out_edges,
            g,
            floor,
            path,
            lines,
        );
    }
    if own > 0.0 {
        *lines.entry(path.join(";")).or_default() += own;
    }
    path.pop();
}

/// The name a `fn=`/`cfn=` spec stands for: `(id) name` defines id, `(id)` is what id was
/// defined as, a bare name is itself.
fn resolve<'a>(names: &mut HashMap<&'a str, &'a str>, spec: &'a str) -> Option<&'a str> {
    let Some(rest) = spec.strip_prefix('(') else {
        return Some(spec);
    };
    let (id, name) = rest.split_once(')')?;
    let name = name.trim();
    if name.is_empty() {
        return names.get(id).copied();
    }
    names.insert(id, name);
    Some(name)
}

/// The costs of several files, summed, divided by `runs`: a side's mean per run. Only the
/// functions that matter are kept (own cost at least 0.05 % of the total, or inclusive at
/// least 0.5 %), at most [`KEPT`], so that a baseline file stays small.
pub fn per_run(
    files: &[HashMap<String, FunctionCost>],
    runs: usize,
) -> BTreeMap<String, FunctionCost> {
    let mut sum: HashMap<&str, FunctionCost> = HashMap::new();
    for f in files {
        for (name, c) in f {
            let s = sum.entry(name.as_str()).or_default();
            s.own += c.own;
            s.inclusive += c.inclusive;
        }
    }
    let n = runs.max(1) as f64;
    let total: f64 = sum.values().map(|c| c.own).sum();
    let mut kept: Vec<(&str, FunctionCost)> = sum
        .into_iter()
        .filter(|(_, c)| c.own >= total * 0.0005 || c.inclusive >= total * 0.005)
        .map(|(name, c)| {
            (
                name,
                FunctionCost {
                    own: c.own / n,
                    inclusive: c.inclusive / n,
                },
            )
        })
        .collect();
    kept.sort_by(|a, b| b.1.own.total_cmp(&a.1.own).then(a.0.cmp(b.0)));
    kept.truncate(KEPT);
    kept.into_iter()
        .map(|(name, c)| (name.to_string(), c))
        .collect()
}

/// The most functions a side keeps.
pub const KEPT: usize = 300;

/// One function's change between the two sides, per run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionChange {
    pub function: String,
    pub baseline: FunctionCost,
    pub current: FunctionCost,
}

/// The `most` functions whose own instructions changed most (either way), then by their
/// inclusive change. A function one side did not keep counts as 0 there only when it is
/// over 1 % of that side's total on the other (a function that appeared or vanished);
/// below, it may just have been under the kept share.
pub fn changes(
    base: &BTreeMap<String, FunctionCost>,
    now: &BTreeMap<String, FunctionCost>,
    most: usize,
) -> Vec<FunctionChange> {
    let total = |m: &BTreeMap<String, FunctionCost>| m.values().map(|c| c.own).sum::<f64>();
    let (tb, tn) = (total(base), total(now));
    let mut out: Vec<FunctionChange> = Vec::new();
    let names: std::collections::BTreeSet<&String> = base.keys().chain(now.keys()).collect();
    for name in names {
        let (b, n) = (base.get(name), now.get(name));
        let (baseline, current) = match (b, n) {
            (Some(b), Some(n)) => (*b, *n),
            (None, Some(n)) if n.own >= tn * 0.01 => (FunctionCost::default(), *n),
            (Some(b), None) if b.own >= tb * 0.01 => (*b, FunctionCost::default()),
            _ => continue,
        };
        if baseline == current {
            continue;
        }
        out.push(FunctionChange {
            function: name.clone(),
            baseline,
            current,
        });
    }
    let key = |c: &FunctionChange| {
        (
            (c.current.own - c.baseline.own).abs(),
            (c.current.inclusive - c.baseline.inclusive).abs(),
        )
    };
    out.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(a.function.cmp(&b.function))
    });
    out.truncate(most);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# callgrind format
version: 1
positions: line
events: Ir
summary: 1170

ob=(1) /bin/w
fl=(1) w.c
fn=(1) main
5 10
cfn=(2) hot
calls=1 3
5 1000
cfn=(3) cold
calls=2 4
+1 100
fn=(2)
3 900
+1 100
fn=(3) cold
4 60
* 0
";

    /// The header and summary valgrind 3.19's callgrind writes with `--cache-sim=yes`; a
    /// file without the simulation has none; a summary that leaves out trailing zeros reads
    /// them as 0.
    #[test]
    fn cache_hits_come_from_the_events_and_summary() {
        let file = "positions: line\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n\
                    summary: 126561 27888 11769 1083 991 580 1065 781 547\n";
        let c = cache_hits(file).expect("simulated");
        let accesses = 126561.0 + 27888.0 + 11769.0;
        assert_eq!(c.l1 + c.ll + c.ram, accesses);
        assert_eq!(c.ram, 1065.0 + 781.0 + 547.0);
        assert_eq!(c.ll, (1083.0 + 991.0 + 580.0) - c.ram);
        assert_eq!(c.estimated_cycles(), c.l1 + 5.0 * c.ll + 35.0 * c.ram);
        assert_eq!(cache_hits(FILE), None);
        let short =
            cache_hits("events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 10 5 5 2\n")
                .expect("trailing zeros left out");
        assert_eq!((short.l1, short.ll, short.ram), (18.0, 2.0, 0.0));
        let run = c.less(&CacheHits {
            l1: 1e9,
            ll: 1.0,
            ram: 1.0,
        });
        assert_eq!(run.l1, 0.0);
    }

    /// The file's call graph folded: main's own 10, hot's 1000 under main, and cold as main's
    /// call of it cost (100, where cold's own lines say 60: the caller's figure leads, so
    /// main's frame is its inclusive cost).
    #[test]
    fn the_call_graph_folds_into_stacks() {
        let g = call_graph(FILE);
        assert_eq!(g.own.get("main"), Some(&10.0));
        assert_eq!(g.calls.get(&("main".into(), "hot".into())), Some(&1000.0));
        assert_eq!(g.calls.get(&("main".into(), "cold".into())), Some(&100.0));
        assert_eq!(g.own.get("hot"), Some(&1000.0));
        let lines = fold(&g, 1);
        assert_eq!(
            lines,
            ["main 10", "main;cold 100", "main;hot 1000"],
            "{lines:?}"
        );
        // Over two runs, per run.
        assert_eq!(fold(&g, 2)[2], "main;hot 500");
        // A recursion is cut on its own path, its cost kept in the frame that made it.
        let mut r = CallGraph::default();
        r.own.insert("a".into(), 10.0);
        r.own.insert("b".into(), 10.0);
        r.calls.insert(("a".into(), "b".into()), 20.0);
        r.calls.insert(("b".into(), "a".into()), 10.0);
        let lines = fold(&r, 1);
        assert!(
            lines.iter().all(|l| l.matches(';').count() < 64),
            "{lines:?}"
        );
    }

    #[test]
    fn own_and_inclusive_costs_follow_names_and_call_lines() {
        let f = call_graph(FILE).functions();
        assert_eq!(
            f["main"],
            FunctionCost {
                own: 10.0,
                inclusive: 1110.0
            }
        );
        assert_eq!(
            f["hot"],
            FunctionCost {
                own: 1000.0,
                inclusive: 1000.0
            }
        );
        assert_eq!(f["cold"].own, 60.0);
        // Two positions before the count: the count is the third column.
        let two = FILE
            .replace("positions: line", "positions: instr line")
            .replace("5 10\n", "0x10 5 10\n");
        assert_eq!(call_graph(&two).functions()["main"].own, 10.0);
        assert!(
            call_graph("junk\nfn=(9)\n1 x\ncalls=\n")
                .functions()
                .is_empty()
        );
    }

    #[test]
    fn the_function_made_slower_leads_the_changes() {
        let base = per_run(
            &[call_graph(FILE).functions(), call_graph(FILE).functions()],
            2,
        );
        let slower = FILE.replace("3 900", "3 1900").replace("5 1000", "5 2000");
        let now = per_run(
            &[
                call_graph(&slower).functions(),
                call_graph(&slower).functions(),
            ],
            2,
        );
        let c = changes(&base, &now, 10);
        assert_eq!(c[0].function, "hot", "{c:?}");
        assert_eq!((c[0].baseline.own, c[0].current.own), (1000.0, 2000.0));
        // main's own cost did not move; its inclusive did: it comes after.
        assert_eq!(c[1].function, "main", "{c:?}");
        assert_eq!(c.len(), 2, "cold did not change: {c:?}");
    }
}
