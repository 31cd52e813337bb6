//! Tags as Datadog's intake reads them: what agentprof.yaml's and the checks' tags are held to.

/// Longest tag Datadog accepts.
const MAX_TAG_LEN: usize = 200;

/// Checks a tag the way Datadog's intake treats it; the reason is shown to the user.
pub fn validate_tag(tag: &str) -> Result<(), &'static str> {
    if tag.trim().is_empty() {
        return Err("it is empty");
    }
    if tag.len() > MAX_TAG_LEN {
        return Err("it is longer than 200 characters");
    }
    if tag.contains(',') {
        return Err("it contains a comma, which separates tags");
    }
    if tag.chars().any(char::is_control) {
        return Err("it contains a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_validated() {
        assert!(validate_tag("env:prod").is_ok());
        assert!(validate_tag("device:/dev/sda1").is_ok());
        assert!(validate_tag("").is_err());
        assert!(validate_tag("a,b").is_err());
        assert!(validate_tag("line\nbreak").is_err());
        assert!(validate_tag(&"x".repeat(201)).is_err());
    }
}
