//! A differential flamegraph whose colours read at a glance: inferno draws the new
//! profile's frames (their widths, names, search and zoom), then each frame is coloured by
//! its own change against the base — its value with its callees', relative to what it was
//! — on a scale that is saturated at ±100 %, and its tooltip says both values. inferno's
//! own differential colours only the leaf of each stack, relative to the largest leaf
//! change, so most of a picture came out nearly white.

use crate::fasthash::{FastMap, fold, hash_bytes, mix};

/// The path key of a frame: its parent's key and its name.
fn key(parent: u64, name: &str) -> u64 {
    mix(fold(parent, hash_bytes(name.as_bytes())), 0)
}

/// Every frame's (base, new) value with its callees', by path key, from the folded lines
/// (`root;…;leaf value`) of each.
pub(crate) fn frame_values(base: &[String], new: &[String]) -> FastMap<u64, (f64, f64)> {
    let mut out: FastMap<u64, (f64, f64)> = FastMap::default();
    for (lines, second) in [(base, false), (new, true)] {
        for line in lines {
            let Some((path, v)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(v) = v.parse::<f64>() else { continue };
            let mut k = 0u64;
            for name in path.split(';') {
                k = key(k, name);
                let e = out.entry(k).or_default();
                if second {
                    e.1 += v;
                } else {
                    e.0 += v;
                }
            }
        }
    }
    out
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(';').unwrap_or(0);
        let ent = &tail[1..end.max(1)];
        let c = match ent {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) if end > 0 => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// One frame of inferno's SVG: where its fill and title end are, its depth's y, its x and
/// width in samples, its name.
struct Frame {
    fill: (usize, usize),
    title_end: usize,
    y: i64,
    x: u64,
    w: u64,
    name: String,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<(usize, &'a str)> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[at..].find('"')? + at;
    Some((at, &tag[at..end]))
}

fn frames(svg: &str) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = svg[at..].find("<g><title>") {
        let start = at + i + "<g><title>".len();
        let Some(te) = svg[start..].find("</title>") else {
            break;
        };
        let title_end = start + te;
        let rest = &svg[title_end..];
        let (Some(rs), Some(re)) = (rest.find("<rect"), rest.find("/>")) else {
            break;
        };
        at = title_end + re;
        if rs > re {
            continue;
        }
        let tag = &rest[rs..re];
        let base = title_end + rs;
        let (Some(fill), Some((_, y)), Some((_, x)), Some((_, w))) = (
            attr(tag, "fill"),
            attr(tag, "y"),
            attr(tag, "fg:x"),
            attr(tag, "fg:w"),
        ) else {
            continue;
        };
        let title = unescape(&svg[start..title_end]);
        // "name (N unit, P%)": the name is what comes before its last parenthesised part.
        let name = match title.rfind(" (") {
            Some(p) => title[..p].to_string(),
            None => title,
        };
        out.push(Frame {
            fill: (base + fill.0, base + fill.0 + fill.1.len()),
            title_end,
            y: y.parse().unwrap_or(0),
            x: x.parse().unwrap_or(0),
            w: w.parse().unwrap_or(0),
            name,
        });
    }
    out
}

/// The colour of a frame that went from `b` to `a`: grey when the change is under `floor`,
/// else red (grew) or blue (shrank), deeper as the change nears 100 % of what it was (a frame
/// new in this profile is deepest red).
fn colour(b: f64, a: f64, floor: f64) -> String {
    let d = a - b;
    if d.abs() < floor || d == 0.0 {
        return "rgb(225,225,225)".into();
    }
    let rel = if b > 0.0 { (d / b).abs().min(1.0) } else { 1.0 };
    // From light to saturated, never as pale as unchanged.
    let t = 0.25 + 0.75 * rel;
    let mix = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    if d > 0.0 {
        format!(
            "rgb({},{},{})",
            mix(250.0, 215.0),
            mix(200.0, 35.0),
            mix(200.0, 35.0)
        )
    } else {
        format!(
            "rgb({},{},{})",
            mix(200.0, 40.0),
            mix(210.0, 90.0),
            mix(250.0, 220.0)
        )
    }
}

/// inferno's SVG of the new profile with every frame's fill its change's colour and its
/// tooltip's figures ending with the base and new values (the root's: the base's total,
/// `base_total`, and the new one's); `scale` multiplies the base's values (normalized
/// comparisons), `fmt` writes a value.
pub(crate) fn recolor(
    svg: &str,
    values: &FastMap<u64, (f64, f64)>,
    base_total: f64,
    scale: f64,
    floor: f64,
    fmt: impl Fn(f64) -> String,
) -> String {
    let mut fr = frames(svg);
    // Depth from y: the deepest row of the picture (the highest y, inferno's normal
    // direction) is the root's.
    let mut ys: Vec<i64> = fr.iter().map(|f| f.y).collect();
    ys.sort_unstable();
    ys.dedup();
    let depth_of: FastMap<i64, usize> = ys.iter().rev().enumerate().map(|(d, &y)| (y, d)).collect();
    // Per depth the frames by x, with their path keys as found.
    let mut order: Vec<usize> = (0..fr.len()).collect();
    order.sort_by_key(|&i| (depth_of[&fr[i].y], fr[i].x));
    let mut by_depth: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); ys.len()];
    let mut keys = vec![0u64; fr.len()];
    for &i in &order {
        let d = depth_of[&fr[i].y];
        let parent = if d <= 1 {
            0
        } else {
            let row = &by_depth[d - 1];
            let p = row.partition_point(|&(x, _, _)| x <= fr[i].x);
            match p.checked_sub(1).map(|j| row[j]) {
                Some((x, w, k)) if fr[i].x < x + w.max(1) => k,
                _ => 0,
            }
        };
        let k = if d == 0 { 0 } else { key(parent, &fr[i].name) };
        keys[i] = k;
        by_depth[d].push((fr[i].x, fr[i].w, k));
    }
    // The edits, from the end of the text back, so earlier offsets hold.
    let mut edits: Vec<(usize, usize, String)> = Vec::with_capacity(fr.len() * 2);
    for (i, f) in fr.iter_mut().enumerate() {
        let (b, a) = if depth_of[&f.y] == 0 {
            (base_total, f.w as f64)
        } else {
            values.get(&keys[i]).copied().unwrap_or((0.0, f.w as f64))
        };
        let b = b * scale;
        edits.push((f.fill.0, f.fill.1, colour(b, a, floor)));
        let change = if b > 0.0 {
            format!("{:+.1}%", 100.0 * (a - b) / b)
        } else {
            "new".into()
        };
        // Inside the title's last parentheses: inferno's script labels a frame with the
        // title less that part.
        let at = if svg[..f.title_end].ends_with(')') {
            f.title_end - 1
        } else {
            f.title_end
        };
        edits.push((
            at,
            at,
            crate::text::esc(&format!("; base {} → {}, {change}", fmt(b), fmt(a))),
        ));
    }
    edits.sort_by(|x, y| y.0.cmp(&x.0).then(y.1.cmp(&x.1)));
    let mut s = svg.to_string();
    for (a, b, text) in edits {
        s.replace_range(a..b, &text);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_say_how_much_each_frame_changed() {
        assert_eq!(colour(100.0, 100.0, 1.0), "rgb(225,225,225)");
        assert_eq!(
            colour(100.0, 200.0, 1.0),
            colour(0.0, 5.0, 1.0),
            "doubled reads as new"
        );
        assert_ne!(colour(100.0, 110.0, 1.0), colour(100.0, 200.0, 1.0));
        // Halved: blue, half way to the deepest.
        assert_eq!(colour(100.0, 50.0, 1.0), "rgb(100,135,231)");
        assert_eq!(colour(100.0, 0.0, 1.0), "rgb(40,90,220)");
        assert_eq!(unescape("a&lt;b&gt; &amp; &#x41;&#66;"), "a<b> & AB");
    }
}
