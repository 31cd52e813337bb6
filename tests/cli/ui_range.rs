//! `agentprof ui` over time: a service's timeline (each capture's total from its record or
//! its file, grouped by a capture tag or a sample label), a range merged with go tool
//! pprof's numbers, two ranges compared, and selections that say what is wrong.

use serde_json::{Value, json};

use crate::support::{Sandbox, fixture};
use crate::ui::{Ui, enc, gz, page_rows};

#[path = "large_profile.rs"]
pub mod large;
use large::large_profile;

/// Six CPU captures of `web`, a minute apart, alternately of pods web-1 and web-2, the
/// i-th with the fixture's values times i + 1 and recording 10 s + i s. captures.jsonl
/// describes all six, with the totals of the first three only. Returns the files' paths
/// under the sandbox, oldest first.
/// The fixture's CPU profile, its values times `i + 1`, taken at 2026-12-01T10:0i:00Z.
fn scaled_capture(i: i64) -> agentprof::pprof::proto::Profile {
    use prost::Message;
    let cpu = std::fs::read(fixture("cpu.pprof")).unwrap();
    let mut p = agentprof::pprof::proto::Profile::decode(&cpu[..]).unwrap();
    for s in &mut p.sample {
        for v in &mut s.value {
            *v *= i + 1;
        }
    }
    p.time_nanos = 1_796_119_200_000_000_000 + i * 60_000_000_000;
    p
}

pub fn web_corpus(sb: &Sandbox) -> Vec<String> {
    use prost::Message;
    let mut files = Vec::new();
    let mut lines = String::new();
    for i in 0..6i64 {
        let mut p = scaled_capture(i);
        p.duration_nanos = (10 + i) * 1_000_000_000;
        let time = format!("2026-12-01T10:0{i}:00.000Z");
        let rel = format!("prof/web/cpu-{time}.pb.gz");
        sb.write_bytes(&rel, &gz(&p.encode_to_vec()));
        let pod = if i % 2 == 0 { "web-1" } else { "web-2" };
        let totals = if i < 3 {
            let sum = |k: usize| p.sample.iter().map(|s| s.value[k]).sum::<i64>();
            json!([{"file": format!("out/web/cpu-{time}.pb.gz"), "time_nanos": p.time_nanos,
                "duration_nanos": p.duration_nanos,
                "types": [{"type": "samples", "unit": "count", "value": sum(0)},
                          {"type": "cpu", "unit": "nanoseconds", "value": sum(1)}]}])
        } else {
            json!([])
        };
        let line = json!({"time": time, "target": "web", "namespace": "shop", "pod": pod,
            "container": "app", "cause": "scheduled", "tags": [format!("pod_name:{pod}")],
            "profiles": [{"type": "cpu", "files": [format!("out/web/cpu-{time}.pb.gz")], "totals": totals}]});
        lines.push_str(&format!("{line}\n"));
        files.push(rel);
    }
    sb.write("prof/captures.jsonl", &lines);
    files
}

/// A selection's id as the page writes it.
pub fn sel(query: &str) -> String {
    enc(&format!("sel:{query}"))
}

/// `go tool pprof -proto` of `files`: go's merge, written to go-merged.pb.gz in the sandbox.
fn go_merged(sb: &Sandbox, files: &[std::path::PathBuf]) -> std::path::PathBuf {
    let files: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
    sb.write_bytes("go-merged.pb.gz", &crate::support::go_proto(&[], &files))
}

fn go_top(files: &[std::path::PathBuf]) -> String {
    let mut args = vec!["tool", "pprof", "-top", "-nodecount=25"];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    crate::support::go(&args).expect("go tool pprof -top")
}

/// The timeline's figures are each capture's totals, read from the record where it states
/// them and off the file where it does not; a range merged is go tool pprof's merge of the
/// same files, in the table, the header and the file saved; two ranges compare as
/// `agentprof diff` of the two merges.
#[test]
fn a_range_merges_as_go_tool_pprof_merges_and_the_timeline_shows_each_capture() {
    if !crate::support::require_go() {
        return;
    }
    let sb = Sandbox::new();
    let files = web_corpus(&sb);
    let ui = Ui::start(&sb, &["prof"]);
    let series = ui.json("/api/series?service=web&type=cpu");
    assert_eq!(series["captures"], 6, "{series:#}");
    assert_eq!(series["sample_type"], "cpu");
    assert_eq!(series["per_second"], true);
    assert_eq!(
        (
            series["from_records"].as_u64(),
            series["from_files"].as_u64()
        ),
        (Some(3), Some(3)),
        "{series:#}"
    );
    let points = series["groups"][0]["points"].as_array().unwrap();
    for (i, (p, f)) in points.iter().zip(&files).enumerate() {
        let want = crate::support::go_total_ns(&sb.file(f), "cpu");
        assert_eq!(p["value"].as_f64().unwrap(), want, "capture {i}: {p}");
        assert_eq!(p["seconds"].as_f64().unwrap(), 10.0 + i as f64);
    }
    // Asked again, the files' totals are the ones read before.
    let again = ui.json("/api/series?service=web&type=cpu");
    assert_eq!(again["from_cache"], 3, "{again:#}");
    // By pod: two lines of three captures.
    let by_pod = ui.json("/api/series?service=web&type=cpu&group_by=pod");
    let keys: Vec<&str> = by_pod["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["pod:web-2", "pod:web-1"], "the larger first");
    // By a sample label, and filtered by one: the fixture's span ids.
    let by_span =
        ui.json("/api/series?service=web&type=cpu&group_by=label:local%20root%20span%20id");
    assert!(
        by_span["groups"]
            .to_string()
            .contains("local root span id:8167443446631090604"),
        "{by_span:#}"
    );

    // 10:01–10:04: three captures merged.
    let range = "service=web&type=cpu&from=2026-12-01T10:01:00Z&to=2026-12-01T10:04:00Z";
    let id = sel(range);
    let top = ui.json(&format!("/api/top?id={id}&nodes=25"));
    assert_eq!(top["selection"]["captures"], 3, "{top:#}");
    let three: Vec<_> = files[1..4].iter().map(|f| sb.file(f)).collect();
    let merged = go_merged(&sb, &three);
    let cli = sb.run(&["top", "--json", "-n", "25", merged.to_str().unwrap()]);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(top["report"], cli["report"], "the merge's table and header");
    // The page's "N s recorded, X/s on average" is the merge's total over its summed
    // durations: go tool pprof's "Duration: …, Total samples = … (P%)" of the same merge.
    let (total, secs) = (
        top["report"]["total"].as_f64().unwrap(),
        top["duration_nanos"].as_f64().unwrap(),
    );
    assert_eq!(
        format!("{:.2}", 100.0 * total / secs),
        crate::support::go_cpu_percent(&merged),
        "{top:#}"
    );
    // The file saved is go's merge as go tool pprof reads it.
    let (status, _, body) = ui.get(&format!("/file?id={id}"));
    assert_eq!(status, 200);
    let saved = sb.write_bytes("saved.pb.gz", &body);
    assert_eq!(go_top(&[saved]), go_top(&three));
    // The flamegraph of the merge, and of a sample label's share of it.
    let (status, _, svg) = ui.get(&format!("/api/flamegraph.svg?id={id}&icicle=true"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&svg));
    // Each view takes only its own parameters: one it would ignore is a 400 that says so.
    for (view, given, word) in [
        ("sandwich", "re=main.fibonacci&nodes=80", "nodes="),
        ("graph", "side=callees", "side="),
    ] {
        let (status, _, body) = ui.get(&format!("/api/{view}.svg?id={id}&{given}"));
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 400, "{view}: {body}");
        assert!(body.contains(word), "{view}: {body}");
    }
    let labelled = sel(&format!(
        "{range}&label=local%20root%20span%20id%3D8167443446631090604"
    ));
    let part = ui.json(&format!("/api/top?id={labelled}"));
    let go_tags = crate::support::go(&[
        "tool",
        "pprof",
        "-tags",
        &three[0].display().to_string(),
        &three[1].display().to_string(),
        &three[2].display().to_string(),
    ])
    .unwrap();
    // go tool pprof -tags: "local root span id: Total …" then "  18.18s (33.28%): 8167…".
    let section = go_tags.split("local root span id:").nth(1).unwrap();
    let line = section
        .lines()
        .find(|l| l.trim_end().ends_with(": 8167443446631090604"))
        .unwrap();
    let kept = line.trim().split(' ').next().unwrap();
    let total = part["report"]["header"].to_string();
    assert!(
        total.contains(&format!("of {kept} total")),
        "{total} vs go's {line}"
    );

    // The range before (10:00–10:01 has one capture; 10:-2 none): compared as two merges.
    let before = sel("service=web&type=cpu&from=2026-12-01T09:58:00Z&to=2026-12-01T10:01:00Z");
    let diff = ui.json(&format!("/api/diff?base={before}&id={id}"));
    let base_file = sb.file(&files[0]);
    let cli = sb.run(&[
        "diff",
        "--json",
        base_file.to_str().unwrap(),
        merged.to_str().unwrap(),
    ]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(diff["report"]["rows"], cli["report"]["rows"]);
    let (status, _, _) = ui.get(&format!("/api/diff.svg?base={before}&id={id}"));
    assert_eq!(status, 200);

    // What is wrong is said.
    let (status, _, body) = ui.get(&format!("/api/top?id={}", sel("type=cpu&from=yesterday")));
    assert_eq!(status, 400);
    assert!(
        String::from_utf8_lossy(&body).contains("from=\\\"yesterday\\\""),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _, body) = ui.get(&format!(
        "/api/top?id={}",
        sel("service=web&type=cpu&from=2027-01-01T00:00:00Z")
    ));
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    let (status, _, body) = ui.get("/api/series?service=web");
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("type"));
}

/// The time views in the system's Chromium: the timeline drawn, hovered and brushed; the
/// range opened merged (the table the API's for the same selection, of the captures in
/// it) as a flamegraph, an icicle, a call graph and a sandwich, with two functions ticked
/// and focused on together; the range compared with the one before; the timeline grouped
/// by pod; a 113,000-frame flamegraph opened and searched (3,000 frames drawn). Times go to the test's output
/// (`measured:`), the screenshots to target/tmp/ui-range-screenshots.
#[test]
fn the_time_views_in_a_real_browser() {
    let Some(chromium) = crate::support::browser() else {
        return;
    };
    let sb = Sandbox::new();
    let files = web_corpus(&sb);
    sb.write_bytes(
        "prof/checkout/cpu-2026-12-01T09:00:00.000Z.pb.gz",
        &gz(&large_profile()),
    );
    let ui = Ui::start(&sb, &["prof"]);
    let listing = ui.json("/api/profiles");
    let large = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["service"] == "checkout")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The widest function (drawn whatever is folded), searched by its last segment anchored
    // at its end, as go tool pprof's -focus takes a regular expression.
    let widest = ui.json(&format!("/api/top?id={}&cum=true&nodes=1", enc(&large)))["report"]
        ["rows"][0]["function"]
        .as_str()
        .unwrap()
        .to_string();
    let anchored = format!("{}$", widest.rsplit('.').next().unwrap());
    let large_file = sb.file("prof/checkout/cpu-2026-12-01T09:00:00.000Z.pb.gz");
    let go_share = |re: &str| crate::support::go_focus_percent(&large_file, re, "cpu");
    for (re, want) in [
        ("Serve12", go_share("Serve12")),
        (&anchored[..], go_share(&anchored)),
    ] {
        let api = ui.json(&format!(
            "/api/match?id={}&re={}&sample_index=cpu",
            enc(&large),
            enc(re)
        ));
        let share = api["share"].as_f64().unwrap() * 100.0;
        assert!(
            (share - want).abs() < 0.006,
            "{re}: {share} % here, {want} % in go tool pprof"
        );
        assert!(api["functions"].as_u64().unwrap() >= 1, "{api}");
    }
    let nothing = ui.json(&format!("/api/match?id={}&re=Serve12%24x", enc(&large)));
    assert_eq!(
        (nothing["matched"].as_f64(), nothing["functions"].as_u64()),
        (Some(0.0), Some(0))
    );
    let artefacts =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-range-screenshots");
    std::fs::create_dir_all(&artefacts).unwrap();
    let plan = json!({
        "base": ui.base, "chromium": chromium, "artefacts": artefacts,
        "service": "web", "type": "cpu", "brush": [0.15, 0.85], "compare": [0.55, 0.99],
        "pick": "main.fibonacci", "group": "pod",
        "large": {"id": large, "search": "Serve12", "anchored": anchored, "nothing": "Serve12$x"},
    });
    let seen = crate::support::run_browser(&sb, "timeline.mjs", &plan);
    assert_eq!(seen["timeline_points"], 6, "{seen:#}");
    // CPU per second of recording, in cores, on round ticks; minutes on the time axis.
    let y_ticks: Vec<&str> = seen["y_ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(y_ticks.iter().all(|t| t.ends_with(" cores")), "{y_ticks:?}");
    for t in &y_ticks {
        let v: f64 = t.trim_end_matches(" cores").parse().unwrap();
        let p = 10f64.powf(v.abs().log10().floor());
        let m = (v / p * 1000.0).round() / 1000.0;
        assert!(
            v == 0.0 || m.fract() == 0.0 || m == 2.5,
            "{t} is not round: {y_ticks:?}"
        );
    }
    let x_ticks = seen["x_ticks"].as_array().unwrap();
    assert!(x_ticks.len() >= 2, "{seen:#}");
    for t in x_ticks {
        assert!(t.as_str().unwrap().starts_with("12-01 10:0"), "{t}");
    }
    // A brush zooms in place: fewer points, the range in the URL, its flamegraph below;
    // zoom out gives back the whole.
    assert!(seen["zoomed_points"].as_u64().unwrap() < 6, "{seen:#}");
    let zoomed = seen["zoomed_hash"].as_str().unwrap();
    assert!(
        zoomed.contains("from=2026-12-01T10:") && zoomed.contains("to=2026-12-01T10:"),
        "{zoomed}"
    );
    let flame = seen["range_flame_src"].as_str().unwrap();
    assert!(
        flame.contains("id=sel:service=web&type=cpu&from="),
        "{flame}"
    );
    // Beside it, the range's top functions: the API's table of the same selection.
    let range_id = flame
        .split("id=")
        .nth(1)
        .unwrap()
        .split("&sample_index")
        .next()
        .unwrap();
    let api = ui.json(&format!("/api/top?id={}&nodes=10", enc(range_id)));
    assert_eq!(seen["range_top"], page_rows(&api["report"]), "{seen:#}");
    assert!(
        !seen["zoomed_out_hash"]
            .as_str()
            .unwrap()
            .contains("from=2026"),
        "{seen:#}"
    );
    let hover = seen["hover"].as_str().unwrap();
    assert!(hover.contains("click to open"), "{hover}");
    // The figure hovered is the capture's CPU seconds per second of recording, in cores: the
    // API's value over its seconds (the files' totals, tested above).
    let series = ui.json("/api/series?service=web&type=cpu");
    let time = hover.split(" · ").next().unwrap();
    let point = series["groups"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["time"] == time)
        .unwrap_or_else(|| panic!("{time} in {series:#}"));
    let cores = point["value"].as_f64().unwrap() / point["seconds"].as_f64().unwrap() / 1e9;
    let shown: f64 = hover
        .split(" · ")
        .find_map(|part| {
            part.split(" cores")
                .next()
                .filter(|_| part.contains(" cores"))
        })
        .unwrap()
        .parse()
        .unwrap();
    assert!((shown - cores).abs() < 0.0005, "{hover}: {cores} cores");
    // The merged range is the API's selection, of the captures in it.
    let hash = seen["merged_id"].as_str().unwrap();
    let id = hash
        .split("id=")
        .nth(1)
        .unwrap()
        .split("&si")
        .next()
        .unwrap();
    let sel = agentprof_sel_range(id);
    let inside = files
        .iter()
        .filter(|f| {
            let t = f
                .trim_start_matches("prof/web/cpu-")
                .trim_end_matches(".pb.gz");
            t >= sel.0.as_str() && t < sel.1.as_str()
        })
        .count();
    assert!(inside >= 2, "{hash}");
    assert!(
        seen["merged_meta"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{inside} captures merged")),
        "{seen:#}"
    );
    let api = ui.json(&format!("/api/top?id={}&nodes=20", enc(id)));
    assert_eq!(seen["merged_rows"], page_rows(&api["report"]));
    assert!(seen["icicle_src"].as_str().unwrap().contains("icicle=true"));
    let graph = seen["graph_nodes"].to_string();
    assert!(graph.contains("main.fibonacci"), "{graph}");
    assert!(seen["graph_edges"].as_u64().unwrap() > 0);
    // The call graph: readable text as it opens, the wheel zooms, fit shows it whole, a click
    // on a box picks its function, a search highlights its box.
    assert!(seen["graph_text_px"].as_f64().unwrap() >= 9.0, "{seen:#}");
    let zoomed = &seen["graph_zoomed"];
    assert_ne!(zoomed[0], zoomed[1]);
    assert!(
        seen["graph_fit"].as_str().unwrap().starts_with("0 0 "),
        "{seen:#}"
    );
    assert_eq!(seen["graph_picked"], seen["graph_clicked"], "{seen:#}");
    assert!(seen["graph_matched"].as_u64().unwrap() >= 1, "{seen:#}");
    for side in ["callers", "callees"] {
        let frames = seen["sandwich"][side].to_string();
        assert!(frames.contains("main.fibonacci"), "{side}: {frames}");
    }
    assert!(
        seen["sandwich_hash"]
            .as_str()
            .unwrap()
            .contains("sandwich=")
    );
    let ticked: Vec<&str> = seen["ticked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(ticked.len(), 2, "{seen:#}");
    let focus = seen["multi_focus"].as_str().unwrap();
    for t in &ticked {
        assert!(focus.contains(&t.replace('.', "\\.")), "{t}: {focus}");
    }
    assert!(seen["compare_hash"].as_str().unwrap().contains("base=sel:"));
    assert!(!seen["compare_rows"].as_array().unwrap().is_empty());
    assert_eq!(
        seen["legend"],
        json!(["pod:web-2 (3)", "pod:web-1 (3)"]),
        "{seen:#}"
    );
    // Grouped (its answer held back), then ungrouped at once: the chart is the later one's.
    assert_eq!(seen["race_group"], "", "{seen:#}");
    assert!(
        seen["race_legend"].as_array().unwrap().len() <= 1,
        "the older, grouped answer drew over the newer: {seen:#}"
    );
    let frames = seen["large_frames"].as_u64().unwrap();
    assert!(
        frames > 2_900 && frames <= 3_001,
        "{frames} frames drawn of the large profile"
    );
    assert!(
        seen["large_subtitle"].as_str().unwrap().contains("folded"),
        "{seen:#}"
    );
    // The SVG's own count is of the frames it drew; the page's is the whole profile's, as
    // go tool pprof -focus keeps it (before, a search ending in `$` matched nothing and the
    // folded frames were not counted: 0.6 % where go said 26.4 %).
    assert!(
        seen["large_matched"]
            .as_str()
            .unwrap()
            .contains("Drawn frames matched:"),
        "{seen:#}"
    );
    for (state, re) in [
        ("large_search_state", "Serve12"),
        ("anchored_state", &anchored[..]),
    ] {
        let text = seen[state].as_str().unwrap();
        let want = format!("matched {:.1}%", go_share(re));
        assert!(
            text.contains(&want),
            "{re}: {text:?}, go tool pprof: {want}"
        );
    }
    assert!(
        seen["anchored_matched"]
            .as_str()
            .unwrap()
            .contains("Drawn frames matched:"),
        "an anchored search highlights the drawn frame: {seen:#}"
    );
    assert!(
        seen["nothing_state"]
            .as_str()
            .unwrap()
            .contains("nothing matched"),
        "{seen:#}"
    );
    assert_eq!(seen["outside_requests"], json!([]));
    assert_eq!(seen["console_errors"], json!([]), "{seen:#}");
    println!(
        "measured: timeline {} ms ({} ms its request), merge {} ms, compare {} ms, 113k-frame flamegraph {} frames drawn, opened {} ms, searched {} ms ({})",
        seen["timeline_ms"],
        seen["timeline_request_ms"],
        seen["merge_ms"],
        seen["compare_ms"],
        frames,
        seen["large_open_ms"],
        seen["large_search_ms"],
        seen["large_subtitle"]
    );
    for shot in seen["screenshots"].as_array().unwrap() {
        println!("screenshot: {}", shot.as_str().unwrap());
    }
}

/// The `from` and `to` of a selection's id, in the files' time form.
fn agentprof_sel_range(id: &str) -> (String, String) {
    let q = id.trim_start_matches("sel:");
    let get = |k: &str| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    let norm = |t: String| {
        let ts: jiff::Timestamp = t.parse().unwrap();
        ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    };
    (norm(get("from")), norm(get("to")))
}

/// Records written as `agentprof k8s` writes them carry each file's sample-label index: a
/// timeline grouped by a sample label, or of one label's value, is answered from it without
/// reading a profile (the files are garbage by then), equal to the sums over the files'
/// samples; the labels and their values are offered with the answer. (Before the index,
/// each capture was decoded for every such request: 2–17 s over 10,000 captures.)
#[test]
fn a_timeline_by_sample_label_is_answered_from_the_records_index() {
    use prost::Message;
    let sb = Sandbox::new();
    let mut lines = String::new();
    let mut want: std::collections::BTreeMap<String, f64> = Default::default();
    let mut files = Vec::new();
    for i in 0..4i64 {
        let p = scaled_capture(i);
        let time = format!("2026-12-01T10:0{i}:00.000Z");
        let rel = format!("prof/web/cpu-{time}.pb.gz");
        sb.write_bytes(&rel, &gz(&p.encode_to_vec()));
        files.push(rel);
        // What the files' samples say, by `trace endpoint`.
        let key = p
            .string_table
            .iter()
            .position(|s| s == "trace endpoint")
            .unwrap() as i64;
        let cpu_i = p
            .sample_type
            .iter()
            .position(|t| p.string_table[t.r#type as usize] == "cpu")
            .unwrap();
        for s in &p.sample {
            let v = s.label.iter().find(|l| l.key == key).map_or_else(
                || "(none)".to_string(),
                |l| p.string_table[l.str as usize].clone(),
            );
            *want.entry(format!("trace endpoint:{v}")).or_default() += s.value[cpu_i] as f64;
        }
        let mut totals =
            serde_json::to_value(agentprof::pprof::Pprof::new(p).unwrap().totals()).unwrap();
        totals["file"] = json!(format!("out/web/cpu-{time}.pb.gz"));
        let line = json!({"time": time, "target": "web", "namespace": "shop", "pod": "web-1",
            "cause": "scheduled", "profiles": [{"type": "cpu",
            "files": [format!("out/web/cpu-{time}.pb.gz")], "totals": [totals]}]});
        lines.push_str(&format!("{line}\n"));
    }
    sb.write("prof/captures.jsonl", &lines);
    // Nothing of the profiles can be read any more.
    for f in &files {
        sb.write(f, "not a profile");
    }
    let ui = Ui::start(&sb, &["prof"]);
    let by = ui
        .json("/api/series?service=web&type=cpu&sample_index=cpu&group_by=label:trace%20endpoint");
    assert_eq!(by["unreadable"], json!([]), "{by:#}");
    let mut got: std::collections::BTreeMap<String, f64> = Default::default();
    for g in by["groups"].as_array().unwrap() {
        got.insert(
            g["key"].as_str().unwrap().to_string(),
            g["total"].as_f64().unwrap(),
        );
    }
    assert_eq!(got, want, "{by:#}");
    let offered = by["labels"].to_string();
    assert!(
        offered.contains("\"key\":\"trace endpoint\"") && offered.contains("get_movies"),
        "{offered}"
    );
    let one = ui.json(
        "/api/series?service=web&type=cpu&sample_index=cpu&label=trace%20endpoint%3Dget_movies",
    );
    let total: f64 = one["groups"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .sum();
    assert_eq!(total, want["trace endpoint:get_movies"], "{one:#}");
}

/// Twelve CPU captures of `web`, 08:00 to 10:45 every 15 minutes of 2026-12-01, the i-th
/// with the fixture's values times i + 1; the files' paths under the sandbox, oldest first.
fn three_hours(sb: &Sandbox) -> Vec<String> {
    use prost::Message;
    let mut files = Vec::new();
    let mut lines = String::new();
    for i in 0..12i64 {
        let mut p = scaled_capture(i);
        let (h, m) = (8 + i / 4, (i % 4) * 15);
        let time = format!("2026-12-01T{h:02}:{m:02}:00.000Z");
        p.time_nanos = time.parse::<jiff::Timestamp>().unwrap().as_nanosecond() as i64;
        p.duration_nanos = 10_000_000_000;
        let rel = format!("prof/web/cpu-{time}.pb.gz");
        sb.write_bytes(&rel, &gz(&p.encode_to_vec()));
        let line = json!({"time": time, "target": "web", "namespace": "shop", "pod": "web-1",
            "container": "app", "cause": "scheduled", "tags": ["pod_name:web-1"],
            "profiles": [{"type": "cpu", "files": [format!("out/web/cpu-{time}.pb.gz")], "totals": []}]});
        lines.push_str(&format!("{line}\n"));
        files.push(rel);
    }
    sb.write("prof/captures.jsonl", &lines);
    files
}

/// The hourly rollups the ui keeps in the sandbox's cache, by path.
fn rollups(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&sb.file(".cache/agentprof/ui"), &mut out);
    out.sort();
    out
}

/// A range of whole ended hours is merged from hourly rollups the ui keeps in its cache
/// (--cache-dir): its table, its sample-label share and the file saved are byte for byte
/// the merge of the captures (--no-cache) and go tool pprof's; a fresh ui reads the
/// rollups, not the captures; a capture rewritten in an hour makes that hour's rollup again
/// and removes the old one.
#[test]
fn whole_hours_are_merged_from_rollups_equal_to_the_merge_of_their_captures() {
    if !crate::support::require_go() {
        return;
    }
    let sb = Sandbox::new();
    let files = three_hours(&sb);
    let range = "service=web&type=cpu&from=2026-12-01T07:50:00Z&to=2026-12-01T11:10:00Z";
    let id = sel(range);
    let labelled = sel(&format!(
        "{range}&label=local%20root%20span%20id%3D8167443446631090604"
    ));
    let answers = |ui: &Ui| {
        let top = ui.json(&format!("/api/top?id={id}&nodes=25"));
        let part = ui.json(&format!("/api/top?id={labelled}&nodes=25"));
        let (status, _, saved) = ui.get(&format!("/file?id={id}"));
        assert_eq!(status, 200);
        assert_eq!(top["selection"]["captures"], 12, "{top:#}");
        (top["report"].clone(), part["report"].clone(), saved)
    };
    let plain = answers(&Ui::start(&sb, &["prof", "--no-cache"]));
    assert!(rollups(&sb).is_empty(), "--no-cache keeps nothing");

    let rolled = answers(&Ui::start(&sb, &["prof"]));
    let kept = rollups(&sb);
    assert_eq!(kept.len(), 3, "one rollup per hour: {kept:?}");
    assert_eq!(rolled.0, plain.0, "the table");
    assert_eq!(rolled.1, plain.1, "a sample label's share");
    assert!(rolled.2 == plain.2, "the merged file, byte for byte");
    // go tool pprof's merge of the twelve files: the same table.
    let go_merge = |files: &[String]| {
        let paths: Vec<_> = files.iter().map(|f| sb.file(f)).collect();
        let merged = go_merged(&sb, &paths);
        let cli = sb.run(&["top", "--json", "-n", "25", merged.to_str().unwrap()]);
        serde_json::from_str::<Value>(&cli.stdout).unwrap()["report"].clone()
    };
    assert_eq!(rolled.0, go_merge(&files), "go tool pprof's merge");

    // A fresh ui answers from the rollups: one hour's file holding another hour's merge
    // changes the answer (the name, not the content, ties a rollup to its captures).
    let (first, last) = (&kept[0], &kept[2]);
    let last_bytes = std::fs::read(last).unwrap();
    std::fs::copy(first, last).unwrap();
    let swapped = answers(&Ui::start(&sb, &["prof"]));
    assert_ne!(swapped.0, plain.0, "the rollups were read");
    std::fs::write(last, &last_bytes).unwrap();

    // A capture of 10:00–11:00 rewritten (five times its values): that hour's rollup is
    // made again, the old one removed, and the merge is go's of the files as they are now.
    {
        use prost::Message;
        let mut p = scaled_capture(4);
        p.time_nanos = "2026-12-01T10:15:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_nanosecond() as i64;
        p.duration_nanos = 10_000_000_000;
        sb.write_bytes(&files[9], &gz(&p.encode_to_vec()));
    }
    let redone = answers(&Ui::start(&sb, &["prof"]));
    let now = rollups(&sb);
    assert_eq!(now.len(), 3, "{now:?}");
    assert_eq!(now[..2], kept[..2], "the other hours' rollups are kept");
    assert_ne!(now[2], kept[2], "10:00's is made again");
    assert_eq!(redone.0, go_merge(&files));
    assert_ne!(redone.0, plain.0);
}
