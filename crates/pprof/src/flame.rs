//! Flamegraphs of a profile, plain, as an icicle, or differential (two profiles, or one
//! that holds a diff's negative values): its stacks folded into inferno's lines, drawn by
//! inferno, with what was cut or folded said in the subtitle.

use super::fold::MAX_FLAME_DEPTH;
use super::graph::Nodes;
use super::model::Pprof;
use crate::Error;

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
pub(crate) fn folded_signed(p: &Pprof, index: usize, negative: bool) -> Folded {
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
) -> Result<(), Error> {
    draw(p, &Nodes::new(p), index, title, Look::default(), out).map(|_| ())
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

/// [`write_flamegraph_with`], drawn as `look` says; how many frames it folded.
pub fn write_flamegraph_look(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    look: Look,
    out: impl std::io::Write,
) -> Result<usize, Error> {
    draw(p, nodes, index, title, look, out)
}

/// [`write_flamegraph`], drawn as `look` says; how many frames `look.max_frames` folded.
fn draw(
    p: &Pprof,
    nodes: &Nodes,
    index: usize,
    title: &str,
    look: Look,
    out: impl std::io::Write,
) -> Result<usize, Error> {
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
        return draw_differential(&neg.lines, &pos.lines, false, opts, out).map(|_| 0);
    }
    // The frames inferno would leave out as narrower than its `min_width` (a share of the
    // whole, computed as it computes it) are left out before it reads the lines: a
    // million-stack profile becomes the few thousand lines it draws, the same picture.
    let min_value = if look.prune {
        opts.min_width / (100.0 / tree.total() as f64)
    } else {
        0.0
    };
    let mut folded = None;
    let kept = look.max_frames.and_then(|max| tree.keeping(max, min_value));
    if let Some((_, n)) = &kept {
        folded = Some(format!(
            "{n} of the narrowest frames folded into their callers to keep {} (focus on a function to see them)",
            look.max_frames.unwrap_or_default()
        ));
    }
    let lines = tree.lines_keeping(min_value, kept.as_ref().map(|k| &k.0[..]));
    if lines.is_empty() {
        return Err(Error::NothingToDraw(
            "the profile has no samples of this type with a value",
        ));
    }
    let notes: Vec<String> = [cut_note(tree.cut), folded].into_iter().flatten().collect();
    opts.subtitle = (!notes.is_empty()).then(|| notes.join("; "));
    crate::labels::draw_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(Error::draw)?;
    Ok(kept.map_or(0, |k| k.1))
}

fn draw_differential(
    before: &[String],
    after: &[String],
    normalize: bool,
    mut opts: inferno::flamegraph::Options<'_>,
    out: impl std::io::Write,
) -> Result<(), Error> {
    let (before, after) = (before.join("\n"), after.join("\n"));
    if after.is_empty() && before.is_empty() {
        return Err(Error::NothingToDraw("no samples of this type with a value"));
    }
    let mut merged = Vec::new();
    let dopt = inferno::differential::Options {
        normalize,
        ..Default::default()
    };
    inferno::differential::from_readers(dopt, before.as_bytes(), after.as_bytes(), &mut merged)
        .map_err(Error::fold_stacks)?;
    let text = String::from_utf8_lossy(&merged);
    crate::labels::draw_lines(&mut opts, text.lines(), out).map_err(Error::draw)
}

/// Writes a differential flamegraph: frames are sized by the new profile and coloured by
/// each frame's change from the base, its callees included (red grew, blue shrank, deeper
/// as the change nears 100 % of what it was; grey within 0.05 % of the total), its
/// tooltip ending with the base and new values. With `normalize` the base is scaled to the
/// new profile's total first.
pub fn write_diff_flamegraph(
    base: &Pprof,
    new: &Pprof,
    (bi, ni): (usize, usize),
    normalize: bool,
    title: &str,
    mut out: impl std::io::Write,
) -> Result<(), Error> {
    let before = folded_signed(base, bi, false);
    let after = folded_signed(new, ni, false);
    if after.lines.is_empty() {
        return Err(Error::NothingToDraw(
            "the new profile has no samples of this type with a value",
        ));
    }
    let (stype, unit) = new.sample_types()[ni];
    let values = crate::recolor::frame_values(&before.lines, &after.lines);
    let sum = |lines: &[String]| -> f64 {
        lines
            .iter()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    };
    let (tb, ta) = (sum(&before.lines), sum(&after.lines));
    let scale = if normalize && tb > 0.0 { ta / tb } else { 1.0 };
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = format!("{stype} [{unit}]");
    let notes: Vec<String> = [
        Some("red grew, blue shrank: each frame (its callees included) against the base, deepest at ±100 %; grey: within 0.05 % of the total".to_string()),
        cut_note(before.cut + after.cut),
    ]
    .into_iter()
    .flatten()
    .collect();
    opts.subtitle = Some(notes.join("; "));
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, after.lines.iter().map(String::as_str), &mut svg)
        .map_err(Error::draw)?;
    let svg = String::from_utf8_lossy(&svg);
    let fmt = |v: f64| crate::measure::scaled_label(v.round() as i64, unit, "auto");
    let colored = crate::recolor::recolor(&svg, &values, tb, scale, 0.0005 * ta, fmt);
    let colored = crate::labels::shorten(&colored);
    out.write_all(colored.as_bytes()).map_err(Error::draw)
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
        let all = folded_signed(&p, idx, false).lines;
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
        let lines = folded_signed(&p, 0, false).lines;
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

    #[test]
    fn a_bound_on_frames_keeps_the_widest_and_their_callers_and_says_how_many() {
        let p = many_small();
        let nodes = Nodes::new(&p);
        let tree = super::super::fold::Tree::with_nodes(&p, &nodes, 0, false);
        let (keep, folded) = tree.keeping(40, 0.0).expect("more than 40 frames");
        assert_eq!(keep.iter().filter(|k| **k).count(), 41, "40 and the root");
        assert!(folded > 6000, "{folded}");
        let lines = tree.lines_keeping(0.0, Some(&keep));
        // Every value is still there, in fewer lines; the widest path is whole.
        let sum = |l: &[String]| -> u64 {
            l.iter()
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                .sum()
        };
        assert_eq!(sum(&lines), sum(&tree.lines(0.0)));
        assert!(lines.contains(&"main;work,semicolon;spin 5000000".to_string()));
        assert!(lines.len() < 100, "{} lines", lines.len());
        let mut svg = Vec::new();
        let look = Look {
            prune: false,
            max_frames: Some(40),
            ..Look::default()
        };
        let n = draw(&p, &nodes, 0, "t", look, &mut svg).unwrap();
        let text = String::from_utf8(svg).unwrap();
        assert_eq!(n, folded);
        assert!(
            text.contains(&format!("{n} of the narrowest frames folded")),
            "{n}"
        );
        assert!(tree.keeping(1_000_000, 0.0).is_none());
    }
}
