//! `SelectSeries`: per group of label values, per step, the captures' totals added.

use super::proto;
use super::query;
use super::{Failed, MAX_POINTS, known_type};
use crate::ui::index::Entry;
use crate::ui::select::{instant, labels_of};
use crate::ui::state::Ui;

/// Milliseconds of a capture's time.
fn millis(e: &Entry) -> Option<i64> {
    instant(&e.time).map(|t| t.as_millisecond())
}

/// The request's step in milliseconds and whether steps average, checked: a step over 0,
/// at most `MAX_POINTS` of them in a closed range, no stack selector (a capture's total is
/// of all its stacks).
fn step_of(req: &proto::SelectSeriesRequest) -> Result<(i64, bool), Failed> {
    if req
        .stack_trace_selector
        .as_ref()
        .is_some_and(|s| !s.call_site.is_empty() || s.go_pgo.is_some())
    {
        return Err(Failed::unimplemented(
            "stack_trace_selector in SelectSeries: agentprof sums whole captures",
        ));
    }
    if !(req.step.is_finite() && req.step > 0.0) {
        return Err(Failed::invalid(format!(
            "step {}: seconds, more than 0",
            req.step
        )));
    }
    let step_ms = (req.step * 1000.0).max(1.0) as i64;
    if req.start != 0 && req.end != 0 && (req.end - req.start) as f64 / step_ms as f64 > MAX_POINTS
    {
        return Err(Failed::invalid(format!(
            "{} points of {} s between start and end: at most {MAX_POINTS}; choose a larger step",
            (req.end - req.start) / step_ms,
            req.step
        )));
    }
    let average = match req.aggregation.unwrap_or(0) {
        0 => false,
        1 => true,
        a => {
            return Err(Failed::invalid(format!(
                "aggregation {a}: SUM (0) or AVERAGE (1)"
            )));
        }
    };
    Ok((step_ms, average))
}

pub(super) fn select_series(
    ui: &Ui,
    req: proto::SelectSeriesRequest,
) -> Result<proto::SelectSeriesResponse, Failed> {
    let tid = query::type_id(&req.profile_type_id)?;
    let sel = query::selection(&tid.profile_type, &req.label_selector, req.start, req.end)?;
    let (step_ms, average) = step_of(&req)?;
    let listing = ui.listing();
    known_type(&listing.entries, &sel, &tid.id)?;
    if sel.captures(&listing.entries).is_empty() {
        return Ok(proto::SelectSeriesResponse::default());
    }
    let totals = ui.series(&sel, Some(&tid.sample_type), None)?;
    if totals.sample_type != tid.sample_type {
        return Err(Failed::invalid(format!(
            "sample type {:?} is not in the {} captures",
            tid.sample_type, sel.profile_type
        )));
    }
    let by_id: std::collections::HashMap<&str, &Entry> =
        listing.entries.iter().map(|e| (e.id.as_str(), e)).collect();
    // Per group (its labels' values, in group_by's order): per step, the sum and count.
    type Steps = std::collections::BTreeMap<i64, (f64, u32)>;
    let mut groups: std::collections::BTreeMap<Vec<String>, Steps> = Default::default();
    let origin = if req.start != 0 { req.start } else { 0 };
    for g in &totals.groups {
        for pt in &g.points {
            let Some(e) = by_id.get(pt.id.as_str()) else {
                continue;
            };
            let Some(t) = millis(e) else { continue };
            let labels = labels_of(e);
            let key: Vec<String> = req
                .group_by
                .iter()
                .map(|k| {
                    labels
                        .iter()
                        .find(|(n, _)| n == k)
                        .map_or_else(String::new, |(_, v)| v.clone())
                })
                .collect();
            let at = origin + (t - origin).div_euclid(step_ms) * step_ms;
            let slot = groups.entry(key).or_default().entry(at).or_insert((0.0, 0));
            slot.0 += pt.value;
            slot.1 += 1;
        }
    }
    let mut series: Vec<(f64, proto::Series)> = groups
        .into_iter()
        .map(|(key, steps)| {
            let total: f64 = steps.values().map(|(v, _)| v).sum();
            let labels = req
                .group_by
                .iter()
                .zip(key)
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| proto::LabelPair {
                    name: k.clone(),
                    value: v,
                })
                .collect();
            let points = steps
                .into_iter()
                .map(|(timestamp, (sum, n))| proto::Point {
                    value: if average { sum / f64::from(n) } else { sum },
                    timestamp,
                })
                .collect();
            (total, proto::Series { labels, points })
        })
        .collect();
    if let Some(limit) = req.limit.filter(|&l| l > 0) {
        series.sort_by(|a, b| b.0.total_cmp(&a.0));
        series.truncate(limit as usize);
    }
    Ok(proto::SelectSeriesResponse {
        series: series.into_iter().map(|(_, s)| s).collect(),
    })
}
