//! Text from a profile made safe where it is drawn: the one rule for characters that act on
//! a terminal, and a function name as one frame of a flamegraph.

/// Whether `c` would act on a terminal instead of showing: C0 and C1 controls, DEL, and the
/// bidirectional overrides and isolates that reorder what follows them.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A function name as one frame of a flamegraph's folded stacks: `;` (which separates frames)
/// made `,`, and every control character and XML non-character escaped, so the SVG it is
/// drawn into stays well-formed XML whatever the profile holds.
pub fn flame_frame(name: &str) -> String {
    let bad = |c: char| c == ';' || is_unsafe(c) || matches!(c, '\u{fffe}' | '\u{ffff}');
    if !name.chars().any(bad) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            ';' => out.push(','),
            c if bad(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// Text as SVG and XML take it (also the differential flamegraph's tooltips).
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flame_frames_are_well_formed_xml() {
        assert_eq!(flame_frame("main.(*T).f;g"), "main.(*T).f,g");
        assert_eq!(
            flame_frame("a\u{0}b\u{1f}c\u{fffe}"),
            "a\\u{0}b\\u{1f}c\\u{fffe}"
        );
    }
}
