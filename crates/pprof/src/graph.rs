//! The nodes of a report (pprof's function-granularity nodes: one per function name, or per
//! binary for frames without one) and the graph over them: flat and cum per node, the call
//! edges, the total — what `top`, `diff` and the flamegraph tree are built from.

use super::fasthash::FastMap;
use super::model::Pprof;

/// What identifies a node at function granularity (pprof's NodeInfo with address, line and
/// file cleared): the function name, or the binary when a frame has no name.
#[derive(Clone, PartialEq, Eq, Hash)]
struct NodeKey<'a> {
    name: &'a str,
    objfile: &'a str,
    start_line: i64,
}

impl NodeKey<'_> {
    fn printable(&self) -> String {
        if !self.name.is_empty() {
            self.name.to_string()
        } else if !self.objfile.is_empty() {
            let base = self.objfile.rsplit('/').next().unwrap_or(self.objfile);
            format!("[{base}]")
        } else {
            "<unknown>".to_string()
        }
    }

    /// Go's `fmt.Sprint(NodeInfo)`, the last tie-breaker of its sort.
    fn sprint(&self) -> String {
        format!(
            "{{{}  0  {} 0 {}}}",
            self.name, self.start_line, self.objfile
        )
    }
}

/// A node's key by string index (the first of equal strings), to print it again later.
#[derive(Clone, Copy)]
struct KeyAt {
    name: i64,
    objfile: i64,
    start_line: i64,
}

impl KeyAt {
    fn resolve(self, p: &Pprof) -> NodeKey<'_> {
        NodeKey {
            name: p.str(self.name),
            objfile: p.str(self.objfile),
            start_line: self.start_line,
        }
    }
}

/// The nodes of a profile and, per location, its nodes innermost first. Built once per
/// decoded profile: `agentprof ui` keeps it beside the profile for its top table and its
/// flamegraph (see `report::top_with`, `fold::Tree::with_nodes`).
pub struct Nodes {
    keys: Vec<KeyAt>,
    names: Vec<String>,
    /// Location `i`'s nodes are `loc_nodes[loc_start[i]..loc_start[i + 1]]`: one array for
    /// all, so the passes over the samples read two neighbouring places per location.
    loc_start: Vec<u32>,
    loc_nodes: Vec<u32>,
    /// Nodes that are an inlined frame somewhere: the only ones an `(inline)` mark can fall on.
    inlined: Vec<bool>,
}

impl Nodes {
    /// The bytes the nodes hold on the heap (see [`Pprof::heap_bytes`]).
    pub fn heap_bytes(&self) -> u64 {
        use crate::model::alloc_bytes;
        let names: u64 = self
            .names
            .iter()
            .map(|n| alloc_bytes::<u8>(n.capacity()))
            .sum();
        names
            + alloc_bytes::<u32>(self.loc_start.capacity())
            + alloc_bytes::<u32>(self.loc_nodes.capacity())
            + alloc_bytes::<KeyAt>(self.keys.capacity())
            + alloc_bytes::<String>(self.names.capacity())
            + alloc_bytes::<bool>(self.inlined.capacity())
    }

    pub fn new(p: &Pprof) -> Nodes {
        let mut ids: FastMap<NodeKey<'_>, u32> = FastMap::default();
        let mut keys = Vec::new();
        let mut names = Vec::new();
        let mut loc_start = Vec::with_capacity(p.loc_lines.len() + 1);
        let mut loc_nodes = Vec::with_capacity(p.loc_lines.len());
        loc_start.push(0);
        // A named function's node is its name's wherever it is called: found once per
        // function, not hashed again at each of its locations.
        const UNSEEN: u32 = u32::MAX;
        let mut by_function = vec![UNSEEN; p.proto.function.len()];
        for (li, lines) in p.loc_lines.iter().enumerate() {
            let objfile_at = p.loc_mapping[li].map_or(0, |m| p.proto.mapping[m].filename);
            let empty = [(None, 0)];
            let lines: &[(Option<usize>, i64)] = if lines.is_empty() { &empty } else { lines };
            for &(f, _) in lines {
                if let Some(&id) = f
                    .and_then(|f| by_function.get(f))
                    .filter(|&&id| id != UNSEEN)
                {
                    loc_nodes.push(id);
                    continue;
                }
                let at = match f.map(|f| &p.proto.function[f]) {
                    Some(func) if !p.str(func.name).is_empty() => KeyAt {
                        name: func.name,
                        objfile: 0,
                        start_line: 0,
                    },
                    unnamed => KeyAt {
                        name: 0,
                        objfile: objfile_at,
                        start_line: unnamed.map_or(0, |func| func.start_line),
                    },
                };
                let key = at.resolve(p);
                let next = keys.len() as u32;
                let named = at.name != 0;
                let id = *ids.entry(key.clone()).or_insert_with(|| {
                    names.push(key.printable());
                    keys.push(at);
                    next
                });
                if named && let Some(f) = f {
                    by_function[f] = id;
                }
                loc_nodes.push(id);
            }
            // Node ids are u32 (as the samples' location positions are).
            loc_start.push(loc_nodes.len() as u32);
        }
        let mut nodes = Nodes {
            keys,
            names,
            loc_start,
            loc_nodes,
            inlined: Vec::new(),
        };
        let mut inlined = vec![false; nodes.len()];
        for li in 0..nodes.loc_start.len() - 1 {
            let ln = nodes.loc(li);
            for &n in &ln[..ln.len().saturating_sub(1)] {
                inlined[n as usize] = true;
            }
        }
        nodes.inlined = inlined;
        nodes
    }

    /// Go's `fmt.Sprint(NodeInfo)` of node `n`, the last tie-breaker of its sort.
    pub(super) fn sprint(&self, p: &Pprof, n: usize) -> String {
        self.keys[n].resolve(p).sprint()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn name(&self, n: usize) -> &str {
        &self.names[n]
    }

    /// The nodes of location `i`, innermost first.
    pub fn loc(&self, i: usize) -> &[u32] {
        &self.loc_nodes[self.loc_start[i] as usize..self.loc_start[i + 1] as usize]
    }
}

/// Flat and cum per node, and (when asked) the call edges with their weight and whether every
/// call along them was inlined.
pub(crate) struct Graph {
    pub flat: Vec<i64>,
    pub cum: Vec<i64>,
    pub edges: FastMap<(u32, u32), (i64, bool)>,
}

/// The graph of every node with every call edge: what a peek at callers and callees needs.
pub(crate) fn build_all_edges(p: &Pprof, nodes: &Nodes, index: usize) -> Graph {
    let w = weights(p, index);
    let (flat, cum) = flat_cum(p, nodes, &w);
    let edges = edges(p, nodes, &w, None, EdgeSet::All);
    Graph { flat, cum, edges }
}

/// Each sample's value of sample type `index`, one after the other: the passes over the
/// samples read them from here rather than from each sample's own vector.
pub(crate) fn weights(p: &Pprof, index: usize) -> Vec<i64> {
    p.proto.sample.iter().map(|s| s.value[index]).collect()
}

/// Flat and cum per node with the samples' `weights`, as pprof's newGraph adds them up:
/// recursion counts once in cum; the leaf has the flat.
///
/// A node's flat and cum do not depend on which other nodes pprof keeps (dropped frames are
/// skipped, and a sample whose leaf is dropped adds to no flat), so a report that drops nodes
/// keeps these figures for the nodes left and asks [`edges`] for their edges alone.
pub(crate) fn flat_cum(p: &Pprof, nodes: &Nodes, weights: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let n = nodes.len();
    let mut flat = vec![0i64; n];
    let mut cum = vec![0i64; n];
    let mut seen = vec![0u32; n];
    let (start, all) = (&nodes.loc_start[..], &nodes.loc_nodes[..]);
    for (si, &w) in weights.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let stamp = si as u32 + 1;
        let locs = p.sample_locs(si);
        for &loc in locs {
            let (a, b) = (
                start[loc as usize] as usize,
                start[loc as usize + 1] as usize,
            );
            for &node in &all[a..b] {
                if seen[node as usize] != stamp {
                    seen[node as usize] = stamp;
                    cum[node as usize] = cum[node as usize].wrapping_add(w);
                }
            }
        }
        // The leaf: the first location's innermost frame.
        if let Some(&loc) = locs.first()
            && let Some(&leaf) = nodes.loc(loc as usize).first()
        {
            flat[leaf as usize] = flat[leaf as usize].wrapping_add(w);
        }
    }
    (flat, cum)
}

/// Which call edges [`edges`] collects.
#[derive(Clone, Copy)]
pub enum EdgeSet {
    /// Every one (what a peek at callers and callees needs).
    All,
    /// Those that can put an inline mark on a node: into nodes that are an inlined frame
    /// somewhere, whose inlined calls weigh at least `cutoff` in all (an edge under the
    /// cutoff marks nothing, and none into such a node can reach it).
    InlineMarks { cutoff: i64 },
}

/// The call edges of `set` between `kept` nodes (the nearest kept caller to each kept
/// frame), with their weight (a sample counts once per edge) and whether every call along
/// them was inlined.
pub fn edges(
    p: &Pprof,
    nodes: &Nodes,
    weights: &[i64],
    kept: Option<&[bool]>,
    set: EdgeSet,
) -> FastMap<(u32, u32), (i64, bool)> {
    let is_kept = |n: u32| kept.is_none_or(|k| k[n as usize]);
    const NONE: u32 = u32::MAX;
    let locs = nodes.loc_start.len() - 1;
    let into_node: Vec<bool> = match set {
        EdgeSet::All => (0..nodes.len() as u32).map(is_kept).collect(),
        EdgeSet::InlineMarks { cutoff } => {
            let inlined_weight = inlined_weight(p, nodes, weights, kept, cutoff);
            (0..nodes.len())
                .map(|n| {
                    is_kept(n as u32)
                        && nodes.inlined[n]
                        && inlined_weight
                            .as_ref()
                            .is_none_or(|w| w[n] >= cutoff.unsigned_abs())
                })
                .collect()
        }
    };
    // Per location: whether an edge can end in it, and the innermost kept node it leaves as
    // the caller of the next frame (NONE: it has none; the caller stays the one before).
    let mut wanted = vec![false; locs];
    let mut exit = vec![NONE; locs];
    for li in 0..locs {
        for &node in nodes.loc(li).iter().rev() {
            if is_kept(node) {
                wanted[li] |= into_node[node as usize];
                exit[li] = node;
            }
        }
    }
    if !wanted.contains(&true) {
        return FastMap::default();
    }
    let mut into = InEdges::new(&into_node);
    for (si, &w) in weights.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let stamp = si as u32 + 1;
        let mut parent = NONE;
        for &loc in p.sample_locs(si).iter().rev() {
            let loc = loc as usize;
            if !wanted[loc] {
                if exit[loc] != NONE {
                    parent = exit[loc];
                }
                continue;
            }
            let ln = nodes.loc(loc);
            let last = ln.len() - 1;
            for (ni, &node) in ln.iter().enumerate().rev() {
                if !is_kept(node) {
                    continue;
                }
                if into_node[node as usize] && parent != NONE && parent != node {
                    // A frame below the location's outermost line is inlined into its caller.
                    into.add(parent, node, w, stamp, ni != last);
                }
                parent = node;
            }
        }
    }
    into.finish()
}

/// Per node, at most what any one edge it is inlined along can weigh: the absolute values of
/// the samples it is an inlined frame in, each time it is, summed per caller where the
/// location names the caller (its kept outer line), plus those where it does not (the caller
/// is then the frame before, whichever it is). None when there is no cutoff to compare with.
fn inlined_weight(
    p: &Pprof,
    nodes: &Nodes,
    weights: &[i64],
    kept: Option<&[bool]>,
    cutoff: i64,
) -> Option<Vec<u64>> {
    if cutoff == 0 {
        return None;
    }
    let is_kept = |n: u32| kept.is_none_or(|k| k[n as usize]);
    let locs = nodes.loc_start.len() - 1;
    let mut at_loc = vec![0u64; locs];
    for (si, w) in weights.iter().enumerate() {
        let w = w.unsigned_abs();
        for &loc in p.sample_locs(si) {
            at_loc[loc as usize] = at_loc[loc as usize].saturating_add(w);
        }
    }
    let mut by_caller: FastMap<(u32, u32), u64> = FastMap::default();
    let mut any_caller = vec![0u64; nodes.len()];
    for (li, &w) in at_loc.iter().enumerate() {
        let ln = nodes.loc(li);
        for (i, &node) in ln[..ln.len() - 1].iter().enumerate() {
            match ln[i + 1..].iter().copied().find(|&c| is_kept(c)) {
                Some(caller) => {
                    let e = by_caller.entry((caller, node)).or_default();
                    *e = e.saturating_add(w);
                }
                None => any_caller[node as usize] = any_caller[node as usize].saturating_add(w),
            }
        }
    }
    let mut out = any_caller.clone();
    let mut most = vec![0u64; nodes.len()];
    for ((_, node), w) in by_caller {
        most[node as usize] = most[node as usize].max(w);
    }
    for (o, m) in out.iter_mut().zip(most) {
        *o = o.saturating_add(m);
    }
    Some(out)
}

/// Callers a node's in-edges keep beside it; the rest go to a map. Most nodes have few
/// callers, and reading one node's callers is one cache line where a map's probe is two
/// places anywhere in a table of every edge.
const SLOTS: usize = 8;

/// The weight of each call edge, counted once per sample, and whether every call along it
/// was inlined; by callee. Only the callees edges are counted into have slots, so its memory
/// is that of the nodes asked for (a few for inline marks; a peek's, every node).
struct InEdges {
    /// Each node's row in the arrays below (`u32::MAX`: none, no edge into it is counted).
    row: Vec<u32>,
    /// The node of each row.
    node: Vec<u32>,
    /// Callers per callee (`u32::MAX`: a free slot).
    callers: Vec<[u32; SLOTS]>,
    weight: Vec<[i64; SLOTS]>,
    /// The last sample (its stamp) that added to the edge.
    stamp: Vec<[u32; SLOTS]>,
    /// Bit `i`: every call along slot `i`'s edge was inlined so far.
    inline: Vec<u8>,
    /// Weight, stamp, inlined so far.
    more: FastMap<(u32, u32), (i64, u32, bool)>,
}

impl InEdges {
    /// Room for the edges into each node `into` marks.
    fn new(into: &[bool]) -> InEdges {
        let mut row = vec![u32::MAX; into.len()];
        let mut node = Vec::new();
        for (n, _) in into.iter().enumerate().filter(|(_, w)| **w) {
            row[n] = node.len() as u32;
            node.push(n as u32);
        }
        let rows = node.len();
        InEdges {
            row,
            node,
            callers: vec![[u32::MAX; SLOTS]; rows],
            weight: vec![[0; SLOTS]; rows],
            stamp: vec![[0; SLOTS]; rows],
            inline: vec![0; rows],
            more: FastMap::default(),
        }
    }

    /// Adds a call from `caller` into `callee`, a node [`InEdges::new`] was asked for.
    fn add(&mut self, caller: u32, callee: u32, w: i64, stamp: u32, inline: bool) {
        let at = self.row[callee as usize] as usize;
        let callers = &mut self.callers[at];
        let slot = callers.iter().position(|&c| c == caller).or_else(|| {
            let i = callers.iter().position(|&c| c == u32::MAX)?;
            callers[i] = caller;
            self.inline[at] |= 1 << i;
            Some(i)
        });
        let Some(i) = slot else {
            let e = self.more.entry((caller, callee)).or_insert((0, 0, true));
            if e.1 != stamp {
                (e.0, e.1) = (e.0.wrapping_add(w), stamp);
                e.2 &= inline;
            }
            return;
        };
        if self.stamp[at][i] != stamp {
            self.stamp[at][i] = stamp;
            self.weight[at][i] = self.weight[at][i].wrapping_add(w);
            if !inline {
                self.inline[at] &= !(1 << i);
            }
        }
    }

    fn finish(self) -> FastMap<(u32, u32), (i64, bool)> {
        let mut out: FastMap<(u32, u32), (i64, bool)> = FastMap::default();
        for (at, callers) in self.callers.iter().enumerate() {
            for (i, &caller) in callers.iter().enumerate() {
                if caller != u32::MAX {
                    let inline = self.inline[at] & (1 << i) != 0;
                    out.insert((caller, self.node[at]), (self.weight[at][i], inline));
                }
            }
        }
        for (k, (w, _, inline)) in self.more {
            out.insert(k, (w, inline));
        }
        out
    }
}

/// pprof's computeTotal: the sum of absolute values — or, when the profile holds base samples
/// (labelled `pprof::base=true`, as `go tool pprof -proto -diff_base` writes them), the sum
/// over those alone, so a diff reads as a change relative to the base.
pub fn total(p: &Pprof, index: usize) -> i64 {
    let base_key = p.proto.string_table.iter().position(|s| s == "pprof::base");
    let is_base = |s: &super::proto::Sample| {
        base_key.is_some_and(|k| {
            s.label
                .iter()
                .any(|l| l.key == k as i64 && p.str(l.str) == "true")
        })
    };
    let (mut all, mut base) = (0i64, 0i64);
    for s in &p.proto.sample {
        let v = s.value[index].saturating_abs();
        all = all.saturating_add(v);
        if is_base(s) {
            base = base.saturating_add(v);
        }
    }
    if base > 0 { base } else { all }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Function, Line, Location, Profile, Sample, ValueType};

    /// A profile of functions `f0`…, locations of function positions (innermost first), and
    /// samples of location positions (leaf first) with a value.
    fn profile(functions: usize, locations: &[Vec<usize>], samples: &[(Vec<usize>, i64)]) -> Pprof {
        let mut strings = vec!["".to_string(), "cpu".into(), "nanoseconds".into()];
        let function = (0..functions)
            .map(|i| {
                strings.push(format!("f{i}"));
                Function {
                    id: i as u64 + 1,
                    name: strings.len() as i64 - 1,
                    ..Function::default()
                }
            })
            .collect();
        let location = locations
            .iter()
            .enumerate()
            .map(|(i, fs)| Location {
                id: i as u64 + 1,
                line: fs
                    .iter()
                    .map(|&f| Line {
                        function_id: f as u64 + 1,
                        ..Line::default()
                    })
                    .collect(),
                ..Location::default()
            })
            .collect();
        let sample = samples
            .iter()
            .map(|(locs, w)| Sample {
                location_id: locs.iter().map(|&l| l as u64 + 1).collect(),
                value: vec![*w],
                label: Vec::new(),
            })
            .collect();
        Pprof::new(Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample,
            location,
            function,
            string_table: strings,
            ..Profile::default()
        })
        .expect("a sound profile")
    }

    type Edges = Vec<((u32, u32), (i64, bool))>;

    /// The graph as pprof's newGraph builds it with only the `kept` nodes, one sample and one
    /// frame at a time: flat, cum and edges.
    fn reference(p: &Pprof, nodes: &Nodes, kept: Option<&[bool]>) -> (Vec<i64>, Vec<i64>, Edges) {
        let mut edges: std::collections::HashMap<(u32, u32), (i64, bool, usize)> =
            Default::default();
        let (mut flat, mut cum) = (vec![0; nodes.len()], vec![0; nodes.len()]);
        for (si, s) in p.proto.sample.iter().enumerate() {
            let mut parent: Option<u32> = None;
            let mut residual = false;
            let mut seen = std::collections::HashSet::new();
            for &loc in p.sample_locs(si).iter().rev() {
                let ln = nodes.loc(loc as usize);
                for (ni, &node) in ln.iter().enumerate().rev() {
                    if kept.is_some_and(|k| !k[node as usize]) {
                        residual = true;
                        continue;
                    }
                    residual = false;
                    if seen.insert(node) {
                        cum[node as usize] += s.value[0];
                    }
                    if let Some(par) = parent
                        && par != node
                    {
                        let inline = ni != ln.len() - 1;
                        let e = edges.entry((par, node)).or_insert((0, inline, usize::MAX));
                        if e.2 != si {
                            e.2 = si;
                            e.0 += s.value[0];
                            e.1 &= inline;
                        }
                    }
                    parent = Some(node);
                }
            }
            if let (Some(leaf), false) = (parent, residual) {
                flat[leaf as usize] += s.value[0];
            }
        }
        let mut out: Vec<_> = edges
            .into_iter()
            .map(|(k, (w, i, _))| (k, (w, i)))
            .collect();
        out.sort();
        (flat, cum, out)
    }

    fn sorted(m: FastMap<(u32, u32), (i64, bool)>) -> Vec<((u32, u32), (i64, bool))> {
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort();
        v
    }

    /// A callee with 40 callers (more than a node keeps beside it), frames inlined into their
    /// callers and called for real elsewhere, recursion; every node, then some dropped.
    #[test]
    fn edges_and_figures_match_the_one_pass_reference() {
        let n = 45;
        // Locations 0..n: one function each; n..: f1 inlined into fK, and f2 into f3.
        let mut locations: Vec<Vec<usize>> = (0..n).map(|f| vec![f]).collect();
        for k in 4..n {
            locations.push(vec![1, k]);
        }
        locations.push(vec![2, 3]);
        let inl23 = locations.len() - 1;
        let mut samples = Vec::new();
        for k in 4..n {
            // fK -> f1 inlined; fK -> f1 called; f0 -> fK -> fK (recursion) -> f2.
            samples.push((vec![n + k - 4, 0], k as i64));
            samples.push((vec![1, k, 0], 1));
            samples.push((vec![2, k, k, 0], 2));
            samples.push((vec![inl23, k], 3));
        }
        let p = profile(n, &locations, &samples);
        let nodes = Nodes::new(&p);
        let w = weights(&p, 0);
        let all = sorted(edges(&p, &nodes, &w, None, EdgeSet::All));
        let (flat, cum) = flat_cum(&p, &nodes, &w);
        assert_eq!(
            (flat.clone(), cum.clone(), all.clone()),
            reference(&p, &nodes, None)
        );
        assert!(all.iter().filter(|((_, to), _)| *to == 1).count() > SLOTS);
        // Every third node dropped: the kept ones keep their figures; the edges skip them.
        let mask: Vec<bool> = (0..nodes.len()).map(|i| i % 3 != 2).collect();
        let (kflat, kcum, kedges) = reference(&p, &nodes, Some(&mask));
        for i in (0..nodes.len()).filter(|&i| mask[i]) {
            assert_eq!(
                (kflat[i], kcum[i]),
                (flat[i], cum[i]),
                "node {}",
                nodes.name(i)
            );
        }
        assert_eq!(
            sorted(edges(&p, &nodes, &w, Some(&mask), EdgeSet::All)),
            kedges
        );
        // The inline marks' edges: those into inlined frames, all of them with no cutoff,
        // and with one none of f2's (its inlined calls weigh 41 × 3 in all).
        let marks = |cutoff| sorted(edges(&p, &nodes, &w, None, EdgeSet::InlineMarks { cutoff }));
        let into_inlined: Vec<_> = all
            .iter()
            .copied()
            .filter(|((_, to), _)| nodes.inlined[*to as usize])
            .collect();
        assert_eq!(marks(0), into_inlined);
        let f2 = (0..nodes.len()).find(|&i| nodes.name(i) == "f2").unwrap() as u32;
        assert!(marks(0).iter().any(|((_, to), _)| *to == f2));
        assert!(!marks(41 * 3 + 1).iter().any(|((_, to), _)| *to == f2));
        assert!(marks(41 * 3).iter().any(|((_, to), _)| *to == f2));
    }
}
