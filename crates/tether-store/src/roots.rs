//! Workspace roots as the OS that recorded them spells them, on whichever OS reads them: a
//! session recorded on Windows (`C:\Users\…`, `\\server\share\…`, `\\?\C:\…`) is absolute
//! on Linux too, and two spellings of one Windows folder are one workspace.
//!
//! Pure functions on strings (no file system, no `cfg`), so the table tests run everywhere.
//! The rules are those of Win32 path normalization (Microsoft Learn, "File path formats on
//! Windows systems", and "Naming Files, Paths, and Namespaces"): `/` is a separator like
//! `\`; `.` and `..` segments are resolved and trailing dots and spaces of a segment dropped,
//! except in `\\?\` paths, which are taken literally; names compare case-insensitively.

/// How an absolute root is spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootStyle {
    /// `/…` (Unix).
    Posix,
    /// `C:\…` or `C:/…`.
    Drive,
    /// `\\server\share\…`.
    Unc,
    /// `\\?\C:\…` or `\\?\UNC\server\share\…` (taken literally by Windows).
    Verbatim,
    /// `\\.\…` (the Win32 device namespace).
    Device,
}

impl RootStyle {
    /// Whether Windows wrote it (every style but [`RootStyle::Posix`]).
    #[must_use]
    pub fn is_windows(self) -> bool {
        self != Self::Posix
    }
}

fn is_sep(c: char) -> bool {
    c == '\\' || c == '/'
}

fn has_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && is_sep(b[2] as char)
}

/// The style of `root` when it is absolute; `None` when it is relative (`src`, `C:foo`
/// (drive-relative), `\foo` (root of the current drive)) or empty.
#[must_use]
pub fn root_style(root: &str) -> Option<RootStyle> {
    if root.starts_with(r"\\?\") || root.starts_with("//?/") {
        Some(RootStyle::Verbatim)
    } else if root.starts_with(r"\\.\") || root.starts_with("//./") {
        Some(RootStyle::Device)
    } else if let Some(rest) = root.strip_prefix(r"\\") {
        // \\server\share: both parts present.
        let mut parts = rest.split(is_sep);
        let server = parts.next().unwrap_or("");
        let share = parts.next().unwrap_or("");
        (!server.is_empty() && !share.is_empty()).then_some(RootStyle::Unc)
    } else if has_drive(root) {
        Some(RootStyle::Drive)
    } else if root.starts_with('/') {
        Some(RootStyle::Posix)
    } else {
        None
    }
}

/// Whether `root` is absolute on the OS that wrote it (see [`root_style`]).
#[must_use]
pub fn is_absolute_root(root: &str) -> bool {
    root_style(root).is_some()
}

/// Uppercases as Windows' ordinal case-insensitive comparison does: one character at a
/// time, only where the uppercase is a single character (`ß` stays `ß`).
fn upcase(s: &str) -> String {
    s.chars()
        .map(|c| {
            let mut up = c.to_uppercase();
            match (up.next(), up.next()) {
                (Some(u), None) => u,
                _ => c,
            }
        })
        .collect()
}

fn segments(s: &str, literal: bool) -> Vec<&str> {
    s.split(|c| if literal { c == '\\' } else { is_sep(c) })
        .filter(|p| !p.is_empty())
        .collect()
}

/// Splits the prefix (`C:`, `\\SERVER\SHARE`) from the rest of a Windows path, after
/// unwrapping `\\?\`. Returns the prefix, the segments, and whether they are literal.
fn windows_parts(path: &str) -> Option<(String, Vec<&str>, bool)> {
    let style = root_style(path)?;
    let (body, literal) = match style {
        RootStyle::Posix => return None,
        RootStyle::Verbatim => (&path[4..], true),
        RootStyle::Device => (&path[4..], false),
        RootStyle::Drive | RootStyle::Unc => (path, false),
    };
    let (prefix, rest): (String, &str) = if style == RootStyle::Device {
        (r"\\.".to_owned(), body)
    } else if let Some(unc) = body.strip_prefix(r"\\").or_else(|| {
        (literal && body.len() >= 4 && body[..4].eq_ignore_ascii_case(r"UNC\")).then(|| &body[4..])
    }) {
        let mut it = unc.splitn(3, |c| if literal { c == '\\' } else { is_sep(c) });
        let server = it.next().unwrap_or("");
        let share = it.next().unwrap_or("");
        if server.is_empty() || share.is_empty() {
            return None;
        }
        (format!(r"\\{server}\{share}"), it.next().unwrap_or(""))
    } else if body.len() >= 2
        && body.as_bytes()[1] == b':'
        && body.as_bytes()[0].is_ascii_alphabetic()
    {
        (body[..2].to_owned(), &body[2..])
    } else {
        return None;
    };
    Some((prefix, segments(rest, literal), literal))
}

/// The path as Windows resolves it, in its own case: separators `\`, `.` and `..`
/// resolved (never above the root), trailing dots and spaces of a segment dropped, no
/// trailing separator; `\\?\C:\x` becomes `C:\x` and `\\?\UNC\s\sh\x` `\\s\sh\x` (the same
/// folder). `None` for a path that is not a Windows absolute path.
#[must_use]
pub fn windows_normalize(path: &str) -> Option<String> {
    let (prefix, segs, literal) = windows_parts(path)?;
    let mut out: Vec<&str> = Vec::new();
    for seg in segs {
        if literal {
            out.push(seg);
            continue;
        }
        match seg {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => {
                let trimmed = seg.trim_end_matches(['.', ' ']);
                if !trimmed.is_empty() {
                    out.push(trimmed);
                }
            }
        }
    }
    let mut s = prefix;
    s.push('\\');
    s.push_str(&out.join("\\"));
    Some(s)
}

/// The key two spellings of one Windows folder share: [`windows_normalize`], uppercased as
/// Windows compares names. `None` for a path that is not a Windows absolute path.
#[must_use]
pub fn windows_key(path: &str) -> Option<String> {
    windows_normalize(path).map(|n| upcase(&n))
}

/// Whether `a` and `b` name the same Windows folder (both Windows absolute paths).
#[must_use]
pub fn same_windows_path(a: &str, b: &str) -> bool {
    matches!((windows_key(a), windows_key(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_roots_of_both_systems() {
        let table: &[(&str, Option<RootStyle>)] = &[
            ("/home/ada/project", Some(RootStyle::Posix)),
            (r"C:\Users\ada\project", Some(RootStyle::Drive)),
            ("c:/Users/ada", Some(RootStyle::Drive)),
            (r"\\fileserver\team\repo", Some(RootStyle::Unc)),
            (r"\\?\C:\Users\ada", Some(RootStyle::Verbatim)),
            (r"\\?\UNC\fileserver\team", Some(RootStyle::Verbatim)),
            (r"\\.\PhysicalDrive0", Some(RootStyle::Device)),
            ("src/main.rs", None),
            ("C:relative", None),
            (r"\rooted-on-current-drive", None),
            (r"\\server-only", None),
            ("", None),
        ];
        for (root, style) in table {
            assert_eq!(root_style(root), *style, "{root}");
            assert_eq!(is_absolute_root(root), style.is_some(), "{root}");
        }
        assert!(!RootStyle::Posix.is_windows());
        assert!(RootStyle::Drive.is_windows());
    }

    #[test]
    fn windows_spellings_of_one_folder_compare_equal() {
        let same: &[(&str, &str)] = &[
            (r"C:\Users\Ada\Project", r"c:\users\ada\project"),
            (r"C:\Users\Ada\Project", "C:/Users/Ada/Project/"),
            (r"C:\Users\Ada\Project", r"C:\Users\Ada\.\Build\..\Project"),
            (r"C:\Users\Ada\Project", r"C:\Users\Ada\Project. "),
            (r"C:\Users\Ada\Project", r"\\?\C:\Users\Ada\Project"),
            (r"\\Server\Team\Repo", r"\\server\team\repo\"),
            (r"\\Server\Team\Repo", r"\\?\UNC\Server\Team\Repo"),
            (r"C:\Ärger", r"c:\ärger"),
            (r"C:\..\..\x", r"C:\x"),
        ];
        for (a, b) in same {
            assert!(
                same_windows_path(a, b),
                "{a} vs {b}: {:?} {:?}",
                windows_key(a),
                windows_key(b)
            );
        }
        let different: &[(&str, &str)] = &[
            (r"C:\Users\Ada", r"D:\Users\Ada"),
            (r"C:\Users\Ada", r"C:\Users\Ada2"),
            (r"\\server\team", r"\\server\other"),
            // Literal in the verbatim form: `..` is a name there, not a step up.
            (r"\\?\C:\a\..\b", r"C:\b"),
            // Not both Windows paths.
            ("/home/ada", "/home/ada"),
            (r"C:\x", "x"),
        ];
        for (a, b) in different {
            assert!(!same_windows_path(a, b), "{a} vs {b}");
        }
    }

    #[test]
    fn normalized_form_keeps_the_case_it_was_given() {
        assert_eq!(
            windows_normalize(r"c:/Users/Ada/./src/../Project/").as_deref(),
            Some(r"c:\Users\Ada\Project")
        );
        assert_eq!(
            windows_normalize(r"\\?\UNC\Srv\Sh\x").as_deref(),
            Some(r"\\Srv\Sh\x")
        );
        assert_eq!(windows_normalize(r"C:\").as_deref(), Some(r"C:\"));
        assert_eq!(windows_normalize("/home/ada"), None);
        assert_eq!(windows_key("ß:/x"), None);
        assert_eq!(windows_key(r"C:\straße").as_deref(), Some(r"C:\STRAßE"));
    }
}
