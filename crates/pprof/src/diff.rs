//! What changed between two profiles: per function, flat and cum in each and the difference
//! (absolute and relative to the base), sorted by the size of the change; and folded stacks
//! for flamegraphs, plain or differential.

use std::collections::HashMap;

use super::graph::{Nodes, flat_cum, total, weights};
use super::measure::{scale, scaled_label};
use super::model::Pprof;
use crate::Error;

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
) -> Result<(usize, usize), Error> {
    let ni = new.sample_index(name)?;
    let (t, u) = new.sample_types()[ni];
    let bi = match name {
        Some(n) => base.sample_index(Some(n))?,
        None => base.sample_index(Some(t)).map_err(|_| {
            Error::Mismatch(format!(
                "the new profile reports {t}/{u}, which the base does not have (the base has {}; the new one {})",
                type_list(base),
                type_list(new)
            ))
        })?,
    };
    let (bt, bu) = base.sample_types()[bi];
    if bt != t || !bu.eq_ignore_ascii_case(u) {
        return Err(Error::Mismatch(format!(
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
) -> Result<DiffReport, Error> {
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
) -> Result<DiffReport, Error> {
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

pub use crate::flame::{Look, write_diff_flamegraph, write_flamegraph, write_flamegraph_look};
