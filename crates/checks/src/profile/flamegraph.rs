//! Flamegraphs (inferno SVG) from a call profile's folded stacks.

use std::io::Write;

use super::CallProfile;
use crate::pprof::Error as DrawError;

/// Writes an SVG flamegraph titled `title`; refuses an empty profile rather than drawing nothing.
pub fn write_flamegraph(
    profile: &CallProfile,
    title: &str,
    out: impl Write,
) -> Result<(), DrawError> {
    let lines = folded(profile);
    if lines.is_empty() {
        return Err(DrawError::NothingToDraw("no samples were taken"));
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".into();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(DrawError::draw)
}

/// `root;…;leaf count` lines, one per distinct stack.
pub fn folded(profile: &CallProfile) -> Vec<String> {
    profile
        .samples
        .iter()
        .map(|s| {
            // `;` separates frames in the folded format; generic names may contain it.
            let names: Vec<String> = profile
                .stack(s)
                .map(|f| crate::redact::flame_frame(&f.function))
                .collect();
            let mut line = names.into_iter().rev().collect::<Vec<_>>().join(";");
            line.push(' ');
            line.push_str(&s.count.to_string());
            line
        })
        .collect()
}
