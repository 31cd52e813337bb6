//! The one place a URL is made safe to show: user name and password taken out, so a
//! credential in `dd_url`, a pull target or an upload URL never reaches a message, a log, the
//! summary or `--json`.

use reqwest::Url;

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
}
