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
    loc_nodes: Vec<Vec<u32>>,
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
        let locs: u64 = self
            .loc_nodes
            .iter()
            .map(|l| alloc_bytes::<u32>(l.capacity()))
            .sum();
        names
            + locs
            + alloc_bytes::<KeyAt>(self.keys.capacity())
            + alloc_bytes::<String>(self.names.capacity())
            + alloc_bytes::<Vec<u32>>(self.loc_nodes.capacity())
            + alloc_bytes::<bool>(self.inlined.capacity())
    }

    pub fn new(p: &Pprof) -> Nodes {
        let mut ids: FastMap<NodeKey<'_>, u32> = FastMap::default();
        let mut keys = Vec::new();
        let mut names = Vec::new();
        let mut loc_nodes = Vec::with_capacity(p.loc_lines.len());
        for (li, lines) in p.loc_lines.iter().enumerate() {
            let objfile_at = p.loc_mapping[li].map_or(0, |m| p.proto.mapping[m].filename);
            let mut nodes = Vec::with_capacity(lines.len().max(1));
            let empty = [(None, 0)];
            let lines: &[(Option<usize>, i64)] = if lines.is_empty() { &empty } else { lines };
            for &(f, _) in lines {
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
                let id = *ids.entry(key.clone()).or_insert_with(|| {
                    names.push(key.printable());
                    keys.push(at);
                    next
                });
                nodes.push(id);
            }
            loc_nodes.push(nodes);
        }
        let mut inlined = vec![false; keys.len()];
        for ln in &loc_nodes {
            for &n in &ln[..ln.len().saturating_sub(1)] {
                inlined[n as usize] = true;
            }
        }
        Nodes {
            keys,
            names,
            loc_nodes,
            inlined,
        }
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
        &self.loc_nodes[i]
    }
}

/// Flat and cum per node, and (when asked) the call edges with their weight and whether every
/// call along them was inlined.
pub struct Graph {
    pub flat: Vec<i64>,
    pub cum: Vec<i64>,
    pub edges: FastMap<(u32, u32), (i64, bool)>,
}

/// One pass over the samples, as pprof's newGraph: `kept` drops nodes (their frames are skipped
/// and the edge over them is residual).
pub fn build(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    kept: Option<&[bool]>,
    with_edges: bool,
) -> Graph {
    build_inner(p, nodes, index, kept, with_edges, false)
}

/// [`build`] of every node with every call edge (what a peek at callers and callees needs;
/// `build` keeps only the edges that can make an inline mark).
pub fn build_all_edges(p: &Pprof, nodes: &Nodes, index: usize) -> Graph {
    build_inner(p, nodes, index, None, true, true)
}

fn build_inner(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    kept: Option<&[bool]>,
    with_edges: bool,
    all_edges: bool,
) -> Graph {
    let n = nodes.len();
    let mut flat = vec![0i64; n];
    let mut cum = vec![0i64; n];
    let mut seen = vec![0u32; n];
    let mut edges: FastMap<(u32, u32), (i64, bool, u32)> = FastMap::default();
    for (si, s) in p.proto.sample.iter().enumerate() {
        let w = s.value[index];
        if w == 0 {
            continue;
        }
        let stamp = si as u32 + 1;
        let mut parent: Option<u32> = None;
        let mut residual = false;
        for &loc in p.sample_locs(si).iter().rev() {
            let ln = &nodes.loc_nodes[loc as usize];
            let last = ln.len() - 1;
            for (ni, &node) in ln.iter().enumerate().rev() {
                if kept.is_some_and(|k| !k[node as usize]) {
                    residual = true;
                    continue;
                }
                if seen[node as usize] != stamp {
                    seen[node as usize] = stamp;
                    cum[node as usize] = cum[node as usize].wrapping_add(w);
                }
                // Only edges into frames that are inlined somewhere can make a mark.
                if with_edges
                    && (all_edges || nodes.inlined[node as usize])
                    && let Some(par) = parent
                    && par != node
                {
                    let inline = ni != last;
                    let e = edges.entry((par, node)).or_insert((0, inline, 0));
                    if e.2 != stamp {
                        e.2 = stamp;
                        e.0 = e.0.wrapping_add(w);
                        if !inline {
                            e.1 = false;
                        }
                    }
                }
                parent = Some(node);
                residual = false;
            }
        }
        if let (Some(leaf), false) = (parent, residual) {
            flat[leaf as usize] = flat[leaf as usize].wrapping_add(w);
        }
    }
    Graph {
        flat,
        cum,
        edges: edges
            .into_iter()
            .map(|(k, (w, inl, _))| (k, (w, inl)))
            .collect(),
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
