//! Finding an agent's command the way the OS would, and starting npm's Windows shims
//! without `cmd.exe`.
//!
//! On Unix a bare command is looked up in `PATH` (the first executable file wins). On
//! Windows `PATHEXT` adds the extensions tried (`.COM;.EXE;.BAT;.CMD` by default), and npm
//! installs every agent as a `.cmd` shim (`claude-agent-acp.cmd`, `codex-acp.cmd`, …). A
//! shim is not started through `cmd.exe /c`: quoting arguments through cmd is the
//! CVE-2024-24576 class of bug, and Node itself refuses to spawn a `.cmd` (EINVAL). The
//! shim's target is read instead (npm's `cmd-shim` format) and started directly: the
//! package's JS entry under `node` (the `node.exe` beside the shim when there is one, as the
//! shim itself prefers), or the package's native `.exe`. A `.cmd` whose target cannot be
//! read is started as it is, through std's escaping for batch files (which refuses
//! arguments it cannot quote safely).
//!
//! [`resolve`] is pure over its inputs (the `PATH` value, the extensions, a file test and a
//! file reader), so the rules are table-tested on every OS.

use std::path::{Path, PathBuf};

/// How to start a resolved command: `program` with `leading_args` before the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The file to start.
    pub program: PathBuf,
    /// Arguments that come before the caller's (a shim's script for `node`).
    pub leading_args: Vec<String>,
}

/// A command that was not found, with every place looked in (in order).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{program}` was not found (looked in: {})", looked_in_text(looked_in))]
pub struct NotFound {
    /// The command as configured.
    pub program: String,
    /// Every file name tried, in order.
    pub looked_in: Vec<PathBuf>,
}

fn looked_in_text(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nowhere: PATH is empty".to_owned();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an npm `.cmd` shim starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShimTarget {
    /// `node <script>`; the script relative to the shim's folder (`\` separated).
    Node {
        /// The JS entry, relative to the shim's folder.
        script: String,
    },
    /// A native program, relative to the shim's folder.
    Native {
        /// The `.exe`, relative to the shim's folder.
        exe: String,
    },
}

/// Reads an npm `cmd-shim` (the format npm 7+ writes): the line ending in `%*` names the
/// target as `"%dp0%\…"`; with `"%_prog%"` before it, the target is a script for node.
#[must_use]
pub fn parse_cmd_shim(text: &str) -> Option<ShimTarget> {
    let line = text.lines().rev().find(|l| l.trim_end().ends_with("%*"))?;
    let quoted: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
    let target = quoted.iter().find_map(|q| {
        q.strip_prefix("%dp0%\\")
            .or_else(|| q.strip_prefix("%~dp0\\"))
            .filter(|rest| !rest.eq_ignore_ascii_case("node.exe") && !rest.is_empty())
    })?;
    if quoted.iter().any(|q| q.eq_ignore_ascii_case("%_prog%")) {
        Some(ShimTarget::Node {
            script: target.to_owned(),
        })
    } else if target.to_ascii_lowercase().ends_with(".exe") {
        Some(ShimTarget::Native {
            exe: target.to_owned(),
        })
    } else {
        None
    }
}

fn has_separator(program: &str) -> bool {
    program.contains('/') || program.contains('\\')
}

fn candidates(base: &Path, extensions: &[String]) -> Vec<PathBuf> {
    let name = base.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let has_known_ext = extensions
        .iter()
        .any(|e| name.to_ascii_lowercase().ends_with(e.as_str()));
    let mut out = Vec::new();
    if extensions.is_empty() || has_known_ext {
        out.push(base.to_path_buf());
    }
    if !has_known_ext {
        for ext in extensions {
            let mut with = base.as_os_str().to_owned();
            with.push(ext);
            out.push(PathBuf::from(with));
        }
    }
    out
}

/// Finds `program` as the OS would: as given when it holds a separator, else in each
/// `PATH` entry (split on `separator`), trying `extensions` (lowercase, with the dot; empty
/// on Unix). A found npm `.cmd`/`.bat` shim is turned into its target ([`parse_cmd_shim`]),
/// with `node` found the same way unless a `node.exe` sits beside the shim.
///
/// # Errors
/// [`NotFound`] naming every file tried (for a shim's `node`, the places `node` was
/// looked for).
pub fn resolve(
    program: &str,
    path_var: Option<&str>,
    separator: char,
    extensions: &[String],
    is_file: &dyn Fn(&Path) -> bool,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Resolved, NotFound> {
    let mut looked_in = Vec::new();
    let found = if has_separator(program) {
        candidates(Path::new(program), extensions)
            .into_iter()
            .find(|c| {
                looked_in.push(c.clone());
                is_file(c)
            })
    } else {
        path_var
            .unwrap_or("")
            .split(separator)
            .filter(|d| !d.is_empty())
            .flat_map(|dir| candidates(&Path::new(dir).join(program), extensions))
            .find(|c| {
                looked_in.push(c.clone());
                is_file(c)
            })
    };
    let Some(found) = found else {
        return Err(NotFound {
            program: program.to_owned(),
            looked_in,
        });
    };
    let lower = found.to_string_lossy().to_ascii_lowercase();
    if !(lower.ends_with(".cmd") || lower.ends_with(".bat")) {
        return Ok(Resolved {
            program: found,
            leading_args: Vec::new(),
        });
    }
    let dir = found.parent().unwrap_or(Path::new("")).to_path_buf();
    let local = |rel: &str| rel.split('\\').fold(dir.clone(), |p, part| p.join(part));
    match read(&found).as_deref().and_then(parse_cmd_shim) {
        Some(ShimTarget::Native { exe }) => Ok(Resolved {
            program: local(&exe),
            leading_args: Vec::new(),
        }),
        Some(ShimTarget::Node { script }) => {
            let beside = dir.join("node.exe");
            let node = if is_file(&beside) {
                beside
            } else {
                resolve("node", path_var, separator, extensions, is_file, read)?.program
            };
            Ok(Resolved {
                program: node,
                leading_args: vec![local(&script).to_string_lossy().into_owned()],
            })
        }
        None => Ok(Resolved {
            program: found,
            leading_args: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// npm 10's shim for `@zed-industries/claude-agent-acp` (cmd-shim 6), verbatim.
    const NODE_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@zed-industries\\claude-agent-acp\\dist\\index.js\" %*\r\n";
    /// cmd-shim's form for a bin that is a native program.
    const EXE_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\"%dp0%\\node_modules\\@openai\\codex\\bin\\codex.exe\"   %*\r\n";

    #[test]
    fn npm_shims_are_read() {
        assert_eq!(
            parse_cmd_shim(NODE_SHIM),
            Some(ShimTarget::Node {
                script: r"node_modules\@zed-industries\claude-agent-acp\dist\index.js".into()
            })
        );
        assert_eq!(
            parse_cmd_shim(EXE_SHIM),
            Some(ShimTarget::Native {
                exe: r"node_modules\@openai\codex\bin\codex.exe".into()
            })
        );
        assert_eq!(parse_cmd_shim("@echo off\r\necho hello\r\n"), None);
        assert_eq!(parse_cmd_shim(""), None);
    }

    struct Disk(BTreeMap<PathBuf, String>);

    impl Disk {
        fn new(files: &[(&str, &str)]) -> Self {
            Self(
                files
                    .iter()
                    .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
                    .collect(),
            )
        }
        fn resolve(
            &self,
            program: &str,
            path: &str,
            sep: char,
            exts: &[&str],
        ) -> Result<Resolved, NotFound> {
            let exts: Vec<String> = exts.iter().map(|e| (*e).to_owned()).collect();
            resolve(
                program,
                Some(path),
                sep,
                &exts,
                &|p| self.0.contains_key(p),
                &|p| self.0.get(p).cloned(),
            )
        }
    }

    const WIN_EXTS: &[&str] = &[".com", ".exe", ".bat", ".cmd"];

    #[test]
    fn unix_path_lookup_takes_the_first_match() {
        let disk = Disk::new(&[("/usr/bin/opencode", ""), ("/opt/bin/opencode", "")]);
        let r = disk
            .resolve("opencode", "/usr/local/bin:/usr/bin:/opt/bin", ':', &[])
            .expect("found");
        assert_eq!(r.program, PathBuf::from("/usr/bin/opencode"));
        assert!(r.leading_args.is_empty());
        let r = disk
            .resolve("/opt/bin/opencode", "", ':', &[])
            .expect("as given");
        assert_eq!(r.program, PathBuf::from("/opt/bin/opencode"));
    }

    #[test]
    fn a_missing_command_names_every_place_looked_in() {
        let disk = Disk::new(&[]);
        let err = disk.resolve("codex-acp", "/a:/b", ':', &[]).unwrap_err();
        assert_eq!(
            err.looked_in,
            vec![PathBuf::from("/a/codex-acp"), PathBuf::from("/b/codex-acp")]
        );
        assert_eq!(
            err.to_string(),
            "`codex-acp` was not found (looked in: /a/codex-acp, /b/codex-acp)"
        );
        let err = disk
            .resolve("gemini", r"C:\npm", ';', WIN_EXTS)
            .unwrap_err();
        assert_eq!(err.looked_in.len(), 4, "{err}");
        assert!(err.to_string().contains(r"C:\npm/gemini.cmd"), "{err}");
        let err = disk.resolve("x", "", ':', &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`x` was not found (looked in: nowhere: PATH is empty)"
        );
    }

    #[test]
    fn pathext_finds_npm_shims_and_runs_their_target_under_node() {
        // The separator of joined paths is the host's; the table uses what `join` gives.
        let npm = PathBuf::from(r"C:\npm");
        let shim = npm.join("claude-agent-acp.cmd");
        let node = PathBuf::from(r"C:\node").join("node.exe");
        let disk = Disk(BTreeMap::from([
            (shim.clone(), NODE_SHIM.to_owned()),
            (node.clone(), String::new()),
        ]));
        let r = disk
            .resolve("claude-agent-acp", r"C:\npm;C:\node", ';', WIN_EXTS)
            .expect("found");
        assert_eq!(r.program, node);
        let script = [
            "node_modules",
            "@zed-industries",
            "claude-agent-acp",
            "dist",
            "index.js",
        ]
        .iter()
        .fold(npm.clone(), |p, s| p.join(s));
        assert_eq!(r.leading_args, vec![script.to_string_lossy().into_owned()]);

        // A node.exe beside the shim wins, as the shim itself prefers it.
        let beside = npm.join("node.exe");
        let disk = Disk(BTreeMap::from([
            (shim.clone(), NODE_SHIM.to_owned()),
            (beside.clone(), String::new()),
            (node, String::new()),
        ]));
        let r = disk
            .resolve("claude-agent-acp", r"C:\npm;C:\node", ';', WIN_EXTS)
            .expect("found");
        assert_eq!(r.program, beside);

        // No node anywhere: the error names where node was looked for.
        let disk = Disk(BTreeMap::from([(shim, NODE_SHIM.to_owned())]));
        let err = disk
            .resolve("claude-agent-acp", r"C:\npm", ';', WIN_EXTS)
            .unwrap_err();
        assert_eq!(err.program, "node");
    }

    #[test]
    fn a_native_shim_target_and_an_exe_are_started_directly() {
        let npm = PathBuf::from(r"C:\npm");
        let disk = Disk(BTreeMap::from([
            (npm.join("codex.cmd"), EXE_SHIM.to_owned()),
            (npm.join("opencode.exe"), String::new()),
            (npm.join("odd.cmd"), "@echo off\r\necho hi\r\n".to_owned()),
        ]));
        let r = disk
            .resolve("codex", r"C:\npm", ';', WIN_EXTS)
            .expect("codex");
        let exe = ["node_modules", "@openai", "codex", "bin", "codex.exe"]
            .iter()
            .fold(npm.clone(), |p, s| p.join(s));
        assert_eq!(r.program, exe);
        let r = disk
            .resolve("opencode", r"C:\npm", ';', WIN_EXTS)
            .expect("opencode");
        assert_eq!(r.program, npm.join("opencode.exe"));
        // Given with its extension, found as it is.
        let r = disk
            .resolve("opencode.exe", r"C:\npm", ';', WIN_EXTS)
            .expect("with ext");
        assert_eq!(r.program, npm.join("opencode.exe"));
        // A batch file that is not an npm shim is left to std's batch-file escaping.
        let r = disk.resolve("odd", r"C:\npm", ';', WIN_EXTS).expect("odd");
        assert_eq!(r.program, npm.join("odd.cmd"));
    }
}
