//! A profile's stacks as a tree of frames (root first), for flamegraphs: identical paths
//! merged once, while the samples are read, instead of as joined strings; then written as the
//! `root;…;leaf value` lines inferno draws, optionally without the frames too narrow for it
//! to draw (their values stay in their parent's width, so the picture is the same).

use super::fasthash::FastMap;
use super::graph::Nodes;
use super::model::Pprof;

/// Stacks deeper than this are cut in flamegraphs (the frames nearest the root kept, the cut
/// named in the stack and the SVG): a million-frame stack would draw a 200 MB picture.
pub(crate) const MAX_FLAME_DEPTH: usize = 1000;

/// One sign of one sample type's values, merged by path.
pub struct Tree {
    /// Frame names as inferno reads them (`;` would split a frame: written `,`).
    names: Vec<String>,
    /// Per tree node (0 is the root): its frame's name, its parent, its value with its
    /// descendants', its value as a leaf.
    name: Vec<u32>,
    parent: Vec<u32>,
    total: Vec<u64>,
    leaf: Vec<u64>,
    /// Stacks cut at [`MAX_FLAME_DEPTH`].
    pub cut: usize,
    /// Samples of the other sign (not in the tree).
    pub other_sign: usize,
}

/// The children of each tree node: a list of siblings while a node has few (new nodes are
/// appended, so a path's walk stays in memory it just touched), a map for a node with many.
struct Links {
    first: Vec<u32>,
    next: Vec<u32>,
    count: Vec<u32>,
    many: FastMap<(u32, u32), u32>,
}

/// Children scanned as a list before a node's go to the map.
const FEW: u32 = 12;
const NONE: u32 = u32::MAX;

impl Links {
    /// The links of a tree of its root alone.
    fn new() -> Links {
        Links {
            first: vec![NONE],
            next: vec![NONE],
            count: vec![0],
            many: FastMap::default(),
        }
    }

    /// The child of `at` named `name`, made when it is not there.
    #[inline]
    fn child(&mut self, at: u32, name: u32, t: &mut Tree) -> u32 {
        let a = at as usize;
        if self.count[a] <= FEW {
            let mut c = self.first[a];
            while c != NONE {
                if t.name[c as usize] == name {
                    return c;
                }
                c = self.next[c as usize];
            }
        } else if let Some(&c) = self.many.get(&(at, name)) {
            return c;
        }
        let c = t.name.len() as u32;
        t.name.push(name);
        t.parent.push(at);
        t.total.push(0);
        t.leaf.push(0);
        self.first.push(NONE);
        self.next.push(self.first[a]);
        self.first[a] = c;
        self.count.push(0);
        self.count[a] += 1;
        if self.count[a] == FEW + 1 {
            let mut s = c;
            while s != NONE {
                self.many.insert((at, t.name[s as usize]), s);
                s = self.next[s as usize];
            }
        } else if self.count[a] > FEW {
            self.many.insert((at, name), c);
        }
        c
    }
}

impl Tree {
    /// The samples of `p` whose `index` value is positive (with `negative`, the negative
    /// ones as positive values); inlined calls are frames of their own. `nodes` are `p`'s.
    pub(crate) fn with_nodes(p: &Pprof, nodes: &Nodes, index: usize, negative: bool) -> Tree {
        // The frame name of each report node, interned: two nodes of one name are one frame.
        let mut name_of_node: Vec<u32> = vec![u32::MAX; nodes.len()];
        let mut interned: FastMap<&str, u32> = FastMap::default();
        let mut names: Vec<String> = Vec::new();
        let mut cut_names: FastMap<usize, u32> = FastMap::default();
        let mut links = Links::new();
        let mut t = Tree {
            names: Vec::new(),
            name: vec![u32::MAX],
            parent: vec![0],
            total: vec![0],
            leaf: vec![0],
            cut: 0,
            other_sign: 0,
        };
        for (si, s) in p.proto.sample.iter().enumerate() {
            let v = s.value[index];
            let w = if negative { v.saturating_neg() } else { v };
            if w <= 0 {
                if w < 0 {
                    t.other_sign += 1;
                }
                continue;
            }
            let w = w as u64;
            let (mut at, mut depth) = (0u32, 0usize);
            let mut child = |at: u32, name: u32, t: &mut Tree| -> u32 { links.child(at, name, t) };
            t.total[0] = t.total[0].saturating_add(w);
            for &loc in p.sample_locs(si).iter().rev() {
                for &node in nodes.loc(loc as usize).iter().rev() {
                    depth += 1;
                    if depth > MAX_FLAME_DEPTH {
                        continue;
                    }
                    let n = &mut name_of_node[node as usize];
                    if *n == u32::MAX {
                        let text = nodes.name(node as usize);
                        *n = *interned.entry(text).or_insert_with(|| {
                            names.push(crate::text::flame_frame(text));
                            (names.len() - 1) as u32
                        });
                    }
                    at = child(at, *n, &mut t);
                    t.total[at as usize] = t.total[at as usize].saturating_add(w);
                }
            }
            if depth > MAX_FLAME_DEPTH {
                t.cut += 1;
                let more = depth - MAX_FLAME_DEPTH;
                let n = *cut_names.entry(more).or_insert_with(|| {
                    names.push(format!("[{more} more frames cut]"));
                    (names.len() - 1) as u32
                });
                at = child(at, n, &mut t);
                t.total[at as usize] = t.total[at as usize].saturating_add(w);
            }
            t.leaf[at as usize] = t.leaf[at as usize].saturating_add(w);
        }
        drop(interned);
        t.names = names;
        t
    }

    /// The sum of every value in the tree.
    pub fn total(&self) -> u64 {
        self.total[0]
    }

    /// The frames kept when at most `max` of those worth `min_value` or more are drawn:
    /// the widest, the shallowest first among equals (so every kept frame's caller is
    /// kept), and how many of them are folded into their callers; None when no more than
    /// `max` are worth it.
    pub fn keeping(&self, max: usize, min_value: f64) -> Option<(Vec<bool>, usize)> {
        let n = self.total.len();
        let mut order: Vec<u32> = (1..n as u32)
            .filter(|&i| self.total[i as usize] as f64 >= min_value)
            .collect();
        if order.len() <= max {
            return None;
        }
        let mut depth = vec![0u32; n];
        for i in 1..n {
            depth[i] = depth[self.parent[i] as usize] + 1;
        }
        let rank = |&i: &u32| {
            (
                std::cmp::Reverse(self.total[i as usize]),
                depth[i as usize],
                i,
            )
        };
        order.select_nth_unstable_by_key(max, rank);
        let mut keep = vec![false; n];
        keep[0] = true;
        for &i in &order[..max] {
            keep[i as usize] = true;
        }
        Some((keep, order.len() - max))
    }

    /// `root;…;leaf value` lines, one per path with a value of its own, sorted. A frame whose
    /// whole value is under `min_value` is written as one line of that value, what is under
    /// it left out (inferno does not draw it, nor anything under it; the frames it draws
    /// are as wide as before, where they were); the outermost frames are all kept.
    pub fn lines(&self, min_value: f64) -> Vec<String> {
        self.lines_keeping(min_value, None)
    }

    /// [`Tree::lines`] of the frames `keep` holds (see [`Tree::keeping`]): one that is not
    /// is folded into its caller (its value the caller's own), so at most the frames kept
    /// are drawn.
    pub(crate) fn lines_keeping(&self, min_value: f64, keep: Option<&[bool]>) -> Vec<String> {
        let n = self.name.len();
        // Each node's line value: its leaf value, or for a node cut short, its whole value.
        let mut own = self.leaf.clone();
        // 0: kept; 1: cut short here (a line of its whole value, nothing under it); 2: gone.
        let mut state = vec![0u8; n];
        // Nodes are created after their parents, so one pass in order sees a parent first.
        for i in 1..n {
            let p = self.parent[i] as usize;
            if state[p] != 0 {
                state[i] = 2;
            } else if p != 0 && keep.is_some_and(|k| !k[i]) {
                // Folded into its caller: the caller's own line carries its value, so the
                // caller is as wide as before and nothing is drawn for it.
                state[i] = 2;
                own[p] += self.total[i];
            } else if p != 0 && (self.total[i] as f64) < min_value {
                state[i] = 1;
                own[i] = self.total[i];
            }
        }
        let kept: Vec<bool> = state.iter().map(|&s| s < 2).collect();
        // Children of each node (counted, then placed), for a walk with one path buffer.
        let mut first = vec![0u32; n + 1];
        for (&k, &p) in kept.iter().zip(&self.parent).skip(1) {
            if k {
                first[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let mut next = first.clone();
        let mut kids = vec![0u32; first[n] as usize];
        for (i, (&k, &p)) in kept.iter().zip(&self.parent).enumerate().skip(1) {
            if k {
                kids[next[p as usize] as usize] = i as u32;
                next[p as usize] += 1;
            }
        }
        let mut lines = Vec::new();
        let mut path = String::new();
        // (node, the path's length before its name)
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        while let Some((i, len)) = stack.pop() {
            let i = i as usize;
            path.truncate(len);
            if i > 0 {
                if self.parent[i] != 0 {
                    path.push(';');
                }
                path.push_str(&self.names[self.name[i] as usize]);
            }
            if own[i] > 0 {
                lines.push(format!("{path} {}", own[i]));
            }
            let here = path.len();
            for &k in &kids[first[i] as usize..first[i + 1] as usize] {
                stack.push((k, here));
            }
        }
        lines.sort_unstable();
        lines
    }
}
