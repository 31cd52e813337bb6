//! What changed between two profiles: per function, flat and cum in each and the difference
//! (absolute and relative to the base), sorted by the size of the change; and folded stacks
//! for flamegraphs, plain or differential.

use std::collections::HashMap;

use super::measure::{scale, scaled_label};
use super::model::Pprof;
use super::report::{Nodes, build, total};

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
fn per_function(p: &Pprof, index: usize) -> HashMap<String, (i64, i64)> {
    let nodes = Nodes::new(p);
    let g = build(p, &nodes, index, None, false);
    let mut out: HashMap<String, (i64, i64)> = HashMap::new();
    for i in 0..nodes.len() {
        if g.flat[i] == 0 && g.cum[i] == 0 {
            continue;
        }
        let e = out.entry(nodes.name(i).to_string()).or_default();
        e.0 = e.0.wrapping_add(g.flat[i]);
        e.1 = e.1.wrapping_add(g.cum[i]);
    }
    out
}

/// Why two profiles cannot be compared.
#[derive(Debug)]
pub enum DiffError {
    /// `--sample-index` names nothing in one of them.
    SampleIndex(String),
    /// They do not report the same thing; the message names both sides' types.
    Mismatch(String),
}

impl std::fmt::Display for DiffError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiffError::SampleIndex(m) | DiffError::Mismatch(m) => f.write_str(m),
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
    let (bi, ni) = common_index(base, new, sample_index)?;
    let (stype, unit) = new.sample_types()[ni];
    let (base_total, new_total) = (total(base, bi), total(new, ni));
    let k = if normalize && base_total != 0 {
        new_total as f64 / base_total as f64
    } else {
        1.0
    };
    let b = per_function(base, bi);
    let n = per_function(new, ni);
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
            }
        })
        .filter(|r| r.delta_flat != 0 || r.delta_cum != 0)
        .collect();
    // go tool pprof's order: the size of the change, then the name, then the other value.
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
    let biggest = rows
        .iter()
        .map(|r| r.delta_flat.wrapping_abs().max(r.delta_cum.wrapping_abs()))
        .max()
        .unwrap_or(new_total.max(base_total));
    let out_unit = match scale(biggest, unit, "minimum").1 {
        u if u.is_empty() => unit.to_string(),
        u => u,
    };
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

impl DiffReport {
    /// The table; `limit` rows at most (0: all). Every value is in the unit that shows it
    /// (a 1,878 ns change reads `+1.88us`, not `+0` in seconds).
    pub fn text(&self, limit: usize) -> String {
        let label = |v: i64| scaled_label(v, &self.unit, "minimum");
        let f = |v: i64| {
            let s = label(v);
            if v > 0 { format!("+{s}") } else { s }
        };
        // "new" only for a function the base does not have; one it has with 0 there has no
        // percentage to show.
        let own = |p: Option<f64>, in_base: bool| match p {
            Some(p) => format!("{p:+.1}%").replace("+0.0%", "0.0%"),
            None if in_base => "-".to_string(),
            None => "new".to_string(),
        };
        let of_total = |p: Option<f64>| match p {
            Some(p) => format!("{p:+.2}%").replace("+0.00%", "0.00%"),
            None => "-".to_string(),
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
            out.push_str(&row([
                &f(r.delta_flat),
                &own(r.delta_flat_pct, r.in_base),
                &of_total(r.delta_flat_pct_of_total),
                &f(r.delta_cum),
                &own(r.delta_cum_pct, r.in_base),
                &of_total(r.delta_cum_pct_of_total),
                &label(r.new_flat),
                &label(r.new_cum),
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

/// Stacks deeper than this are cut in flamegraphs (the frames nearest the root kept, the cut
/// named in the stack and the SVG): a million-frame stack would draw a 200 MB picture.
pub const MAX_FLAME_DEPTH: usize = 1000;

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
    let nodes = Nodes::new(p);
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut frames: Vec<&str> = Vec::new();
    let mut out = Folded::default();
    for (si, s) in p.proto.sample.iter().enumerate() {
        let w = if negative {
            s.value[index].saturating_neg()
        } else {
            s.value[index]
        };
        if w <= 0 {
            if w < 0 {
                out.other_sign += 1;
            }
            continue;
        }
        frames.clear();
        'stack: for &loc in p.sample_locs[si].iter().rev() {
            for &node in nodes_of(&nodes, loc).iter().rev() {
                if frames.len() == MAX_FLAME_DEPTH {
                    break 'stack;
                }
                frames.push(nodes.name(node as usize));
            }
        }
        let depth: usize = p.sample_locs[si]
            .iter()
            .map(|&l| nodes_of(&nodes, l).len())
            .sum();
        let mut stack = frames
            .iter()
            .map(|f| f.replace(';', ","))
            .collect::<Vec<_>>()
            .join(";");
        if depth > MAX_FLAME_DEPTH {
            out.cut += 1;
            stack.push_str(&format!(";[{} more frames cut]", depth - MAX_FLAME_DEPTH));
        }
        let e = merged.entry(stack).or_default();
        *e = e.saturating_add(w as u64);
    }
    out.lines = merged
        .into_iter()
        .map(|(s, w)| format!("{s} {w}"))
        .collect();
    out.lines.sort();
    out
}

/// [`folded_signed`]'s positive lines.
pub fn folded(p: &Pprof, index: usize) -> Vec<String> {
    folded_signed(p, index, false).lines
}

fn nodes_of<'n>(nodes: &'n Nodes<'_>, loc: u32) -> &'n [u32] {
    nodes.loc(loc as usize)
}

fn cut_note(cut: usize) -> Option<String> {
    (cut > 0).then(|| {
        format!(
            "{cut} stack{} deeper than {MAX_FLAME_DEPTH} frames cut at {MAX_FLAME_DEPTH}",
            if cut == 1 { "" } else { "s" }
        )
    })
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
) -> anyhow::Result<()> {
    let pos = folded_signed(p, index, false);
    let (stype, unit) = p.sample_types()[index];
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = format!("{stype} ({unit})");
    if pos.other_sign > 0 {
        let neg = folded_signed(p, index, true);
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
    if pos.lines.is_empty() {
        anyhow::bail!("the profile has no samples of this type with a value: nothing to draw");
    }
    opts.subtitle = cut_note(pos.cut);
    inferno::flamegraph::from_lines(&mut opts, pos.lines.iter().map(String::as_str), out)
        .map_err(|e| anyhow::anyhow!("cannot draw the flamegraph: {e}"))
}

fn draw_differential(
    before: &[String],
    after: &[String],
    normalize: bool,
    mut opts: inferno::flamegraph::Options<'_>,
    out: impl std::io::Write,
) -> anyhow::Result<()> {
    let (before, after) = (before.join("\n"), after.join("\n"));
    if after.is_empty() && before.is_empty() {
        anyhow::bail!("no samples of this type with a value: nothing to draw");
    }
    let mut merged = Vec::new();
    let dopt = inferno::differential::Options {
        normalize,
        ..Default::default()
    };
    inferno::differential::from_readers(dopt, before.as_bytes(), after.as_bytes(), &mut merged)
        .map_err(|e| anyhow::anyhow!("cannot merge the stacks: {e}"))?;
    let text = String::from_utf8_lossy(&merged);
    inferno::flamegraph::from_lines(&mut opts, text.lines(), out)
        .map_err(|e| anyhow::anyhow!("cannot draw the flamegraph: {e}"))
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
) -> anyhow::Result<()> {
    let before = folded_signed(base, bi, false);
    let after = folded_signed(new, ni, false);
    let (stype, unit) = new.sample_types()[ni];
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = format!("{stype} ({unit})");
    opts.subtitle = cut_note(before.cut + after.cut);
    draw_differential(&before.lines, &after.lines, normalize, opts, out)
}
