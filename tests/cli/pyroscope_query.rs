//! Pyroscope's query API on `agentprof ui`, asked by Pyroscope's own generated Connect client
//! (github.com/grafana/pyroscope/api v1.6.0, tests/go/pyroquery) in both of Connect's
//! encodings: every method answers, its numbers are go tool pprof's (the merge) and the
//! captures' own (the series), and what is wrong is refused with Connect's code and why.

use std::path::Path;

use serde_json::Value;

use crate::support::Sandbox;
use crate::ui::Ui;

fn ms(t: &str) -> i64 {
    t.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// A capture file's total of sample type `cpu` (nanoseconds).
fn cpu_total(file: &Path) -> i64 {
    let raw = std::fs::read(file).unwrap();
    let p = agentprof::pprof::decode(&raw, &agentprof::pprof::Limits::local()).unwrap();
    let i = p
        .sample_type
        .iter()
        .position(|t| p.string_table[t.r#type as usize] == "cpu")
        .unwrap();
    p.sample.iter().map(|s| s.value[i]).sum()
}

/// go tool pprof -top's rows (from "Showing nodes" on) of a profile, by sample type cpu.
fn go_rows(file: &Path) -> Vec<String> {
    let top = crate::support::go(&[
        "tool",
        "pprof",
        "-top",
        "-sample_index=cpu",
        file.to_str().unwrap(),
    ])
    .expect("go tool pprof -top");
    top.lines()
        .skip_while(|l| !l.starts_with("Showing nodes"))
        .map(str::to_string)
        .collect()
}

/// The flamegraph's levels decoded into nodes: (level, x, total, self, name).
fn nodes(fg: &Value) -> Vec<(usize, i64, i64, i64, String)> {
    let names: Vec<&str> = fg["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut out = Vec::new();
    for (level, l) in fg["levels"].as_array().unwrap().iter().enumerate() {
        let v: Vec<i64> = l
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        let mut end = 0;
        for q in v.chunks(4) {
            let x = end + q[0];
            end = x + q[1];
            out.push((level, x, q[1], q[2], names[q[3] as usize].to_string()));
        }
    }
    out
}

/// Every node within a node of the level above, and the selves adding up to the total.
fn well_formed(fg: &Value, what: &str) {
    let n = nodes(fg);
    let total = fg["total"].as_i64().unwrap();
    assert_eq!(n[0], (0, 0, total, 0, "total".to_string()), "{what}");
    for c in n.iter().filter(|c| c.0 > 0) {
        assert!(
            n.iter()
                .any(|p| p.0 == c.0 - 1 && p.1 <= c.1 && c.1 + c.2 <= p.1 + p.2),
            "{what}: {c:?} lies within no node above"
        );
    }
    assert_eq!(n.iter().map(|c| c.3).sum::<i64>(), total, "{what}: selves");
}

/// Every method of Pyroscope's Go client over six CPU captures of `web` (pods web-1 and
/// web-2, a minute apart): ProfileTypes, LabelNames, LabelValues and Series say what is
/// there; SelectSeries's points per 2-minute step and pod are the sums of the captures in
/// them; SelectMergeProfile's profile reads in go tool pprof as go's merge of the six
/// files; SelectMergeStacktraces's flamegraph is well formed with the merge's total (and
/// with max_nodes 5, its narrow nodes summed into `other`); Diff's sides are the two
/// halves' totals. A selector left open, an unknown type, an id that is no id, an
/// inverted range, a million points and a max_nodes of 10^9 are refused as invalid_argument.
#[test]
fn pyroscopes_own_client_reads_the_captures() {
    let Some(bin) = crate::support::go_peer("pyroquery") else {
        return;
    };
    let sb = Sandbox::new();
    let files = crate::ui_range::web_corpus(&sb);
    let ui = Ui::start(&sb, &["prof"]);
    let (start, end, mid) = (
        ms("2026-12-01T10:00:00Z"),
        ms("2026-12-01T10:05:59Z"),
        ms("2026-12-01T10:02:30Z"),
    );
    let totals: Vec<i64> = files.iter().map(|f| cpu_total(&sb.file(f))).collect();
    let paths: Vec<std::path::PathBuf> = files.iter().map(|f| sb.file(f)).collect();
    let merged_by_go = sb.file("go-merged.pb.gz");
    let mut args = vec![
        "tool",
        "pprof",
        "-proto",
        "-output",
        merged_by_go.to_str().unwrap(),
    ];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    crate::support::go(&args).expect("go tool pprof -proto merges the six");
    // The API is the ui's listener's: a foreign Host is refused as for the page, and a body a
    // web page could post across sites (text/plain) is not read.
    let client = reqwest::blocking::Client::new();
    let url = format!("{}/querier.v1.QuerierService/LabelNames", ui.base);
    let port = ui.base.rsplit(':').next().unwrap();
    let r = client
        .post(&url)
        .header("host", format!("attacker.example:{port}"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 421);
    let r = client
        .post(&url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let text = r.text().unwrap();
    assert!(
        text.contains("invalid_argument") && text.contains("Content-Type"),
        "{text}"
    );
    // SelectSeries by AVERAGE over 4-minute steps, the largest series only (JSON, as curl
    // sends it): per step the mean of the pod's captures there.
    let r = client
        .post(format!(
            "{}/querier.v1.QuerierService/SelectSeries",
            ui.base
        ))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
                "profileTypeID": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                "labelSelector": "{service_name=\"web\"}",
                "start": start.to_string(), "end": end.to_string(), "step": 240,
                "groupBy": ["pod"], "aggregation": "TIME_SERIES_AGGREGATION_TYPE_AVERAGE",
                "limit": "1",
            })
            .to_string(),
        )
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let got: Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
    // web-2 (captures 1, 3, 5, each larger than the one before) is the larger series; the
    // first 4 minutes hold captures 1 and 3, the next capture 5.
    let want = serde_json::json!([{"labels": [{"name": "pod", "value": "web-2"}], "points": [
        {"value": (totals[1] + totals[3]) as f64 / 2.0, "timestamp": start.to_string()},
        {"value": totals[5] as f64, "timestamp": (start + 240_000).to_string()},
    ]}]);
    assert_eq!(got["series"], want, "{got:#}");
    for json in [false, true] {
        let out_pprof = sb.file(&format!("merged-{json}.pb"));
        let mut cmd = std::process::Command::new(&bin);
        cmd.args(["-url", &ui.base])
            .args(["-type", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"])
            .args(["-selector", r#"{service_name="web",namespace=~"sh.p"}"#])
            .args(["-start", &start.to_string(), "-end", &end.to_string()])
            .args(["-mid", &mid.to_string(), "-step", "120"])
            .arg("-pprof")
            .arg(&out_pprof);
        if json {
            cmd.arg("-json");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "json {json}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        let what = if json { "JSON" } else { "protobuf" };
        let ids = got["profile_types"].to_string();
        for id in [
            "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
            "process_cpu:samples:count:cpu:nanoseconds",
        ] {
            assert!(ids.contains(id), "{what}: {ids}");
        }
        let names = got["label_names"].to_string();
        for n in [
            "__name__",
            "service_name",
            "namespace",
            "pod",
            "container",
            "cause",
        ] {
            assert!(names.contains(&format!("\"{n}\"")), "{what}: {names}");
        }
        assert_eq!(
            got["pod_values"],
            serde_json::json!(["web-1", "web-2"]),
            "{what}"
        );
        assert_eq!(
            got["series"],
            serde_json::json!([
                ["pod=web-1", "service_name=web"],
                ["pod=web-2", "service_name=web"]
            ]),
            "{what}"
        );
        // Per pod, per 2-minute step from start: the sum of its captures there.
        for s in got["select_series"].as_array().unwrap() {
            let pod = s["labels"]["pod"].as_str().unwrap();
            let first = if pod == "web-1" { 0 } else { 1 };
            let want: Vec<(i64, f64)> = (0..3)
                .map(|k| {
                    let i = first + 2 * k;
                    let step = start + (i as i64 * 60_000) / 120_000 * 120_000;
                    (step, totals[i] as f64)
                })
                .collect();
            let points: Vec<(i64, f64)> = s["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_f64().unwrap() as i64, p[1].as_f64().unwrap()))
                .collect();
            assert_eq!(points, want, "{what}: {pod}");
        }
        assert_eq!(got["select_series"].as_array().unwrap().len(), 2, "{what}");
        // The merge, as go tool pprof merges the same files.
        assert_eq!(go_rows(&out_pprof), go_rows(&merged_by_go), "{what}");
        let all: i64 = totals.iter().sum();
        assert_eq!(got["flamegraph"]["total"], all, "{what}");
        well_formed(&got["flamegraph"], what);
        let small = &got["flamegraph_5"];
        well_formed(small, &format!("{what}, max_nodes 5"));
        let small_nodes = nodes(small);
        let others = small_nodes.iter().filter(|n| n.4 == "other").count();
        assert!(
            others > 0 && small_nodes.len() - 1 - others <= 5,
            "{what}: {small_nodes:?}"
        );
        let left: i64 = totals[..3].iter().sum();
        assert_eq!(got["diff"]["left_ticks"], left, "{what}");
        assert_eq!(got["diff"]["right_ticks"], all - left, "{what}");
        for (case, words) in [
            ("selector", "label_selector"),
            ("type", "nosuch"),
            ("type_id", "profile_typeID"),
            ("inverted", "after"),
            ("points", "points"),
            ("max_nodes", "max_nodes"),
        ] {
            let r = &got["refused"][case];
            assert_eq!(r["code"], "invalid_argument", "{what} {case}: {r}");
            assert!(
                r["message"].as_str().unwrap().contains(words),
                "{what} {case}: {r}"
            );
        }
        // Pyroscope's own profile ids: agentprof has none, and says so rather than ignore them.
        let r = &got["refused"]["profile_ids"];
        assert_eq!(r["code"], "unimplemented", "{what}: {r}");
        assert!(
            r["message"]
                .as_str()
                .unwrap()
                .contains("profile_id_selector"),
            "{r}"
        );
    }
}
