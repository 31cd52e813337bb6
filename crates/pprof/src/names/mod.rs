//! What `go tool pprof` does to a profile between reading it and reporting on it: function
//! names demangled and simplified (C++ and Rust symbols, and names that already look like
//! demangled C++), then the profile's own `drop_frames` / `keep_frames` applied. agentprof's
//! `top`, `diff` and `flamegraph` show the same functions as go tool pprof because they go
//! through the same two steps, in the same order.

use std::borrow::Cow;

use regex::Regex;

use super::fasthash::FastMap;

mod rust;

use super::model::Pprof;
use rust::{is_rust_legacy, rust_legacy, rust_v0};

/// A function's display name from its `name` and `system_name`, as go tool pprof's default
/// demangling (`-symbolize=demangle=default`: no parameters, no template arguments, no
/// return type). `None` leaves the name as it is.
pub(crate) fn display_name(name: &str, system_name: &str) -> Option<String> {
    if !name.is_empty() && name != system_name {
        return None; // already demangled by whoever wrote the profile
    }
    if let Some(d) = demangle(system_name) {
        return Some(d);
    }
    // macOS symbols carry one more leading underscore.
    if let Some(rest) = system_name.strip_prefix('_')
        && let Some(d) = demangle(rest)
    {
        return Some(d);
    }
    let mut out = Cow::Borrowed(system_name);
    if looks_like_demangled_cplusplus(system_name) {
        out = Cow::Owned(remove_matching(&out, b'(', b')'));
        out = Cow::Owned(remove_matching(&out, b'<', b'>'));
    }
    (out != name).then(|| out.into_owned())
}

/// A mangled C++ or Rust symbol, demangled and simplified; `None` when it is not one (or does
/// not parse).
fn demangle(sym: &str) -> Option<String> {
    if sym.starts_with("_R") {
        return rust_v0(sym);
    }
    if is_rust_legacy(sym)
        && let Some(d) = rust_legacy(sym)
    {
        return Some(d);
    }
    if !sym.starts_with("_Z") {
        return None;
    }
    let parsed = cpp_demangle::Symbol::new(sym.as_bytes()).ok()?;
    // Special names (vtables, typeinfo, thunks, transaction clones) keep the parameters of
    // the function they stand for, as Go prints them.
    if sym.starts_with("_ZT") || sym.starts_with("_ZGT") {
        let full = parsed.demangle().ok()?;
        let named = gnu_special_name(&full).unwrap_or(full);
        return Some(strip_templates(&std_abbreviations(&named)));
    }
    let opts = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let full = parsed.demangle_with_options(&opts).ok()?;
    let no_clone = match full.find(" [clone ") {
        Some(i) => &full[..i],
        None => full.as_str(),
    };
    let mut simplified = strip_params(&strip_templates(&std_abbreviations(no_clone)));
    // Without parameters, a method's cv- and ref-qualifiers go too.
    while let Some(rest) = [" const", " volatile", " &&", " &"]
        .iter()
        .find_map(|q| simplified.strip_suffix(q))
    {
        simplified.truncate(rest.len());
    }
    (simplified != sym).then_some(simplified)
}

/// cpp_demangle's `{vtable(T)}`-style special names in the GNU words Go prints.
fn gnu_special_name(d: &str) -> Option<String> {
    let inner = d.strip_prefix('{')?.strip_suffix('}')?;
    for (from, to) in [
        ("vtable(", "vtable for "),
        ("vtt(", "VTT for "),
        ("typeinfo(", "typeinfo for "),
        ("typeinfo name(", "typeinfo name for "),
    ] {
        if let Some(t) = inner.strip_prefix(from).and_then(|r| r.strip_suffix(')')) {
            return Some(format!("{to}{t}"));
        }
    }
    let thunk = inner
        .strip_prefix("virtual override thunk(")?
        .strip_suffix(')')?;
    if let Some(rest) = thunk.strip_prefix("{virtual offset(") {
        let (_, target) = rest.split_once(")}, ")?;
        return Some(format!("virtual thunk to {target}"));
    }
    if let Some(rest) = thunk.strip_prefix("{offset(") {
        let (_, target) = rest.split_once(")}, ")?;
        return Some(format!("non-virtual thunk to {target}"));
    }
    None
}

/// The standard library types the Itanium ABI abbreviates (`Ss`, `Si`, `So`, `Sd`), named as
/// Go's demangler names them: the short name where the type is used, the `basic_` class
/// for its constructors and destructor.
fn std_abbreviations(d: &str) -> String {
    const FULL: [(&str, &str, &str); 4] = [
        (
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "std::string",
            "basic_string",
        ),
        (
            "std::basic_istream<char, std::char_traits<char> >",
            "std::istream",
            "basic_istream",
        ),
        (
            "std::basic_ostream<char, std::char_traits<char> >",
            "std::ostream",
            "basic_ostream",
        ),
        (
            "std::basic_iostream<char, std::char_traits<char> >",
            "std::iostream",
            "basic_iostream",
        ),
    ];
    let mut out = d.to_string();
    for (full, short, class) in FULL {
        if out.contains(full) {
            out = out.replace(full, short);
        }
        let leaf = &short["std::".len()..];
        for tilde in ["", "~"] {
            for name in [leaf, class] {
                let ctor = format!("{short}::{tilde}{name}");
                if out.contains(&ctor) {
                    out = out.replace(&ctor, &format!("std::{class}::{tilde}{class}"));
                }
            }
        }
    }
    out
}

/// Copies the first character of `rest` to `out`; its length in bytes.
fn push_char(out: &mut String, rest: &str) -> usize {
    let ch = rest.chars().next().unwrap_or('\u{fffd}');
    out.push(ch);
    ch.len_utf8()
}

/// The index of the bracket closing the one at `open`.
fn matching(b: &[u8], open: usize, start: u8, end: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        if c == start {
            depth += 1;
        } else if c == end {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// The operator names whose spelling holds brackets, longest first.
const OPERATORS: &[&str] = &[
    "operator<<=",
    "operator>>=",
    "operator<=>",
    "operator->*",
    "operator<<",
    "operator>>",
    "operator<=",
    "operator>=",
    "operator->",
    "operator()",
    "operator<",
    "operator>",
];

/// The length of the operator name at the start of `s`, if one is there.
fn operator_at(s: &str) -> Option<usize> {
    OPERATORS
        .iter()
        .find(|o| s.starts_with(*o))
        .map(|o| o.len())
}

/// Removes template argument lists (`std::vector<int, …>::push_back` → `std::vector::push_back`)
/// from a demangled C++ name, leaving operator names alone.
fn strip_templates(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'o'
            && let Some(n) = operator_at(&s[i..])
        {
            out.push_str(&s[i..i + n]);
            i += n;
            continue;
        }
        if b[i] == b'<'
            && let Some(end) = matching_skipping_operators(s, i, b'<', b'>')
        {
            // `operator<< <T>`: the space that kept the brackets apart goes with the list.
            if out.ends_with(' ') {
                out.pop();
            }
            i = end + 1;
            continue;
        }
        i += push_char(&mut out, &s[i..]);
    }
    out
}

/// Removes parameter lists left in a name (an enclosing function's, in a local entity's name),
/// keeping `(anonymous namespace)`, operator names, and lambda signatures (`{lambda()#1}`).
fn strip_params(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut braces = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'o'
            && let Some(n) = operator_at(&s[i..])
        {
            out.push_str(&s[i..i + n]);
            i += n;
            continue;
        }
        if s[i..].starts_with("(anonymous namespace)") {
            out.push_str("(anonymous namespace)");
            i += "(anonymous namespace)".len();
            continue;
        }
        match c {
            b'{' => braces += 1,
            b'}' => braces = braces.saturating_sub(1),
            b'(' if braces == 0 => {
                if let Some(end) = matching_skipping_operators(s, i, b'(', b')') {
                    i = end + 1;
                    // A const/volatile/ref qualifier after the list goes with it.
                    for q in [" const", " volatile", " &&", " &"] {
                        if s[i..].starts_with(q) {
                            i += q.len();
                        }
                    }
                    continue;
                }
            }
            _ => {}
        }
        i += push_char(&mut out, &s[i..]);
    }
    out
}

/// Like [`matching`], on text where operator names may hold the brackets.
fn matching_skipping_operators(s: &str, open: usize, start: u8, end: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut j = open;
    while j < b.len() {
        if b[j] == b'o'
            && let Some(n) = operator_at(&s[j..])
        {
            j += n;
            continue;
        }
        if b[j] == start {
            depth += 1;
        } else if b[j] == end {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(j);
            }
        }
        j += 1;
    }
    None
}

/// Go's heuristic for a name that is already demangled C++ (and so is simplified further).
fn looks_like_demangled_cplusplus(s: &str) -> bool {
    if s.contains(".<") || s.contains("]).") {
        return false; // Java's `Class.<init>`, Go's `pkg.(*T[…]).Method`
    }
    s.contains(['<', '>', '[', ']']) || s.contains("::")
}

/// Go's removeMatching: drops nested `start…end` groups; a stray closing bracket stops it
/// and leaves the rest of the name as it is.
fn remove_matching(name: &str, start: u8, end: u8) -> String {
    let mut name = name.as_bytes().to_vec();
    let mut nesting = 0i64;
    let mut first = 0usize;
    let mut current = 0usize;
    while let Some(idx) = name[current..].iter().position(|&c| c == start || c == end) {
        current += idx;
        if name[current] == start {
            nesting += 1;
            if nesting == 1 {
                first = current;
            }
        } else {
            nesting -= 1;
            if nesting < 0 {
                break;
            }
            if nesting == 0 {
                name.drain(first..=current);
                current = first;
                continue;
            }
        }
        current += 1;
    }
    String::from_utf8(name).unwrap_or_default()
}

/// Go's simplifyFunc, the name `drop_frames` is matched against: a leading `.` (PPC ELF v1)
/// and anything from the first `(` on — except `(anonymous namespace)` and `operator()`.
fn simplify_for_prune(f: &str) -> &str {
    let f = f.strip_prefix('.').unwrap_or(f);
    let mut from = 0;
    while let Some(i) = f[from..].find('(') {
        let at = from + i;
        if f[at..].starts_with("(anonymous namespace)") {
            from = at + "(anonymous namespace)".len();
            continue;
        }
        if at >= "operator".len() && f[..at].ends_with("operator") && f[at..].starts_with("()") {
            from = at + 2;
            continue;
        }
        return &f[..at];
    }
    f
}

impl Pprof {
    /// Demangles function names, then applies `drop_frames`/`keep_frames`, as go tool pprof
    /// does before any report. A `drop_frames` that is not a valid regular expression is
    /// ignored, as Go ignores it (and says why).
    pub fn prepare_for_report(&mut self) -> Option<String> {
        self.demangle_names();
        self.remove_uninteresting()
    }

    fn demangle_names(&mut self) {
        let mut interned: FastMap<String, i64> = FastMap::default();
        for fi in 0..self.proto.function.len() {
            let f = &self.proto.function[fi];
            let Some(new) = display_name(self.str(f.name), self.str(f.system_name)) else {
                continue;
            };
            let next = self.proto.string_table.len() as i64;
            let id = *interned.entry(new.clone()).or_insert_with(|| {
                self.proto.string_table.push(new);
                next
            });
            self.proto.function[fi].name = id;
        }
    }

    fn remove_uninteresting(&mut self) -> Option<String> {
        let drop = self.str(self.proto.drop_frames);
        if drop.is_empty() {
            return None;
        }
        let drop_rx = match Regex::new(&format!("^({drop})$")) {
            Ok(r) => r,
            Err(e) => return Some(format!("drop_frames {drop:?} is ignored: {e}")),
        };
        let keep = self.str(self.proto.keep_frames);
        let keep_rx = if keep.is_empty() {
            None
        } else {
            match Regex::new(&format!("^({keep})$")) {
                Ok(r) => Some(r),
                Err(e) => {
                    return Some(format!("drop_frames is ignored: keep_frames {keep:?}: {e}"));
                }
            }
        };
        let mut cache: FastMap<usize, bool> = FastMap::default();
        let mut prunes = |p: &Pprof, f: usize| -> bool {
            *cache.entry(f).or_insert_with(|| {
                let name = simplify_for_prune(p.str(p.proto.function[f].name));
                drop_rx.is_match(name) && !keep_rx.as_ref().is_some_and(|k| k.is_match(name))
            })
        };
        // Per location: 2 the whole location goes, 1 the frames up to `cut` go, 0 kept.
        let mut verdict = vec![0u8; self.loc_lines.len()];
        let mut cuts = Vec::new();
        for (li, lines) in self.loc_lines.iter().enumerate() {
            let hit = (0..lines.len()).rev().find(|&i| {
                lines[i].0.is_some_and(|f| {
                    !self.str(self.proto.function[f].name).is_empty() && prunes(self, f)
                })
            });
            if let Some(i) = hit {
                if i == lines.len() - 1 {
                    verdict[li] = 2;
                } else {
                    verdict[li] = 1;
                    cuts.push((li, i));
                }
            }
        }
        for (li, i) in cuts {
            self.loc_lines[li].drain(..=i);
        }
        for si in 0..self.proto.sample.len() {
            let locs = self.sample_locs(si);
            let mut found_user = false;
            let mut drop = 0;
            for i in (0..locs.len()).rev() {
                match verdict[locs[i] as usize] {
                    0 => found_user = true,
                    _ if !found_user => {}
                    2 => {
                        drop = i + 1;
                        break;
                    }
                    _ => {
                        drop = i;
                        break;
                    }
                }
            }
            if drop > 0 {
                self.drop_leaf_locs(si, drop);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_simplification_rules() {
        assert_eq!(
            display_name("", "_ZNSt6vectorIiSaIiEE9push_backERKi").as_deref(),
            Some("std::vector::push_back")
        );
        assert_eq!(
            display_name("x", "_ZN3app6Worker4stepEv"),
            None,
            "a name that differs from the system name is already demangled"
        );
        assert_eq!(
            display_name(
                "<i32 as core::cmp::PartialEq>::eq",
                "<i32 as core::cmp::PartialEq>::eq"
            )
            .as_deref(),
            Some("::eq"),
            "go's heuristic for a name that looks like demangled C++"
        );
        assert_eq!(display_name("main.main", "main.main"), None);
        assert_eq!(
            remove_matching("a(b(c))d)e(f", b'(', b')'),
            "ad)e(f",
            "a stray `)` stops the removal"
        );
        assert_eq!(simplify_for_prune("ns::f(int)"), "ns::f");
        assert_eq!(
            simplify_for_prune("(anonymous namespace)::g(int)"),
            "(anonymous namespace)::g"
        );
        assert_eq!(
            simplify_for_prune("Foo::operator()(int)"),
            "Foo::operator()"
        );
    }

    /// An empty identifier (`0`, a closure's or a constant's) followed by one that starts with
    /// a digit: Go's demangler reads `0023` as one number and leaves these three mangled;
    /// agentprof reads them by the v0 grammar (the only names of the corpus where the two
    /// differ, left out of the comparison with go tool pprof).
    #[test]
    fn v0_empty_identifiers_read_by_the_grammar() {
        assert_eq!(
            display_name(
                "",
                "_RNvNCNvNtCsjrHSEGnQ3l9_3std9panicking12default_hook011FIRST_PANIC"
            )
            .as_deref(),
            Some("std::panicking::default_hook::{closure#0}::FIRST_PANIC")
        );
    }

    #[test]
    fn rust_legacy_as_go_reads_it() {
        assert_eq!(
            display_name(
                "",
                "_ZN12clap_builder7builder7command7Command9_do_parse17h2beb1a978733d823E"
            )
            .as_deref(),
            Some("clap_builder::builder::command::Command::do_parse"),
            "an underscore after the length is Go's separator"
        );
        assert_eq!(
            display_name(
                "",
                "_ZN6rustix7backend5param4auxv9PAGE_SIZE17ha42e4ff009d48327E.0"
            )
            .as_deref(),
            Some("rustix::backend::param::auxv::PAGE_SIZE")
        );
        // Fewer than 5 distinct digits in the hash: not Rust to Go, so C++.
        assert_eq!(
            display_name("", "_ZN3app6Worker4step17h0000000000000000E").as_deref(),
            Some("app::Worker::step::h0000000000000000")
        );
    }
}
