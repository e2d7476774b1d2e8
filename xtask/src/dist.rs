//! `cargo xtask dist`: the release set, written to `<checkout>/target/dist/`.
//!
//! 1. One `cargo build --profile dist` for the musl and Windows targets at once (the targets
//!    share the build scripts and proc macros built for the host), each cross compiler and
//!    linker set through the environment for this build only ([`Target::build_env`]; a
//!    variable the caller already set wins), then one `cargo zigbuild --profile dist` for
//!    the glibc targets, each as `<triple>.<glibc>` ([`Target::build_target`],
//!    [`crate::targets::MIN_GLIBC`]; a compiler or linker variable the caller set for them
//!    is removed, since it would defeat zig). Cargo builds wherever it would (`CARGO_TARGET_DIR`, the
//!    per-user cache of tests/run-all.sh); only the results go to `target/dist/`, so they
//!    are in one known place whatever the build cache.
//! 2. Per target, `tether-<version>-<triple>.tar.gz` (`.zip` on Windows) with the server,
//!    the checkout's root `LICENSE` and `README.md` ([`crate::archive`]).
//! 3. Unless `--no-vsix`: per target, the VS Code package for its platform with the server
//!    in `server/` (`tether-<version>-<platform>.vsix`), and `tether-<version>.vsix` without a
//!    server (it uses `tether.serverPath` or `tether` on PATH). vsce packs the extension
//!    folder's own `LICENSE` (it wants one there), which must be the root `LICENSE` byte for
//!    byte ([`check_licenses`]).
//! 4. `SHA256SUMS` over everything written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::archive::{self, Entry};
use crate::targets::{self, Target};

/// The version of every artifact: the workspace's (`[workspace.package] version`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Parsed `dist` arguments.
pub struct Options {
    targets: Vec<Target>,
    vsix: bool,
    /// `--build-only`: step 1 alone, no archives, packages or checksums (tests/run-all.sh
    /// builds the set early, in the background, and packages it later).
    build_only: bool,
}

impl Options {
    /// Parses `[--target TRIPLE]... [--no-vsix] [--build-only]`.
    ///
    /// # Errors
    /// An unknown flag or target, or `--target` without a value.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut names = Vec::new();
        let mut vsix = true;
        let mut build_only = false;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--target" => {
                    names.push(args.next().ok_or("--target needs a target triple")?.clone())
                }
                "--no-vsix" => vsix = false,
                "--build-only" => build_only = true,
                other => {
                    return Err(format!(
                        "unknown argument `{other}` (see `cargo xtask --help`)"
                    ));
                }
            }
        }
        Ok(Self {
            targets: targets::select(&names)?,
            vsix,
            build_only,
        })
    }
}

/// Runs `cargo xtask dist`.
///
/// # Errors
/// A missing tool (with what to install), a failed build or packaging step, or an I/O
/// error, each naming what failed.
pub fn run(opts: &Options) -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent folder")?;
    check_tools(&opts.targets)?;
    let vscode = root.join("editors/vscode");
    if !opts.build_only {
        check_licenses(root)?;
    }
    if opts.vsix && !opts.build_only {
        check_vscode_version(&vscode)?;
    }

    let started = Instant::now();
    build(root, &opts.targets)?;
    println!(
        "dist: built {} target(s) in {:.0} s",
        opts.targets.len(),
        started.elapsed().as_secs_f64()
    );
    if opts.build_only {
        return Ok(());
    }

    let target_dir = cargo_target_dir(root)?;
    let out = root.join("target/dist");
    clean(&out)?;
    let mut written = Vec::new();
    for target in &opts.targets {
        let exe = target_dir
            .join(target.triple)
            .join("dist")
            .join(target.exe_name());
        written.push(pack_archive(root, &out, target, &exe)?);
    }
    if opts.vsix {
        npm_ci_if_needed(&vscode)?;
        for target in &opts.targets {
            let exe = target_dir
                .join(target.triple)
                .join("dist")
                .join(target.exe_name());
            written.push(package_vsix(&vscode, &out, Some((target, &exe)))?);
        }
        written.push(package_vsix(&vscode, &out, None)?);
    }
    archive::write_sha256sums(&out, &written)?;

    println!(
        "dist: {} ({:.0} s in all)",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    for name in &written {
        let size = std::fs::metadata(out.join(name)).map_or(0, |m| m.len());
        println!("  {:>10.2} MB  {name}", size as f64 / 1_000_000.0);
    }
    println!("  SHA256SUMS");
    Ok(())
}

/// Every tool the build needs is here: each target's Rust standard library (rustup), C
/// compiler and linker (Debian packages), and for the glibc targets cargo-zigbuild and zig;
/// else one error that lists what to install.
fn check_tools(targets: &[Target]) -> Result<(), String> {
    let missing = missing_tools(targets, &SystemProbe::new());
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "missing tools for the cross builds; run:\n  {}",
            missing.join("\n  ")
        ))
    }
}

/// What [`missing_tools`] asks of the machine (a trait so that its test can answer).
trait Probe {
    /// Whether rustup lists `triple` as installed; `true` when rustup cannot be asked (a
    /// toolchain without rustup: cargo then names the missing standard library itself).
    fn has_rust_target(&self, triple: &str) -> bool;
    /// Whether the program `tool` is on `PATH`.
    fn on_path(&self, tool: &str) -> bool;
    /// Whether `cargo zigbuild --help` runs (cargo finds `cargo-zigbuild` on `PATH` or in
    /// `~/.cargo/bin`; the subcommand takes no `--version`).
    fn has_cargo_zigbuild(&self) -> bool;
    /// Whether cargo-zigbuild finds a zig: `$CARGO_ZIGBUILD_ZIG_PATH` or `zig` on `PATH`
    /// runs `zig version`, or `${CARGO_ZIGBUILD_PYTHON_PATH:-python3} -m ziglang version`
    /// runs (the PyPI `ziglang` package); cargo-zigbuild's own order of looking
    /// (its `src/zig/locate.rs`).
    fn has_zig(&self) -> bool;
}

/// The install commands for what `targets` need and `probe` does not find, one a line, in
/// the order found, without repeats.
fn missing_tools(targets: &[Target], probe: &dyn Probe) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    let mut push = |line: String| {
        if !missing.contains(&line) {
            missing.push(line);
        }
    };
    for target in targets {
        if !probe.has_rust_target(target.triple) {
            push(format!("rustup target add {}", target.triple));
        }
        for tool in target.cc.iter().chain(target.linker.iter()) {
            if !probe.on_path(tool) {
                push(format!(
                    "apt-get install {} (for `{tool}`, {})",
                    target.apt.unwrap_or("<the package with it>"),
                    target.triple
                ));
            }
        }
        // One line each however many targets need them (the same tool builds them all).
        if let Some(glibc) = target.glibc {
            if !probe.has_cargo_zigbuild() {
                push(format!(
                    "cargo install cargo-zigbuild --locked (for `cargo zigbuild`, which builds \
                     the linux-gnu targets for glibc {glibc})"
                ));
            }
            if !probe.has_zig() {
                push(
                    "pip install ziglang (zig, the C compiler and linker of `cargo zigbuild`, \
                     found as `zig` on PATH or `python3 -m ziglang`)"
                        .to_owned(),
                );
            }
        }
    }
    missing
}

/// [`Probe`] of this machine.
struct SystemProbe {
    /// `rustup target list --installed`, when rustup ran.
    installed: Option<String>,
}

impl SystemProbe {
    fn new() -> Self {
        let installed = Command::new("rustup")
            .args(["target", "list", "--installed"])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
        Self { installed }
    }
}

impl Probe for SystemProbe {
    fn has_rust_target(&self, triple: &str) -> bool {
        self.installed
            .as_ref()
            .is_none_or(|list| list.lines().any(|l| l.trim() == triple))
    }

    fn on_path(&self, tool: &str) -> bool {
        on_path(tool)
    }

    fn has_cargo_zigbuild(&self) -> bool {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        runs(Command::new(cargo).args(["zigbuild", "--help"]))
    }

    fn has_zig(&self) -> bool {
        let zig = std::env::var_os("CARGO_ZIGBUILD_ZIG_PATH").unwrap_or_else(|| "zig".into());
        let python =
            std::env::var_os("CARGO_ZIGBUILD_PYTHON_PATH").unwrap_or_else(|| "python3".into());
        runs(Command::new(zig).arg("version"))
            || runs(Command::new(python).args(["-m", "ziglang", "version"]))
    }
}

/// Whether `cmd` starts and exits with status 0 (its output is not shown).
fn runs(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

/// The VS Code package must carry the server's version: the extension compares them at
/// `initialize` (docs/protocol.md, "Versions").
fn check_vscode_version(vscode: &Path) -> Result<(), String> {
    let manifest = vscode.join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", manifest.display()))?;
    match json["version"].as_str() {
        Some(v) if v == VERSION => Ok(()),
        other => Err(format!(
            "{} has version {other:?} but the workspace is {VERSION}; set both to one version",
            manifest.display()
        )),
    }
}

/// Builds `targets` with one `cargo build` for those with their own C compiler and linker
/// (musl, Windows) and one `cargo zigbuild` for the glibc ones; both build into the same
/// target folder, so the second reuses what the first built for the host.
fn build(root: &Path, targets: &[Target]) -> Result<(), String> {
    let (zig, plain): (Vec<Target>, Vec<Target>) = targets.iter().partition(|t| t.glibc.is_some());
    if !plain.is_empty() {
        let mut cmd = dist_build(root, "build");
        for target in &plain {
            cmd.args(["--target", target.triple]);
            for (key, value) in target.build_env() {
                if std::env::var_os(&key).is_none() {
                    println!("dist: {key}={value}");
                    cmd.env(key, value);
                }
            }
        }
        run_cmd(&mut cmd)?;
    }
    if !zig.is_empty() {
        let mut cmd = dist_build(root, "zigbuild");
        for target in &zig {
            cmd.args(["--target", &target.build_target()]);
            // cargo-zigbuild keeps a compiler or linker the caller set, which would link
            // against this machine's glibc instead of the old one.
            for key in target.zig_conflicting_env() {
                if std::env::var_os(&key).is_some() {
                    println!("dist: {key} unset for `cargo zigbuild` (zig compiles and links)");
                    cmd.env_remove(key);
                }
            }
        }
        run_cmd(&mut cmd)?;
    }
    Ok(())
}

/// `cargo <subcommand> --locked --profile dist -p tether --bin tether` in `root`.
fn dist_build(root: &Path, subcommand: &str) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args([
        subcommand,
        "--locked",
        "--profile",
        "dist",
        "-p",
        "tether",
        "--bin",
        "tether",
    ]);
    cmd
}

/// Cargo's target folder as cargo resolves it (`CARGO_TARGET_DIR`, `build.target-dir`, or
/// `<checkout>/target`), from `cargo metadata`.
fn cargo_target_dir(root: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .current_dir(root)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    json["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata names no target_directory".to_owned())
}

/// Creates `out`, removing the release files an earlier run left (and nothing else: without
/// `CARGO_TARGET_DIR`, cargo's own `target/dist/` for a `--profile dist` build with no
/// `--target` is the same folder).
fn clean(out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let entries =
        std::fs::read_dir(out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "SHA256SUMS" || (name.starts_with("tether-") && entry.path().is_file()) {
            std::fs::remove_file(entry.path()).map_err(|e| format!("cannot remove {name}: {e}"))?;
        }
    }
    Ok(())
}

fn pack_archive(root: &Path, out: &Path, target: &Target, exe: &Path) -> Result<String, String> {
    let name = target.archive_name(VERSION);
    let entries = [
        Entry {
            name: target.exe_name().to_owned(),
            source: exe.to_owned(),
            executable: true,
        },
        Entry {
            name: "LICENSE".to_owned(),
            source: root.join("LICENSE"),
            executable: false,
        },
        Entry {
            name: "README.md".to_owned(),
            source: root.join("README.md"),
            executable: false,
        },
    ];
    if target.is_windows() {
        archive::write_zip(&out.join(&name), &entries)?;
    } else {
        let folder = format!("tether-{VERSION}-{}", target.triple);
        archive::write_tar_gz(&out.join(&name), &folder, &entries)?;
    }
    Ok(name)
}

/// The licence files that ship: the root `LICENSE` (in every archive) and
/// `editors/vscode/LICENSE` (vsce packs the extension folder's own into every `.vsix`). They
/// must be the same text, so every artifact carries one licence, the one `Cargo.toml`'s
/// `license` field names (`MIT OR Apache-2.0`).
///
/// # Errors
/// Either file unreadable, or the two differ.
fn check_licenses(root: &Path) -> Result<(), String> {
    let read =
        |rel: &str| std::fs::read(root.join(rel)).map_err(|e| format!("cannot read {rel}: {e}"));
    if read("LICENSE")? == read("editors/vscode/LICENSE")? {
        Ok(())
    } else {
        Err(
            "editors/vscode/LICENSE differs from the root LICENSE: copy the root one over it \
             (`cp LICENSE editors/vscode/LICENSE`)"
                .to_owned(),
        )
    }
}

/// `npm ci` in `editors/vscode` when its dependencies (vsce, esbuild) are not installed.
fn npm_ci_if_needed(vscode: &Path) -> Result<(), String> {
    if vscode.join("node_modules/.bin/vsce").is_file() {
        return Ok(());
    }
    println!("dist: npm ci in {}", vscode.display());
    run_cmd(
        Command::new("npm")
            .current_dir(vscode)
            .args(["ci", "--no-audit", "--no-fund"]),
    )
}

/// Packs the VS Code extension: with `server`, for its target's platform with the server
/// copied to `server/`; without, the package with no server. Returns the file name.
fn package_vsix(
    vscode: &Path,
    out: &Path,
    server: Option<(&Target, &Path)>,
) -> Result<String, String> {
    let bundled = vscode.join("server");
    let _ = std::fs::remove_dir_all(&bundled);
    let mut cmd = Command::new(vscode.join("node_modules/.bin/vsce"));
    cmd.current_dir(vscode)
        .args(["package", "--no-dependencies"]);
    let name = match server {
        Some((target, exe)) => {
            std::fs::create_dir_all(&bundled)
                .map_err(|e| format!("cannot create {}: {e}", bundled.display()))?;
            std::fs::copy(exe, bundled.join(target.exe_name())).map_err(|e| {
                format!(
                    "cannot copy {} to {}: {e}",
                    exe.display(),
                    bundled.display()
                )
            })?;
            cmd.args(["--target", target.vscode]);
            format!("tether-{VERSION}-{}.vsix", target.vscode)
        }
        None => format!("tether-{VERSION}.vsix"),
    };
    cmd.arg("--out").arg(out.join(&name));
    let result = run_cmd(&mut cmd);
    let _ = std::fs::remove_dir_all(&bundled);
    result.map(|()| name)
}

fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
    }

    #[test]
    fn the_vscode_license_is_the_root_license() {
        check_licenses(root()).unwrap();
    }

    #[test]
    fn the_license_names_what_cargo_toml_says() {
        let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
        assert!(
            manifest
                .lines()
                .any(|l| l.trim() == r#"license = "MIT OR Apache-2.0""#),
            "Cargo.toml's license field is no longer MIT OR Apache-2.0: update LICENSE"
        );
        let license = std::fs::read_to_string(root().join("LICENSE")).unwrap();
        assert!(license.contains("SPDX: MIT OR Apache-2.0"), "{license}");
        assert!(license.contains("MIT License"), "{license}");
        assert!(license.contains("Apache License, Version 2.0"), "{license}");
    }

    /// A machine with the rustup targets and nothing else: no program on `PATH`, no
    /// cargo-zigbuild, no zig.
    struct Bare;

    impl Probe for Bare {
        fn has_rust_target(&self, _: &str) -> bool {
            true
        }
        fn on_path(&self, _: &str) -> bool {
            false
        }
        fn has_cargo_zigbuild(&self) -> bool {
            false
        }
        fn has_zig(&self) -> bool {
            false
        }
    }

    /// Everything there.
    struct Full;

    impl Probe for Full {
        fn has_rust_target(&self, _: &str) -> bool {
            true
        }
        fn on_path(&self, _: &str) -> bool {
            true
        }
        fn has_cargo_zigbuild(&self) -> bool {
            true
        }
        fn has_zig(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_missing_zigbuild_and_zig_are_named_with_their_install() {
        let gnu = targets::select(&[
            "x86_64-unknown-linux-gnu".to_owned(),
            "aarch64-unknown-linux-gnu".to_owned(),
        ])
        .unwrap();
        let missing = missing_tools(&gnu, &Bare);
        // Once each, though both targets need them; no apt package (zig is the compiler).
        assert_eq!(missing.len(), 2, "{missing:#?}");
        assert!(
            missing[0].starts_with("cargo install cargo-zigbuild --locked"),
            "{missing:#?}"
        );
        assert!(missing[0].contains("glibc 2.17"), "{missing:#?}");
        assert!(
            missing[1].starts_with("pip install ziglang"),
            "{missing:#?}"
        );
        assert!(missing_tools(&gnu, &Full).is_empty());
    }

    #[test]
    fn the_other_targets_need_no_zig() {
        let others = targets::select(&[
            "x86_64-unknown-linux-musl".to_owned(),
            "x86_64-pc-windows-gnu".to_owned(),
        ])
        .unwrap();
        let missing = missing_tools(&others, &Bare);
        assert_eq!(
            missing,
            vec![
                "apt-get install musl-tools (for `musl-gcc`, x86_64-unknown-linux-musl)",
                "apt-get install gcc-mingw-w64-x86-64 (for `x86_64-w64-mingw32-gcc`, \
                 x86_64-pc-windows-gnu)",
            ]
        );
    }
}
