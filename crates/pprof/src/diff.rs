//! What changed between two profiles: per function, flat and cum in each and the difference
//! (absolute and relative to the base), sorted by the size of the change; and folded stacks
//! for flamegraphs, plain or differential.

use std::collections::HashMap;

use super::graph::{Nodes, flat_cum, total, weights};
use super::measure::{scale, scaled_label};
use super::model::{Pprof, SampleIndexError};

#[derive(Debug, Clone, serde::Serialize)]
pub struct DiffRow {
    pub function: String,
    pub base_flat: i64,
    pub new_flat: i64,
    pub base_cum: i64,
    pub new_cum: i64,
    pub delta_flat: i64,
    pub delta_cum: i64,
    /// Change relative to the function's own base value, in percent; None when that is 0.
    pub delta_flat_pct: Option<f64>,
    pub delta_cum_pct: Option<f64>,
    /// Change relative to the base's total, in percent, as go tool pprof -diff_base shows
    /// it; None when the base total is 0.
    pub delta_flat_pct_of_total: Option<f64>,
    pub delta_cum_pct_of_total: Option<f64>,
    /// The function appears in the base profile (a 0 flat there is not "new").
    pub in_base: bool,
    /// The row's cells as the table prints them, each value in the unit that shows it.
    pub text: DiffRowText,
}

/// A [`DiffRow`] as `agentprof diff` prints it (the page shows these).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DiffRowText {
    pub delta_flat: String,
    pub delta_flat_own: String,
    pub delta_flat_total: String,
    pub delta_cum: String,
    pub delta_cum_own: String,
    pub delta_cum_total: String,
    pub new_flat: String,
    pub new_cum: String,
    pub base_flat: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DiffReport {
    pub sample_type: String,
    pub unit: String,
    pub output_unit: String,
    pub base_total: i64,
    pub new_total: i64,
    /// The base's values were multiplied by this (`--normalize`), else 1.
    pub base_scale: f64,
    pub rows: Vec<DiffRow>,
}

/// Flat and cum per function name over every sample of `index`.
fn per_function(p: &Pprof, nodes: &Nodes, index: usize) -> HashMap<String, (i64, i64)> {
    let (flat, cum) = flat_cum(p, nodes, &weights(p, index));
    let mut out: HashMap<String, (i64, i64)> = HashMap::new();
    for i in 0..nodes.len() {
        if flat[i] == 0 && cum[i] == 0 {
            continue;
        }
        let e = out.entry(nodes.name(i).to_string()).or_default();
        e.0 = e.0.wrapping_add(flat[i]);
        e.1 = e.1.wrapping_add(cum[i]);
    }
    out
}

/// Why two profiles cannot be compared.
#[derive(Debug)]
pub enum DiffError {
    /// `--sample-index` names nothing in one of them.
    SampleIndex(SampleIndexError),
    /// They do not report the same thing; the message names both sides' types.
    Mismatch(String),
}

impl std::fmt::Display for DiffError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiffError::SampleIndex(e) => e.fmt(f),
            DiffError::Mismatch(m) => f.write_str(m),
        }
    }
}

fn type_list(p: &Pprof) -> String {
    p.sample_types()
        .iter()
        .map(|(t, u)| format!("{t}/{u}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sample index of `name` in both profiles, which must agree on type and unit.
pub fn common_index(
    base: &Pprof,
    new: &Pprof,
    name: Option<&str>,
) -> Result<(usize, usize), DiffError> {
    let ni = new.sample_index(name).map_err(DiffError::SampleIndex)?;
    let (t, u) = new.sample_types()[ni];
    let bi = match name {
        Some(n) => base.sample_index(Some(n)).map_err(DiffError::SampleIndex)?,
        None => base.sample_index(Some(t)).map_err(|_| {
            DiffError::Mismatch(format!(
                "the new profile reports {t}/{u}, which the base does not have (the base has {}; the new one {})",
                type_list(base),
                type_list(new)
            ))
        })?,
    };
    let (bt, bu) = base.sample_types()[bi];
    if bt != t || !bu.eq_ignore_ascii_case(u) {
        return Err(DiffError::Mismatch(format!(
            "the profiles differ: the base reports {bt}/{bu}, the new one {t}/{u} (the base has {}; the new one {})",
            type_list(base),
            type_list(new)
        )));
    }
    Ok((bi, ni))
}

pub fn diff(
    base: &Pprof,
    new: &Pprof,
    sample_index: Option<&str>,
    normalize: bool,
    cum: bool,
) -> Result<DiffReport, DiffError> {
    let sides = [(base, &Nodes::new(base)), (new, &Nodes::new(new))];
    diff_with(sides, sample_index, normalize, cum)
}

/// [`diff`] over report nodes already built for each profile (the ui keeps them with the
/// decoded profile).
pub fn diff_with(
    [(base, base_nodes), (new, new_nodes)]: [(&Pprof, &Nodes); 2],
    sample_index: Option<&str>,
    normalize: bool,
    cum: bool,
) -> Result<DiffReport, DiffError> {
    let (bi, ni) = common_index(base, new, sample_index)?;
    let (stype, unit) = new.sample_types()[ni];
    let (base_total, new_total) = (total(base, bi), total(new, ni));
    let k = if normalize && base_total != 0 {
        new_total as f64 / base_total as f64
    } else {
        1.0
    };
    let b = per_function(base, base_nodes, bi);
    let n = per_function(new, new_nodes, ni);
    let mut names: Vec<&String> = b.keys().chain(n.keys()).collect();
    names.sort();
    names.dedup();
    let pct =
        |d: i64, base: i64| (base != 0).then(|| d as f64 / base.wrapping_abs() as f64 * 100.0);
    let base_total_scaled = (base_total as f64 * k) as i64;
    let mut rows: Vec<DiffRow> = names
        .into_iter()
        .map(|name| {
            let (bf, bc) = b.get(name).copied().unwrap_or_default();
            let (bf, bc) = ((bf as f64 * k) as i64, (bc as f64 * k) as i64);
            let (nf, nc) = n.get(name).copied().unwrap_or_default();
            DiffRow {
                function: name.clone(),
                base_flat: bf,
                new_flat: nf,
                base_cum: bc,
                new_cum: nc,
                delta_flat: nf.wrapping_sub(bf),
                delta_cum: nc.wrapping_sub(bc),
                delta_flat_pct: pct(nf.wrapping_sub(bf), bf),
                delta_cum_pct: pct(nc.wrapping_sub(bc), bc),
                delta_flat_pct_of_total: pct(nf.wrapping_sub(bf), base_total_scaled),
                delta_cum_pct_of_total: pct(nc.wrapping_sub(bc), base_total_scaled),
                in_base: b.contains_key(name),
                text: DiffRowText::default(),
            }
        })
        .filter(|r| r.delta_flat != 0 || r.delta_cum != 0)
        .collect();
    sort_rows(&mut rows, cum);
    let biggest = rows
        .iter()
        .map(|r| r.delta_flat.wrapping_abs().max(r.delta_cum.wrapping_abs()))
        .max()
        .unwrap_or(new_total.max(base_total));
    let out_unit = match scale(biggest, unit, "minimum").1 {
        u if u.is_empty() => unit.to_string(),
        u => u,
    };
    for r in &mut rows {
        r.text = row_text(r, unit);
    }
    Ok(DiffReport {
        sample_type: stype.to_string(),
        unit: unit.to_string(),
        output_unit: out_unit,
        base_total,
        new_total,
        base_scale: k,
        rows,
    })
}

/// go tool pprof's order: the size of the change, then the name, then the other value.
fn sort_rows(rows: &mut [DiffRow], cum: bool) {
    rows.sort_by(|l, r| {
        let key = |x: &DiffRow| {
            if cum {
                (x.delta_cum.wrapping_abs(), x.delta_flat.wrapping_abs())
            } else {
                (x.delta_flat.wrapping_abs(), x.delta_cum.wrapping_abs())
            }
        };
        let ((lm, lo), (rm, ro)) = (key(l), key(r));
        rm.cmp(&lm)
            .then_with(|| l.function.cmp(&r.function))
            .then(ro.cmp(&lo))
    });
}

/// A row's cells: values in the unit that shows each (a 1,878 ns change reads `+1.88us`,
/// not `+0` in seconds); "new" only for a function the base does not have, "-" for a
/// percentage of a 0 base value.
fn row_text(r: &DiffRow, unit: &str) -> DiffRowText {
    let label = |v: i64| scaled_label(v, unit, "minimum");
    let signed = |v: i64| {
        let s = label(v);
        if v > 0 { format!("+{s}") } else { s }
    };
    let own = |p: Option<f64>| match p {
        Some(p) => format!("{p:+.1}%").replace("+0.0%", "0.0%"),
        None if r.in_base => "-".to_string(),
        None => "new".to_string(),
    };
    let of_total = |p: Option<f64>| match p {
        Some(p) => format!("{p:+.2}%").replace("+0.00%", "0.00%"),
        None => "-".to_string(),
    };
    DiffRowText {
        delta_flat: signed(r.delta_flat),
        delta_flat_own: own(r.delta_flat_pct),
        delta_flat_total: of_total(r.delta_flat_pct_of_total),
        delta_cum: signed(r.delta_cum),
        delta_cum_own: own(r.delta_cum_pct),
        delta_cum_total: of_total(r.delta_cum_pct_of_total),
        new_flat: label(r.new_flat),
        new_cum: label(r.new_cum),
        base_flat: label(r.base_flat),
    }
}

impl DiffReport {
    /// The table; `limit` rows at most (0: all). Every value is in the unit that shows it
    /// (a 1,878 ns change reads `+1.88us`, not `+0` in seconds).
    pub fn text(&self, limit: usize) -> String {
        let label = |v: i64| scaled_label(v, &self.unit, "minimum");
        let f = |v: i64| {
            let s = label(v);
            if v > 0 { format!("+{s}") } else { s }
        };
        let mut out = format!(
            "Type: {}\nTotal: {} -> {} ({})\n",
            self.sample_type,
            label(self.base_total),
            label(self.new_total),
            f(self.new_total.wrapping_sub(self.base_total))
        );
        if self.base_scale != 1.0 {
            out.push_str(&format!(
                "Base normalized: its values multiplied by {:.4}\n",
                self.base_scale
            ));
        }
        out.push_str(
            "%own: the change relative to the function's base value; %total: relative to the base's total (go tool pprof -diff_base's flat% and cum%)\n",
        );
        let row = |cells: [&str; 9]| {
            format!(
                "{:>11} {:>8} {:>8} {:>11} {:>8} {:>8} {:>10} {:>10}  {}\n",
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5],
                cells[6],
                cells[7],
                cells[8]
            )
        };
        out.push_str(&row([
            "Δflat",
            "%own",
            "%total",
            "Δcum",
            "%own",
            "%total",
            "flat",
            "cum",
            "function (new values)",
        ]));
        for r in self
            .rows
            .iter()
            .take(if limit == 0 { usize::MAX } else { limit })
        {
            let t = &r.text;
            out.push_str(&row([
                &t.delta_flat,
                &t.delta_flat_own,
                &t.delta_flat_total,
                &t.delta_cum,
                &t.delta_cum_own,
                &t.delta_cum_total,
                &t.new_flat,
                &t.new_cum,
                &r.function,
            ]));
        }
        if limit > 0 && self.rows.len() > limit {
            out.push_str(&format!(
                "… {} more changed functions (-n 0 shows all)\n",
                self.rows.len() - limit
            ));
        }
        out
    }
}

pub use super::fold::MAX_FLAME_DEPTH;

/// Folded stacks of one sign of a profile's values, and what was left out of them.
#[derive(Debug, Default)]
pub struct Folded {
    /// `root;…;leaf value` lines, identical stacks merged, sorted.
    pub lines: Vec<String>,
    /// Stacks cut at [`MAX_FLAME_DEPTH`].
    pub cut: usize,
    /// Samples of the other sign (not in `lines`).
    pub other_sign: usize,
}

/// `root;…;leaf value` lines of every sample with a positive value (or, with `negative`, of
/// every negative one, as positive values), identical stacks merged; inlined calls are frames
/// of their own.
pub fn folded_signed(p: &Pprof, index: usize, negative: bool) -> Folded {
    folded_with(p, &Nodes::new(p), index, negative)
}

fn folded_with(p: &Pprof, nodes: &Nodes, index: usize, negative: bool) -> Folded {
    let tree = super::fold::Tree::with_nodes(p, nodes, index, negative);
    Folded {
        lines: tree.lines(0.0),
        cut: tree.cut,
        other_sign: tree.other_sign,
    }
}

/// [`folded_signed`]'s positive lines.
pub fn folded(p: &Pprof, index: usize) -> Vec<String> {
    folded_signed(p, index, false).lines
}

fn cut_note(cut: usize) -> Option<String> {
    (cut > 0).then(|| {
        format!(
            "{cut} stack{} deeper than {MAX_FLAME_DEPTH} frames cut at {MAX_FLAME_DEPTH}",
            if cut == 1 { "" } else { "s" }
        )
    })
}

/// Why a flamegraph was not drawn.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    /// Nothing to draw, and why.
    #[error("{0}: nothing to draw")]
    Empty(&'static str),
    #[error("cannot merge the stacks: {0}")]
    Merge(std::io::Error),
    /// inferno's error, which includes writing the SVG out.
    #[error("cannot draw the flamegraph: {0}")]
    Draw(std::io::Error),
}

/// Writes a flamegraph of `p`'s `index` values. A profile that holds negative values (a
/// diff, such as `go tool pprof -proto -diff_base` writes) is drawn as a differential
/// flamegraph: sized by its positive samples, coloured by the change the negative ones
/// take away.
pub fn write_flamegraph(
    p: &Pprof,
    index: usize,
    title: &str,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    draw(p, &Nodes::new(p), index, title, Look::default(), out)
}

/// [`write_flamegraph`] with the nodes of `p` already built.
pub fn write_flamegraph_with(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    draw(p, nodes, index, title, Look::default(), out)
}

/// How a flamegraph is drawn beyond its profile.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    /// Frames inferno would not draw are left out before it reads the lines (false: every
    /// line, for the test that the picture is the same).
    pub prune: bool,
    /// Upside down: the roots at the top, the callees below them (inferno's inverted
    /// direction), as Pyroscope and go tool pprof's web view draw it.
    pub icicle: bool,
    /// At most this many frames: the narrowest beyond it are folded into their callers and
    /// the subtitle says how many and under what share (a page opens a 100,000-frame
    /// picture slowly and searches it slower).
    pub max_frames: Option<usize>,
}

impl Default for Look {
    fn default() -> Look {
        Look {
            prune: true,
            icicle: false,
            max_frames: None,
        }
    }
}

/// [`write_flamegraph_with`], drawn as `look` says.
pub fn write_flamegraph_look(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    look: Look,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    draw(p, nodes, index, title, look, out)
}

/// [`write_flamegraph`], drawn as `look` says.
fn draw(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    look: Look,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    let tree = super::fold::Tree::with_nodes(p, nodes, index, false);
    let (stype, unit) = p.sample_types()[index];
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    if look.icicle {
        opts.direction = inferno::flamegraph::Direction::Inverted;
    }
    // No parentheses in the count's name: the SVG's script labels a frame with its title
    // less its last parenthesised part (the value and share).
    opts.count_name = format!("{stype} [{unit}]");
    if tree.other_sign > 0 {
        let pos = Folded {
            lines: tree.lines(0.0),
            cut: tree.cut,
            other_sign: tree.other_sign,
        };
        let neg = folded_with(p, nodes, index, true);
        let notes: Vec<String> = [
            Some(format!(
                "differential: {} negative samples (a diff) drawn as what shrank (blue); red grew",
                pos.other_sign
            )),
            cut_note(pos.cut + neg.cut),
        ]
        .into_iter()
        .flatten()
        .collect();
        opts.subtitle = Some(notes.join("; "));
        return draw_differential(&neg.lines, &pos.lines, false, opts, out);
    }
    // The frames inferno would leave out as narrower than its `min_width` (a share of the
    // whole, computed as it computes it) are left out before it reads the lines: a
    // million-stack profile becomes the few thousand lines it draws, the same picture.
    let mut min_value = if look.prune {
        opts.min_width / (100.0 / tree.total() as f64)
    } else {
        0.0
    };
    let mut folded = None;
    if let Some(max) = look.max_frames
        && let Some((at, n)) = tree.value_keeping(max)
        && at > min_value
    {
        min_value = at;
        folded = Some(format!(
            "{n} frames under {:.3}% of the total each folded into their callers (focus on a function to see them)",
            100.0 * at / tree.total().max(1) as f64
        ));
    }
    let lines = tree.lines(min_value);
    if lines.is_empty() {
        return Err(DrawError::Empty(
            "the profile has no samples of this type with a value",
        ));
    }
    let notes: Vec<String> = [cut_note(tree.cut), folded].into_iter().flatten().collect();
    opts.subtitle = (!notes.is_empty()).then(|| notes.join("; "));
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(DrawError::Draw)
}

fn draw_differential(
    before: &[String],
    after: &[String],
    normalize: bool,
    mut opts: inferno::flamegraph::Options<'_>,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    let (before, after) = (before.join("\n"), after.join("\n"));
    if after.is_empty() && before.is_empty() {
        return Err(DrawError::Empty("no samples of this type with a value"));
    }
    let mut merged = Vec::new();
    let dopt = inferno::differential::Options {
        normalize,
        ..Default::default()
    };
    inferno::differential::from_readers(dopt, before.as_bytes(), after.as_bytes(), &mut merged)
        .map_err(DrawError::Merge)?;
    let text = String::from_utf8_lossy(&merged);
    inferno::flamegraph::from_lines(&mut opts, text.lines(), out).map_err(DrawError::Draw)
}

/// Writes a differential flamegraph: frames are sized by the new profile and coloured by the
/// change from the base (red grew, blue shrank).
pub fn write_diff_flamegraph(
    base: &Pprof,
    new: &Pprof,
    (bi, ni): (usize, usize),
    normalize: bool,
    title: &str,
    out: impl std::io::Write,
) -> Result<(), DrawError> {
    let before = folded_signed(base, bi, false);
    let after = folded_signed(new, ni, false);
    let (stype, unit) = new.sample_types()[ni];
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = format!("{stype} [{unit}]");
    opts.subtitle = cut_note(before.cut + after.cut);
    draw_differential(&before.lines, &after.lines, normalize, opts, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Function, Line, Location, Profile, Sample, ValueType};

    /// A CPU profile (samples/count) of `stacks`, each of function names, leaf first, and
    /// its count: one location and one function per name.
    struct Builder {
        p: Profile,
        ids: std::collections::HashMap<String, u64>,
    }

    impl Builder {
        fn new() -> Self {
            let p = Profile {
                string_table: vec!["".into(), "samples".into(), "count".into()],
                sample_type: vec![ValueType { r#type: 1, unit: 2 }],
                ..Profile::default()
            };
            Builder {
                p,
                ids: Default::default(),
            }
        }

        fn id(&mut self, name: &str) -> u64 {
            if let Some(&id) = self.ids.get(name) {
                return id;
            }
            let id = self.p.function.len() as u64 + 1;
            self.p.string_table.push(name.into());
            let name_id = self.p.string_table.len() as i64 - 1;
            self.p.function.push(Function {
                id,
                name: name_id,
                system_name: name_id,
                ..Function::default()
            });
            self.p.location.push(Location {
                id,
                line: vec![Line {
                    function_id: id,
                    ..Line::default()
                }],
                ..Location::default()
            });
            self.ids.insert(name.into(), id);
            id
        }

        fn add(&mut self, stack: &[&str], count: i64) {
            let location_id = stack.iter().map(|n| self.id(n)).collect();
            self.p.sample.push(Sample {
                location_id,
                value: vec![count],
                label: Vec::new(),
            });
        }
    }

    /// A profile of one wide path and thousands of frames far under a pixel, at depths 2–5.
    fn many_small() -> Pprof {
        let mut c = Builder::new();
        c.add(&["spin", "work;semicolon", "main"], 5_000_000);
        c.add(&["work;semicolon", "main"], 700_000);
        c.add(&["main"], 3);
        for i in 0..6000u32 {
            let leaf = format!("tiny{i}");
            let mid = format!("mid{}", i % 37);
            let stack = match i % 3 {
                0 => vec![leaf.as_str(), "main"],
                1 => vec![&leaf, &mid, "main"],
                _ => vec![&leaf, &mid, "work;semicolon", "main"],
            };
            c.add(&stack, 1 + i64::from(i % 5));
        }
        let bytes = prost::Message::encode_to_vec(&c.p);
        let proto =
            crate::decode::decode_raw(&bytes, &crate::decode::Limits::local()).expect("decode");
        Pprof::new(proto).expect("model")
    }

    #[test]
    fn pruned_flamegraph_is_the_same_picture() {
        let p = many_small();
        let idx = 0;
        let all = folded(&p, idx);
        let tree = super::super::fold::Tree::with_nodes(&p, &Nodes::new(&p), idx, false);
        let min = inferno::flamegraph::Options::default().min_width / (100.0 / tree.total() as f64);
        let pruned = tree.lines(min);
        assert!(all.len() > 6000, "{} lines", all.len());
        assert!(
            pruned.len() * 3 < all.len() * 2,
            "{} lines after pruning",
            pruned.len()
        );
        let sum = |l: &[String]| -> u64 {
            l.iter()
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                .sum()
        };
        assert_eq!(sum(&all), sum(&pruned), "the pruned lines keep every value");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        draw(
            &p,
            &Nodes::new(&p),
            idx,
            "t",
            Look {
                prune: false,
                ..Look::default()
            },
            &mut a,
        )
        .unwrap();
        draw(&p, &Nodes::new(&p), idx, "t", Look::default(), &mut b).unwrap();
        // The frames drawn: each one's title (name, value, share), row and width. inferno
        // picks colours at random; where an undrawn gap sits may differ by the order of names.
        let frames = |svg: &[u8]| -> Vec<String> {
            let s = String::from_utf8_lossy(svg);
            let mut out: Vec<String> = s
                .split("<g><title>")
                .skip(1)
                .map(|g| {
                    let title = g.split("</title>").next().unwrap_or("");
                    let attr = |name: &str| {
                        g.split(&format!(" {name}=\""))
                            .nth(1)
                            .and_then(|r| r.split('"').next())
                            .unwrap_or("")
                            .to_string()
                    };
                    format!(
                        "{title} y={} w={} fg:w={}",
                        attr("y"),
                        attr("width"),
                        attr("fg:w")
                    )
                })
                .collect();
            out.sort();
            out
        };
        let total = |svg: &[u8]| {
            let s = String::from_utf8_lossy(svg);
            s.split("total_samples=\"")
                .nth(1)
                .map(|r| r[..r.find('"').unwrap()].to_string())
        };
        assert_eq!(total(&a), total(&b));
        let (a, b) = (frames(&a), frames(&b));
        assert!(a.len() >= 4, "{a:?}");
        assert_eq!(
            a, b,
            "the frames drawn from the pruned lines differ from inferno's own"
        );
        let b = b.join("\n");
        assert!(b.contains("work,semicolon"));
        // The page labels a frame with its title less the last `(…)` that holds no `(` (the
        // value and share): the count's name must not hold one, or the label would be the
        // name and half the count ("main.work (1,856 inuse_space").
        for title in b.lines().filter_map(|l| l.split(" y=").next()) {
            let cut = title.rfind('(').unwrap();
            assert!(title.ends_with(')'), "{title}");
            let label = title[..cut].trim_end();
            let (stype, _) = p.sample_types()[idx];
            assert!(!label.contains(stype), "{title}: labelled {label:?}");
        }
    }

    #[test]
    fn folded_lines_merge_paths_and_keep_each_value() {
        let p = many_small();
        let lines = folded(&p, 0);
        assert!(
            lines.contains(&"main;work,semicolon;spin 5000000".to_string()),
            "{:?}",
            &lines[..5]
        );
        assert!(lines.contains(&"main;work,semicolon 700000".to_string()));
        assert!(lines.contains(&"main 3".to_string()));
        assert!(lines.contains(&"main;mid1;tiny1 2".to_string()));
        assert!(lines.contains(&"main;work,semicolon;mid2;tiny2 3".to_string()));
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);
    }
}
