//! `go tool pprof -peek`: for each function whose name matches, its callers above it and its
//! callees below it, each with the weight of that call and its share of the function's cum.
//! The graph is the whole one (nothing trimmed, as go tool pprof does for peek), after the
//! name filters; percentages of the function lines are of the whole profile's total.

use regex::Regex;

use super::filter::NameFilter;
use super::graph::{Nodes, build_all_edges, total};
use super::measure::{percentage, scaled_label};
use super::model::Pprof;
use super::report::{Counts, TopOptions, add_filters, header, output_unit, sort_nodes};
use crate::Error;

/// One call into or out of a function.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PeekEdge {
    pub function: String,
    pub weight: i64,
    pub weight_fmt: String,
    /// The weight as a share of the peeked function's cum.
    pub pct: String,
    /// Every call along the edge was inlined.
    pub inline: bool,
}

/// One peeked function.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PeekEntry {
    pub function: String,
    pub flat: i64,
    pub cum: i64,
    pub flat_fmt: String,
    pub cum_fmt: String,
    pub flat_pct: String,
    pub sum_pct: String,
    pub cum_pct: String,
    /// Callers, heaviest first.
    pub callers: Vec<PeekEdge>,
    /// Callees, heaviest first.
    pub callees: Vec<PeekEdge>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PeekReport {
    pub header: Vec<String>,
    pub sample_type: String,
    pub unit: String,
    pub output_unit: String,
    pub total: i64,
    pub entries: Vec<PeekEntry>,
    /// Nodes in the graph (one separator line closes the report when there are any).
    #[serde(skip)]
    nodes: usize,
}

const SEPARATOR: &str = "----------------------------------------------------------+-------------";
const LEGEND: &str = "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t ";

impl PeekReport {
    /// The text `go tool pprof -peek` prints.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for h in &self.header {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(SEPARATOR);
        out.push('\n');
        out.push_str(LEGEND);
        out.push('\n');
        let edge = |out: &mut String, e: &PeekEdge| {
            let inline = if e.inline { " (inline)" } else { "" };
            out.push_str(&format!(
                "{:>50} {} |   {}{inline}\n",
                e.weight_fmt, e.pct, e.function
            ));
        };
        for e in &self.entries {
            out.push_str(SEPARATOR);
            out.push('\n');
            for c in &e.callers {
                edge(&mut out, c);
            }
            out.push_str(&format!(
                "{:>10} {} {} {:>10} {}                | {}\n",
                e.flat_fmt, e.flat_pct, e.sum_pct, e.cum_fmt, e.cum_pct, e.function
            ));
            for c in &e.callees {
                edge(&mut out, c);
            }
        }
        if self.nodes > 0 {
            out.push_str(SEPARATOR);
            out.push('\n');
        }
        out
    }
}

/// A call of a peeked function: the function at its other end, its weight, whether inlined.
type Edge = (u32, i64, bool);

/// A function's calls one way, in pprof's order: heaviest first, then by caller's name, then
/// callee's (one of the two is this function); shares of its `cum`.
fn peek_edges(
    mut v: Vec<Edge>,
    nodes: &Nodes,
    cum: i64,
    fmt: &impl Fn(i64) -> String,
) -> Vec<PeekEdge> {
    v.sort_by(|a, b| {
        let (an, bn) = (nodes.name(a.0 as usize), nodes.name(b.0 as usize));
        b.1.wrapping_abs().cmp(&a.1.wrapping_abs()).then(an.cmp(bn))
    });
    v.into_iter()
        .map(|(o, w, inline)| PeekEdge {
            function: nodes.name(o as usize).to_string(),
            weight: w,
            weight_fmt: fmt(w),
            pct: percentage(w, cum),
            inline,
        })
        .collect()
}

/// The peek report of the functions of `p` whose names match `symbol`, after `filter`; an
/// error when none does (go tool pprof's "no matches found for regexp").
pub fn peek(
    p: &Pprof,
    filter: &NameFilter,
    symbol: &Regex,
    opts: &TopOptions,
) -> Result<(PeekReport, Vec<&'static str>), Error> {
    let index = p.sample_index(opts.sample_index.as_deref())?;
    let whole = total(p, index);
    let mut kept = None;
    let (p, warnings) = filter.applied(p, &mut kept);
    let nodes = Nodes::new(p);
    let g = build_all_edges(p, &nodes, index);
    let mut list: Vec<u32> = (0..nodes.len() as u32)
        .filter(|&i| g.flat[i as usize] != 0 || g.cum[i as usize] != 0)
        .collect();
    sort_nodes(&mut list, p, &g, &nodes, opts.cum);
    let (stype, sunit) = p.sample_types()[index];
    let out_unit = output_unit(&list, &g, whole, sunit);
    let fmt = |v: i64| scaled_label(v, sunit, &out_unit);
    let graph_total = list
        .iter()
        .fold(0i64, |a, &i| a.wrapping_add(g.flat[i as usize]));
    let counts = Counts {
        dropped: 0,
        shown: list.len(),
        present: list.len(),
    };
    let mut head = header(p, (stype, sunit), whole, graph_total, counts, opts, &fmt);
    add_filters(&mut head, &filter.header());
    // Edges by node, both ways.
    let mut into: Vec<Vec<Edge>> = vec![Vec::new(); nodes.len()];
    let mut out_of: Vec<Vec<Edge>> = vec![Vec::new(); nodes.len()];
    for (&(src, dst), &(w, inl)) in &g.edges {
        into[dst as usize].push((src, w, inl));
        out_of[src as usize].push((dst, w, inl));
    }
    let mut entries = Vec::new();
    let mut flat_sum = 0i64;
    for &n in &list {
        let n = n as usize;
        let name = nodes.name(n);
        if !symbol.is_match(name) {
            continue;
        }
        let (flat, cum) = (g.flat[n], g.cum[n]);
        flat_sum = flat_sum.wrapping_add(flat);
        let edges = |v: Vec<Edge>| peek_edges(v, &nodes, cum, &fmt);
        entries.push(PeekEntry {
            function: name.to_string(),
            flat,
            cum,
            flat_fmt: fmt(flat),
            cum_fmt: fmt(cum),
            flat_pct: percentage(flat, whole),
            sum_pct: percentage(flat_sum, whole),
            cum_pct: percentage(cum, whole),
            callers: edges(std::mem::take(&mut into[n])),
            callees: edges(std::mem::take(&mut out_of[n])),
        });
    }
    if entries.is_empty() {
        return Err(Error::NoMatches(symbol.as_str().to_string()));
    }
    Ok((
        PeekReport {
            header: head,
            sample_type: stype.to_string(),
            unit: sunit.to_string(),
            output_unit: out_unit,
            total: whole,
            entries,
            nodes: list.len(),
        },
        warnings,
    ))
}
