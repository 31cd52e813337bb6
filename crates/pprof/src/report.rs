//! The `go tool pprof -top` report, computed the way pprof computes it so the rows are the same:
//! nodes are functions (inlined frames are nodes of their own), a sample adds its value to the
//! cum of every distinct node on its stack and to the flat of its leaf; nodes whose cum is
//! under 0.5% of the total are dropped and the graph rebuilt without them (a sample whose leaf
//! was dropped adds no flat); rows sort by flat (or cum), then name; the output unit is
//! chosen from the smallest value shown; `(inline)` marks nodes only ever reached through
//! inlined calls.

use super::fasthash::FastMap;
use crate::Error;

use super::filter::NameFilter;
use super::graph::{self, Graph, Nodes, total};
use super::measure::{percentage, scale, scaled_label};
use super::model::Pprof;

#[derive(Debug, Clone)]
pub struct TopOptions {
    /// `--sample-index`: a name or an index; None is the default sample type, else the last.
    pub sample_index: Option<String>,
    /// Sort by cum instead of flat.
    pub cum: bool,
    /// Show at most this many nodes (0: all that are kept).
    pub nodes: usize,
    pub node_fraction: f64,
    pub edge_fraction: f64,
}

impl Default for TopOptions {
    fn default() -> Self {
        TopOptions {
            sample_index: None,
            cum: false,
            nodes: 0,
            node_fraction: 0.005,
            edge_fraction: 0.001,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TopRow {
    pub function: String,
    /// `(inline)`, `(partial-inline)` or empty.
    pub inline: &'static str,
    pub flat: i64,
    pub cum: i64,
    pub flat_fmt: String,
    pub cum_fmt: String,
    pub flat_pct: String,
    pub sum_pct: String,
    pub cum_pct: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TopReport {
    /// The header lines, as Go prints them (File, Type, Time, Duration, Showing …, Dropped …).
    pub header: Vec<String>,
    pub sample_type: String,
    pub unit: String,
    /// Unit the values are printed in.
    pub output_unit: String,
    pub total: i64,
    pub shown_flat: i64,
    pub dropped_nodes: usize,
    pub rows: Vec<TopRow>,
}

impl TopReport {
    /// The text `go tool pprof -top` prints.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(80 * (self.rows.len() + self.header.len() + 1));
        for h in &self.header {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(&format!(
            "{:>10} {:>5}% {:>5}% {:>10} {:>5}%\n",
            "flat", "flat", "sum", "cum", "cum"
        ));
        for r in &self.rows {
            let inl = if r.inline.is_empty() {
                String::new()
            } else {
                format!(" {}", r.inline)
            };
            out.push_str(&format!(
                "{:>10} {} {} {:>10} {}  {}{}\n",
                r.flat_fmt, r.flat_pct, r.sum_pct, r.cum_fmt, r.cum_pct, r.function, inl
            ));
        }
        out
    }
}

pub(super) fn sort_nodes(list: &mut [u32], p: &Pprof, g: &Graph, nodes: &Nodes, cum: bool) {
    list.sort_by(|&l, &r| {
        let (l, r) = (l as usize, r as usize);
        let (lf, rf) = (g.flat[l].wrapping_abs(), g.flat[r].wrapping_abs());
        let (lc, rc) = (g.cum[l].wrapping_abs(), g.cum[r].wrapping_abs());
        let by_name = nodes.name(l).cmp(nodes.name(r));
        let last = || nodes.sprint(p, l).cmp(&nodes.sprint(p, r));
        if cum {
            rc.cmp(&lc).then(by_name).then(rf.cmp(&lf)).then_with(last)
        } else {
            rf.cmp(&lf).then(by_name).then(rc.cmp(&lc)).then_with(last)
        }
    });
}

/// Go's `Time:` header: "2006-01-02 15:04:05 MST" in the local time zone (go tool pprof's
/// layout in the Go this project tests with; older releases wrote "Jan 2, 2006 at 3:04pm (MST)").
fn go_time(nanos: i64) -> String {
    let Ok(ts) = jiff::Timestamp::from_nanosecond(i128::from(nanos)) else {
        return String::new();
    };
    let z = ts.to_zoned(jiff::tz::TimeZone::system());
    z.strftime("%Y-%m-%d %H:%M:%S %Z").to_string()
}

/// One node of [`top_nodes`]: its name and its values, unformatted.
#[derive(Debug, Clone, PartialEq)]
pub struct TopNode {
    pub name: String,
    pub flat: i64,
    pub cum: i64,
}

/// The nodes `go tool pprof -top` shows with `opts`, in its order; and how many nodes there
/// were before `opts.nodes` cut the list.
pub fn top_nodes(p: &Pprof, opts: &TopOptions) -> Result<(Vec<TopNode>, usize), Error> {
    let nodes = Nodes::new(p);
    let index = p.sample_index(opts.sample_index.as_deref())?;
    let sel = select(p, &nodes, index, opts);
    let rows = sel
        .list
        .iter()
        .map(|&i| {
            let i = i as usize;
            TopNode {
                name: nodes.name(i).to_string(),
                flat: sel.graph.flat[i],
                cum: sel.graph.cum[i],
            }
        })
        .collect();
    Ok((rows, sel.orig_count))
}

/// The `go tool pprof -top` report of `p`: the nodes kept and shown, their inline marks,
/// the output unit, the header, the rows.
pub fn top(p: &Pprof, opts: &TopOptions) -> Result<TopReport, Error> {
    top_with(p, &Nodes::new(p), opts)
}

/// [`top`] with the nodes of `p` already built.
pub fn top_with(p: &Pprof, nodes: &Nodes, opts: &TopOptions) -> Result<TopReport, Error> {
    let index = p.sample_index(opts.sample_index.as_deref())?;
    top_of(p, nodes, index, total(p, index), &[], opts)
}

/// [`top`] of what `filter` keeps of `p` (`-focus`, `-ignore`, `-hide`, `-show`), with the
/// percentages of all of `p`'s samples and the filters named in the header, as go tool
/// pprof prints it; and which filters matched nothing.
pub fn top_filtered(
    p: &Pprof,
    filter: &NameFilter,
    opts: &TopOptions,
) -> Result<(TopReport, Vec<&'static str>), Error> {
    let index = p.sample_index(opts.sample_index.as_deref())?;
    if filter.is_empty() {
        return Ok((
            top_of(p, &Nodes::new(p), index, total(p, index), &[], opts)?,
            Vec::new(),
        ));
    }
    let whole = total(p, index);
    let (kept, matched) = filter.apply(p);
    let report = top_of(
        &kept,
        &Nodes::new(&kept),
        index,
        whole,
        &filter.header(),
        opts,
    )?;
    Ok((report, matched.warnings(filter)))
}

/// The report over `p`'s samples, with percentages of `total`; `filters` are the header's
/// `Active filters:` lines.
fn top_of(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    total: i64,
    filters: &[String],
    opts: &TopOptions,
) -> Result<TopReport, Error> {
    let (stype, sunit) = p.sample_types()[index];
    let sel = select(p, nodes, index, opts);
    let inline_in = inline_marks(&sel.edges, sel.edge_cutoff, nodes.len());
    let (g, list) = (&sel.graph, &sel.list);
    let out_unit = output_unit(list, g, total, sunit);
    let fmt = |v: i64| scaled_label(v, sunit, &out_unit);
    // Go's int64 sums wrap; so do these.
    let flat_sum: i64 = list
        .iter()
        .fold(0i64, |a, &i| a.wrapping_add(g.flat[i as usize]));
    let counts = Counts {
        dropped: sel.dropped,
        shown: sel.list.len(),
        present: sel.orig_count,
    };
    let mut header = header(p, (stype, sunit), total, flat_sum, counts, opts, &fmt);
    add_filters(&mut header, filters);
    let mut rows = Vec::with_capacity(list.len());
    let mut sum = 0i64;
    for &i in list {
        let i = i as usize;
        let (flat, cum) = (g.flat[i], g.cum[i]);
        sum = sum.wrapping_add(flat);
        let inline = match inline_in[i] {
            (true, true) => "(partial-inline)",
            (true, false) => "(inline)",
            _ => "",
        };
        rows.push(TopRow {
            function: nodes.name(i).to_string(),
            inline,
            flat,
            cum,
            flat_fmt: fmt(flat),
            cum_fmt: fmt(cum),
            flat_pct: percentage(flat, total),
            sum_pct: percentage(sum, total),
            cum_pct: percentage(cum, total),
        });
    }
    Ok(TopReport {
        header,
        sample_type: stype.to_string(),
        unit: sunit.to_string(),
        output_unit: out_unit,
        total,
        shown_flat: flat_sum,
        dropped_nodes: sel.dropped,
        rows,
    })
}

/// The nodes a top report shows, as go tool pprof chooses them: those under the node
/// fraction dropped (the graph built again without them), sorted, cut to `nodes`; and the
/// final graph's edges.
struct Selection {
    graph: Graph,
    list: Vec<u32>,
    dropped: usize,
    /// Nodes present before `nodes` cut the list.
    orig_count: usize,
    /// Edges under this weight mark nothing: `-edgefraction` of the first graph's flat sum,
    /// which the cutoffs are fractions of (pprof's `g.Nodes.Sum()`: the total when nothing is
    /// filtered out).
    edge_cutoff: i64,
    edges: FastMap<(u32, u32), (i64, bool)>,
}

fn select(p: &Pprof, nodes: &Nodes, index: usize, opts: &TopOptions) -> Selection {
    let weights = graph::weights(p, index);
    let (flat, cum) = graph::flat_cum(p, nodes, &weights);
    let mut g = Graph {
        flat,
        cum,
        edges: Default::default(),
    };
    let graph_sum = g.flat.iter().fold(0i64, |a, &v| a.wrapping_add(v));
    let mut list: Vec<u32> = (0..nodes.len() as u32)
        .filter(|&i| g.flat[i as usize] != 0 || g.cum[i as usize] != 0)
        .collect();
    let present = list.len();
    let node_cutoff = ((graph_sum as f64 * opts.node_fraction) as i64).wrapping_abs();
    if node_cutoff > 0 {
        list.retain(|&i| g.cum[i as usize].wrapping_abs() >= node_cutoff);
    }
    let dropped = present - list.len();
    let orig_count = list.len();
    sort_nodes(&mut list, p, &g, nodes, opts.cum);
    if opts.nodes > 0 && opts.nodes < list.len() {
        list.truncate(opts.nodes);
    }
    // pprof builds its graph again with only these nodes. A node's flat and cum do not
    // depend on which others are kept (see `graph::flat_cum`), so the nodes left keep the
    // first pass's figures and the others have none; only the edges between the nodes
    // left, which say which are reached through inlined calls, need another pass.
    let edge_cutoff = ((graph_sum as f64 * opts.edge_fraction) as i64).wrapping_abs();
    let marks = graph::EdgeSet::InlineMarks {
        cutoff: edge_cutoff,
    };
    let edges = if list.len() == present {
        graph::edges(p, nodes, &weights, None, marks)
    } else {
        let mut mask = vec![false; nodes.len()];
        for &i in &list {
            mask[i as usize] = true;
        }
        for (i, kept) in mask.iter().enumerate() {
            if !kept {
                (g.flat[i], g.cum[i]) = (0, 0);
            }
        }
        graph::edges(p, nodes, &weights, Some(&mask), marks)
    };
    Selection {
        graph: g,
        list,
        dropped,
        orig_count,
        edge_cutoff,
        edges,
    }
}

/// For each node: reached through an inlined call, through a real one (edges under the
/// edge cutoff do not count).
fn inline_marks(
    edges: &FastMap<(u32, u32), (i64, bool)>,
    edge_cutoff: i64,
    n: usize,
) -> Vec<(bool, bool)> {
    let mut inline_in = vec![(false, false); n];
    for (&(_, dst), &(w, inl)) in edges {
        if w.wrapping_abs() < edge_cutoff {
            continue;
        }
        let e = &mut inline_in[dst as usize];
        if inl {
            e.0 = true;
        } else {
            e.1 = true;
        }
    }
    inline_in
}

/// The output unit: from the smallest value shown, as pprof's selectOutputUnit.
pub(super) fn output_unit(list: &[u32], g: &Graph, total: i64, sunit: &str) -> String {
    let mut min_value = 0i64;
    for &i in list {
        let mut v = g.flat[i as usize].wrapping_abs();
        if v == 0 {
            v = g.cum[i as usize].wrapping_abs();
        }
        if v > 0 && (min_value == 0 || v < min_value) {
            min_value = v;
        }
    }
    let max_value = total;
    if min_value == 0 {
        min_value = max_value;
    }
    if list.is_empty() {
        return "minimum".to_string();
    }
    let (_, min_u) = scale(min_value, sunit, "minimum");
    let (_, max_u) = scale(max_value, sunit, "minimum");
    let mut unit = min_u.clone();
    if min_u != max_u && min_value.saturating_mul(100) < max_value {
        unit = scale(min_value.saturating_mul(100), sunit, "minimum").1;
    }
    if unit.is_empty() {
        sunit.to_string()
    } else {
        unit
    }
}

/// go tool pprof's header lines: file, build id, comments, type, time, duration, what is
/// shown and dropped.
/// The `Active filters:` lines go before `Showing nodes accounting for`, as in go tool pprof.
pub(super) fn add_filters(header: &mut Vec<String>, filters: &[String]) {
    if filters.is_empty() {
        return;
    }
    let at = header
        .iter()
        .position(|h| h.starts_with("Showing nodes accounting for"))
        .unwrap_or(header.len());
    header.splice(at..at, filters.iter().cloned());
}

/// How many nodes were dropped, are shown, were there before `nodes` cut the list.
#[derive(Clone, Copy)]
pub(super) struct Counts {
    pub dropped: usize,
    pub shown: usize,
    pub present: usize,
}

pub(super) fn header(
    p: &Pprof,
    (stype, sunit): (&str, &str),
    total: i64,
    flat_sum: i64,
    sel: Counts,
    opts: &TopOptions,
    fmt: &dyn Fn(i64) -> String,
) -> Vec<String> {
    let mut header = Vec::new();
    if let Some(m) = p.proto.mapping.first() {
        let file = p.str(m.filename);
        if !file.is_empty() {
            header.push(format!("File: {}", file.rsplit('/').next().unwrap_or(file)));
        }
        let id = p.str(m.build_id);
        if !id.is_empty() {
            header.push(format!("Build ID: {id}"));
        }
    }
    for &c in &p.proto.comment {
        let c = p.str(c);
        if !c.starts_with('#') {
            header.push(c.to_string());
        }
    }
    header.push(format!("Type: {stype}"));
    if p.proto.time_nanos != 0 {
        header.push(format!("Time: {}", go_time(p.proto.time_nanos)));
    }
    if p.proto.duration_nanos != 0 {
        let duration = scaled_label(p.proto.duration_nanos, "nanoseconds", "auto");
        let (total_ns, total_unit) = scale(total, sunit, "nanoseconds");
        let ratio = if total_unit == "ns" && total_ns != 0.0 {
            format!("({})", percentage(total_ns as i64, p.proto.duration_nanos))
        } else {
            String::new()
        };
        header.push(format!(
            "Duration: {duration}, Total samples = {} {ratio}",
            fmt(total)
        ));
    }
    header.push(format!(
        "Showing nodes accounting for {}, {} of {} total",
        fmt(flat_sum),
        percentage(flat_sum, total).trim(),
        fmt(total)
    ));
    if total != 0 {
        if sel.dropped > 0 {
            header.push(format!(
                "Dropped {} {} (cum <= {})",
                sel.dropped,
                if sel.dropped > 1 { "nodes" } else { "node" },
                fmt(((total as f64 * opts.node_fraction) as i64).wrapping_abs())
            ));
        }
        if sel.shown > 0 && sel.shown < sel.present {
            header.push(format!(
                "Showing top {} nodes out of {}",
                sel.shown, sel.present
            ));
        }
    }
    header
}

#[cfg(test)]
mod tests {
    /// Found by the fuzz run: legacy heap values whose sums overflow while the report adds
    /// them up (Go's sums wrap; so do agentprof's, and neither panics).
    #[test]
    fn values_past_64_bits_neither_panic_nor_lie() {
        let heap = format!(
            "heap profile: 1: 1 [1: 1] @ heapprofile\n1: {m} [1: {m}] @ 0x1000\n1: {m} [1: {m}] @ 0x1000 0x2000\n",
            m = i64::MAX
        );
        let p = crate::legacy::parse(heap.as_bytes()).unwrap().unwrap();
        let p = crate::model::Pprof::new(p).unwrap();
        assert!(super::top(&p, &Default::default()).is_ok());
    }
}
