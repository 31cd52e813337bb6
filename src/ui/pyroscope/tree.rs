//! Stacks by function name, as Pyroscope draws them: one tree per query (two sides for a
//! diff), written as Pyroscope's flamegraph levels — per level, per node left to right,
//! `[offset, total, self, name]` (a diff: the left side's three, the right side's three,
//! the name), where `offset` is the gap from the end of the level's node before it — and
//! cut to a number of nodes, the narrowest children of a node summed into `other`.

use std::collections::HashMap;

use crate::pprof::Pprof;
use crate::pprof::proto;

use super::proto::{FlameGraph, FlameGraphDiff, Level};

struct Node {
    name: u32,
    total: [i64; 2],
    own: [i64; 2],
    children: Vec<u32>,
}

/// A tree of stacks, root first, by function name.
pub struct Tree {
    names: Vec<String>,
    name_ix: HashMap<String, u32>,
    nodes: Vec<Node>,
    child_ix: HashMap<(u32, u32), u32>,
}

/// A sample's frames, root first: its locations' lines (an inlined function after its
/// caller), each named by its function, or by the address when it has no line.
pub fn frames(p: &Pprof, i: usize, out: &mut Vec<String>) {
    out.clear();
    for &li in p.sample_locs(i).iter().rev() {
        let lines = &p.loc_lines[li as usize];
        if lines.is_empty() {
            out.push(format!("0x{:x}", p.proto.location[li as usize].address));
        }
        for (f, _) in lines.iter().rev() {
            match f {
                Some(f) => out.push(p.str(p.proto.function[*f].name).to_string()),
                None => out.push(format!("0x{:x}", p.proto.location[li as usize].address)),
            }
        }
    }
}

/// Each sample of `p` with a value of sample type `index`, under `call_site`: its index,
/// that value and its frames (root first).
fn each_sample(
    p: &Pprof,
    index: usize,
    call_site: &[String],
    mut each: impl FnMut(usize, i64, &[String]),
) {
    let mut f = Vec::new();
    for (i, s) in p.proto.sample.iter().enumerate() {
        let v = s.value.get(index).copied().unwrap_or(0);
        if v == 0 {
            continue;
        }
        frames(p, i, &mut f);
        if under(&f, call_site) {
            each(i, v, &f);
        }
    }
}

/// Whether the frames (root first) begin with `call_site`'s names.
fn under(frames: &[String], call_site: &[String]) -> bool {
    frames.len() >= call_site.len() && frames.iter().zip(call_site).all(|(a, b)| a == b)
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

impl Tree {
    pub fn new() -> Tree {
        let mut t = Tree {
            names: Vec::new(),
            name_ix: HashMap::new(),
            nodes: Vec::new(),
            child_ix: HashMap::new(),
        };
        let root = t.intern("total");
        t.nodes.push(Node {
            name: root,
            total: [0; 2],
            own: [0; 2],
            children: Vec::new(),
        });
        t
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_ix.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.name_ix.insert(name.to_string(), i);
        i
    }

    /// Nodes below the root.
    fn len(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Adds `p`'s samples of sample type `index` to `side` (0, or 1 for a diff's right),
    /// those under `call_site` only.
    pub fn add(&mut self, p: &Pprof, index: usize, side: usize, call_site: &[String]) {
        each_sample(p, index, call_site, |_, v, f| self.add_stack(f, v, side));
    }

    fn add_stack(&mut self, frames: &[String], v: i64, side: usize) {
        let mut at = 0u32;
        self.nodes[0].total[side] += v;
        for name in frames {
            let n = self.intern(name);
            let child = match self.child_ix.get(&(at, n)) {
                Some(&c) => c,
                None => {
                    let c = self.nodes.len() as u32;
                    self.nodes.push(Node {
                        name: n,
                        total: [0; 2],
                        own: [0; 2],
                        children: Vec::new(),
                    });
                    self.nodes[at as usize].children.push(c);
                    self.child_ix.insert((at, n), c);
                    c
                }
            };
            self.nodes[child as usize].total[side] += v;
            at = child;
        }
        self.nodes[at as usize].own[side] += v;
    }

    /// The smallest total kept when at most `max_nodes` nodes are drawn: the
    /// `max_nodes`-th largest (both sides added), or 0 when all fit.
    fn smallest_kept(&self, max_nodes: usize) -> i64 {
        if self.len() <= max_nodes {
            return i64::MIN;
        }
        let mut totals: Vec<i64> = self.nodes[1..]
            .iter()
            .map(|n| n.total[0].abs() + n.total[1].abs())
            .collect();
        let k = max_nodes.max(1) - 1;
        totals.select_nth_unstable_by(k, |a, b| b.cmp(a));
        totals[k]
    }

    /// The levels of `sides` sides, at most about `max_nodes` nodes; and the largest self.
    fn levels(&mut self, sides: usize, max_nodes: usize) -> (Vec<Level>, i64) {
        let min = self.smallest_kept(max_nodes);
        let width = |n: &Node| n.total[0].abs() + n.total[1].abs();
        // Nodes as wide as the smallest kept are kept while the bound allows, first come.
        let wider = self.nodes[1..].iter().filter(|n| width(n) > min).count();
        let mut ties_left = max_nodes.saturating_sub(wider);
        let other = self.intern("other");
        // Children in name order, as Pyroscope lays them out.
        let mut order: Vec<Vec<u32>> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let mut c = n.children.clone();
            c.sort_by(|a, b| {
                self.names[self.nodes[*a as usize].name as usize]
                    .cmp(&self.names[self.nodes[*b as usize].name as usize])
            });
            order.push(c);
        }
        let mut levels: Vec<Level> = Vec::new();
        let mut ends: Vec<[i64; 2]> = Vec::new();
        let mut max_self = 0i64;
        // (node, or the "other" of a node's cut children with its totals; level; x per side)
        enum Item {
            Node(u32),
            Other([i64; 2]),
        }
        let mut stack: Vec<(Item, usize, [i64; 2])> = vec![(Item::Node(0), 0, [0, 0])];
        while let Some((item, level, x)) = stack.pop() {
            let (name, total, own) = match &item {
                Item::Node(i) => {
                    let n = &self.nodes[*i as usize];
                    (n.name, n.total, if *i == 0 { [0, 0] } else { n.own })
                }
                Item::Other(t) => (other, *t, *t),
            };
            if levels.len() == level {
                levels.push(Level::default());
                ends.push([0, 0]);
            }
            let l = &mut levels[level].values;
            for s in 0..sides {
                l.push(x[s] - ends[level][s]);
                l.push(total[s]);
                l.push(own[s]);
                ends[level][s] = x[s] + total[s];
                max_self = max_self.max(own[s]);
            }
            l.push(i64::from(name));
            let Item::Node(i) = item else { continue };
            let mut cursor = x;
            let mut cut = [0i64; 2];
            let mut next = Vec::new();
            for &c in &order[i as usize] {
                let n = &self.nodes[c as usize];
                let w = width(n);
                let tie_kept = w == min && ties_left > 0;
                if tie_kept {
                    ties_left -= 1;
                }
                if w < min || (w == min && !tie_kept) {
                    cut = [cut[0] + n.total[0], cut[1] + n.total[1]];
                    continue;
                }
                next.push((Item::Node(c), level + 1, cursor));
                cursor = [cursor[0] + n.total[0], cursor[1] + n.total[1]];
            }
            if cut != [0, 0] {
                next.push((Item::Other(cut), level + 1, cursor));
            }
            // Popped left to right.
            stack.extend(next.into_iter().rev());
        }
        (levels, max_self)
    }

    pub fn flamegraph(mut self, max_nodes: usize) -> FlameGraph {
        let total = self.nodes[0].total[0];
        let (levels, max_self) = self.levels(1, max_nodes);
        FlameGraph {
            names: self.names,
            levels,
            total,
            max_self,
        }
    }

    pub fn diff(mut self, max_nodes: usize) -> FlameGraphDiff {
        let [left, right] = self.nodes[0].total;
        let (levels, max_self) = self.levels(2, max_nodes);
        FlameGraphDiff {
            names: self.names,
            levels,
            total: left + right,
            max_self,
            left_ticks: left,
            right_ticks: right,
        }
    }
}

/// `p` as SelectMergeProfile answers it: sample type `index` alone, the samples under
/// `call_site`, and with `max_nodes`, each stack cut at its first frame narrower than the
/// tree's `max_nodes` widest, the rest of it one frame named `other`.
pub fn one_type(
    p: &Pprof,
    index: usize,
    call_site: &[String],
    max_nodes: Option<usize>,
) -> proto::Profile {
    let min = max_nodes.map(|m| {
        let mut t = Tree::new();
        t.add(p, index, 0, call_site);
        (t.smallest_kept(m), t)
    });
    let mut out = proto::Profile {
        sample_type: vec![p.proto.sample_type[index]],
        mapping: p.proto.mapping.clone(),
        location: p.proto.location.clone(),
        function: p.proto.function.clone(),
        string_table: p.proto.string_table.clone(),
        time_nanos: p.proto.time_nanos,
        duration_nanos: p.proto.duration_nanos,
        period_type: p.proto.period_type,
        period: p.proto.period,
        comment: p.proto.comment.clone(),
        ..proto::Profile::default()
    };
    let mut other_loc = None;
    let mut samples = Vec::new();
    each_sample(p, index, call_site, |i, v, f| {
        let mut ids = p.location_ids(i);
        if let Some((min, tree)) = &min {
            // Walk the tree root first, a location (all its lines) at a time.
            let locs = p.sample_locs(i);
            let mut at = 0u32;
            let mut keep = locs.len();
            // The first of this location's names in `f` (one per line, one without lines).
            let mut first = 0;
            'walk: for (depth, &li) in locs.iter().rev().enumerate() {
                let lines = p.loc_lines[li as usize].len().max(1);
                for name in &f[first..first + lines] {
                    let next = tree
                        .name_ix
                        .get(name)
                        .and_then(|n| tree.child_ix.get(&(at, *n)))
                        .copied();
                    match next {
                        Some(c) if tree.nodes[c as usize].total[0].abs() >= *min => at = c,
                        _ => {
                            keep = depth;
                            break 'walk;
                        }
                    }
                }
                first += lines;
            }
            if keep < locs.len() {
                // Leaf first: the cut frames are the first `len - keep`.
                let other = *other_loc.get_or_insert_with(|| add_other(&mut out));
                let mut cut = vec![other];
                cut.extend_from_slice(&ids[locs.len() - keep..]);
                ids = cut;
            }
        }
        samples.push(proto::Sample {
            location_id: ids,
            value: vec![v],
            label: p.proto.sample[i].label.clone(),
        });
    });
    out.sample = samples;
    out
}

/// A function and a location named `other` added to `p`; the location's id.
fn add_other(p: &mut proto::Profile) -> u64 {
    p.string_table.push("other".into());
    let name = p.string_table.len() as i64 - 1;
    let fid = p.function.iter().map(|f| f.id).max().unwrap_or(0) + 1;
    p.function.push(proto::Function {
        id: fid,
        name,
        system_name: name,
        ..proto::Function::default()
    });
    let lid = p.location.iter().map(|l| l.id).max().unwrap_or(0) + 1;
    p.location.push(proto::Location {
        id: lid,
        line: vec![proto::Line {
            function_id: fid,
            ..proto::Line::default()
        }],
        ..proto::Location::default()
    });
    lid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

    /// Functions a, b, c, d (ids 1–4, one location each); stacks a→b 3, a→c 2, d 5.
    fn abcd() -> Pprof {
        let mut strings: Vec<String> = vec!["".into(), "cpu".into(), "nanoseconds".into()];
        let mut function = Vec::new();
        let mut location = Vec::new();
        for (i, n) in ["a", "b", "c", "d"].iter().enumerate() {
            strings.push((*n).into());
            let id = i as u64 + 1;
            function.push(Function {
                id,
                name: strings.len() as i64 - 1,
                ..Function::default()
            });
            location.push(Location {
                id,
                line: vec![Line {
                    function_id: id,
                    ..Line::default()
                }],
                ..Location::default()
            });
        }
        let sample = |locs: &[u64], v: i64| Sample {
            location_id: locs.to_vec(),
            value: vec![v],
            label: vec![],
        };
        Pprof::new(Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample: vec![sample(&[2, 1], 3), sample(&[3, 1], 2), sample(&[4], 5)],
            location,
            function,
            string_table: strings,
            ..Profile::default()
        })
        .expect("valid")
    }

    #[test]
    fn levels_place_each_node_after_the_gap_before_it() {
        let mut t = Tree::new();
        t.add(&abcd(), 0, 0, &[]);
        let fg = t.flamegraph(100);
        let name = |s: &str| fg.names.iter().position(|n| n == s).unwrap() as i64;
        let levels: Vec<Vec<i64>> = fg.levels.iter().map(|l| l.values.clone()).collect();
        assert_eq!(
            levels,
            vec![
                vec![0, 10, 0, 0],
                vec![0, 5, 0, name("a"), 0, 5, 5, name("d")],
                vec![0, 3, 3, name("b"), 0, 2, 2, name("c")],
            ]
        );
        assert_eq!((fg.total, fg.max_self), (10, 5));
        // Two nodes at most: a and d; b and c summed into a's `other`.
        let mut t = Tree::new();
        t.add(&abcd(), 0, 0, &[]);
        let fg = t.flamegraph(2);
        let other = fg.names.iter().position(|n| n == "other").unwrap() as i64;
        assert_eq!(fg.levels[2].values, vec![0, 5, 5, other]);
        // Only the stacks under a.
        let mut t = Tree::new();
        t.add(&abcd(), 0, 0, &["a".to_string()]);
        assert_eq!(t.flamegraph(100).total, 5);
    }

    #[test]
    fn a_diff_lays_each_side_out_by_its_own_totals() {
        let p = abcd();
        let mut t = Tree::new();
        t.add(&p, 0, 0, &[]);
        t.add(&p, 0, 1, &["d".to_string()]);
        let d = t.diff(100);
        assert_eq!((d.left_ticks, d.right_ticks, d.total), (10, 5, 15));
        let name = |s: &str| d.names.iter().position(|n| n == s).unwrap() as i64;
        // a: left 0..5, right none; d: left 5..10 (gap 0), right 0..5 (gap 0).
        assert_eq!(
            d.levels[1].values,
            vec![0, 5, 0, 0, 0, 0, name("a"), 0, 5, 5, 0, 5, 5, name("d")]
        );
    }

    #[test]
    fn a_profile_cut_to_its_widest_nodes_keeps_its_total() {
        let p = abcd();
        let whole = one_type(&p, 0, &[], None);
        assert_eq!(whole.sample.len(), 3);
        let cut = one_type(&p, 0, &[], Some(2));
        let other = cut.location.last().unwrap().id;
        let stacks: Vec<(Vec<u64>, i64)> = cut
            .sample
            .iter()
            .map(|s| (s.location_id.clone(), s.value[0]))
            .collect();
        assert_eq!(
            stacks,
            vec![(vec![other, 1], 3), (vec![other, 1], 2), (vec![4], 5)]
        );
        assert_eq!(cut.string_table.last().unwrap(), "other");
    }
}
