//! The release targets: which Rust targets `cargo xtask dist` builds, and what each needs
//! from this machine to cross-build (a C compiler for the SQLite that `rusqlite` bundles,
//! a linker, or cargo-zigbuild for the glibc targets) and to package (the archive format,
//! the VS Code platform).
//!
//! The two `*-linux-gnu` targets are built with cargo-zigbuild against glibc
//! [`MIN_GLIBC`]: `zig cc` compiles the bundled SQLite and links against a stub glibc of that
//! version, so the server needs no newer glibc than that whatever the build machine has (a
//! plain build on this Debian 12 machine links against its glibc 2.36 and needs 2.34).

/// The oldest glibc, as `major.minor`, that the `*-linux-gnu` builds run on: 2.17 (CentOS/RHEL
/// 7, 2014), the oldest Rust itself supports for these targets since Rust 1.64 (the Rust
/// blog, "Increasing the glibc and Linux kernel requirements", 2022-08-01), so no lower
/// version is possible. It covers every host VS Code Remote (SSH, WSL, Dev Containers)
/// supports: Ubuntu 20.04 has 2.31, Debian 11 2.31, RHEL 8 2.28, Amazon Linux 2 2.26.
/// `tests/dist/check-glibc.sh` checks the built binaries against it.
pub const MIN_GLIBC: &str = "2.17";

/// One release target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The Rust target triple, e.g. `aarch64-unknown-linux-gnu`.
    pub triple: &'static str,
    /// The C compiler for this target (`CC_<triple>` of the `cc` crate), when the host's
    /// default `cc` cannot build for it; `rusqlite`'s bundled SQLite is C. `None` for a
    /// [`Target::glibc`] target: cargo-zigbuild sets `zig cc`.
    pub cc: Option<&'static str>,
    /// The linker (`CARGO_TARGET_<TRIPLE>_LINKER`), when rustc's default cannot link it.
    /// `None` for a [`Target::glibc`] target: cargo-zigbuild sets `zig cc` as the linker.
    pub linker: Option<&'static str>,
    /// The Debian package that provides `cc` and `linker`, for the error that says what to
    /// install.
    pub apt: Option<&'static str>,
    /// The VS Code platform (`vsce package --target`) whose package carries this build.
    pub vscode: &'static str,
    /// `Some(version)` (`major.minor`): built with `cargo zigbuild --target
    /// <triple>.<version>`, so the binary needs glibc `version` at most (zig links against
    /// a stub glibc of that version and compiles the C code with its own headers for it).
    /// `None`: built with plain `cargo build` and [`Target::build_env`].
    pub glibc: Option<&'static str>,
}

/// Every release target. Adding one is one line here (the Windows target's `.zip` archive
/// and `tether.exe` follow from its triple).
pub const TARGETS: &[Target] = &[
    // glibc MIN_GLIBC through cargo-zigbuild: zig is the C compiler and the linker.
    Target::zig("x86_64-unknown-linux-gnu", MIN_GLIBC, "linux-x64"),
    // Static: runs on Alpine and on any x86_64 Linux however old its glibc.
    Target::new(
        "x86_64-unknown-linux-musl",
        Some("musl-gcc"),
        None,
        Some("musl-tools"),
        "alpine-x64",
    ),
    // glibc MIN_GLIBC through cargo-zigbuild, as x86_64: zig cross-compiles and links for
    // aarch64 itself (no aarch64 gcc; qemu-user runs the result in tests/dist/run.sh).
    Target::zig("aarch64-unknown-linux-gnu", MIN_GLIBC, "linux-arm64"),
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
            glibc: None,
        }
    }

    /// A target built by cargo-zigbuild for glibc `glibc`: no C compiler or linker of ours.
    const fn zig(triple: &'static str, glibc: &'static str, vscode: &'static str) -> Self {
        Self {
            triple,
            cc: None,
            linker: None,
            apt: None,
            vscode,
            glibc: Some(glibc),
        }
    }

    /// The `--target` value of the build: the triple, with `.<glibc>` appended for a
    /// cargo-zigbuild target (`x86_64-unknown-linux-gnu.2.17`). Cargo-zigbuild still writes
    /// the output under the plain triple's folder (`<target dir>/<triple>/<profile>/`).
    pub fn build_target(&self) -> String {
        match self.glibc {
            Some(glibc) => format!("{}.{glibc}", self.triple),
            None => self.triple.to_owned(),
        }
    }

    /// The variables the caller may have set that would make cargo-zigbuild use another C
    /// compiler or linker than zig for this target (it keeps any that is set:
    /// `CC_<triple>` in both spellings of the `cc` crate, `CXX_`, `AR_`, and
    /// `CARGO_TARGET_<TRIPLE>_LINKER`); `cargo xtask dist` removes them for the zig build.
    /// Empty for a target that is not built with zig.
    pub fn zig_conflicting_env(&self) -> Vec<String> {
        if self.glibc.is_none() {
            return Vec::new();
        }
        let under = self.triple.replace('-', "_");
        let mut keys = Vec::new();
        for tool in ["CC", "CXX", "AR"] {
            keys.push(format!("{tool}_{under}"));
            keys.push(format!("{tool}_{}", self.triple));
        }
        keys.push(format!("CARGO_TARGET_{}_LINKER", under.to_uppercase()));
        keys
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
        assert_eq!(arm.build_target(), "aarch64-unknown-linux-gnu.2.17");
        // zig is its C compiler and linker: nothing of ours may override it.
        assert_eq!(arm.build_env(), vec![]);
        assert!(
            arm.zig_conflicting_env()
                .contains(&"CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER".to_owned())
        );
        assert!(
            arm.zig_conflicting_env()
                .contains(&"CC_aarch64_unknown_linux_gnu".to_owned())
        );
        let musl = select(&["x86_64-unknown-linux-musl".to_owned()]).unwrap()[0];
        assert_eq!(musl.build_target(), "x86_64-unknown-linux-musl");
        assert_eq!(
            musl.build_env(),
            vec![("CC_x86_64_unknown_linux_musl".to_owned(), "musl-gcc")]
        );
        assert!(musl.zig_conflicting_env().is_empty());
        let win = select(&["x86_64-pc-windows-gnu".to_owned()]).unwrap()[0];
        assert_eq!(
            win.archive_name("1.2.3"),
            "tether-1.2.3-x86_64-pc-windows-gnu.zip"
        );
        assert_eq!(win.exe_name(), "tether.exe");
        assert_eq!(win.vscode, "win32-x64");
        assert_eq!(
            win.build_env(),
            vec![
                (
                    "CC_x86_64_pc_windows_gnu".to_owned(),
                    "x86_64-w64-mingw32-gcc"
                ),
                (
                    "CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER".to_owned(),
                    "x86_64-w64-mingw32-gcc"
                ),
            ]
        );
    }

    #[test]
    fn the_gnu_targets_are_built_for_the_oldest_glibc() {
        for target in TARGETS {
            let gnu = target.triple.ends_with("-linux-gnu");
            assert_eq!(target.glibc.is_some(), gnu, "{}", target.triple);
            if gnu {
                assert_eq!(target.glibc, Some(MIN_GLIBC));
                assert_eq!(target.build_target(), format!("{}.2.17", target.triple));
            }
        }
    }

    #[test]
    fn an_unknown_target_names_the_known_ones() {
        let err = select(&["riscv64gc-unknown-linux-gnu".to_owned()]).unwrap_err();
        assert!(err.contains("x86_64-unknown-linux-musl"), "{err}");
    }
}
