//! Frame labels that fit. inferno's page labels each frame with its name, cut on the left to
//! the frame's width. A Go name carries its whole import path
//! (`github.com/DataDog/dd-trace-go/v2/profiler.(*profiler).collect`), so a frame showed a
//! whole name only when it was a third of the picture wide. Here the page's script labels a
//! frame with the name less the directories of its import path
//! (`profiler.(*profiler).collect`), as go tool pprof's own flame graph labels it; the
//! tooltip, the details line and the search keep the whole name.

use std::io::{self, Write};

/// How inferno's script takes a frame's label: its title less the last `(…)` (the value and
/// share). It is in the script twice (the fixed-width and the measured way of fitting), each
/// time where `w`, the frame's width in pixels less its padding, is known.
const LABEL: &str = r#"find_child(e, "title").textContent.replace(/\([^(]*\)$/,"")"#;

/// What the script calls instead.
const CALL: &str = r#"agentprof_label(find_child(e, "title").textContent, w)"#;

/// The label of a frame `w` pixels wide, from its title: the name, less the space before the
/// `(…)`, less everything up to the last `/` that comes before any space, `(` or `[` (a
/// Python frame's `(dir/file.py:12)` and a Go generic's `[pkg/path.T]` keep theirs); where
/// that does not fit, the longest of its suffixes after a `.` or `::` outside brackets that
/// does (`main.fibonacciWithTrace` with room for 20 characters shows `fibonacciWithTrace`,
/// not `..ibonacciWithTrace`), as go tool pprof's flame graph picks among a name's suffixes;
/// where none does, the shortest, which inferno's script cuts keeping its end. The width is
/// estimated as the script estimates it (its monospace width, else the font size times its
/// width factor).
const LABEL_FN: &str = r#"
function agentprof_label(title, w) {
    var name = title.replace(/\([^(]*\)$/, "").trimEnd().replace(/^[^ ([]*\//, "");
    var cw = known_font_width || fontsize * fontwidth;
    if (name.length * cw <= w) return name;
    var depth = 0, shortest = name;
    for (var i = 0; i < name.length - 1; i++) {
        var c = name[i];
        if ("([{<".indexOf(c) >= 0) depth++;
        else if (")]}>".indexOf(c) >= 0) depth--;
        else if (depth == 0 && (c == "." || (c == ":" && name[i + 1] == ":"))) {
            shortest = name.slice(c == "." ? i + 1 : i + 2);
            if (shortest.length * cw <= w) return shortest;
        }
    }
    return shortest;
}
"#;

/// Where the script ends: the label function goes before it.
const SCRIPT_END: &str = "]]></script>";

/// The most of an SVG's start held back to find the script in (inferno writes it before
/// the first frame, in a few tens of KB).
const HEAD_MAX: usize = 256 * 1024;

/// A writer in front of inferno's: it holds the SVG back until the end of its script,
/// changes how the script labels frames, and passes the rest (the frames) straight through.
pub(crate) struct ShortLabels<W: Write> {
    out: W,
    head: Option<Vec<u8>>,
    changed: usize,
}

impl<W: Write> ShortLabels<W> {
    pub fn new(out: W) -> Self {
        ShortLabels {
            out,
            head: Some(Vec::with_capacity(64 * 1024)),
            changed: 0,
        }
    }

    fn release(&mut self) -> io::Result<()> {
        let Some(head) = self.head.take() else {
            return Ok(());
        };
        match std::str::from_utf8(&head) {
            Ok(text) if text.contains(LABEL) && text.contains(SCRIPT_END) => {
                let (text, changed) = shorten_counted(text);
                self.changed = changed;
                self.out.write_all(text.as_bytes())
            }
            _ => self.out.write_all(&head),
        }
    }

    /// Writes out what is held back and flushes; how many places of the script it changed
    /// (2 with the inferno agentprof is built with; 0 would mean whole names, as before).
    pub fn finish(mut self) -> io::Result<usize> {
        self.release()?;
        self.out.flush()?;
        Ok(self.changed)
    }
}

impl<W: Write> Write for ShortLabels<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(head) = self.head.as_mut() else {
            return self.out.write(buf);
        };
        let from = head.len().saturating_sub(b"</script>".len());
        head.extend_from_slice(buf);
        let ended = head[from..]
            .windows(b"</script>".len())
            .any(|w| w == b"</script>");
        // The head is released whole once the script has ended, or unchanged past its bound.
        if ended || head.len() > HEAD_MAX {
            self.release()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.release()?;
        self.out.flush()
    }
}

/// inferno's flamegraph of `lines`, written through [`ShortLabels`].
pub(crate) fn draw_lines<'a>(
    opts: &mut inferno::flamegraph::Options<'_>,
    lines: impl IntoIterator<Item = &'a str>,
    out: impl Write,
) -> io::Result<()> {
    let mut w = ShortLabels::new(out);
    inferno::flamegraph::from_lines(opts, lines, &mut w)?;
    w.finish().map(|_| ())
}

/// [`ShortLabels`] on an SVG already drawn.
pub(crate) fn shorten(svg: &str) -> String {
    shorten_counted(svg).0
}

/// The SVG with the label function in its script and called where the script labels a
/// frame; how many places call it (none when the SVG holds no script inferno's way).
fn shorten_counted(svg: &str) -> (String, usize) {
    let Some(end) = svg.find(SCRIPT_END) else {
        return (svg.to_string(), 0);
    };
    let (script, rest) = svg.split_at(end);
    let changed = script.matches(LABEL).count();
    if changed == 0 {
        return (svg.to_string(), 0);
    }
    let mut out = String::with_capacity(svg.len() + LABEL_FN.len() + 64);
    out.push_str(&script.replace(LABEL, CALL));
    out.push_str(LABEL_FN);
    out.push_str(rest);
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(lines: &[&str], out: impl Write) {
        let mut opts = inferno::flamegraph::Options::default();
        opts.deterministic = true;
        inferno::flamegraph::from_lines(&mut opts, lines.iter().copied(), out).unwrap();
    }

    #[test]
    fn the_script_labels_frames_by_the_short_name_and_the_frames_are_untouched() {
        let lines = [
            "main;github.com/DataDog/dd-trace-go/v2/profiler.(*profiler).collect;runtime.mallocgc 7",
            "main;net/http.(*conn).serve 3",
        ];
        let mut plain = Vec::new();
        drawn(&lines, &mut plain);
        let mut out = Vec::new();
        let mut w = ShortLabels::new(&mut out);
        drawn(&lines, &mut w);
        assert_eq!(
            w.finish().unwrap(),
            2,
            "inferno's script changed: frames would be labelled by their whole names"
        );
        let (plain, out) = (
            String::from_utf8(plain).unwrap(),
            String::from_utf8(out).unwrap(),
        );
        assert_eq!(out.matches(CALL).count(), 2);
        assert_eq!(out.matches("function agentprof_label(").count(), 1);
        assert_eq!(shorten(&plain), out);
        let frames = |svg: &str| svg[svg.find(SCRIPT_END).unwrap()..].to_string();
        assert_eq!(frames(&out), frames(&plain), "only the script changes");
        assert!(
            out.contains("<title>github.com/DataDog/dd-trace-go/v2/profiler.(*profiler).collect (")
        );
        // An SVG of no script is left as it is.
        assert_eq!(shorten("<svg></svg>"), "<svg></svg>");
    }

    /// The label function, run in Node (the browser tests need it) with inferno's font
    /// figures: 12 px at 0.59, about 7 px a character.
    #[test]
    fn what_a_frame_is_labelled_at_its_width() {
        let long =
            "github.com/DataDog/dd-trace-go/v2/profiler.(*profiler).collect (7 samples, 70.00%)";
        let cases = [
            (long, 1000.0, "profiler.(*profiler).collect"),
            (long, 150.0, "(*profiler).collect"),
            (long, 60.0, "collect"),
            (long, 20.0, "collect"),
            (
                "main.fibonacciWithTrace (1 samples, 11.40%)",
                200.0,
                "main.fibonacciWithTrace",
            ),
            (
                "main.fibonacciWithTrace (1 samples, 11.40%)",
                144.0,
                "fibonacciWithTrace",
            ),
            (
                "net/http.(*conn).serve (3 samples, 1.00%)",
                1000.0,
                "http.(*conn).serve",
            ),
            (
                "gopkg.in/yaml.v3.(*parser).parse (3 x, 1%)",
                1000.0,
                "yaml.v3.(*parser).parse",
            ),
            (
                "github.com/a/b.Map[go.shape.struct { F github.com/c/d.T }] (1 x, 1%)",
                2000.0,
                "b.Map[go.shape.struct { F github.com/c/d.T }]",
            ),
            (
                "check (datadog_checks/disk/disk.py:40) (3 samples, 1.00%)",
                10.0,
                "check (datadog_checks/disk/disk.py:40)",
            ),
            ("runtime.mallocgc (1 x, 1%)", 1000.0, "runtime.mallocgc"),
            ("runtime.mallocgc (1 x, 1%)", 60.0, "mallocgc"),
            (
                "github.com/a/b.Map[go.shape.struct { F github.com/c/d.T }] (1 x, 1%)",
                100.0,
                "Map[go.shape.struct { F github.com/c/d.T }]",
            ),
            ("std::vector<a::b>::push_back (1 x, 1%)", 80.0, "push_back"),
            ("[unknown] (1 x, 1%)", 1000.0, "[unknown]"),
            (
                "/usr/lib/x86_64-linux-gnu/libc.so.6 (1 x, 1%)",
                1000.0,
                "libc.so.6",
            ),
            (
                "main.work (4 cpu [nanoseconds], 1.00%; base 2 ns → 4 ns, +100.0%)",
                1000.0,
                "main.work",
            ),
        ];
        let Some(node) = node() else { return };
        let mut script = String::from("var known_font_width = 0, fontsize = 12, fontwidth = 0.59;");
        script.push_str(LABEL_FN);
        for (title, w, _) in cases {
            script.push_str(&format!("console.log(agentprof_label({title:?}, {w}));"));
        }
        let out = std::process::Command::new(node)
            .args(["-e", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).unwrap();
        let want: Vec<&str> = cases.iter().map(|(_, _, label)| *label).collect();
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
    }

    fn node() -> Option<&'static str> {
        let found = std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found && std::env::var_os("CI").is_some() {
            panic!("node is not installed: the label function cannot be run");
        }
        found.then_some("node")
    }
}
