//! Flamegraph labels in a real browser: each frame is labelled by its name less the
//! directories of its import path, by the longest of its suffixes that fits where that does
//! not, and cut on the left only past that; the tooltip keeps the whole name. Before this, dd-trace-go's heap
//! profile showed no whole name in any frame narrower than 28 % of the picture (at 1,280 px).

use serde_json::json;

use crate::support::{Sandbox, fixture};

/// The name of a frame's title, less its `(value, share)` and the import path's directories.
fn short_name(title: &str) -> String {
    let name = match title.rfind('(') {
        Some(i) if title.ends_with(')') => title[..i].trim_end(),
        _ => title,
    };
    let head = name.find([' ', '(', '[']).unwrap_or(name.len());
    match name[..head].rfind('/') {
        Some(i) => name[i + 1..].to_string(),
        None => name.to_string(),
    }
}

/// The short name and its suffixes after a `.` or `::` outside brackets, longest first, as
/// the page's script tries them.
fn suffixes(short: &str) -> Vec<&str> {
    let mut out = vec![short];
    let mut depth = 0i32;
    let b = short.as_bytes();
    for i in 0..b.len().saturating_sub(1) {
        match b[i] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b'.' if depth == 0 => out.push(&short[i + 1..]),
            b':' if depth == 0 && b[i + 1] == b':' => out.push(&short[i + 2..]),
            _ => {}
        }
    }
    out
}

#[test]
fn frames_are_labelled_by_short_names_in_chromium() {
    let Some(chromium) = crate::support::browser() else {
        return;
    };
    let sb = Sandbox::new();
    let (heap, cpu) = (fixture("delta-heap.pprof"), fixture("cpu.pprof"));
    let (heap, cpu) = (heap.to_str().unwrap(), cpu.to_str().unwrap());
    let (heap_svg, diff_svg) = (sb.file("heap.svg"), sb.file("diff.svg"));
    let r = sb.run(&["flamegraph", heap, "-o", heap_svg.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = sb.run(&["diff", cpu, cpu, "--flamegraph", diff_svg.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan = json!({
        "chromium": chromium,
        "width": 1280,
        "svgs": {"heap": heap_svg, "diff": diff_svg},
    });
    let seen = crate::support::run_browser(&sb, "labels.mjs", &plan);
    assert_eq!(seen["console_errors"], json!([]), "{seen:#}");
    let mut measured = Vec::new();
    for svg in ["heap", "diff"] {
        let px = seen["svgs"][svg]["width"].as_f64().unwrap();
        assert!(px > 1000.0, "{svg}: frames {px} px wide");
        let frames = seen["svgs"][svg]["frames"].as_array().unwrap();
        assert!(frames.len() > 100, "{svg}: {} frames", frames.len());
        let (mut wide, mut whole, mut with_path) = (0, 0, 0);
        for f in frames {
            let (width, title, label) = (
                f[0].as_f64().unwrap(),
                f[1].as_str().unwrap(),
                f[2].as_str().unwrap(),
            );
            if title.starts_with("all (") {
                continue;
            }
            let short = short_name(title);
            with_path += usize::from(short.len() < title.find(" (").unwrap_or(title.len()));
            let names = suffixes(&short);
            let fits = names.contains(&label);
            // inferno's script cuts on the left what does not fit (to ".." alone where only
            // two characters fit).
            let cut = label
                .strip_prefix("..")
                .is_some_and(|tail| names.last().is_some_and(|n| n.ends_with(tail)));
            assert!(
                fits || cut || label.is_empty(),
                "{svg}: {title:?} labelled {label:?}"
            );
            // Where the short name has room, with a tenth to spare (inferno's 12 px font at
            // 0.59 of its size a character, less 3 px of padding), it is the label, whole.
            let room = (width / 100.0 * px - 3.0) / (12.0 * 0.59);
            if short.chars().count() as f64 <= room * 0.9 {
                assert_eq!(label, short, "{svg}: {width:.1}% wide, room for {room:.0}");
            }
            if width >= 2.0 {
                wide += 1;
                whole += usize::from(fits);
            }
        }
        assert!(with_path > 0, "{svg}: no name with an import path");
        measured.push(format!(
            "{svg}: {whole} of {wide} frames at least 2 % wide labelled whole"
        ));
    }
    eprintln!("measured: {}", measured.join("; "));
}
