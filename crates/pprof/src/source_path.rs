//! Where a source file named by a profile is found, as go tool pprof looks for it (its
//! openSourceFile, trimPath and Go's filepath.Clean), and which recorded paths the ui's
//! source view may read without a directory given.

use std::path::PathBuf;

/// Why a source file could not be opened for a listing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SourceError(pub String);

impl From<String> for SourceError {
    fn from(message: String) -> SourceError {
        SourceError(message)
    }
}

/// The file names the source view reads under [`SourceAccess::Recorded`].
const SOURCE_EXTENSIONS: &[&str] = &[
    "go", "py", "pyx", "rs", "c", "h", "cc", "cpp", "cxx", "hh", "hpp", "java", "kt", "scala",
    "js", "mjs", "ts", "rb", "php", "cs", "swift", "m", "s", "S",
];

/// Whether a path the profile recorded may be read as source without a directory given.
pub(crate) fn readable_source(real: &std::path::Path) -> bool {
    let ext = real.extension().and_then(|e| e.to_str()).unwrap_or("");
    let s = real.to_string_lossy();
    SOURCE_EXTENSIONS.contains(&ext)
        && real.is_file()
        && !["/proc/", "/sys/", "/dev/"]
            .iter()
            .any(|p| s.starts_with(p))
}

/// go tool pprof's openSourceFile: an absolute path (after trimming) must exist; a relative
/// one is looked for under each directory of the search path and each of their parents.
pub(crate) fn open_source(
    path: &str,
    search_path: &str,
    trim: &str,
) -> Result<(std::fs::File, PathBuf), SourceError> {
    let path = trim_path(path, trim, search_path);
    if path.starts_with('/') {
        return std::fs::File::open(&path)
            .map(|f| (f, PathBuf::from(&path)))
            .map_err(|e| SourceError(format!("open {path}: {}", go_errno(&e))));
    }
    for dir in search_path.split(':') {
        let mut dir = PathBuf::from(dir);
        loop {
            let candidate = PathBuf::from(clean(&format!("{}/{path}", dir.display())));
            if let Ok(f) = std::fs::File::open(&candidate) {
                return Ok((f, candidate));
            }
            match dir.parent() {
                Some(parent) if parent != dir => dir = parent.to_path_buf(),
                _ => break,
            }
        }
    }
    Err(SourceError(format!(
        "could not find file {path} on path {search_path}"
    )))
}

/// The text Go's syscall errors print.
fn go_errno(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(2) => "no such file or directory".into(),
        Some(13) => "permission denied".into(),
        Some(20) => "not a directory".into(),
        Some(40) => "too many levels of symbolic links".into(),
        _ => e.to_string().to_lowercase(),
    }
}

/// go tool pprof's trimPath: the part after the search path's own name (when no trim path
/// is given), else after a trim prefix or /proc/self/cwd/.
pub(crate) fn trim_path(path: &str, trim: &str, search_path: &str) -> String {
    if trim.is_empty() {
        for dir in search_path.split(':').filter(|d| !d.is_empty()) {
            let want = format!("/{}/", base(dir));
            if let Some(found) = path.find(&want) {
                return path[found + want.len()..].to_string();
            }
        }
    }
    for t in trim
        .split(':')
        .filter(|t| !t.is_empty())
        .chain(["/proc/self/cwd/./", "/proc/self/cwd/"])
    {
        let t = if t.ends_with('/') {
            t.to_string()
        } else {
            format!("{t}/")
        };
        if let Some(rest) = path.strip_prefix(&t) {
            return rest.to_string();
        }
    }
    path.to_string()
}

/// Go's filepath.Base.
pub(crate) fn base(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return if p.is_empty() { "." } else { "/" };
    }
    t.rsplit('/').next().unwrap_or(t)
}

/// Go's filepath.Clean: the shortest lexically equal path.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}
