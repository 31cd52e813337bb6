//! The views go tool pprof's web UI and Pyroscope draw beside the flamegraph: a sandwich
//! (one function's callers above it and its callees below it, each a flamegraph of the
//! stacks through it) and a call graph (the heaviest functions and their calls, in layers
//! from the roots down, as `go tool pprof -web` draws with graphviz, drawn here as SVG).

use std::fmt::Write as _;

use regex::Regex;

use crate::Error;
use crate::fasthash::FastMap;
use crate::graph::{EdgeSet, Nodes};
use crate::measure::{percentage, scaled_label};
use crate::model::Pprof;
use crate::text::esc;

/// Which half of a sandwich.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Side {
    /// The stacks that reach the function, from it up to their roots: drawn with the
    /// function at the bottom and its callers above.
    Callers,
    /// What the function calls: drawn as an icicle, the function at the top.
    Callees,
}

/// Writes one half of a sandwich of the functions `re` matches: per stack through one of
/// them, from its outermost match to the leaf (callees) or from there up to the root
/// (callers). Returns how many stacks went in.
pub fn write_sandwich(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    re: &Regex,
    side: Side,
    title: &str,
    out: impl std::io::Write,
) -> Result<usize, Error> {
    let tree = crate::fold::Tree::with_nodes(p, nodes, index, false);
    let mut halves: FastMap<String, u64> = FastMap::default();
    let mut stacks = 0usize;
    for line in tree.lines(0.0) {
        let Some((path, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let frames: Vec<&str> = path.split(';').collect();
        // The outermost call of it: its callers are those outside its own recursion.
        let Some(at) = frames.iter().position(|f| re.is_match(f)) else {
            continue;
        };
        stacks += 1;
        let half = match side {
            Side::Callees => frames[at..].join(";"),
            Side::Callers => {
                let mut up: Vec<&str> = frames[..=at].to_vec();
                up.reverse();
                up.join(";")
            }
        };
        *halves.entry(half).or_default() += value;
    }
    if halves.is_empty() {
        return Err(Error::NothingToDraw(
            "no stack goes through a function it matches",
        ));
    }
    let mut lines: Vec<String> = halves
        .into_iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    lines.sort_unstable();
    let (stype, unit) = p.sample_types()[index];
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = format!("{stype} [{unit}]");
    opts.subtitle = Some(match side {
        Side::Callers => "callers: the function at the bottom, what called it above".into(),
        Side::Callees => "callees: the function at the top, what it called below".into(),
    });
    if side == Side::Callees {
        opts.direction = inferno::flamegraph::Direction::Inverted;
    }
    crate::labels::draw_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(Error::draw)?;
    Ok(stacks)
}

/// A call graph's size: nodes kept (the heaviest by cum), and edges under this share of
/// the total left out, as go tool pprof's `-nodecount` and `-edgefraction` do.
#[derive(Clone, Copy, Debug)]
pub struct GraphSize {
    pub nodes: usize,
    pub edge_fraction: f64,
}

impl Default for GraphSize {
    fn default() -> GraphSize {
        GraphSize {
            nodes: 40,
            edge_fraction: 0.001,
        }
    }
}

/// A function's name as a box shows it: the part after its package path (the whole name
/// in its tooltip), at most 60 characters.
fn short(name: &str) -> String {
    let base = match name.rfind('/') {
        Some(i) if !name[..i].contains('(') => &name[i + 1..],
        _ => name,
    };
    if base.chars().count() > 60 {
        let cut: String = base.chars().take(59).collect();
        format!("{cut}…")
    } else {
        base.to_string()
    }
}

/// Each kept node's layer: the longest path to it from a root along the edges (back
/// edges of cycles ignored); roots are the nodes nothing kept calls.
fn layers(n: usize, edges: &[(usize, usize, i64)]) -> Vec<usize> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for &(a, b, _) in edges {
        if a != b {
            out[a].push(b);
            indeg[b] += 1;
        }
    }
    // Kahn's order; what is left in cycles is released heaviest (lowest index) first.
    let mut layer = vec![0usize; n];
    let mut done = vec![false; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut left = n;
    while left > 0 {
        if ready.is_empty() {
            let next = (0..n).find(|&i| !done[i]).unwrap_or(0);
            ready.push(next);
        }
        while let Some(i) = ready.pop() {
            if done[i] {
                continue;
            }
            done[i] = true;
            left -= 1;
            for &j in &out[i] {
                if done[j] {
                    continue;
                }
                layer[j] = layer[j].max(layer[i] + 1);
                indeg[j] = indeg[j].saturating_sub(1);
                if indeg[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    layer
}

/// The call graph kept: per kept node (by its rank) its node, flat, cum and box label;
/// the calls between them; each one's layer.
struct CallGraph {
    order: Vec<usize>,
    flat: Vec<i64>,
    cum: Vec<i64>,
    edges: Vec<(usize, usize, i64)>,
    layer: Vec<usize>,
    total: i64,
    /// Nodes with a value, before the cut.
    all: usize,
}

/// The `size.nodes` heaviest nodes by cum and the calls between them (the nearest kept
/// caller) weighing at least `size.edge_fraction` of the total.
fn kept_graph(p: &Pprof, nodes: &Nodes, index: usize, size: GraphSize) -> Result<CallGraph, Error> {
    let graph = crate::graph::build_all_edges(p, nodes, index);
    let total = crate::graph::total(p, index);
    if total == 0 {
        return Err(Error::NothingToDraw(
            "the profile has no samples of this type with a value",
        ));
    }
    let mut order: Vec<usize> = (0..nodes.len()).filter(|&i| graph.cum[i] != 0).collect();
    let all = order.len();
    order.sort_by(|&a, &b| {
        graph.cum[b]
            .abs()
            .cmp(&graph.cum[a].abs())
            .then(nodes.name(a).cmp(nodes.name(b)))
    });
    order.truncate(size.nodes.max(1));
    let mut kept = vec![false; nodes.len()];
    for &i in &order {
        kept[i] = true;
    }
    let at: FastMap<usize, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let w = crate::graph::weights(p, index);
    let min_edge = (total.unsigned_abs() as f64 * size.edge_fraction) as u64;
    let mut edges: Vec<(usize, usize, i64)> =
        crate::graph::edges(p, nodes, &w, Some(&kept), EdgeSet::All)
            .into_iter()
            .filter(|(_, (wt, _))| wt.unsigned_abs() >= min_edge.max(1))
            .filter_map(|((a, b), (wt, _))| {
                Some((*at.get(&(a as usize))?, *at.get(&(b as usize))?, wt))
            })
            .collect();
    edges.sort_by(|a, b| b.2.abs().cmp(&a.2.abs()).then((a.0, a.1).cmp(&(b.0, b.1))));
    let layer = layers(order.len(), &edges);
    Ok(CallGraph {
        flat: order.iter().map(|&i| graph.flat[i]).collect(),
        cum: order.iter().map(|&i| graph.cum[i]).collect(),
        order,
        edges,
        layer,
        total,
        all,
    })
}

/// Each layer's nodes in order: by the mean position of their callers above (one pass
/// down), else by weight.
fn rows_of(g: &CallGraph) -> Vec<Vec<usize>> {
    let n = g.order.len();
    let depth = g.layer.iter().copied().max().unwrap_or(0) + 1;
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for k in 0..n {
        rows[g.layer[k]].push(k);
    }
    let mut pos = vec![0f64; n];
    for (r, row) in rows.iter_mut().enumerate() {
        let mut keyed: Vec<(f64, usize)> = row
            .iter()
            .map(|&k| {
                let parents: Vec<f64> = g
                    .edges
                    .iter()
                    .filter(|e| e.1 == k && g.layer[e.0] < r)
                    .map(|e| pos[e.0])
                    .collect();
                let key = if parents.is_empty() {
                    k as f64 * 1e-6
                } else {
                    parents.iter().sum::<f64>() / parents.len() as f64
                };
                (key, k)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        *row = keyed.iter().map(|x| x.1).collect();
        let width = row.len().max(1) as f64;
        for (x, &k) in row.iter().enumerate() {
            pos[k] = (x as f64 + 0.5) / width;
        }
    }
    rows
}

/// Writes the call graph of `p`'s `index` values as SVG: boxes sized and coloured by
/// their flat and cum shares (the numbers go tool pprof prints in them), arrows by the
/// calls' weights, the callers above their callees.
pub fn write_call_graph(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    size: GraphSize,
    out: &mut impl std::io::Write,
) -> Result<(), Error> {
    let g = kept_graph(p, nodes, index, size)?;
    let (_, unit) = p.sample_types()[index];
    let rows = rows_of(&g);
    let total = g.total;
    let n = g.order.len();
    let labels: Vec<[String; 3]> = (0..n)
        .map(|k| {
            let (flat, cum) = (g.flat[k], g.cum[k]);
            [
                short(nodes.name(g.order[k])),
                format!(
                    "{} ({})",
                    scaled_label(flat, unit, "auto"),
                    percentage(flat, total).trim()
                ),
                format!(
                    "of {} ({})",
                    scaled_label(cum, unit, "auto"),
                    percentage(cum, total).trim()
                ),
            ]
        })
        .collect();
    // Boxes: text width from the characters, font from the flat share (as go's dot output
    // sizes them), fill from the cum share.
    let font: Vec<f64> = (0..n)
        .map(|k| 10.0 + 14.0 * (g.flat[k] as f64 / total as f64).abs().min(1.0).sqrt())
        .collect();
    let boxes: Vec<(f64, f64)> = (0..n)
        .map(|k| {
            let [a, b, c] = &labels[k];
            let chars = a.chars().count().max(b.len()).max(c.len()) as f64;
            (chars * font[k] * 0.6 + 16.0, font[k] * 3.6 + 8.0)
        })
        .collect();
    let gap = 90.0;
    let (xy, width, y) = place(&rows, &boxes, gap);
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<?xml version="1.0" standalone="no"?><svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{y:.0}" viewBox="0 0 {width:.0} {y:.0}" font-family="Verdana, sans-serif"><style>text{{fill:#000}} .e{{fill:none}} .el{{font-size:11px;fill:#555}}</style><rect width="100%" height="100%" fill="#fff"/><text x="{:.0}" y="24" font-size="17" text-anchor="middle">{}</text><text x="{:.0}" y="44" font-size="12" text-anchor="middle" fill="#555">{n} of {} nodes (the heaviest by cum), calls under {}% of the total left out; total {}</text>"##,
        width / 2.0,
        esc(title),
        width / 2.0,
        g.all,
        size.edge_fraction * 100.0,
        esc(&scaled_label(total, unit, "auto")),
    );
    s.push_str(r##"<defs><marker id="a" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="11" markerHeight="11" orient="auto"><path d="M0,0L10,5L0,10z" fill="#444"/></marker></defs>"##);
    let names: Vec<&str> = g.order.iter().map(|&i| nodes.name(i)).collect();
    draw_edges(&mut s, &g, &names, &xy, &boxes, gap, unit);
    draw_nodes(&mut s, &g, &names, &labels, &font, &xy, &boxes);
    s.push_str("</svg>");
    out.write_all(s.as_bytes()).map_err(Error::draw)
}

/// The boxes: light for little, deep red for most of the total, each with its name and
/// its flat and cum figures.
fn draw_nodes(
    s: &mut String,
    g: &CallGraph,
    names: &[&str],
    labels: &[[String; 3]],
    font: &[f64],
    xy: &[(f64, f64)],
    boxes: &[(f64, f64)],
) {
    let total = g.total;
    for k in 0..names.len() {
        let (x, y) = xy[k];
        let (w, h) = boxes[k];
        let share = (g.cum[k] as f64 / total as f64).abs().min(1.0);
        let fill = format!(
            "hsl({:.0},{:.0}%,{:.0}%)",
            40.0 - 40.0 * share,
            30.0 + 60.0 * share,
            92.0 - 30.0 * share
        );
        let [a, b, c] = &labels[k];
        let (f, cx) = (font[k], x + w / 2.0);
        let _ = write!(
            s,
            r##"<g class="node"><title>{}</title><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="3" fill="{fill}" stroke="#555"/><text x="{cx:.1}" y="{:.1}" font-size="{f:.1}" text-anchor="middle">{}</text><text x="{cx:.1}" y="{:.1}" font-size="{:.1}" text-anchor="middle">{}</text><text x="{cx:.1}" y="{:.1}" font-size="{:.1}" text-anchor="middle">{}</text></g>"##,
            esc(names[k]),
            y + f + 2.0,
            esc(a),
            y + 2.2 * f + 2.0,
            f * 0.85,
            esc(b),
            y + 3.3 * f + 2.0,
            f * 0.85,
            esc(c),
        );
    }
}

/// Each box's top-left corner, rows centred one under the other `gap` apart; the
/// picture's width and height.
fn place(rows: &[Vec<usize>], boxes: &[(f64, f64)], gap: f64) -> (Vec<(f64, f64)>, f64, f64) {
    let row_w: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().map(|&k| boxes[k].0 + 24.0).sum::<f64>())
        .collect();
    let width = row_w.iter().copied().fold(600.0, f64::max) + 40.0;
    let mut xy = vec![(0f64, 0f64); boxes.len()];
    let mut y = 60.0;
    for (r, row) in rows.iter().enumerate() {
        let h = row.iter().map(|&k| boxes[k].1).fold(0.0, f64::max);
        let mut x = (width - row_w[r]) / 2.0 + 12.0;
        for &k in row {
            xy[k] = (x, y + (h - boxes[k].1) / 2.0);
            x += boxes[k].0 + 24.0;
        }
        y += h + gap;
    }
    (xy, width, y)
}

/// The calls as arrows: down to a callee below, around the right side for a call back up
/// (recursion, a cycle), dashed; width by weight, red for 5 % of the total or more.
fn draw_edges(
    s: &mut String,
    g: &CallGraph,
    names: &[&str],
    xy: &[(f64, f64)],
    boxes: &[(f64, f64)],
    gap: f64,
    unit: &str,
) {
    let max_edge = g
        .edges
        .iter()
        .map(|e| e.2.unsigned_abs())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    for &(a, b, wt) in &g.edges {
        let (ax, ay) = (xy[a].0 + boxes[a].0 / 2.0, xy[a].1 + boxes[a].1);
        let (bx, by) = (xy[b].0 + boxes[b].0 / 2.0, xy[b].1);
        let sw = 1.0 + 5.0 * (wt.unsigned_abs() as f64 / max_edge);
        let color = if wt.unsigned_abs() as f64 >= 0.05 * g.total.unsigned_abs() as f64 {
            "#b2182b"
        } else {
            "#666"
        };
        let down = g.layer[b] > g.layer[a];
        let d = if down {
            format!(
                "M{ax:.1},{ay:.1} C{ax:.1},{:.1} {bx:.1},{:.1} {bx:.1},{by:.1}",
                ay + gap / 2.0,
                by - gap / 2.0
            )
        } else {
            let (rx, ry) = (xy[a].0 + boxes[a].0, xy[a].1 + boxes[a].1 / 2.0);
            let (tx, ty) = (xy[b].0 + boxes[b].0, xy[b].1 + boxes[b].1 / 2.0);
            let out = rx.max(tx) + 60.0;
            format!("M{rx:.1},{ry:.1} C{out:.1},{ry:.1} {out:.1},{ty:.1} {tx:.1},{ty:.1}")
        };
        let dash = if down {
            ""
        } else {
            r#" stroke-dasharray="5,4""#
        };
        let weight = esc(&scaled_label(wt, unit, "auto"));
        let _ = write!(
            s,
            r#"<g><title>{} → {}: {weight}</title><path class="e" d="{d}" stroke="{color}" stroke-width="{sw:.1}"{dash} marker-end="url(#a)"/><text class="el" x="{:.1}" y="{:.1}">{weight}</text></g>"#,
            esc(names[a]),
            esc(names[b]),
            (ax + bx) / 2.0 + 4.0,
            (ay + by) / 2.0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_follow_calls_and_survive_cycles() {
        // 0 → 1 → 2, 0 → 2, 2 → 1 (a cycle)
        let l = layers(3, &[(0, 1, 5), (1, 2, 3), (0, 2, 1), (2, 1, 1)]);
        assert_eq!(l[0], 0);
        assert!(l[1] >= 1 && l[2] >= 1 && l[1] != l[2], "{l:?}");
        assert_eq!(short("github.com/x/y/pkg.(*T).Method"), "pkg.(*T).Method");
        assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
    }
}
