//! The release targets: which Rust targets `cargo xtask dist` builds, and what each needs
//! from this machine to cross-build (a C compiler for the SQLite that `rusqlite` bundles,
//! a linker) and to package (the archive format, the VS Code platform).

/// One release target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The Rust target triple, e.g. `aarch64-unknown-linux-gnu`.
    pub triple: &'static str,
    /// The C compiler for this target (`CC_<triple>` of the `cc` crate), when the host's
    /// default `cc` cannot build for it; `rusqlite`'s bundled SQLite is C.
    pub cc: Option<&'static str>,
    /// The linker (`CARGO_TARGET_<TRIPLE>_LINKER`), when rustc's default cannot link it.
    pub linker: Option<&'static str>,
    /// The Debian package that provides `cc` and `linker`, for the error that says what to
    /// install.
    pub apt: Option<&'static str>,
    /// The VS Code platform (`vsce package --target`) whose package carries this build.
    pub vscode: &'static str,
}

/// Every release target. Adding one is one line here (the Windows target's `.zip` archive
/// and `tether.exe` follow from its triple).
pub const TARGETS: &[Target] = &[
    Target::new("x86_64-unknown-linux-gnu", None, None, None, "linux-x64"),
    // Static: runs on Alpine and on any x86_64 Linux however old its glibc.
    Target::new(
        "x86_64-unknown-linux-musl",
        Some("musl-gcc"),
        None,
        Some("musl-tools"),
        "alpine-x64",
    ),
    Target::new(
        "aarch64-unknown-linux-gnu",
        Some("aarch64-linux-gnu-gcc"),
        Some("aarch64-linux-gnu-gcc"),
        Some("gcc-aarch64-linux-gnu"),
        "linux-arm64",
    ),
    // mingw-w64: the C compiler for the bundled SQLite and the linker (rustc's default for
    // this target, named here so a missing one is reported with its package).
    Target::new(
        "x86_64-pc-windows-gnu",
        Some("x86_64-w64-mingw32-gcc"),
        Some("x86_64-w64-mingw32-gcc"),
        Some("gcc-mingw-w64-x86-64"),
        "win32-x64",
    ),
];

impl Target {
    const fn new(
        triple: &'static str,
        cc: Option<&'static str>,
        linker: Option<&'static str>,
        apt: Option<&'static str>,
        vscode: &'static str,
    ) -> Self {
        Self {
            triple,
            cc,
            linker,
            apt,
            vscode,
        }
    }

    /// Whether this is a Windows target: a `.zip` holding `tether.exe`, not a `.tar.gz`.
    pub fn is_windows(&self) -> bool {
        self.triple.contains("-windows-")
    }

    /// The server's file name on this target: `tether` or `tether.exe`.
    pub fn exe_name(&self) -> &'static str {
        if self.is_windows() {
            "tether.exe"
        } else {
            "tether"
        }
    }

    /// The archive's file name: `tether-<version>-<triple>.tar.gz`, `.zip` on Windows
    /// (cargo-dist's naming).
    pub fn archive_name(&self, version: &str) -> String {
        let ext = if self.is_windows() { "zip" } else { "tar.gz" };
        format!("tether-{version}-{}.{ext}", self.triple)
    }

    /// The environment variables that point cargo and the `cc` crate at this target's
    /// compiler and linker: `CC_<triple with _>` and `CARGO_TARGET_<TRIPLE>_LINKER`.
    pub fn build_env(&self) -> Vec<(String, &'static str)> {
        let mut env = Vec::new();
        if let Some(cc) = self.cc {
            env.push((format!("CC_{}", self.triple.replace('-', "_")), cc));
        }
        if let Some(linker) = self.linker {
            let key = self.triple.replace('-', "_").to_uppercase();
            env.push((format!("CARGO_TARGET_{key}_LINKER"), linker));
        }
        env
    }
}

/// The targets named by `--target` (every target when none is named); an unknown name is
/// an error that lists the known ones.
pub fn select(names: &[String]) -> Result<Vec<Target>, String> {
    if names.is_empty() {
        return Ok(TARGETS.to_vec());
    }
    names
        .iter()
        .map(|name| {
            TARGETS
                .iter()
                .copied()
                .find(|t| t.triple == name)
                .ok_or_else(|| {
                    let known: Vec<_> = TARGETS.iter().map(|t| t.triple).collect();
                    format!(
                        "unknown target `{name}`; the release targets are {}",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_triple() {
        let arm = select(&["aarch64-unknown-linux-gnu".to_owned()]).unwrap()[0];
        assert_eq!(
            arm.archive_name("1.2.3"),
            "tether-1.2.3-aarch64-unknown-linux-gnu.tar.gz"
        );
        assert_eq!(arm.exe_name(), "tether");
        assert_eq!(
            arm.build_env(),
            vec![
                (
                    "CC_aarch64_unknown_linux_gnu".to_owned(),
                    "aarch64-linux-gnu-gcc"
                ),
                (
                    "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER".to_owned(),
                    "aarch64-linux-gnu-gcc"
                ),
            ]
        );
        let win = select(&["x86_64-pc-windows-gnu".to_owned()]).unwrap()[0];
        assert_eq!(
            win.archive_name("1.2.3"),
            "tether-1.2.3-x86_64-pc-windows-gnu.zip"
        );
        assert_eq!(win.exe_name(), "tether.exe");
        assert_eq!(win.vscode, "win32-x64");
    }

    #[test]
    fn an_unknown_target_names_the_known_ones() {
        let err = select(&["riscv64gc-unknown-linux-gnu".to_owned()]).unwrap_err();
        assert!(err.contains("x86_64-unknown-linux-musl"), "{err}");
    }
}
