//! The one place a URL is made safe to show: user name and password taken out, so a
//! credential in `dd_url`, a pull target or an upload URL never reaches a message, a log, the
//! summary or `--json`; and the one place text that came from the network or a check (a
//! service name, a server's error page, a metric name) is made safe to print on a terminal.

use ::url::Url;

pub use crate::pprof::flame_frame;
use crate::pprof::is_unsafe;

/// `url` without its user name and password.
pub fn url(url: &Url) -> String {
    let mut u = url.clone();
    if !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_username("");
        let _ = u.set_password(None);
    }
    u.to_string()
}

/// `text` as a URL without its credentials; text that is not a URL is not echoed at all
/// (it may be a secret pasted in the wrong place).
pub fn url_text(text: &str) -> String {
    match Url::parse(text) {
        Ok(u) => url(&u),
        Err(_) => "<not a URL>".to_string(),
    }
}

/// `text` with every control character (line breaks and tabs too) written as an escape
/// (`\u{1b}`), so that what a client sent cannot move the cursor, clear the screen, set the
/// window title or add a line of its own.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, is_unsafe)
}

/// `text` as [`printable`] makes it, but keeping line breaks and tabs: for multi-line text a
/// check sent that is printed as lines (a Python traceback).
pub fn printable_lines(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| is_unsafe(c) && !matches!(c, '\n' | '\t'))
}

/// `text` with each character `bad` picks written as its escape; borrowed when none is.
fn escaped(text: &str, bad: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            url_text("http://user:PASSWORD123@127.0.0.1:1/api"),
            "http://127.0.0.1:1/api"
        );
        assert_eq!(url_text("https://only-user@host/"), "https://host/");
        assert_eq!(url_text("not a url with s3cret"), "<not a URL>");
    }

    #[test]
    fn control_characters_never_reach_a_terminal() {
        assert_eq!(printable("web-1 µs 日本"), "web-1 µs 日本");
        assert_eq!(
            printable("a\u{1b}[2Jb\u{7}\nc\u{0}\u{9b}\u{202e}d"),
            "a\\u{1b}[2Jb\\u{7}\\u{a}c\\u{0}\\u{9b}\\u{202e}d"
        );
    }
}

/// `text` with what looks like a secret replaced, for a file a user attaches to a support
/// case (`check --flare`), as the Agent scrubs its flares: Datadog API and application keys
/// (32 and 40 hex digits; the last 5 kept to tell keys apart), bearer tokens, a URL's
/// password, and the value after a key named like a secret (`password: …`, `"token": "…"`,
/// `api_key=…`).
pub fn scrub(text: &str) -> String {
    use std::sync::LazyLock;
    static RULES: LazyLock<Vec<(regex::Regex, &'static str)>> = LazyLock::new(|| {
        [
            (r"\b[a-fA-F0-9]{35}([a-fA-F0-9]{5})\b", "***********************************$1"),
            (r"\b[a-fA-F0-9]{27}([a-fA-F0-9]{5})\b", "***************************$1"),
            (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+", "$1 ********"),
            (r"([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]+):[^@\s/]+@", "$1:********@"),
            (
                r#"(?i)\b([a-z0-9_.-]*(?:password|passwd|pwd|pass|secret|token|api_key|apikey|app_key|appkey|auth|credentials?|private_key)[a-z0-9_.-]*)("?\s*[:=]\s*"?)[^\s",}]+"#,
                "$1$2********",
            ),
        ]
        .into_iter()
        .filter_map(|(re, to)| regex::Regex::new(re).ok().map(|r| (r, to)))
        .collect()
    });
    let mut out = text.to_string();
    for (re, to) in RULES.iter() {
        if let std::borrow::Cow::Owned(s) = re.replace_all(&out, *to) {
            out = s;
        }
    }
    out
}

#[cfg(test)]
mod scrub_tests {
    use super::scrub;

    #[test]
    fn secrets_are_scrubbed_and_the_rest_kept() {
        let text = "api_key: 0123456789abcdef0123456789abcdef\n\
                    url: http://admin:hunter2@db:5432/x\n\
                    {\"password\": \"s3cr3t\", \"host\": \"db\"}\n\
                    Authorization: Bearer abc.def-ghi\n\
                    app 0123456789abcdef0123456789abcdef01234567 end\n\
                    system.cpu.user 12.5 host:box-1\n";
        let s = scrub(text);
        for secret in [
            "hunter2",
            "s3cr3t",
            "abc.def-ghi",
            "0123456789abcdef0123456789a",
        ] {
            assert!(!s.contains(secret), "{secret} in {s}");
        }
        assert!(s.contains("http://admin:********@db:5432/x"), "{s}");
        assert!(s.contains("\"host\": \"db\""), "{s}");
        assert!(s.contains("system.cpu.user 12.5 host:box-1"), "{s}");
        // A key's last 5 digits are kept, to tell keys apart.
        assert!(s.contains("*34567 end"), "{s}");
    }
}
