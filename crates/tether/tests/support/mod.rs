//! Shared set-up for the server tests: a temporary world (workspace, cache, scripted agent
//! state) and a scripted editor connected to the server in-process or as a child process.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tether::editor::{Answers, Editor, ServerProcess};

pub mod disk;
mod shim;
#[allow(unused_imports)]
pub use shim::FaultShim;

/// The `tether` binary under test.
pub fn tether_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tether"))
}

/// `tether serve --stdio --remote=off` for `world` (its log in `<world>/logs`) as one of the
/// user's machines: `machine` its name (`TETHER_MACHINE_NAME`), `key` the sync key's text
/// (`TETHER_SYNC_KEY`, so no keychain is touched), `env` more of its environment (an S3
/// endpoint); initialized with `options` and every rendering capability.
pub async fn serve_as_machine(
    world: &World,
    options: &Value,
    key: &str,
    machine: &str,
    env: &[(String, String)],
) -> Editor {
    let mut vars = vec![
        ("TETHER_LOG".to_owned(), "debug".to_owned()),
        ("TETHER_SYNC_KEY".to_owned(), key.to_owned()),
        ("TETHER_MACHINE_NAME".to_owned(), machine.to_owned()),
    ];
    vars.extend(env.iter().cloned());
    let editor = Editor::connect(
        ServerProcess::Binary {
            program: tether_bin(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--remote=off".into(),
                "--log-file".into(),
                world.path().join("logs/tether.log").display().to_string(),
            ],
            env: vars,
            quiet: true,
        },
        Answers::default(),
    )
    .expect("tether serve starts");
    editor
        .initialize(
            options.clone(),
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    editor
}

/// `tether daemon <args…>` with `runtime` as its runtime folder: (exit code, stdout).
pub fn tether_daemon(runtime: &Path, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(tether_bin())
        .arg("daemon")
        .args(args)
        .env("TETHER_RUNTIME_DIR", runtime)
        .output()
        .expect("tether daemon runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `(role, text)` of each of a snapshot's chat turns (`chatTurns`, as
/// `session/restored` carries it).
pub fn chat_turns(snapshot: &Value) -> Vec<(String, String)> {
    snapshot["chatTurns"]
        .as_array()
        .expect("chatTurns")
        .iter()
        .map(|t| {
            (
                t["role"].as_str().unwrap().to_owned(),
                t["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Where the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The tower service in this process.
    InProcess,
    /// `tether serve --stdio` as a child process.
    Binary,
}

/// A temporary world: workspace, cache folder, agent state and script.
pub struct World {
    pub dir: tempfile::TempDir,
    pub workspace: PathBuf,
    pub mode: Mode,
}

impl World {
    pub fn new(mode: Mode) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        let world = Self {
            dir,
            workspace,
            mode,
        };
        world.script(json!([]));
        world
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the scripted agent's faults (the script is re-read at every agent start).
    pub fn script(&self, faults: Value) {
        self.script_with(json!({"loadSession": true, "faults": faults}));
    }

    /// Writes a whole script (`stateDir` is filled in).
    pub fn script_with(&self, mut script: Value) {
        script["stateDir"] = json!(self.path().join("agent"));
        std::fs::write(
            self.path().join("script.json"),
            serde_json::to_vec(&script).unwrap(),
        )
        .unwrap();
    }

    /// initializationOptions with the scripted agent and short resume delays.
    pub fn options(&self) -> Value {
        json!({
            "storage": {"dir": self.path().join("cache")},
            "agents": {"scripted": {
                "command": tether_bin(),
                "args": ["scripted-agent", "--script", self.path().join("script.json")],
                "protocol": "acp"
            }},
            "defaultAgent": "scripted",
            "resume": {"maxAttempts": 3, "baseDelayMs": 50, "maxDelayMs": 200, "jitter": "none"},
            "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 2000, "maxRetries": 3, "jitter": "none"}
        })
    }

    pub fn ws(&self) -> Value {
        json!({"root": self.workspace})
    }

    /// A connected, initialized editor that renders everything itself.
    pub async fn editor(&self) -> Editor {
        self.editor_with(
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
            Answers::default(),
        )
        .await
    }

    /// A connected, initialized editor with the given `experimental` capabilities.
    pub async fn editor_with(&self, experimental: Value, answers: Answers) -> Editor {
        let editor = self.connect(answers);
        editor
            .initialize(self.options(), experimental)
            .await
            .expect("initialize");
        editor
    }

    /// A connected editor, not initialized.
    pub fn connect(&self, answers: Answers) -> Editor {
        let server = match self.mode {
            Mode::InProcess => ServerProcess::InProcess,
            Mode::Binary => ServerProcess::Binary {
                program: tether_bin(),
                args: vec![
                    "serve".into(),
                    "--stdio".into(),
                    "--remote=off".into(),
                    "--log-file".into(),
                    self.path().join("logs/tether.log").display().to_string(),
                ],
                env: vec![("TETHER_LOG".into(), "debug".into())],
                quiet: false,
            },
        };
        Editor::connect(server, answers).expect("connect")
    }
}

/// Long enough for any single step on a loaded 2-core machine.
pub const STEP: Duration = Duration::from_secs(20);

/// The pids of processes whose process group is `pgid` (read from /proc).
pub fn processes_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command (which may contain spaces) start after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state is fields[0], ppid [1], pgrp [2].
        if fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            && fields.first() != Some(&"Z")
        {
            found.push(pid);
        }
    }
    found
}

/// Every process whose command line mentions `needle` (e.g. the world's script path).
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if cmdline.contains(needle) && !zombie {
            found.push(pid);
        }
    }
    found
}

/// A tmpfs of `size` mounted on `dir` (created), unmounted when dropped.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run mount(8) (needed to make a small disk): {e}"));
        assert!(
            out.status.success(),
            "cannot mount a {size} tmpfs on {} (needs root and mount(8)): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Self(dir.to_owned())
    }

    /// Remounts it read-only (`true`) or read-write again: a read-only file system refuses
    /// every write with `EROFS`, root's too (a `chmod` does not stop root).
    pub fn read_only(&self, ro: bool) {
        let opts = if ro { "remount,ro" } else { "remount,rw" };
        let out = std::process::Command::new("mount")
            .args(["-o", opts])
            .arg(&self.0)
            .output()
            .unwrap_or_else(|e| panic!("cannot run mount(8): {e}"));
        assert!(
            out.status.success(),
            "cannot remount {} {opts}: {}",
            self.0.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Writes `name` until the disk is full; returns its path.
    pub fn fill(&self, name: &str) -> PathBuf {
        let path = self.0.join(name);
        let mut file = std::fs::File::create(&path).unwrap();
        use std::io::Write;
        let block = vec![0u8; 4096];
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// `agents.<name>` for `agent` against `fake`, every process marked with `marker`; the
/// launch owns the agent's temporary HOME, so it must outlive the agent.
pub fn agent_config(
    agent: tether_testkit::agents::RealAgent,
    fake: &tether_testkit::FakeModel,
    marker: &str,
) -> (Value, tether_testkit::agents::AgentLaunch) {
    let launch = agent
        .launch(&fake.base_url())
        .unwrap_or_else(|e| panic!("{e}"));
    let env: serde_json::Map<String, Value> = launch
        .env
        .iter()
        .map(|(k, v)| {
            let v = if k == tether_testkit::procs::MARKER_VAR {
                marker.to_owned()
            } else {
                v.clone()
            };
            (k.clone(), json!(v))
        })
        .collect();
    let config =
        json!({"command": launch.program, "args": launch.args, "env": env, "protocol": "acp"});
    (config, launch)
}
