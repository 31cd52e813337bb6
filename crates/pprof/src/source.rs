//! `go tool pprof -list`: the source lines of each function whose name matches, with the flat
//! and cum of every line, from five lines before the first line with samples to five after
//! the last. Nodes are lines (function, file, line number); a sample adds its value to the
//! cum of every line on its stack once, and to the flat of its innermost line. Files are
//! found as go tool pprof finds them (the source path searched upwards, `-trim_path`
//! prefixes and the search path's own name taken off); `agentprof ui` reads them only
//! under the directories it is given.

use std::io::Read;
use std::path::PathBuf;

use regex::Regex;

use super::fasthash::FastMap;
use super::filter::NameFilter;
use super::graph::total;
use super::measure::{percentage, scaled_label};
use super::model::Pprof;
use crate::Error;

/// Lines of context before the first and after the last line with samples.
pub use crate::source_path::clean;
use crate::source_path::{SourceError, open_source, readable_source, trim_path};

const MARGIN: i64 = 5;
/// The most of a source file read (a line view needs the start of a file, not gigabytes).
const MAX_SOURCE_BYTES: u64 = 64 << 20;
/// bufio.Scanner's longest line: go tool pprof stops reading a file at a longer one.
const MAX_LINE: usize = 64 * 1024;

/// Where source files may be read from.
#[derive(Debug, Clone)]
pub enum SourceAccess {
    /// As go tool pprof: `-source_path` (':'-separated; the working directory when empty)
    /// and `-trim_path`; an absolute path is opened as it is.
    Go {
        search_path: String,
        trim_path: String,
    },
    /// Only files under these directories (none: no source is read, the lines with samples
    /// are listed without their text).
    Within(Vec<PathBuf>),
    /// The files at the paths the profile records (absolute, or under the working
    /// directory and its parents, as go tool pprof looks without `-source_path`), when they
    /// are source files: a regular file named as source (`.go`, `.py`, `.rs`, `.c`, `.java`
    /// …), outside `/proc`, `/sys` and `/dev`, links followed. A profile names any path it
    /// likes; these are the only ones read.
    Recorded,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SourceLine {
    pub line: i64,
    pub flat: i64,
    pub cum: i64,
    /// The value, or "." for none, as go tool pprof prints it.
    pub flat_fmt: String,
    pub cum_fmt: String,
    /// The line's text; absent when the file was not read.
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Routine {
    pub function: String,
    pub file: String,
    pub flat: i64,
    pub cum: i64,
    pub flat_fmt: String,
    pub cum_fmt: String,
    /// The cum as a share of the whole profile's total.
    pub cum_pct: String,
    /// Why the file's text is not shown, when it is not.
    pub error: Option<String>,
    pub lines: Vec<SourceLine>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ListReport {
    pub sample_type: String,
    pub unit: String,
    pub total: i64,
    pub total_fmt: String,
    /// Every matching function with source information, by name, then file.
    pub routines: Vec<Routine>,
    /// Matching functions without a file name in the profile.
    pub no_source: Vec<String>,
    /// The routines and no-source lines in go tool pprof's order.
    #[serde(skip)]
    order: Vec<Item>,
}

#[derive(Debug, Clone)]
enum Item {
    Routine(usize),
    NoSource(usize),
}

impl ListReport {
    /// The text `go tool pprof -list` prints.
    pub fn text(&self) -> String {
        let mut out = format!("Total: {}\n", self.total_fmt);
        for item in &self.order {
            match *item {
                Item::NoSource(i) => {
                    out.push_str(&format!(
                        "No source information for {}\n",
                        self.no_source[i]
                    ));
                }
                Item::Routine(i) => {
                    let r = &self.routines[i];
                    out.push_str(&format!(
                        "ROUTINE ======================== {} in {}\n",
                        r.function, r.file
                    ));
                    out.push_str(&format!(
                        "{:>10} {:>10} (flat, cum) {} of Total\n",
                        r.flat_fmt, r.cum_fmt, r.cum_pct
                    ));
                    if let Some(e) = &r.error {
                        out.push_str(&format!(" Error: {e}\n"));
                        continue;
                    }
                    for l in &r.lines {
                        out.push_str(&format!(
                            "{:>10} {:>10} {:>6}:{}\n",
                            l.flat_fmt,
                            l.cum_fmt,
                            l.line,
                            l.text.as_deref().unwrap_or("")
                        ));
                    }
                }
            }
        }
        out
    }
}

/// A line node: pprof's NodeInfo at line granularity (address and column cleared, the binary
/// and start line kept).
#[derive(Clone, PartialEq, Eq, Hash)]
struct LineKey {
    name: i64,
    file: String,
    line: i64,
    objfile: i64,
    start_line: i64,
}

/// The list report of the functions of `p` whose names match `symbol`, after `filter`.
pub fn list(
    p: &Pprof,
    filter: &NameFilter,
    symbol: &Regex,
    sample_index: Option<&str>,
    access: &SourceAccess,
) -> Result<(ListReport, Vec<&'static str>), Error> {
    let index = p.sample_index(sample_index)?;
    let whole = total(p, index);
    let mut kept = None;
    let (p, warnings) = filter.applied(p, &mut kept);
    let (stype, sunit) = p.sample_types()[index];
    let fmt = |v: i64| scaled_label(v, sunit, "minimum");
    let (search_path, trim, given_path) = paths(access);
    let (keys, loc_nodes) = line_nodes(p, &trim, &given_path);
    let n = keys.len();
    let (flat, cum) = line_figures(p, index, &loc_nodes, n);
    // Matching functions (nodes with samples whose name matches), by name, then file.
    let mut by_name: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for i in 0..n {
        if flat[i] == 0 && cum[i] == 0 {
            continue;
        }
        let name = p.str(keys[i].name);
        if symbol.is_match(name) {
            by_name.entry(name).or_default().push(i);
        }
    }
    if by_name.is_empty() {
        return Err(Error::NoMatches(symbol.as_str().to_string()));
    }
    let mut reader = Reader::new(search_path, trim, access);
    let mut report = ListReport {
        sample_type: stype.to_string(),
        unit: sunit.to_string(),
        total: whole,
        total_fmt: fmt(whole),
        routines: Vec::new(),
        no_source: Vec::new(),
        order: Vec::new(),
    };
    for (name, nodes) in by_name {
        let mut by_file: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for &i in &nodes {
            if !keys[i].file.is_empty() {
                by_file.entry(keys[i].file.as_str()).or_default().push(i);
            }
        }
        if by_file.is_empty() {
            report.order.push(Item::NoSource(report.no_source.len()));
            report.no_source.push(name.to_string());
            continue;
        }
        for (file, fns) in by_file {
            let lines = Lines {
                keys: &keys,
                flat: &flat,
                cum: &cum,
            };
            let routine = routine(name, file, &fns, &lines, whole, sunit, &mut reader);
            report.order.push(Item::Routine(report.routines.len()));
            report.routines.push(routine);
        }
    }
    Ok((report, warnings))
}

/// Where a listing searches for source files, the prefix trimmed from recorded paths, and
/// the path the user gave (what the report's file names are trimmed with).
fn paths(access: &SourceAccess) -> (String, String, String) {
    let (search_path, trim) = match access {
        SourceAccess::Go {
            search_path,
            trim_path,
        } => (search_path.clone(), trim_path.clone()),
        SourceAccess::Within(dirs) => (join_paths(dirs), String::new()),
        SourceAccess::Recorded => (String::new(), String::new()),
    };
    // The report's file names: go tool pprof trims them with the source path it was given
    // (not the working directory it searches by default).
    let given_path = search_path.clone();
    let search_path = if search_path.is_empty() {
        std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        search_path
    };
    (search_path, trim, given_path)
}

/// The line nodes of `p` and, per location, its nodes innermost first; file names trimmed
/// of `trim` (go tool pprof's `-trim_path`) and of the source path the user gave.
fn line_nodes(p: &Pprof, trim: &str, given_path: &str) -> (Vec<LineKey>, Vec<Vec<u32>>) {
    let mut files: FastMap<i64, String> = FastMap::default();
    let mut file_of = |p: &Pprof, f: i64| -> String {
        files
            .entry(f)
            .or_insert_with(|| {
                let raw = p.str(f);
                if raw.is_empty() {
                    String::new()
                } else {
                    clean(&trim_path(raw, trim, given_path))
                }
            })
            .clone()
    };
    // Nodes per location line, innermost first.
    let mut ids: FastMap<LineKey, u32> = FastMap::default();
    let mut keys: Vec<LineKey> = Vec::new();
    let mut loc_nodes: Vec<Vec<u32>> = Vec::with_capacity(p.loc_lines.len());
    for (li, lines) in p.loc_lines.iter().enumerate() {
        let objfile = p.loc_mapping[li].map_or(0, |m| p.proto.mapping[m].filename);
        let empty = [(None, 0)];
        let lines: &[(Option<usize>, i64)] = if lines.is_empty() { &empty } else { lines };
        let mut nodes = Vec::with_capacity(lines.len());
        for &(f, line) in lines {
            let key = match f.map(|f| &p.proto.function[f]) {
                None => LineKey {
                    name: 0,
                    file: String::new(),
                    line: 0,
                    objfile,
                    start_line: 0,
                },
                // A listing keeps the binary and the start line in every node (pprof's
                // ObjNames for list reports).
                Some(func) => LineKey {
                    name: func.name,
                    file: file_of(p, func.filename),
                    line,
                    objfile,
                    start_line: func.start_line,
                },
            };
            let next = keys.len() as u32;
            let id = *ids.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                next
            });
            nodes.push(id);
        }
        loc_nodes.push(nodes);
    }
    (keys, loc_nodes)
}

/// Flat and cum per line node over the samples of `index`.
fn line_figures(p: &Pprof, index: usize, loc_nodes: &[Vec<u32>], n: usize) -> (Vec<i64>, Vec<i64>) {
    let (mut flat, mut cum, mut seen) = (vec![0i64; n], vec![0i64; n], vec![0u32; n]);
    for si in 0..p.proto.sample.len() {
        let w = p.proto.sample[si].value[index];
        if w == 0 {
            continue;
        }
        let stamp = si as u32 + 1;
        let mut leaf = None;
        for &loc in p.sample_locs(si).iter().rev() {
            for &node in loc_nodes[loc as usize].iter().rev() {
                if seen[node as usize] != stamp {
                    seen[node as usize] = stamp;
                    cum[node as usize] = cum[node as usize].wrapping_add(w);
                }
                leaf = Some(node);
            }
        }
        if let Some(l) = leaf {
            flat[l as usize] = flat[l as usize].wrapping_add(w);
        }
    }
    (flat, cum)
}

/// The line nodes of a listing with their figures.
struct Lines<'a> {
    keys: &'a [LineKey],
    flat: &'a [i64],
    cum: &'a [i64],
}

/// One function's listing in `file`, of the line nodes `fns`: its source lines around those
/// with samples, or, when the file cannot be read, the lines with samples and why.
fn routine(
    name: &str,
    file: &str,
    fns: &[usize],
    l: &Lines<'_>,
    whole: i64,
    sunit: &str,
    reader: &mut Reader<'_>,
) -> Routine {
    let (keys, flat, cum) = (l.keys, l.flat, l.cum);
    let fmt = |v: i64| scaled_label(v, sunit, "minimum");
    let dot = |v: i64| if v == 0 { ".".to_string() } else { fmt(v) };
    let flat_sum = fns.iter().fold(0i64, |a, &i| a.wrapping_add(flat[i]));
    let cum_sum = fns.iter().fold(0i64, |a, &i| a.wrapping_add(cum[i]));
    // Five lines around the lines with samples (the start line when pprof keeps it).
    let start_of = |i: usize| {
        let k = &keys[i];
        if k.start_line != 0 {
            k.start_line
        } else {
            k.line - MARGIN
        }
    };
    let start = fns.iter().map(|&i| start_of(i)).min().unwrap_or(1).max(1);
    let end = fns.iter().map(|&i| keys[i].line).max().unwrap_or(0) + MARGIN;
    let mut per_line: FastMap<i64, (i64, i64)> = FastMap::default();
    for &i in fns {
        let e = per_line.entry(keys[i].line).or_default();
        e.0 = e.0.wrapping_add(flat[i]);
        e.1 = e.1.wrapping_add(cum[i]);
    }
    let mut routine = Routine {
        function: name.to_string(),
        file: file.to_string(),
        flat: flat_sum,
        cum: cum_sum,
        flat_fmt: fmt(flat_sum),
        cum_fmt: fmt(cum_sum),
        cum_pct: percentage(cum_sum, whole),
        error: None,
        lines: Vec::new(),
    };
    match reader.lines(file) {
        Ok(text) => {
            for line in start..=end {
                let Some(t) = usize::try_from(line - 1).ok().and_then(|l| text.get(l)) else {
                    break;
                };
                let (f, c) = per_line.get(&line).copied().unwrap_or_default();
                routine.lines.push(SourceLine {
                    line,
                    flat: f,
                    cum: c,
                    flat_fmt: dot(f),
                    cum_fmt: dot(c),
                    text: Some(t.clone()),
                });
            }
        }
        Err(e) => {
            // The lines with samples still say where the time went.
            let mut sampled: Vec<_> = per_line.into_iter().collect();
            sampled.sort_unstable_by_key(|&(l, _)| l);
            routine.lines = sampled
                .into_iter()
                .map(|(line, (f, c))| SourceLine {
                    line,
                    flat: f,
                    cum: c,
                    flat_fmt: dot(f),
                    cum_fmt: dot(c),
                    text: None,
                })
                .collect();
            routine.error = Some(e.0);
        }
    }
    routine
}

fn join_paths(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.to_string_lossy())
        .collect::<Vec<_>>()
        .join(":")
}

/// Source files read once each.
struct Reader<'a> {
    search_path: String,
    trim: String,
    access: &'a SourceAccess,
    files: FastMap<String, Result<std::rc::Rc<Vec<String>>, SourceError>>,
}

impl<'a> Reader<'a> {
    fn new(search_path: String, trim: String, access: &'a SourceAccess) -> Reader<'a> {
        Reader {
            search_path,
            trim,
            access,
            files: FastMap::default(),
        }
    }

    fn lines(&mut self, file: &str) -> Result<std::rc::Rc<Vec<String>>, SourceError> {
        if let Some(r) = self.files.get(file) {
            return r.clone();
        }
        let r = self.read(file).map(std::rc::Rc::new);
        self.files.insert(file.to_string(), r.clone());
        r
    }

    fn read(&self, file: &str) -> Result<Vec<String>, SourceError> {
        let dirs = match self.access {
            SourceAccess::Within(dirs) if dirs.is_empty() => {
                return Err(SourceError(
                    "source not read (agentprof ui --source-path DIR reads it)".into(),
                ));
            }
            SourceAccess::Within(dirs) => Some(dirs),
            SourceAccess::Go { .. } | SourceAccess::Recorded => None,
        };
        let f = open_source(file, &self.search_path, &self.trim)?;
        if matches!(self.access, SourceAccess::Recorded) {
            let real = std::fs::canonicalize(&f.1).map_err(|e| e.to_string())?;
            if !readable_source(&real) {
                return Err(SourceError(format!(
                    "{file} is not read: not a source file (agentprof ui --source-path DIR reads what is under DIR)"
                )));
            }
        }
        if let Some(dirs) = dirs {
            // Only what lies under the directories given, links followed.
            let real = std::fs::canonicalize(&f.1).map_err(|e| e.to_string())?;
            let inside = dirs
                .iter()
                .any(|d| std::fs::canonicalize(d).is_ok_and(|d| real.starts_with(d)));
            if !inside || !real.is_file() {
                return Err(SourceError(format!("{file} is not under --source-path")));
            }
        }
        let mut bytes = Vec::new();
        // A read that fails leaves the lines read before it, as go tool pprof does.
        let _ = f.0.take(MAX_SOURCE_BYTES).read_to_end(&mut bytes);
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let mut lines = Vec::new();
        if bytes.is_empty() {
            return Ok(lines);
        }
        for l in body.split(|&b| b == b'\n') {
            if l.len() >= MAX_LINE {
                break;
            }
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            lines.push(String::from_utf8_lossy(l).into_owned());
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source_path::base;

    #[test]
    fn paths_clean_and_trim_as_go_does() {
        for (i, o) in [
            ("", "."),
            ("/", "/"),
            ("a//b/./c/..", "a/b"),
            ("/../x", "/x"),
            ("../../x", "../../x"),
            ("a/../..", ".."),
            (
                "/usr/local/go/src/runtime/proc.go",
                "/usr/local/go/src/runtime/proc.go",
            ),
        ] {
            assert_eq!(clean(i), o, "{i}");
        }
        assert_eq!(
            trim_path("/build/app/main.go", "", "/home/me/app"),
            "main.go"
        );
        assert_eq!(
            trim_path("/build/app/main.go", "/build", "/x"),
            "app/main.go"
        );
        assert_eq!(trim_path("/proc/self/cwd/./x.go", "", ""), "x.go");
        assert_eq!(trim_path("/a/b.go", "", ""), "/a/b.go");
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(base("/"), "/");
    }
}
