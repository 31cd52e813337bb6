//! go tool pprof's name filters: `-focus`, `-ignore`, `-hide`, `-show`. A sample is kept when
//! one of its frames matches focus and none matches ignore; hide takes the matching frames
//! out of every stack, show keeps only the matching ones. A frame matches when its
//! function's name or file, or its binary's path, does (an unanchored regular expression).
//! Percentages stay of the whole profile's total, as go tool pprof prints them.

use regex::Regex;

use super::fasthash::FastMap;
use super::model::Pprof;
use crate::Error;

/// The four filters, compiled; empty when none is given.
#[derive(Clone, Default)]
pub struct NameFilter {
    focus: Option<Regex>,
    ignore: Option<Regex>,
    hide: Option<Regex>,
    show: Option<Regex>,
}

/// The longest expression accepted (the UI takes them from a URL).
pub(crate) const MAX_EXPRESSION: usize = 4096;

/// Compiles one expression; `None` or empty is no filter.
pub fn compile(name: &'static str, value: Option<&str>) -> Result<Option<Regex>, Error> {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if v.len() > MAX_EXPRESSION {
        return Err(Error::Filter {
            name,
            message: format!("{} bytes, more than {MAX_EXPRESSION}", v.len()),
        });
    }
    regex::RegexBuilder::new(v)
        .size_limit(1 << 20)
        .build()
        .map(Some)
        .map_err(|e| Error::Filter {
            name,
            message: e.to_string(),
        })
}

/// Which filters matched something: go tool pprof warns of each that did not.
#[derive(Debug, Default, Clone, Copy)]
pub struct Matched {
    focus: bool,
    ignore: bool,
    hide: bool,
    show: bool,
}

impl NameFilter {
    pub fn new(
        focus: Option<&str>,
        ignore: Option<&str>,
        hide: Option<&str>,
        show: Option<&str>,
    ) -> Result<NameFilter, Error> {
        Ok(NameFilter {
            focus: compile("focus", focus)?,
            ignore: compile("ignore", ignore)?,
            hide: compile("hide", hide)?,
            show: compile("show", show)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.focus.is_none() && self.ignore.is_none() && self.hide.is_none() && self.show.is_none()
    }

    /// The `Active filters:` lines of the report's header, as go tool pprof prints them.
    pub fn header(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (k, re) in [
            ("focus", &self.focus),
            ("ignore", &self.ignore),
            ("hide", &self.hide),
            ("show", &self.show),
        ] {
            if let Some(re) = re {
                let s = format!("{k}={}", re.as_str());
                out.push(if s.len() > 80 {
                    let mut cut = 80;
                    while !s.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    format!("   {}…", &s[..cut])
                } else {
                    format!("   {s}")
                });
            }
        }
        if !out.is_empty() {
            out.insert(0, "Active filters:".to_string());
        }
        out
    }

    /// `p` after the filter: `p` itself when there is none, else the filtered copy put in
    /// `slot`; with go tool pprof's warnings for expressions that matched nothing.
    pub fn applied<'a>(
        &self,
        p: &'a Pprof,
        slot: &'a mut Option<Pprof>,
    ) -> (&'a Pprof, Vec<&'static str>) {
        if self.is_empty() {
            return (p, Vec::new());
        }
        let (kept, matched) = self.apply(p);
        let warnings = matched.warnings(self);
        (slot.insert(kept), warnings)
    }

    /// `p` with the filters applied (a new profile; `p` is left as it is), and which matched.
    pub fn apply(&self, p: &Pprof) -> (Pprof, Matched) {
        let mut m = Matched::default();
        let mut loc_lines = p.loc_lines.clone();
        if self.is_empty() {
            m.focus = true;
            let all = (0..p.proto.sample.len()).map(|i| (i, p.sample_locs(i).to_vec()));
            return (p.filtered(loc_lines, all), m);
        }
        let mut cache = Matcher::default();
        // Per location: Some(true) focused, Some(false) ignored, None neither; hidden.
        let n = loc_lines.len();
        let mut focus_or_ignore: Vec<Option<bool>> = vec![None; n];
        let mut hidden = vec![false; n];
        let mut any_hidden = false;
        for li in 0..n {
            if let Some(re) = &self.ignore
                && cache.location(p, IGNORE, re, li, &loc_lines[li])
            {
                m.ignore = true;
                focus_or_ignore[li] = Some(false);
            } else if self
                .focus
                .as_ref()
                .is_none_or(|re| cache.location(p, FOCUS, re, li, &loc_lines[li]))
            {
                m.focus = true;
                focus_or_ignore[li] = Some(true);
            }
            if let Some(re) = &self.hide
                && cache.location(p, HIDE, re, li, &loc_lines[li])
            {
                m.hide = true;
                let kept: Vec<_> = if cache.mapping(p, HIDE, re, li) {
                    Vec::new()
                } else {
                    loc_lines[li]
                        .iter()
                        .copied()
                        .filter(|&(f, _)| !f.is_some_and(|f| cache.function(p, HIDE, re, f)))
                        .collect()
                };
                if kept.is_empty() {
                    hidden[li] = true;
                    any_hidden = true;
                }
                loc_lines[li] = kept;
            }
            if let Some(re) = &self.show {
                if !cache.mapping(p, SHOW, re, li) {
                    let kept: Vec<_> = loc_lines[li]
                        .iter()
                        .copied()
                        .filter(|&(f, _)| f.is_none_or(|f| cache.function(p, SHOW, re, f)))
                        .collect();
                    loc_lines[li] = kept;
                }
                if loc_lines[li].is_empty() {
                    hidden[li] = true;
                    any_hidden = true;
                } else {
                    m.show = true;
                }
            }
        }
        let kept = kept_samples(p, &focus_or_ignore, any_hidden.then_some(&hidden[..]));
        (p.filtered(loc_lines, kept.into_iter()), m)
    }
}

/// What a search of a profile found, as go tool pprof's `-focus` would keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Sample type `index`'s total over the samples one of whose frames matches (absolute
    /// values, as go tool pprof sums a total).
    pub matched: i128,
    /// The whole profile's total of it, the same way.
    pub total: i128,
    /// Functions of the profile's table matched by name or file.
    pub functions: usize,
}

/// Searches `p` for `re` over every frame (none is left out for being narrow): the samples
/// `-focus=re` keeps and their share, and the functions that matched.
pub fn find(p: &Pprof, re: &Regex, index: usize) -> Found {
    let mut cache = Matcher::default();
    let hit: Vec<bool> = (0..p.loc_lines.len())
        .map(|li| cache.location(p, FOCUS, re, li, &p.loc_lines[li]))
        .collect();
    let (mut matched, mut total) = (0i128, 0i128);
    for (si, s) in p.proto.sample.iter().enumerate() {
        let v = i128::from(s.value.get(index).copied().unwrap_or(0)).abs();
        total += v;
        if p.sample_locs(si).iter().any(|&l| hit[l as usize]) {
            matched += v;
        }
    }
    let functions = (0..p.proto.function.len())
        .filter(|&f| cache.function(p, FOCUS, re, f))
        .count();
    Found {
        matched,
        total,
        functions,
    }
}

/// The samples a filter keeps, each with its locations less the hidden ones: a sample is
/// kept when a location is focused and none ignored (`focus_or_ignore`, per location), and
/// when some location is left once `hidden` ones are taken out.
fn kept_samples(
    p: &Pprof,
    focus_or_ignore: &[Option<bool>],
    hidden: Option<&[bool]>,
) -> Vec<(usize, Vec<u32>)> {
    let mut kept = Vec::new();
    for si in 0..p.proto.sample.len() {
        let locs = p.sample_locs(si);
        let mut focused = false;
        let mut ignored = false;
        for &l in locs {
            match focus_or_ignore[l as usize] {
                Some(true) => focused = true,
                Some(false) => {
                    ignored = true;
                    break;
                }
                None => {}
            }
        }
        if !focused || ignored {
            continue;
        }
        let locs: Vec<u32> = match hidden {
            Some(hidden) => locs
                .iter()
                .copied()
                .filter(|&l| !hidden[l as usize])
                .collect(),
            None => locs.to_vec(),
        };
        if hidden.is_some() && locs.is_empty() {
            continue;
        }
        kept.push((si, locs));
    }
    kept
}

const FOCUS: usize = 0;
const IGNORE: usize = 1;
const HIDE: usize = 2;
const SHOW: usize = 3;

/// What each expression said of each function and binary, asked once.
#[derive(Default)]
struct Matcher {
    functions: [FastMap<usize, bool>; 4],
    mappings: [FastMap<usize, bool>; 4],
}

impl Matcher {
    fn function(&mut self, p: &Pprof, which: usize, re: &Regex, f: usize) -> bool {
        *self.functions[which].entry(f).or_insert_with(|| {
            let func = &p.proto.function[f];
            re.is_match(p.str(func.name)) || re.is_match(p.str(func.filename))
        })
    }

    fn mapping(&mut self, p: &Pprof, which: usize, re: &Regex, li: usize) -> bool {
        p.loc_mapping[li].is_some_and(|mi| {
            *self.mappings[which]
                .entry(mi)
                .or_insert_with(|| re.is_match(p.str(p.proto.mapping[mi].filename)))
        })
    }

    /// go tool pprof's `matchesName`: one of the location's lines, or its binary.
    fn location(
        &mut self,
        p: &Pprof,
        which: usize,
        re: &Regex,
        li: usize,
        lines: &[(Option<usize>, i64)],
    ) -> bool {
        lines
            .iter()
            .any(|&(f, _)| f.is_some_and(|f| self.function(p, which, re, f)))
            || self.mapping(p, which, re, li)
    }
}

impl Matched {
    /// go tool pprof's warnings for the filters given that matched nothing.
    pub fn warnings(&self, f: &NameFilter) -> Vec<&'static str> {
        let mut out = Vec::new();
        if f.focus.is_some() && !self.focus {
            out.push("Focus expression matched no samples");
        }
        if f.ignore.is_some() && !self.ignore {
            out.push("Ignore expression matched no samples");
        }
        if f.hide.is_some() && !self.hide {
            out.push("Hide expression matched no samples");
        }
        if f.show.is_some() && !self.show {
            out.push("Show expression matched no samples");
        }
        out
    }
}
