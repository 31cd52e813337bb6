//! Rust symbols as Go's demangler prints them: legacy (`_ZN…17h…E`) and v0 (`_R…`) manglings.

use super::{matching, push_char};

/// Rust's legacy mangling as Go's demangler recognises it: `_ZN…17h<16 hex digits>E`, the
/// hash holding at least 5 distinct digits, an optional `.suffix` after it.
pub(super) fn is_rust_legacy(sym: &str) -> bool {
    if !sym.starts_with("_ZN") {
        return false;
    }
    let r = match sym.rfind("E.") {
        Some(p) if p > 0 => &sym[..=p],
        _ => sym,
    };
    let b = r.as_bytes();
    if !r.ends_with('E') || b.len() <= 23 || &b[b.len() - 20..b.len() - 17] != b"17h" {
        return false;
    }
    let mut seen = 0u16;
    for &c in &b[b.len() - 17..b.len() - 1] {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return false,
        };
        seen |= 1 << d;
    }
    seen.count_ones() >= 5
}

/// Rust's legacy mangling (`_ZN` length-prefixed identifiers, the `17h…E` hash) read as Go's
/// demangler reads it: the hash and any `.suffix` dropped, `$LT$`-style and `$uNN$` escapes
/// decoded, `..` as `::`, and an underscore after a length taken as a separator. `None` when
/// the identifiers do not parse (Go then tries C++).
pub(super) fn rust_legacy(sym: &str) -> Option<String> {
    let r = match sym.rfind("E.") {
        Some(p) if p > 0 => &sym[..=p],
        _ => sym,
    };
    let mut name = r.get(3..r.len().checked_sub(20)?)?.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(name.len());
    while !name.is_empty() {
        if !name[0].is_ascii_digit() {
            return None;
        }
        let mut val: i64 = 0;
        while let Some(&c) = name.first().filter(|c| c.is_ascii_digit()) {
            val = val.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
            if val >= i64::from(i32::MAX) / 10 {
                return None;
            }
            name = &name[1..];
        }
        if name.first() == Some(&b'_') {
            name = &name[1..];
            val -= 1;
        }
        let val = usize::try_from(val).ok()?;
        if name.len() < val {
            return None;
        }
        let mut id = &name[..val];
        name = &name[val..];
        if !out.is_empty() {
            out.extend_from_slice(b"::");
        }
        if id.starts_with(b"_$") {
            id = &id[1..];
        }
        while !id.is_empty() {
            match id[0] {
                b'$' => {
                    let decoded = escape(id);
                    match decoded {
                        Some((c, n)) => {
                            out.push(c);
                            id = &id[n..];
                        }
                        None => {
                            out.extend_from_slice(id);
                            break;
                        }
                    }
                }
                b'.' if id.starts_with(b"..") => {
                    out.extend_from_slice(b"::");
                    id = &id[2..];
                }
                c => {
                    out.push(c);
                    id = &id[1..];
                }
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The escape at the start of `id` (`$LT$`, `$C$`, `$u20$`…): the byte it stands for and how
/// many bytes it takes; `None` when it is no escape Go's demangler decodes.
fn escape(id: &[u8]) -> Option<(u8, usize)> {
    let hex = |c: u8| (c as char).to_digit(16).filter(|_| !c.is_ascii_uppercase());
    let code = |a: u8, b: u8| match (a, b) {
        (b'S', b'P') => Some(b'@'),
        (b'B', b'P') => Some(b'*'),
        (b'R', b'F') => Some(b'&'),
        (b'L', b'T') => Some(b'<'),
        (b'G', b'T') => Some(b'>'),
        (b'L', b'P') => Some(b'('),
        (b'R', b'P') => Some(b')'),
        _ => None,
    };
    if id.len() > 2 && id[1] == b'C' && id[2] == b'$' {
        Some((b',', 3))
    } else if id.len() > 4 && id[1] == b'u' && id[4] == b'$' {
        match (hex(id[2]), hex(id[3])) {
            (Some(a), Some(b)) if a <= 7 && (a << 4 | b) >= 0x20 => Some(((a << 4 | b) as u8, 5)),
            _ => None,
        }
    } else if id.len() > 3 && id[3] == b'$' {
        code(id[1], id[2]).map(|c| (c, 4))
    } else {
        None
    }
}

/// Rust's v0 mangling without generic arguments (and without the `.llvm.…` suffix), as Go's
/// demangler prints it with `NoTemplateParams`.
pub(super) fn rust_v0(sym: &str) -> Option<String> {
    let base = sym.split('.').next().unwrap_or(sym);
    let d = rustc_demangle::try_demangle(base).ok()?;
    Some(strip_generic_args(&format!("{d:#}")))
}

/// Empties `<…>` groups that are generic arguments (they follow a name or `::`), keeping
/// qualified paths (`<T as Trait>::f`, `<Vec<T>>::push`, which start a path).
fn strip_generic_args(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let prev = out.as_bytes().last().copied();
        let follows_name =
            prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == b'_' || p == b':');
        if c == b'<'
            && follows_name
            && let Some(end) = matching(b, i, b'<', b'>')
        {
            out.push_str("<>");
            i = end + 1;
            continue;
        }
        i += push_char(&mut out, &s[i..]);
    }
    out
}
