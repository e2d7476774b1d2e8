//! The per-user daemon and its forwarders: `tether serve --stdio` (what an editor starts,
//! forwarding by default) as real processes, each test with a private runtime folder so
//! that parallel tests never share a daemon.
//!
//! gopls' three modes: the server in the editor's process is `tests/server.rs`; here every
//! scenario that does not depend on the daemon being a process of its own runs twice, with
//! its forwarders reaching a daemon in a separate process (`tether daemon run`, started by
//! the first forwarder: `…::separate_daemon`) and one hosted in this test's runtime
//! (`…::in_process_daemon`, [`DaemonKind`]). Starting, killing and idling the daemon
//! process are tested with the separate daemon only.

// Linux: Unix signals, `setpriv`, the socket's file modes, `/proc` and pidfds. The Windows
// daemon (its named pipe) runs under Wine in tests/wine/daemon.sh and tether-sys's
// windows/endpoint.rs unit tests; the macOS daemon is type-checked only (tests/run-all.sh,
// suite platforms), and these tests are not built there.
#![cfg(target_os = "linux")]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Mode, STEP, World, processes_in_group, processes_mentioning, tether_bin};
use tether::daemon::paths::{build_id_of, daemon_key, socket_path_for};
use tether::daemon::server::{DaemonOptions, bind_at, run};
use tether::daemon::takeover::Identity;
use tether::editor::{Answers, Editor, ServerProcess};
use tokio_util::sync::CancellationToken;

/// Where the daemon the forwarders reach runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DaemonKind {
    /// `tether daemon run`, a process of its own that the first forwarder starts.
    Process,
    /// [`run`] in this test's runtime, bound before any forwarder starts at the socket the
    /// `tether` binary looks for, so that the forwarders reach it instead of starting one.
    InProcess,
}

/// Runs the scenario `async fn $name(kind: DaemonKind)` as two tests, `$name::separate_daemon`
/// and `$name::in_process_daemon`.
macro_rules! with_either_daemon {
    ($name:ident) => {
        mod $name {
            use super::DaemonKind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn separate_daemon() {
                super::$name(DaemonKind::Process).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn in_process_daemon() {
                super::$name(DaemonKind::InProcess).await;
            }
        }
    };
}

/// A daemon hosted in this test's runtime ([`DaemonKind::InProcess`]).
struct Hosted {
    /// Cancelling it stops the daemon.
    stop: CancellationToken,
    /// Ends once [`run`] has returned and its `tether daemon stop` clients are let go (what
    /// the end of a daemon process is to them); `None` once awaited.
    ended: Option<tokio::task::JoinHandle<()>>,
}

impl Hosted {
    /// Binds the daemon socket in `runtime` and serves there as the `tether` binary's build, with
    /// `idle` as its idle time and, as `tether daemon run`, each hub's registry in its cache
    /// folder.
    async fn start(runtime: &Path, idle: Duration) -> Self {
        let build = build_id_of(&tether_bin());
        let socket = socket_path_for(runtime, &daemon_key());
        let listener = bind_at(&socket).await.expect("the in-process daemon binds");
        let stop = CancellationToken::new();
        let options = DaemonOptions {
            socket,
            build,
            idle,
            registry_file: None,
            handle_signals: false,
            stop: stop.clone(),
            // The `tether` binary's own: its forwarders are never newer (R-DAEMON-12).
            identity: Identity::of(&tether_bin()),
            drain: Duration::from_secs(30),
            took_over_from: None,
        };
        let ended = tokio::spawn(async move {
            drop(run(listener, options, || {}).await);
        });
        Self {
            stop,
            ended: Some(ended),
        }
    }

    /// Waits at most [`STEP`] for [`run`] to return; whether it did.
    async fn ended(&mut self) -> bool {
        let Some(ended) = self.ended.take() else {
            return true;
        };
        tokio::time::timeout(STEP, ended)
            .await
            .is_ok_and(|joined| joined.is_ok())
    }
}

impl Drop for Hosted {
    fn drop(&mut self) {
        // A failed test's daemon stops with it (its agents shut down as far as the runtime
        // lets them before it is dropped).
        self.stop.cancel();
    }
}

/// A private runtime folder, a world (workspace, cache, scripted agent) and, in process,
/// the daemon.
struct Setup {
    world: World,
    runtime: PathBuf,
    kind: DaemonKind,
    /// The daemon's idle time.
    idle: Duration,
    hosted: Option<Hosted>,
}

impl Setup {
    async fn new(kind: DaemonKind) -> Self {
        // A daemon a failed test leaves behind exits soon by itself (the tests stop theirs
        // explicitly; a session or an editor keeps it busy meanwhile).
        Self::with_idle(kind, Duration::from_secs(30)).await
    }

    /// [`Self::new`] whose daemon exits after `idle` (whole seconds) with no editor and no
    /// live session.
    async fn with_idle(kind: DaemonKind, idle: Duration) -> Self {
        assert!(
            std::env::var_os("TETHER_REMOTE").is_none(),
            "unset TETHER_REMOTE: these tests start `tether serve --stdio` as editors do and \
             rely on its default (forward to the daemon)"
        );
        let world = World::new(Mode::Binary);
        let runtime = world.path().join("run");
        let hosted = match kind {
            DaemonKind::Process => None,
            DaemonKind::InProcess => Some(Hosted::start(&runtime, idle).await),
        };
        Self {
            world,
            runtime,
            kind,
            idle,
            hosted,
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "TETHER_RUNTIME_DIR".into(),
                self.runtime.display().to_string(),
            ),
            ("TETHER_LOG".into(), "debug".into()),
            (
                "TETHER_DAEMON_IDLE_SECS".into(),
                self.idle.as_secs().to_string(),
            ),
        ]
    }

    /// An editor whose server is a forwarder (`tether serve --stdio`, the default
    /// `--remote=auto`), initialized.
    async fn editor(&self) -> Editor {
        self.editor_answering(Answers::default()).await
    }

    /// [`Self::editor`] that answers the server's requests with `answers`.
    async fn editor_answering(&self, answers: Answers) -> Editor {
        self.editor_with(answers, &[]).await
    }

    /// [`Self::editor_answering`] whose forwarder has `extra` in its environment.
    async fn editor_with(&self, answers: Answers, extra: &[(&str, &str)]) -> Editor {
        self.editor_configured(
            answers,
            extra,
            self.world.options(),
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
    }

    /// [`Self::editor_with`] initialized with `options` (`initializationOptions`) and
    /// `experimental` (client capabilities).
    async fn editor_configured(
        &self,
        answers: Answers,
        extra: &[(&str, &str)],
        options: Value,
        experimental: Value,
    ) -> Editor {
        self.editor_of(tether_bin(), answers, extra, options, experimental)
            .await
    }

    /// [`Self::editor_configured`] whose server is the `tether` binary at `program`.
    async fn editor_of(
        &self,
        program: PathBuf,
        answers: Answers,
        extra: &[(&str, &str)],
        options: Value,
        experimental: Value,
    ) -> Editor {
        let mut env = self.env();
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let editor = Editor::connect(
            ServerProcess::Binary {
                program,
                // Exactly as an editor starts it: no `--remote`, so the default (`auto`,
                // forward to the daemon) is what these tests exercise.
                args: vec![
                    "serve".into(),
                    "--stdio".into(),
                    "--log-file".into(),
                    self.world
                        .path()
                        .join("logs/forwarder.log")
                        .display()
                        .to_string(),
                ],
                env,
                quiet: false,
            },
            answers,
        )
        .expect("forwarder starts");
        editor
            .initialize(options, experimental)
            .await
            .expect("initialize through the daemon");
        editor
    }

    /// `tether daemon <args…>` with this runtime folder: (exit code, stdout).
    fn daemon(&self, args: &[&str]) -> (i32, String) {
        support::tether_daemon(&self.runtime, args)
    }

    /// `tether daemon status --json`; in process, asserts it is this process's daemon that
    /// answers (no forwarder started one of its own).
    fn status(&self) -> Value {
        let (code, out) = self.daemon(&["status", "--json"]);
        assert_eq!(code, 0, "daemon status: {out}");
        let status: Value = serde_json::from_str(&out).expect("status JSON");
        if self.kind == DaemonKind::InProcess {
            assert_eq!(
                status["pid"].as_u64(),
                Some(u64::from(std::process::id())),
                "the in-process daemon answers: {status}"
            );
        }
        status
    }

    /// The daemon's process id: a `tether daemon run` of this runtime folder, or this
    /// process.
    fn daemon_pid(&self) -> i32 {
        match self.kind {
            DaemonKind::Process => *self.daemon_processes().first().expect("the daemon"),
            DaemonKind::InProcess => std::process::id() as i32,
        }
    }

    /// Waits at most [`STEP`] for the daemon `pid` ([`Self::daemon_pid`]) to be gone: its
    /// process to exit, or in process [`run`] to return. Whether it is.
    async fn daemon_gone(&mut self, pid: i32) -> bool {
        match &mut self.hosted {
            None => tokio::time::timeout(STEP, process_exit(pid)).await.is_ok(),
            Some(hosted) => hosted.ended().await,
        }
    }

    /// The end of every test: the in-process daemon is stopped (a no-op when `tether daemon
    /// stop` did already) and [`run`] has returned; no daemon process of this runtime folder
    /// and no agent of this world is left.
    async fn finish(mut self) {
        if let Some(hosted) = &mut self.hosted {
            hosted.stop.cancel();
            assert!(hosted.ended().await, "the in-process daemon stops");
        }
        assert_eq!(
            self.daemon_processes(),
            Vec::<i32>::new(),
            "no daemon is left"
        );
        let script = self.world.path().join("script.json");
        assert_eq!(
            processes_mentioning(&script.display().to_string()),
            Vec::<i32>::new(),
            "no agent is left"
        );
    }

    /// The forwarders' and daemons' logs, for a failure's message.
    fn logs(&self) -> String {
        let mut out = String::new();
        for dir in [self.runtime.clone(), self.world.path().join("logs")] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                if entry.path().to_string_lossy().contains(".log") {
                    let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    out.push_str(&format!("--- {}\n{text}\n", entry.path().display()));
                }
            }
        }
        out
    }

    fn daemon_processes(&self) -> Vec<i32> {
        processes_mentioning(&self.runtime.display().to_string())
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("daemon\0run"))
            })
            .collect()
    }
}

async fn new_session(setup: &Setup, editor: &Editor) -> String {
    let r = editor
        .request("session/resume", json!({"workspace": setup.world.ws()}))
        .await
        .expect("resume");
    assert_eq!(r["outcome"], "started", "{r}");
    r["sessionId"].as_str().unwrap().to_owned()
}

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Value {
    editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
        .expect("a turn")
}

/// Sends `session/prompt` with `text` from `editor` without waiting for the turn: the
/// handle yields the answer (an error when the editor is gone first).
fn prompt_in_background(
    editor: &Editor,
    sid: &str,
    text: &str,
) -> tokio::task::JoinHandle<Result<Value, tether::lsp_client::RpcError>> {
    let client = editor.client().clone();
    let params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    tokio::spawn(async move { client.request("session/prompt", params).await })
}

/// The first `agent_message_chunk` update `editor` receives after `mark` (waiting at most
/// [`STEP`]): a turn's answer has started streaming.
async fn first_agent_chunk(editor: &Editor, mark: usize) -> Option<tether::editor::Received> {
    editor
        .wait_for(
            mark,
            "session/update",
            |p| p["update"]["sessionUpdate"] == "agent_message_chunk",
            STEP,
        )
        .await
}

/// The `session/turnEnded` of session `sid` that `editor` receives (waiting at most
/// `within`).
async fn turn_ended(
    editor: &Editor,
    sid: &str,
    within: std::time::Duration,
) -> Option<tether::editor::Received> {
    editor
        .wait_for(0, "session/turnEnded", |p| p["sessionId"] == sid, within)
        .await
}

/// Kills `editor`'s forwarder (SIGKILL: a window reloaded) while its `session/prompt`
/// `asked` waits: that prompt gets no answer, and the turn goes on in the daemon.
async fn kill_mid_turn(
    editor: Editor,
    asked: tokio::task::JoinHandle<Result<Value, tether::lsp_client::RpcError>>,
) {
    editor.signal(libc::SIGKILL, STEP).await.unwrap();
    assert!(
        asked.await.unwrap().is_err(),
        "the dead editor got no answer"
    );
}

/// `session/persist` from `editor` of a transcript of `chat_turns` for session `sid` (as
/// an editor saves what it drew); asserts it was saved.
async fn save_turns(setup: &Setup, editor: &Editor, sid: &str, chat_turns: Value) {
    let saved = editor
        .request(
            "session/persist",
            json!({
                "sessionId": sid, "workspace": setup.world.ws(), "trigger": "turnFinalized",
                "snapshot": {"chatTurns": chat_turns, "execTurns": [], "diffSessions": [],
                    "approvals": {"pending": []}, "uiState": {"isStreamErrorVisible": false},
                    "context": {"workingDir": "/"}},
            }),
        )
        .await
        .expect("persist");
    assert_eq!(saved["saved"], true, "{saved}");
}

/// `session/resume` of session `sid`, live in the daemon (after `after_seq` when given),
/// from `editor`; asserts it was taken back (`resumed`) and returns the result.
async fn take_back(setup: &Setup, editor: &Editor, sid: &str, after_seq: Option<u64>) -> Value {
    let mut params = json!({"workspace": setup.world.ws(), "sessionId": sid});
    if let Some(after) = after_seq {
        params["afterSeq"] = json!(after);
    }
    let r = editor.request("session/resume", params).await.unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    r
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

with_either_daemon!(a_session_outlives_its_editor_and_the_next_editor_takes_it_back);

async fn a_session_outlives_its_editor_and_the_next_editor_takes_it_back(kind: DaemonKind) {
    let mut setup = Setup::new(kind).await;
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    assert_eq!(
        prompt(&first, &sid, "hello").await["stopReason"],
        "end_turn"
    );
    let status = setup.status();
    assert_eq!(status["clients"], 1, "{status}");
    let pgid = status["sessions"][0]["agentPgid"]
        .as_i64()
        .expect("an agent") as i32;
    assert_eq!(status["sessions"][0]["sessionId"], sid.as_str());
    let daemon = setup.daemon_pid();

    // The editor quits: its forwarder ends, the daemon keeps the session and its agent.
    first.shutdown(STEP).await.unwrap();
    assert!(
        !processes_in_group(pgid).is_empty(),
        "the agent outlives the editor"
    );

    let second = setup.editor().await;
    let r = take_back(&setup, &second, &sid, None).await;
    assert_eq!(
        r["breaker"]["attempts"], 0,
        "taken back live, no agent attempt: {r}"
    );
    let status = setup.status();
    assert_eq!(
        status["sessions"][0]["agentPgid"].as_i64(),
        Some(i64::from(pgid)),
        "the same agent process: {status}"
    );
    assert_eq!(
        prompt(&second, &sid, "again").await["stopReason"],
        "end_turn"
    );

    // Private files: the runtime folder, the socket, the daemon's log.
    assert_eq!(mode_of(&setup.runtime), 0o700);
    for entry in std::fs::read_dir(&setup.runtime).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode_of(&path) & 0o077, 0, "{} is private", path.display());
    }

    second.shutdown(STEP).await.unwrap();
    let (code, out) = setup.daemon(&["stop"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("stopped"), "{out}");
    assert!(
        processes_in_group(pgid).is_empty(),
        "stop shuts the agents down before it answers"
    );
    assert!(setup.daemon_gone(daemon).await, "the daemon is gone");
    let (code, _) = setup.daemon(&["status"]);
    assert_eq!(code, 1, "no daemon runs");
    setup.finish().await;
}

/// Two editors taking one cached session back at the same moment (two windows reopened, or
/// two forwarders reattaching to a new daemon): one resume loads it, the other waits for it
/// at the session's resume gate and finds it live. Both must get its transcript
/// (`session/restored`) before its events; the second used to get nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_editors_taking_one_session_back_at_once_both_get_its_transcript() {
    let mut setup = Setup::new(DaemonKind::Process).await;
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    prompt(&first, &sid, "before the restart").await;
    first.shutdown(STEP).await.unwrap();
    let daemon = setup.daemon_pid();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    assert!(setup.daemon_gone(daemon).await, "the daemon is gone");

    // The new agent's `session/load` answers after 1 s: the second resume arrives while the
    // first is still loading, and waits for it.
    setup.world.script(
        json!([{"method": "session/load", "calls": [1], "action": {"kind": "hang", "ms": 1000}}]),
    );
    let (a, b) = tokio::join!(setup.editor(), setup.editor());
    // B asks once A's resume has sent A the transcript and is loading the agent.
    let b_after_a = async {
        a.wait_for(
            0,
            "session/restored",
            |p| p["sessionId"] == sid.as_str(),
            STEP,
        )
        .await
        .expect("A's transcript");
        take_back(&setup, &b, &sid, None).await
    };
    let (ra, rb) = tokio::join!(take_back(&setup, &a, &sid, None), b_after_a);
    let attempts = [
        ra["breaker"]["attempts"].as_u64(),
        rb["breaker"]["attempts"].as_u64(),
    ];
    assert!(
        attempts.contains(&Some(0)),
        "one of them found it live: {ra} {rb}"
    );
    for (name, editor) in [("a", &a), ("b", &b)] {
        let restored = editor
            .wait_for(
                0,
                "session/restored",
                |p| p["sessionId"] == sid.as_str(),
                STEP,
            )
            .await
            .unwrap_or_else(|| panic!("{name}: no transcript\n{}", setup.logs()));
        let turns = support::chat_turns(&restored.params()["snapshot"]);
        assert!(
            turns.iter().any(|(_, t)| t == "before the restart"),
            "{name}: the transcript: {turns:?}"
        );
    }
    a.shutdown(STEP).await.unwrap();
    b.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarders_starting_at_once_start_exactly_one_daemon() {
    let setup = Setup::new(DaemonKind::Process).await;
    let (a, b, c) = tokio::join!(setup.editor(), setup.editor(), setup.editor());
    let status = setup.status();
    assert_eq!(status["clients"], 3, "{status}");
    assert_eq!(setup.daemon_processes().len(), 1, "one daemon");
    // Editors with the same configuration share the hub: a session started by one is
    // live for another.
    let sid = new_session(&setup, &a).await;
    take_back(&setup, &b, &sid, None).await;
    for editor in [a, b, c] {
        editor.shutdown(STEP).await.unwrap();
    }
    let (code, out) = setup.daemon(&["stop"]);
    let log = std::fs::read_dir(&setup.runtime)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".daemon.log"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    assert_eq!(code, 0, "{out}\n{log}");
    setup.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_exits_when_idle_with_no_editor_and_no_session() {
    let setup = Setup::new(DaemonKind::Process).await;
    std::fs::create_dir_all(&setup.runtime).unwrap();
    let mut daemon = tokio::process::Command::new(tether_bin())
        .args(["daemon", "run", "--idle-secs", "1", "--runtime-dir"])
        .arg(&setup.runtime)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let exited = tokio::time::timeout(STEP, daemon.wait()).await;
    assert!(
        exited.is_ok_and(|s| s.is_ok_and(|s| s.success())),
        "exits by itself"
    );
    assert_eq!(setup.daemon(&["status"]).0, 1, "and its socket is gone");
    setup.finish().await;
}

with_either_daemon!(another_user_is_refused);

/// SO_PEERCRED: a process of another user is refused by the daemon itself, even when it
/// can reach the socket. Needs root to run the client as `nobody` (CI runs as root).
async fn another_user_is_refused(kind: DaemonKind) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test needs root to run a client as another user (setpriv); run the suite as root"
    );
    let setup = Setup::new(kind).await;
    let editor = setup.editor().await;
    // Open the way to the socket for the test only, so the daemon's own check is what
    // refuses (its folder is 0700 otherwise).
    use std::os::unix::fs::PermissionsExt;
    // The daemon's socket.
    let socket = std::fs::read_dir(&setup.runtime)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sock"))
        .expect("the daemon's socket");
    let world_dir = setup.world.path().to_owned();
    for dir in [world_dir.as_path(), setup.runtime.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    // A minimal client in Perl (core modules only, readable by `nobody`): connect, send a
    // hello line, print the daemon's answer.
    let client = r#"use IO::Socket::UNIX; my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!"; print $s "{}\n"; my $l = <$s>; print $l;"#;
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/perl",
            "-e",
            client,
        ])
        .arg(&socket)
        .output()
        .expect("setpriv and perl run");
    let answer = String::from_utf8_lossy(&out.stdout);
    let welcome: Value = serde_json::from_str(answer.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: {answer:?} / {} / {:?} / socket {}",
            String::from_utf8_lossy(&out.stderr),
            out.status,
            socket.display()
        )
    });
    assert_eq!(welcome["ok"], false, "{welcome}");
    assert!(
        welcome["error"]
            .as_str()
            .unwrap()
            .contains("serves uid 0 only"),
        "{welcome}"
    );
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// R-DAEMON-1: two `tether` files of one protocol version (say the VS Code package's and the
/// one on `PATH`) use one daemon: a session started through the first is attached to, live,
/// through the second, and `tether daemon status` from either file names the same daemon
/// with its version, build and binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_binaries_of_one_protocol_version_share_one_daemon() {
    let setup = Setup::new(DaemonKind::Process).await;
    // An older copy: a newer one would take the daemon over (R-DAEMON-12).
    let other = copy_of_tether(&setup, "other", -3600);
    assert_ne!(
        build_id_of(&other),
        build_id_of(&tether_bin()),
        "the copy is another build (its own modification time)"
    );
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    let second = setup
        .editor_of(
            other.clone(),
            Answers::default(),
            &[],
            setup.world.options(),
            json!({"tether": {"recoveryDialog": true}}),
        )
        .await;
    let r = second
        .request(
            "session/resume",
            json!({"workspace": setup.world.ws(), "sessionId": sid}),
        )
        .await
        .expect("resume through the other binary");
    assert_eq!(r["outcome"], "resumed", "{r}");
    assert_eq!(r["sessionId"], sid.as_str(), "{r}");

    let status = setup.status();
    assert_eq!(status["clients"], 2, "one daemon serves both: {status}");
    assert_eq!(
        status["sessions"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    assert_eq!(
        status["build"],
        build_id_of(&tether_bin()).as_str(),
        "{status}"
    );
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"), "{status}");
    assert_eq!(
        std::fs::canonicalize(status["exe"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(tether_bin()).unwrap(),
        "the daemon runs the binary that started it: {status}"
    );
    let out = std::process::Command::new(&other)
        .args(["daemon", "status", "--json"])
        .env("TETHER_RUNTIME_DIR", &setup.runtime)
        .output()
        .expect("the other binary's daemon status");
    let other_status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(
        other_status["pid"], status["pid"],
        "the same daemon answers"
    );
    let (_, text) = setup.daemon(&["status"]);
    assert!(
        text.contains(&format!("build {}", build_id_of(&tether_bin())))
            && text.contains(&tether_bin().display().to_string()),
        "the status line names the build and the binary: {text}"
    );
    assert_eq!(setup.daemon_processes().len(), 1, "one daemon process");

    first.shutdown(STEP).await.unwrap();
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// A copy of the `tether` binary in `<world>/<name>/tether` whose modification time is the
/// original's plus `offset_secs`: another build of this version and protocol, older
/// (negative) or newer (positive) by R-DAEMON-12's rule.
fn copy_of_tether(setup: &Setup, name: &str, offset_secs: i64) -> PathBuf {
    let copy = setup.world.path().join(name).join("tether");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(tether_bin(), &copy).expect("a copy of tether");
    let base = std::fs::metadata(tether_bin()).unwrap().modified().unwrap();
    let offset = Duration::from_secs(offset_secs.unsigned_abs());
    let when = if offset_secs < 0 {
        base - offset
    } else {
        base + offset
    };
    std::fs::File::options()
        .write(true)
        .open(&copy)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let (mine, its) = (Identity::of(&tether_bin()), Identity::of(&copy));
    assert_eq!(
        its.newer_than(&mine),
        offset_secs > 0,
        "{its:?} vs {mine:?}"
    );
    copy
}

/// The agent text and the `seq`s of the `session/update`s an editor received for `sid`.
fn updates_of(editor: &Editor, sid: &str) -> (String, Vec<u64>) {
    let mut text = String::new();
    let mut seqs = Vec::new();
    for r in editor.received() {
        if r.method() == "session/update" && r.params()["sessionId"] == sid {
            seqs.push(
                r.params()["seq"]
                    .as_u64()
                    .expect("every update carries its seq"),
            );
            if r.params()["update"]["sessionUpdate"] == "agent_message_chunk" {
                text.push_str(
                    r.params()["update"]["content"]["text"]
                        .as_str()
                        .unwrap_or(""),
                );
            }
        }
    }
    (text, seqs)
}

with_either_daemon!(an_editor_killed_mid_turn_is_followed_by_one_that_gets_the_rest_exactly_once);

async fn an_editor_killed_mid_turn_is_followed_by_one_that_gets_the_rest_exactly_once(
    kind: DaemonKind,
) {
    let setup = Setup::new(kind).await;
    // Two reply chunks, 1 s apart: the first editor dies between them.
    setup
        .world
        .script(json!([{"method": "session/prompt", "action": {"kind": "delay", "ms": 1000}}]));
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    let pgid = setup.status()["sessions"][0]["agentPgid"].as_i64().unwrap();
    let asked = prompt_in_background(&first, &sid, "tell me everything");
    let chunk = first_agent_chunk(&first, 0).await.expect("the first chunk");
    let (seen_text, seen_seqs) = updates_of(&first, &sid);
    let last_seen = chunk.params()["seq"].as_u64().unwrap();
    // The window reloads: its forwarder is killed, mid-turn.
    kill_mid_turn(first, asked).await;

    let second = setup.editor().await;
    take_back(&setup, &second, &sid, Some(last_seen)).await;
    let ended = turn_ended(&second, &sid, STEP)
        .await
        .expect("the turn's end reaches the new editor");
    assert_eq!(ended.params()["stopReason"], "end_turn");
    let (rest_text, rest_seqs) = updates_of(&second, &sid);
    assert_eq!(
        format!("{seen_text}{rest_text}"),
        "echo: tell me everything",
        "every chunk exactly once, in order"
    );
    assert!(
        rest_seqs.iter().all(|s| *s > last_seen),
        "nothing twice: {seen_seqs:?} then {rest_seqs:?}"
    );
    assert!(
        rest_seqs.windows(2).all(|w| w[0] < w[1]),
        "in order: {rest_seqs:?}"
    );
    assert!(ended.params()["seq"].as_u64().unwrap() > *rest_seqs.last().unwrap());
    let status = setup.status();
    assert_eq!(
        status["sessions"][0]["agentPgid"].as_i64(),
        Some(pgid),
        "the same agent: {status}"
    );
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(a_new_editor_gets_the_transcript_then_the_running_turn_once);

/// R-DAEMON-4's reattach for an editor that comes without `afterSeq` (a new window): it is sent
/// the session's transcript first (the finished turns, `stale: false`), then the running
/// turn from its prompt on, then live: every turn exactly once.
async fn a_new_editor_gets_the_transcript_then_the_running_turn_once(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    // The second prompt's two reply chunks come 1 s apart: the first editor dies between.
    setup.world.script(
        json!([{"method": "session/prompt", "calls": [2], "action": {"kind": "delay", "ms": 1000}}]),
    );
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    prompt(&first, &sid, "first question").await;
    let mark = first.mark();
    let asked = prompt_in_background(&first, &sid, "second question");
    first_agent_chunk(&first, mark)
        .await
        .expect("the second turn's first chunk");
    // The first editor saves what it drew so far, the running prompt and the start of its
    // answer (VS Code does, on its timer and when its window reloads): the transcript sent
    // to the next editor still leaves the running turn out.
    let turn = |id: &str, role: &str, text: &str, complete: bool| json!({"id": id, "role": role, "text": text, "timestampUtc": "2026-11-25T00:00:00Z", "complete": complete});
    save_turns(
        &setup,
        &first,
        &sid,
        json!([
            turn("u1", "user", "first question", true),
            turn("a1", "assistant", "echo: first question", true),
            turn("u2", "user", "second question", true),
            turn("a2", "assistant", "echo: ", false),
        ]),
    )
    .await;
    kill_mid_turn(first, asked).await;

    let second = setup.editor().await;
    take_back(&setup, &second, &sid, None).await;
    turn_ended(&second, &sid, STEP)
        .await
        .expect("the running turn's end reaches the new editor");
    let seen: Vec<(String, Value)> = second
        .received()
        .into_iter()
        .filter(|m| m.params()["sessionId"] == sid.as_str())
        .map(|m| (m.method().to_owned(), m.params().clone()))
        .collect();
    let restored: Vec<&Value> = seen
        .iter()
        .filter(|(m, _)| m == "session/restored")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(restored.len(), 1, "one transcript: {seen:?}");
    assert_eq!(restored[0]["stale"], false);
    let turns = support::chat_turns(&restored[0]["snapshot"]);
    assert_eq!(
        turns,
        [
            ("user".to_owned(), "first question".to_owned()),
            ("assistant".to_owned(), "echo: first question".to_owned())
        ],
        "the finished turn, not the running one"
    );
    let first_update = seen
        .iter()
        .position(|(m, _)| m == "session/update")
        .expect("updates");
    assert!(
        seen.iter()
            .position(|(m, _)| m == "session/restored")
            .unwrap()
            < first_update,
        "the transcript first: {seen:?}"
    );
    let (text, seqs) = updates_of(&second, &sid);
    assert_eq!(
        text, "echo: second question",
        "the running turn whole, once"
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    let prompts: Vec<&str> = seen
        .iter()
        .filter(|(m, p)| {
            m == "session/update" && p["update"]["sessionUpdate"] == "user_message_chunk"
        })
        .map(|(_, p)| p["update"]["content"]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        prompts,
        ["second question"],
        "the running prompt once: {seen:?}"
    );
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(taking_back_by_id_mid_stream_loses_and_repeats_nothing);

/// An editor taking back by id a session whose turn streams fast (a window reloaded
/// mid-turn that remembers its session): no live chunk reaches it before the transcript and
/// the replay of the running turn, so the prompt and every chunk arrive once, in order.
async fn taking_back_by_id_mid_stream_loses_and_repeats_nothing(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    // The stream pauses near its end until the next editor has taken the session back, so
    // that editor always meets a running turn (a machine slowed by parallel tests once took
    // longer than the whole 4 s stream to save and reload, and no `session/turnEnded` came).
    let release = setup.world.path().join("release-the-stream");
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [1],
        "action": {"kind": "stream", "count": 4000, "perSecond": 1000,
                   "hold": {"after": 3500, "until": release}}}]));
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    let mark = first.mark();
    let asked = prompt_in_background(&first, &sid, "count");
    first_agent_chunk(&first, mark)
        .await
        .expect("the turn's first chunk");
    // A long saved transcript: reading it for the next editor takes a while, during which
    // the turn keeps streaming (what that editor must not be sent before the replay).
    let turns: Vec<Value> = (0..50)
        .map(|i| {
            json!({"id": format!("t{i}"), "role": if i % 2 == 0 { "user" } else { "assistant" },
                "text": "x".repeat(200_000), "timestampUtc": "2026-11-25T00:00:00Z", "complete": true})
        })
        .collect();
    save_turns(&setup, &first, &sid, Value::Array(turns)).await;
    kill_mid_turn(first, asked).await;

    let editor = setup.editor().await;
    take_back(&setup, &editor, &sid, None).await;
    std::fs::write(&release, b"").unwrap();
    turn_ended(&editor, &sid, STEP * 4)
        .await
        .expect("the turn's end");
    let (text, seqs) = updates_of(&editor, &sid);
    let expected: String = (1..=4000).map(|i| format!("{i}\n")).collect();
    assert!(
        text.starts_with(&expected),
        "every chunk once, in order: {} characters, the first {} expected; starts {:?}",
        text.len(),
        expected.len(),
        &text[..text.len().min(40)]
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    let prompts: Vec<Value> = editor
        .received()
        .into_iter()
        .filter(|m| {
            m.method() == "session/update"
                && m.params()["sessionId"] == sid.as_str()
                && m.params()["update"]["sessionUpdate"] == "user_message_chunk"
        })
        .map(|m| m.params()["update"]["content"]["text"].clone())
        .collect();
    assert_eq!(prompts, [json!("count")], "the prompt once");
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(a_forwarder_ended_by_any_signal_leaves_its_session_and_turn_running);

/// R-DAEMON-4: a forwarder ended by SIGTERM, SIGHUP or SIGKILL (a window closed,
/// its terminal gone, an extension host killed) detaches its session without stopping it:
/// the turn it was running goes on in the daemon, on the same agent, and the next editor
/// takes the session back with that turn's answer (replayed live, or already in the
/// transcript when the turn ended first).
async fn a_forwarder_ended_by_any_signal_leaves_its_session_and_turn_running(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    // Every turn's two reply chunks come 2 s apart: each forwarder dies between them.
    setup
        .world
        .script(json!([{"method": "session/prompt", "action": {"kind": "delay", "ms": 2000}}]));
    let mut editor = setup.editor().await;
    let sid = new_session(&setup, &editor).await;
    let pgid = setup.status()["sessions"][0]["agentPgid"].as_i64().unwrap();
    for (n, signal) in [libc::SIGTERM, libc::SIGHUP, libc::SIGKILL]
        .into_iter()
        .enumerate()
    {
        let text = format!("turn {n}");
        let mark = editor.mark();
        let asked = prompt_in_background(&editor, &sid, &text);
        first_agent_chunk(&editor, mark)
            .await
            .expect("the turn streams");
        editor
            .signal(signal, STEP)
            .await
            .unwrap_or_else(|e| panic!("the forwarder ends on signal {signal}: {e}"));
        assert!(asked.await.unwrap().is_err(), "signal {signal}: no answer");
        let status = setup.status();
        assert_eq!(
            status["sessions"][0]["agentPgid"].as_i64(),
            Some(pgid),
            "signal {signal}: the session and its agent stay: {status}"
        );

        let next = setup.editor().await;
        take_back(&setup, &next, &sid, None).await;
        let answer = format!("echo: {text}");
        let in_transcript = next.received().iter().any(|m| {
            m.method() == "session/restored"
                && m.params()["snapshot"]["chatTurns"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["text"] == answer.as_str()))
        });
        if !in_transcript {
            next.wait_for(
                0,
                "session/turnEnded",
                |p| p["sessionId"] == sid.as_str() && p["stopReason"] == "end_turn",
                STEP,
            )
            .await
            .unwrap_or_else(|| panic!("signal {signal}: the turn ends for the next editor"));
            let (streamed, _) = updates_of(&next, &sid);
            assert_eq!(streamed, answer, "signal {signal}: the whole turn, once");
        }
        editor = next;
    }
    let status = setup.status();
    assert_eq!(status["sessions"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(status["sessions"][0]["agentPgid"].as_i64(), Some(pgid));
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    assert!(processes_in_group(pgid as i32).is_empty(), "no agent left");
}

with_either_daemon!(two_editors_one_turn_at_a_time_and_cancel_from_either);

/// R-DAEMON-5 with two editors on one session: the one that did not prompt sees the prompt
/// and the turn's updates, its own prompt is refused naming the running turn, and its
/// cancel ends the other's turn; both learn how the turn ended.
async fn two_editors_one_turn_at_a_time_and_cancel_from_either(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    // A minute between reply chunks: the turn runs until it is cancelled.
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [1], "action": {"kind": "delay", "ms": 60000}}]));
    let a = setup.editor().await;
    let sid = new_session(&setup, &a).await;
    let b = setup.editor().await;
    take_back(&setup, &b, &sid, None).await;
    let asked = prompt_in_background(&a, &sid, "a long one");
    // B sees A's prompt as a user message.
    let echo = b
        .wait_for(
            0,
            "session/update",
            |p| p["update"]["sessionUpdate"] == "user_message_chunk",
            STEP,
        )
        .await
        .expect("the prompt reaches the other editor");
    assert_eq!(echo.params()["update"]["content"]["text"], "a long one");
    let refused = b
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "me too"}]}),
        )
        .await
        .expect_err("refused while A's turn runs");
    match refused {
        tether::lsp_client::RpcError::Response { code, data, .. } => {
            assert_eq!(code, -32803);
            let data = data.unwrap();
            assert_eq!(data["kind"], "turnRunning", "{data}");
            assert_eq!(data["prompt"], "a long one");
            assert_eq!(data["turnStartSeq"], echo.params()["seq"], "{data}");
        }
        other => panic!("expected an error answer, got {other:?}"),
    }
    let listed = |editor: &Editor| {
        let (editor, ws, sid) = (editor.client().clone(), setup.world.ws(), sid.clone());
        async move {
            let list = editor
                .request("session/list", json!({"workspace": ws}))
                .await
                .unwrap();
            list["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["sessionId"] == sid.as_str())
                .cloned()
                .unwrap_or_else(|| panic!("listed: {list}"))
        }
    };
    let entry = listed(&b).await;
    assert_eq!(
        (&entry["live"], &entry["turnRunning"], &entry["clients"]),
        (&json!(true), &json!(true), &json!(2)),
        "{entry}"
    );
    b.notify("session/cancel", json!({"sessionId": sid}))
        .await
        .unwrap();
    let answered = tokio::time::timeout(STEP, asked)
        .await
        .expect("A's turn ends after B's cancel")
        .unwrap()
        .expect("an answer");
    assert_eq!(answered["stopReason"], "cancelled");
    for editor in [&a, &b] {
        let ended = turn_ended(editor, &sid, STEP)
            .await
            .expect("both learn the turn's end");
        assert_eq!(ended.params()["stopReason"], "cancelled");
    }
    a.shutdown(STEP).await.unwrap();
    let entry = listed(&b).await;
    assert_eq!(
        (&entry["live"], &entry["turnRunning"], &entry["clients"]),
        (&json!(true), &json!(false), &json!(1)),
        "the turn ended and A detached: {entry}"
    );
    let status = setup.status();
    assert_eq!(status["sessions"][0]["clients"], 1, "{status}");
    b.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(a_permission_question_waits_for_the_next_editor_and_the_first_answer_wins);

/// R-DAEMON-6: a permission question outlives the editor it was asked of. Its editor quits
/// before answering; the question is asked again of each editor that attaches; the first
/// answer wins, the agent gets it, and the other editor is told it was resolved.
async fn a_permission_question_waits_for_the_next_editor_and_the_first_answer_wins(
    kind: DaemonKind,
) {
    let setup = Setup::new(kind).await;
    setup.world.script(
        json!([{"method": "session/prompt", "calls": [1], "action": {"kind": "permission"}}]),
    );
    let undecided = Answers {
        hold_permission: true,
        ..Answers::default()
    };
    let first = setup.editor_answering(undecided.clone()).await;
    let sid = new_session(&setup, &first).await;
    let asked = prompt_in_background(&first, &sid, "may I?");
    let question = first
        .wait_for(
            0,
            "session/requestPermission",
            |p| p["sessionId"] == sid.as_str(),
            STEP,
        )
        .await
        .expect("the question reaches the first editor");
    let question_seq = question.params()["questionSeq"].clone();
    assert!(question_seq.is_u64(), "{:?}", question.params());
    // The window goes away without answering.
    kill_mid_turn(first, asked).await;

    let resume = json!({"workspace": setup.world.ws(), "sessionId": sid});
    let watcher = setup.editor_answering(undecided).await;
    let r = watcher
        .request("session/resume", resume.clone())
        .await
        .unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    watcher
        .wait_for(
            0,
            "session/requestPermission",
            |p| p["questionSeq"] == question_seq,
            STEP,
        )
        .await
        .expect("the held question is asked of the next editor");
    let decider = setup
        .editor_answering(Answers {
            permission: Some("allow".into()),
            ..Answers::default()
        })
        .await;
    decider.request("session/resume", resume).await.unwrap();
    for editor in [&watcher, &decider] {
        let resolved = editor
            .wait_for(
                0,
                "session/permissionResolved",
                |p| p["questionSeq"] == question_seq,
                STEP,
            )
            .await
            .expect("every attached editor learns it was resolved");
        assert_eq!(resolved.params()["reason"], "answered");
        assert_eq!(resolved.params()["outcome"]["optionId"], "allow");
        let ended = turn_ended(editor, &sid, STEP)
            .await
            .expect("the turn's end reaches both");
        assert_eq!(ended.params()["stopReason"], "end_turn");
    }
    let (text, _) = updates_of(&decider, &sid);
    assert!(text.ends_with("permission: allow"), "{text:?}");
    watcher.shutdown(STEP).await.unwrap();
    decider.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// `(seq, n)` of the numbered chunks (`"17\n"`, from the scripted `stream` action) an
/// editor received for `sid`, in arrival order.
fn numbered(editor: &Editor, sid: &str) -> Vec<(u64, u64)> {
    editor
        .received()
        .iter()
        .filter(|r| r.method() == "session/update" && r.params()["sessionId"] == sid)
        .filter(|r| r.params()["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|r| {
            let text = r.params()["update"]["content"]["text"].as_str()?;
            let n = text.strip_suffix('\n')?.parse().ok()?;
            Some((r.params()["seq"].as_u64().expect("a seq"), n))
        })
        .collect()
}

with_either_daemon!(a_hundred_detach_reattach_cycles_mid_turn_lose_and_repeat_nothing);

/// One hundred editors in turn attach mid-turn and are killed (SIGKILL of their forwarder)
/// while the agent streams 1,000 updates a second; each resumes after the last `seq` its
/// predecessor recorded. Together they receive every update exactly once and in order, as
/// does an editor attached throughout; the agent process is the same from start to end.
async fn a_hundred_detach_reattach_cycles_mid_turn_lose_and_repeat_nothing(kind: DaemonKind) {
    const CYCLES: usize = 100;
    let setup = Setup::new(kind).await;
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [1],
        "action": {"kind": "stream", "count": 600_000, "perSecond": 1000}}]));
    let observer = setup.editor().await;
    let sid = new_session(&setup, &observer).await;
    let pgid = setup.status()["sessions"][0]["agentPgid"].as_i64().unwrap();
    let numbered_after = |after: u64| {
        move |p: &Value| {
            p["update"]["sessionUpdate"] == "agent_message_chunk"
                && p["seq"].as_u64().is_some_and(|s| s > after)
                && p["update"]["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.ends_with('\n'))
        }
    };

    // The first editor sends the prompt; the turn goes on after it dies.
    let mut editor = setup.editor().await;
    let _orphaned = prompt_in_background(&editor, &sid, "count");
    let mut collected: Vec<(u64, u64)> = Vec::new();
    let mut after = 0;
    for cycle in 0..=CYCLES {
        if cycle > 0 {
            let r = editor
                .request(
                    "session/resume",
                    json!({"workspace": setup.world.ws(), "sessionId": sid, "afterSeq": after}),
                )
                .await
                .unwrap();
            assert_eq!(r["outcome"], "resumed", "cycle {cycle}: {r}");
        }
        if cycle == CYCLES {
            break;
        }
        editor
            .wait_for(0, "session/update", numbered_after(after), STEP)
            .await
            .unwrap_or_else(|| panic!("cycle {cycle}: no new update after seq {after}"));
        // What the editor has when it dies; anything still in flight to it is replayed to
        // the next one.
        collected.extend(numbered(&editor, &sid));
        after = collected.last().map_or(after, |(seq, _)| *seq);
        editor.signal(libc::SIGKILL, STEP).await.unwrap();
        editor = setup.editor().await;
    }
    // The last editor stops the turn and sees it end.
    editor
        .notify("session/cancel", json!({"sessionId": sid}))
        .await
        .unwrap();
    for watcher in [&editor, &observer] {
        let ended = turn_ended(watcher, &sid, STEP)
            .await
            .expect("the turn's end");
        assert_eq!(ended.params()["stopReason"], "cancelled");
    }
    collected.extend(numbered(&editor, &sid));

    let last = collected.last().expect("updates").1;
    eprintln!("{CYCLES} editors in turn received updates 1..={last}");
    let numbers: Vec<u64> = collected.iter().map(|(_, n)| *n).collect();
    assert_eq!(
        numbers,
        (1..=last).collect::<Vec<_>>(),
        "the editors in turn got every update once, in order"
    );
    assert!(
        collected.windows(2).all(|w| w[0].0 < w[1].0),
        "seqs increase"
    );
    let seen: Vec<u64> = numbered(&observer, &sid).iter().map(|(_, n)| *n).collect();
    assert_eq!(seen, numbers, "the editor attached throughout got the same");
    assert!(last < 600_000, "the cancel stopped the stream");
    let status = setup.status();
    assert_eq!(
        status["sessions"][0]["agentPgid"].as_i64(),
        Some(pgid),
        "the same agent throughout: {status}"
    );
    observer.shutdown(STEP).await.unwrap();
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(agents_get_the_environment_of_the_editor_they_are_started_for);

/// R-DAEMON-7: an agent the daemon starts for an editor gets that editor's environment (as
/// its forwarder sent it), not the daemon's, which the first editor's forwarder started.
async fn agents_get_the_environment_of_the_editor_they_are_started_for(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    let first = setup.editor().await;
    let second = setup
        .editor_with(Answers::default(), &[("TETHER_T_EDITOR", "the-second-one")])
        .await;
    new_session(&setup, &second).await;
    let status = setup.status();
    let agent = status["sessions"][0]["agentPgid"]
        .as_i64()
        .expect("an agent");
    let environ = |pid: i64| {
        let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
        raw.split(|b| *b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect::<Vec<_>>()
    };
    assert!(
        environ(agent).contains(&"TETHER_T_EDITOR=the-second-one".to_owned()),
        "the agent has its editor's environment"
    );
    let daemon = setup.daemon_pid();
    assert!(
        !environ(i64::from(daemon))
            .iter()
            .any(|v| v.starts_with("TETHER_T_EDITOR=")),
        "the daemon itself does not"
    );
    first.shutdown(STEP).await.unwrap();
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// R-DAEMON-9: a daemon started from a folder that is deleted while it runs (an editor's
/// project, a temporary clone) has left it for its runtime folder, and the agents it starts
/// run in their session's workspace, not in the deleted folder (where Node.js agents exit
/// at start-up with `ENOENT … uv_cwd`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_whose_start_folder_is_deleted_starts_agents_in_their_workspace() {
    use std::io::BufRead;
    let setup = Setup::new(DaemonKind::Process).await;
    let doomed = setup.world.path().join("deleted-project");
    std::fs::create_dir_all(&doomed).unwrap();
    let mut daemon = Command::new(tether_bin())
        .args(["daemon", "run", "--idle-secs", "30", "--runtime-dir"])
        .arg(&setup.runtime)
        .current_dir(&doomed)
        .env("TETHER_LOG", "debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tether daemon run starts");
    let mut ready = String::new();
    std::io::BufReader::new(daemon.stdout.take().unwrap())
        .read_line(&mut ready)
        .expect("the daemon says ready");
    assert_eq!(ready.trim(), "ready");
    std::fs::remove_dir(&doomed).expect("the start folder is deleted");

    let cwd_of = |pid: i64| std::fs::read_link(format!("/proc/{pid}/cwd")).expect("cwd link");
    let daemon_pid = i64::from(daemon.id());
    assert_eq!(
        cwd_of(daemon_pid),
        std::fs::canonicalize(&setup.runtime).unwrap(),
        "the daemon works in its runtime folder"
    );
    let editor = setup.editor().await;
    let sid = new_session(&setup, &editor).await;
    assert_eq!(prompt(&editor, &sid, "hi").await["stopReason"], "end_turn");
    let status = setup.status();
    assert_eq!(
        status["pid"].as_i64(),
        Some(daemon_pid),
        "the forwarder reached it"
    );
    let agent = status["sessions"][0]["agentPgid"]
        .as_i64()
        .expect("an agent");
    assert_eq!(
        cwd_of(agent),
        std::fs::canonicalize(setup.world.ws()["root"].as_str().unwrap()).unwrap(),
        "the agent runs in its session's workspace"
    );
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    assert!(daemon.wait().expect("the daemon exits").success());
    setup.finish().await;
}

/// Resolves when process `pid` (not a child of ours) has exited: a pidfd becomes readable
/// at its exit (pidfd_open(2), Linux 5.3).
async fn process_exit(pid: i32) {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return; // Already gone (ESRCH).
    }
    // SAFETY: `fd` is a descriptor pidfd_open just returned, owned by nobody else.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the `OwnedFd` is moved in and stays open, the same descriptor, for as long
    // as the `AsyncFd` lives.
    let fd = unsafe { tokio::io::unix::AsyncFd::register(owned) }
        .unwrap_or_else(|e| panic!("a pidfd registers: {e}"));
    let _ = fd.readable().await.expect("pidfd readable");
}

with_either_daemon!(an_abandoned_session_ends_after_its_ttl_then_the_daemon_exits);

/// R-PROC-2 in the daemon: a session with no editor and no running turn is stopped after
/// `connectionTtlSecs` (its agent shut down), and the daemon, then with neither editors nor
/// sessions, exits after its idle time (in process: [`run`] returns); no process of ours is
/// left.
async fn an_abandoned_session_ends_after_its_ttl_then_the_daemon_exits(kind: DaemonKind) {
    let idle = match kind {
        DaemonKind::Process => Duration::from_secs(1),
        // Its idle time runs from its start, before the first forwarder reaches it (a
        // daemon process is reached at once by the forwarder that started it): enough for
        // a forwarder to start on a loaded machine.
        DaemonKind::InProcess => Duration::from_secs(3),
    };
    let mut setup = Setup::with_idle(kind, idle).await;
    let mut options = setup.world.options();
    options["connectionTtlSecs"] = json!(1);
    let editor = setup
        .editor_configured(Answers::default(), &[], options, json!({}))
        .await;
    let sid = new_session(&setup, &editor).await;
    assert_eq!(prompt(&editor, &sid, "hi").await["stopReason"], "end_turn");
    let pgid = setup.status()["sessions"][0]["agentPgid"].as_i64().unwrap() as i32;
    let daemon = setup.daemon_pid();
    editor.shutdown(STEP).await.unwrap();
    let exited = setup.daemon_gone(daemon).await;
    assert!(
        exited,
        "the session ends after its TTL, then the daemon exits; its log:\n{}",
        setup.logs()
    );
    assert!(processes_in_group(pgid).is_empty(), "its agent is gone");
    setup.finish().await;
}

/// R-DAEMON-8, fifty times: the daemon is killed (SIGKILL) while a turn streams. Each time
/// the editor's running prompt fails as `agentCrashed` (the daemon restarted), its forwarder
/// starts a new daemon and takes the session back (`session/reattached`, resumed through
/// `session/load` on a new agent), the old agent is gone, every turn answered before the
/// kill is in the restored transcript, and the next prompt works. At the end no daemon and
/// no agent of the test is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_turn_fifty_times_is_replaced_and_nothing_acknowledged_is_lost() {
    const CYCLES: u64 = 50;
    let setup = Setup::new(DaemonKind::Process).await;
    // Prompts alternate: an answered one ("ack N"), then one that streams until the kill.
    let streaming: Vec<u64> = (1..=CYCLES).map(|n| 2 * n).collect();
    setup.world.script(json!([{
        "method": "session/prompt",
        "calls": streaming,
        "action": {"kind": "stream", "count": 1_000_000, "perSecond": 1000},
    }]));
    let editor = setup.editor().await;
    let sid = new_session(&setup, &editor).await;
    let mut daemons = Vec::new();
    let (mut turns, mut window) = (0, Value::Null);
    for n in 1..=CYCLES {
        let ack = format!("ack {n}");
        assert_eq!(
            prompt(&editor, &sid, &ack).await["stopReason"],
            "end_turn",
            "cycle {n}"
        );
        let status = setup.status();
        let daemon = status["pid"].as_i64().expect("a daemon pid") as i32;
        let agent = status["sessions"][0]["agentPgid"]
            .as_i64()
            .unwrap_or_else(|| panic!("cycle {n}: an agent: {status}")) as i32;
        assert!(!daemons.contains(&daemon), "a new daemon each time");
        daemons.push(daemon);
        let mark = editor.mark();
        let client = editor.client().clone();
        let long =
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": format!("long {n}")}]});
        let asked = tokio::spawn(async move { client.request("session/prompt", long).await });
        first_agent_chunk(&editor, mark)
            .await
            .unwrap_or_else(|| panic!("cycle {n}: the turn streams"));
        // SAFETY: kill sends a signal to a pid this test read from the daemon's status.
        assert_eq!(unsafe { libc::kill(daemon, libc::SIGKILL) }, 0);

        let failed = asked.await.unwrap().expect_err("the running prompt fails");
        let tether::lsp_client::RpcError::Response { data, .. } = &failed else {
            panic!("cycle {n}: an error answer, not {failed:?}");
        };
        let data = data.clone().unwrap_or_default();
        assert_eq!(data["kind"], "agentCrashed", "cycle {n}: {failed:?}");
        assert_eq!(data["daemonRestarted"], true, "cycle {n}: {failed:?}");
        let back = editor
            .wait_for(
                mark,
                "session/reattached",
                |p| p["sessionId"] == sid.as_str(),
                STEP,
            )
            .await
            .unwrap_or_else(|| {
                let seen: Vec<String> = editor.received()[mark..]
                    .iter()
                    .filter(|r| r.method() != "session/update")
                    .map(|r| format!("{} {}", r.method(), r.params()))
                    .collect();
                panic!(
                    "cycle {n}: the session is taken back; seen {seen:#?}\n{}",
                    setup.logs()
                )
            });
        assert_eq!(
            back.params()["result"]["outcome"],
            "resumed",
            "cycle {n}: {}",
            back.params()
        );
        assert_eq!(back.params()["result"]["sessionId"], sid.as_str());
        let restored = editor
            .wait_for(
                mark,
                "session/restored",
                |p| p["sessionId"] == sid.as_str(),
                STEP,
            )
            .await
            .unwrap_or_else(|| panic!("cycle {n}: the cache is drawn again"));
        let snapshot = &restored.params()["snapshot"];
        let total = snapshot["chatTurnsBase"].as_u64().unwrap_or(0)
            + snapshot["chatTurns"]
                .as_array()
                .map_or(0, |t| t.len() as u64);
        assert!(
            total >= turns && snapshot.to_string().contains(&format!("\"{ack}\"")),
            "cycle {n}: the restored transcript ({total} turns, {turns} before) has {ack:?}"
        );
        turns = total;
        window = restored.params().clone();
        tokio::time::timeout(STEP, process_exit(agent))
            .await
            .unwrap_or_else(|_| panic!("cycle {n}: the lost daemon's agent is gone"));
        tokio::time::timeout(STEP, process_exit(daemon))
            .await
            .unwrap_or_else(|_| panic!("cycle {n}: the old daemon is gone"));
    }
    // Every answered turn is there: the last restored window and the history before it.
    let older = editor
        .request(
            "session/history",
            json!({"workspace": setup.world.ws(), "sessionId": sid,
                   "beforeTurn": window["snapshot"]["chatTurnsBase"], "limit": 500}),
        )
        .await
        .expect("history");
    let all = format!("{older}{window}");
    for n in 1..=CYCLES {
        assert!(all.contains(&format!("\"ack {n}\"")), "ack {n} is kept");
    }
    assert_eq!(
        prompt(&editor, &sid, "after all that").await["stopReason"],
        "end_turn"
    );
    let last = setup.status()["sessions"][0]["agentPgid"].as_i64().unwrap() as i32;
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    assert!(setup.daemon_processes().is_empty(), "no daemon is left");
    assert!(processes_in_group(last).is_empty(), "no agent is left");
    for pid in daemons {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "daemon {pid} is gone"
        );
    }
    setup.finish().await;
}

with_either_daemon!(the_ttl_spares_a_session_an_editor_is_attached_to);

/// R-PROC-2 counts only sessions no editor is attached to: of two idle sessions in one hub,
/// the one whose editor left is stopped after the TTL, while the older one, whose editor is
/// still attached, keeps its agent (the reaper would have taken it first, being idle
/// longer).
async fn the_ttl_spares_a_session_an_editor_is_attached_to(kind: DaemonKind) {
    let setup = Setup::new(kind).await;
    let mut options = setup.world.options();
    options["connectionTtlSecs"] = json!(1);
    let connect = || setup.editor_configured(Answers::default(), &[], options.clone(), json!({}));
    let watching = connect().await;
    let kept = new_session(&setup, &watching).await;
    let leaving = connect().await;
    let second = setup.world.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    let other = leaving
        .request("session/resume", json!({"workspace": {"root": second}}))
        .await
        .expect("a second session")["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = setup.status();
    let pgid_of = |sid: &str| {
        status["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == sid)
            .and_then(|s| s["agentPgid"].as_i64())
            .unwrap_or_else(|| panic!("{sid} is live: {status}")) as i32
    };
    let (kept_pgid, other_pgid) = (pgid_of(&kept), pgid_of(&other));
    leaving.shutdown(STEP).await.unwrap();
    tokio::time::timeout(STEP, process_exit(other_pgid))
        .await
        .unwrap_or_else(|_| panic!("the detached session ends after its TTL\n{}", setup.logs()));
    assert!(
        !processes_in_group(kept_pgid).is_empty(),
        "the attached session keeps its agent"
    );
    let status = setup.status();
    assert!(
        status["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == kept.as_str()),
        "{status}"
    );
    watching.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

with_either_daemon!(
    an_editor_behind_the_kept_events_gets_the_transcript_again_and_is_told_what_is_cut
);

/// An editor whose `afterSeq` is older than the events the daemon keeps (the last
/// `EVENT_LOG_CAP`, 10,000, of a session) cannot be sent only what it missed: it is sent
/// the transcript of the finished turns again (`stale: false`), then what is kept of the
/// running turn, in order and once, and is told (`window/showMessage`) that the turn's
/// first updates are not shown.
async fn an_editor_behind_the_kept_events_gets_the_transcript_again_and_is_told_what_is_cut(
    kind: DaemonKind,
) {
    const COUNT: u64 = 12_000;
    // The stream pauses after 10,600 updates until the second editor has attached, so the
    // turn is still running when it does however slow the machine (with a time margin
    // instead, an editor slowed by parallel tests came back after the turn's end).
    const HOLD: u64 = 10_600;
    let setup = Setup::new(kind).await;
    let release = setup.world.path().join("release-the-stream");
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [2],
        "action": {"kind": "stream", "count": COUNT, "perSecond": 4000,
                   "hold": {"after": HOLD, "until": release}}}]));
    let observer = setup.editor().await;
    let sid = new_session(&setup, &observer).await;
    prompt(&observer, &sid, "first question").await;

    // The first editor draws the running turn's first update, then its window reloads.
    let first = setup.editor().await;
    take_back(&setup, &first, &sid, None).await;
    let mark = first.mark();
    let _orphaned = prompt_in_background(&first, &sid, "count");
    let chunk = first_agent_chunk(&first, mark)
        .await
        .expect("the turn's first chunk");
    let drawn = chunk.params()["seq"].as_u64().unwrap();
    first.signal(libc::SIGKILL, STEP).await.unwrap();
    // Meanwhile the turn goes on past what the daemon keeps.
    observer
        .wait_for(
            0,
            "session/update",
            |p| {
                p["update"]["content"]["text"]
                    .as_str()
                    .and_then(|t| t.trim_end().parse::<u64>().ok())
                    .is_some_and(|n| n > 10_500)
            },
            STEP,
        )
        .await
        .expect("the stream passes 10,500 updates");

    let second = setup.editor().await;
    take_back(&setup, &second, &sid, Some(drawn)).await;
    std::fs::write(&release, b"").unwrap();
    let ended = turn_ended(&second, &sid, STEP)
        .await
        .expect("the turn's end");
    assert_eq!(ended.params()["stopReason"], "end_turn");
    let restored: Vec<Value> = second
        .received()
        .iter()
        .filter(|m| m.method() == "session/restored")
        .map(|m| m.params().clone())
        .collect();
    assert_eq!(restored.len(), 1, "the transcript again: {restored:?}");
    assert_eq!(restored[0]["stale"], false);
    let texts: Vec<&str> = restored[0]["snapshot"]["chatTurns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first question", "echo: first question"]);
    let told = second
        .received()
        .iter()
        .filter(|m| m.method() == "window/showMessage")
        .filter_map(|m| m.params()["message"].as_str().map(str::to_owned))
        .find(|m| m.contains("first updates of the running turn"));
    assert!(
        told.as_deref().is_some_and(|m| m.contains(&sid)),
        "the editor is told the turn's start is not shown: {told:?}"
    );
    let got = numbered(&second, &sid);
    let numbers: Vec<u64> = got.iter().map(|(_, n)| *n).collect();
    let from = *numbers.first().expect("updates");
    assert!(
        from > drawn && from > 1,
        "the turn's first updates are gone: {from}"
    );
    assert_eq!(
        numbers,
        (from..=COUNT).collect::<Vec<_>>(),
        "what is kept, then live: every update once, in order"
    );
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "seqs increase");
    observer.shutdown(STEP).await.unwrap();
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// R-DAEMON-12: the newer-build copy's forwarder named `name` (`<world>/<name>/tether`, an
/// hour newer than the `tether` binary), as an editor initialized like [`Setup::editor`],
/// with `extra` in its environment.
async fn newer_editor(setup: &Setup, newer: &Path, extra: &[(&str, &str)]) -> Editor {
    setup
        .editor_of(
            newer.to_owned(),
            Answers::default(),
            extra,
            setup.world.options(),
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
}

/// The `session/reattached` of `sid` that `editor` receives after `mark`, asserted
/// `resumed` (its forwarder took the session back from a new daemon).
async fn reattached(setup: &Setup, editor: &Editor, sid: &str, mark: usize) -> Value {
    let back = editor
        .wait_for(mark, "session/reattached", |p| p["sessionId"] == sid, STEP)
        .await
        .unwrap_or_else(|| panic!("session {sid} is taken back\n{}", setup.logs()));
    assert_eq!(
        back.params()["result"]["outcome"],
        "resumed",
        "{}",
        back.params()
    );
    back.params().clone()
}

/// Waits (at most [`STEP`]) for the daemon log of `setup`'s runtime folder to contain
/// `needle`: a decision the daemon logs.
async fn daemon_log_says(setup: &Setup, needle: &str) -> String {
    let log = setup
        .runtime
        .join(format!("tether-{}.daemon.log", daemon_key()));
    let deadline = std::time::Instant::now() + STEP;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon log never said {needle:?}:\n{text}"
        );
        // The log is a file another process appends to: read again shortly.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `session/update`s of `sid` that `editor` received from index `from` on (agent text,
/// `seq`s): what one daemon sent.
fn updates_from(editor: &Editor, sid: &str, from: usize, to: usize) -> (String, Vec<u64>) {
    let mut text = String::new();
    let mut seqs = Vec::new();
    for r in &editor.received()[from..to] {
        if r.method() == "session/update" && r.params()["sessionId"] == sid {
            seqs.push(r.params()["seq"].as_u64().expect("seq"));
            if r.params()["update"]["sessionUpdate"] == "agent_message_chunk" {
                text.push_str(
                    r.params()["update"]["content"]["text"]
                        .as_str()
                        .unwrap_or(""),
                );
            }
        }
    }
    (text, seqs)
}

/// R-DAEMON-12, a session resumed live across two copies of the binary: an editor of a
/// newer copy reaches the daemon of the older one, which has no turn running, so it hands
/// over at once: the old daemon exits, the newer copy's daemon runs, the first editor's
/// forwarder takes its session back from it (`session/reattached`, the finished turn in the
/// transcript), and both editors then share the session live in the new daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_binary_takes_an_idle_daemon_over_and_the_session_resumes_live_in_it() {
    let setup = Setup::new(DaemonKind::Process).await;
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    assert_eq!(
        prompt(&first, &sid, "before").await["stopReason"],
        "end_turn"
    );
    let status = setup.status();
    let old = status["pid"].as_i64().unwrap() as i32;
    let old_agent = status["sessions"][0]["agentPgid"].as_i64().unwrap() as i32;
    let newer = copy_of_tether(&setup, "newer", 3600);
    let mark = first.mark();

    let second = newer_editor(&setup, &newer, &[]).await;
    tokio::time::timeout(STEP, process_exit(old))
        .await
        .unwrap_or_else(|_| panic!("the old daemon exits\n{}", setup.logs()));
    let back = reattached(&setup, &first, &sid, mark).await;
    assert_eq!(back["result"]["sessionId"], sid.as_str(), "{back}");
    let restored = first
        .wait_for(
            mark,
            "session/restored",
            |p| p["sessionId"] == sid.as_str(),
            STEP,
        )
        .await
        .expect("the transcript is drawn again");
    assert!(
        restored.params()["snapshot"]
            .to_string()
            .contains("echo: before"),
        "the finished turn is kept: {}",
        restored.params()
    );
    assert!(
        processes_in_group(old_agent).is_empty(),
        "the old agent is gone"
    );
    let status = setup.status();
    assert_ne!(status["pid"].as_i64(), Some(i64::from(old)), "{status}");
    assert_eq!(
        std::fs::canonicalize(status["exe"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&newer).unwrap(),
        "the newer binary's daemon runs: {status}"
    );
    assert_eq!(status["build"], build_id_of(&newer).as_str(), "{status}");

    take_back(&setup, &second, &sid, None).await;
    let seen = first.mark();
    assert_eq!(
        prompt(&second, &sid, "after").await["stopReason"],
        "end_turn"
    );
    first
        .wait_for(
            seen,
            "session/turnEnded",
            |p| p["sessionId"] == sid.as_str(),
            STEP,
        )
        .await
        .expect("the first editor sees the turn too");
    let (text, _) = updates_from(&first, &sid, seen, first.received().len());
    assert_eq!(text, "echo: after", "live in the new daemon, once");
    let daemons = setup.daemon_processes();
    assert_eq!(daemons.len(), 1, "one daemon: {daemons:?}");

    first.shutdown(STEP).await.unwrap();
    second.shutdown(STEP).await.unwrap();
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// R-DAEMON-12's done-when: a newer build takes over mid-turn with two editors attached.
/// The old daemon holds new turns and waits for the running one, which completes (its
/// prompt answered `end_turn`), then hands over; both editors' forwarders take the session
/// back from the newer build's daemon. Each editor saw every update of the turn exactly once,
/// in order, and none again after the takeover; a prompt the newer editor sent during the
/// drain was held and then answered as one to resend; the session then runs turns live for
/// both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_binary_takes_over_mid_turn_with_two_editors_attached() {
    const COUNT: u64 = 300;
    let setup = Setup::new(DaemonKind::Process).await;
    let release = setup.world.path().join("release-the-turn");
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [1],
        "action": {"kind": "stream", "count": COUNT, "perSecond": 1000,
                   "hold": {"after": COUNT / 2, "until": release}}}]));
    let first = setup.editor().await;
    let sid = new_session(&setup, &first).await;
    let second = setup.editor().await;
    take_back(&setup, &second, &sid, None).await;
    let status = setup.status();
    let old = status["pid"].as_i64().unwrap() as i32;
    let old_build = status["build"].clone();
    assert_eq!(
        status.get("tookOverFrom"),
        None,
        "started by a forwarder: {status}"
    );
    let old_agent = status["sessions"][0]["agentPgid"].as_i64().unwrap() as i32;
    let (m1, m2) = (first.mark(), second.mark());
    let asked = prompt_in_background(&first, &sid, "count");
    first_agent_chunk(&first, m1)
        .await
        .expect("the turn streams");
    first_agent_chunk(&second, m2)
        .await
        .expect("the other editor sees it");

    // A newer build's editor arrives mid-turn: the old daemon serves it and drains.
    let newer = copy_of_tether(&setup, "newer", 3600);
    let third = newer_editor(&setup, &newer, &[]).await;
    let status = setup.status();
    assert_eq!(
        status["drainingFor"].as_str(),
        Some(build_id_of(&newer).as_str()),
        "the old daemon drains for the newer build: {status}"
    );
    assert_eq!(status["pid"].as_i64(), Some(i64::from(old)), "{status}");
    assert_eq!(status["sessions"][0]["turnRunning"], true, "{status}");
    // A prompt sent while the daemon drains waits at its door, and is answered once the
    // daemon has handed over: no turn ran, send it again (never `turnRunning`).
    take_back(&setup, &third, &sid, None).await;
    let held = prompt_in_background(&third, &sid, "held at the door");

    std::fs::write(&release, b"").unwrap();
    let answer = asked
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("the turn completes: {e:?}\n{}", setup.logs()));
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    tokio::time::timeout(STEP, process_exit(old))
        .await
        .unwrap_or_else(|_| panic!("the old daemon exits\n{}", setup.logs()));
    let expected: String = (1..=COUNT).map(|i| format!("{i}\n")).collect();
    for (name, editor, mark) in [("first", &first, m1), ("second", &second, m2)] {
        let back = editor
            .wait_for(
                mark,
                "session/reattached",
                |p| p["sessionId"] == sid.as_str(),
                STEP,
            )
            .await
            .unwrap_or_else(|| panic!("{name}: the session is taken back\n{}", setup.logs()));
        assert_eq!(
            back.params()["result"]["outcome"],
            "resumed",
            "{name}: {}",
            back.params()
        );
        let received = editor.received();
        // The old daemon's last word on the session is the turn's end; what follows comes
        // from the new daemon (its resume's updates, then `session/reattached`).
        let ends: Vec<usize> = (mark..received.len())
            .filter(|&i| {
                received[i].method() == "session/turnEnded"
                    && received[i].params()["sessionId"] == sid.as_str()
            })
            .collect();
        assert_eq!(ends.len(), 1, "{name}: the turn's end once: {ends:?}");
        let at = ends[0] + 1;
        let reattached_at = received
            .iter()
            .position(|r| r.method() == "session/reattached")
            .unwrap();
        assert!(
            at <= reattached_at,
            "{name}: the turn ended before the takeover"
        );
        let (text, seqs) = updates_from(editor, &sid, mark, at);
        assert!(
            text.strip_prefix(expected.as_str()) == Some("echo: count"),
            "{name}: every chunk once, in order, then the reply ({} characters): {:?}…{:?}",
            text.len(),
            &text[..text.len().min(20)],
            &text[text.len().saturating_sub(40)..]
        );
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "{name}: in order: {seqs:?}"
        );
        // After it, the new daemon's resume: the transcript (`session/restored`) and the
        // history its agent's `session/load` replays (`replay: true`, drawn from the
        // transcript, not appended); no live update of the turn again.
        let live_again: Vec<&Value> = received[at..]
            .iter()
            .filter(|r| {
                r.method() == "session/update"
                    && r.params()["sessionId"] == sid.as_str()
                    && r.params()["replay"] != true
                    && r.params()["update"]["sessionUpdate"]
                        .as_str()
                        .is_some_and(|u| u.ends_with("_message_chunk"))
            })
            .map(tether::editor::Received::params)
            .collect();
        assert_eq!(
            live_again,
            Vec::<&Value>::new(),
            "{name}: nothing of the turn live again"
        );
        let restored = received[at..]
            .iter()
            .find(|r| r.method() == "session/restored" && r.params()["sessionId"] == sid.as_str())
            .unwrap_or_else(|| panic!("{name}: the transcript again"));
        assert!(
            restored.params()["snapshot"]
                .to_string()
                .contains("echo: count"),
            "{name}: the completed turn is persisted: {}",
            restored.params()
        );
    }
    let held = held
        .await
        .unwrap()
        .expect_err("the held prompt ran no turn");
    let tether::lsp_client::RpcError::Response { data, .. } = &held else {
        panic!("an error answer, not {held:?}");
    };
    let data = data.clone().unwrap_or_default();
    assert_eq!(data["kind"], "agentCrashed", "{held:?}");
    assert_eq!(data["daemonRestarted"], true, "{held:?}");
    assert!(
        processes_in_group(old_agent).is_empty(),
        "the old agent is gone"
    );
    let status = setup.status();
    assert_eq!(
        std::fs::canonicalize(status["exe"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&newer).unwrap(),
        "the newer binary's daemon runs: {status}"
    );
    assert_eq!(
        status["tookOverFrom"],
        json!({"pid": old, "build": old_build}),
        "the old daemon started it as its successor: {status}"
    );
    assert_eq!(
        status["sessions"].as_array().map(Vec::len),
        Some(1),
        "one live session in the new daemon: {status}"
    );
    // The session goes on in the new daemon, live for both editors.
    let seen = second.mark();
    assert_eq!(prompt(&first, &sid, "next").await["stopReason"], "end_turn");
    second
        .wait_for(
            seen,
            "session/turnEnded",
            |p| p["sessionId"] == sid.as_str(),
            STEP,
        )
        .await
        .expect("the second editor sees the next turn");
    let (text, _) = updates_from(&second, &sid, seen, second.received().len());
    assert_eq!(text, "echo: next");

    for editor in [first, second, third] {
        editor.shutdown(STEP).await.unwrap();
    }
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}

/// R-DAEMON-12's bound: a turn that outlives the drain (1 s here) makes the old daemon refuse
/// the takeover, never cut the turn: the newer editor is served by it, its prompt held at the
/// door is let through once refused (and then meets the running turn), the turn completes.
/// The next connection of a newer build asks again, and with no turn running it takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_is_refused_while_a_turn_outlives_the_drain_then_a_later_one_succeeds() {
    let setup = Setup::new(DaemonKind::Process).await;
    let release = setup.world.path().join("release-the-turn");
    setup
        .world
        .script(json!([{"method": "session/prompt", "calls": [1],
        "action": {"kind": "stream", "count": 100, "perSecond": 1000,
                   "hold": {"after": 50, "until": release}}}]));
    let first = setup
        .editor_of(
            tether_bin(),
            Answers::default(),
            &[("TETHER_DAEMON_DRAIN_SECS", "1")],
            setup.world.options(),
            json!({"tether": {"recoveryDialog": true}}),
        )
        .await;
    let sid = new_session(&setup, &first).await;
    let old = setup.status()["pid"].as_i64().unwrap() as i32;
    let mark = first.mark();
    let asked = prompt_in_background(&first, &sid, "count");
    first_agent_chunk(&first, mark)
        .await
        .expect("the turn streams");

    let newer = copy_of_tether(&setup, "newer", 3600);
    let third = newer_editor(&setup, &newer, &[]).await;
    take_back(&setup, &third, &sid, None).await;
    // Held at the door while the daemon drains, then let through once it refuses: it meets
    // the running turn.
    let held = third
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "me too"}]}),
        )
        .await
        .expect_err("a turn runs");
    let tether::lsp_client::RpcError::Response { data, .. } = &held else {
        panic!("an error answer, not {held:?}");
    };
    assert_eq!(
        data.as_ref().map(|d| d["kind"].clone()),
        Some(json!("turnRunning")),
        "{held:?}"
    );
    let log = daemon_log_says(&setup, "takeover by build").await;
    assert!(log.contains("refused"), "{log}");
    assert!(
        log.find("holding new turns").unwrap() < log.find("takeover by build").unwrap(),
        "drained, then refused: {log}"
    );
    assert_eq!(
        setup.status()["pid"].as_i64(),
        Some(i64::from(old)),
        "still the old daemon"
    );

    std::fs::write(&release, b"").unwrap();
    let answer = asked.await.unwrap().expect("the turn completes");
    assert_eq!(answer["stopReason"], "end_turn");
    let (text, _) = updates_of(&first, &sid);
    let expected: String = (1..=100).map(|i| format!("{i}\n")).collect();
    assert!(text.starts_with(&expected), "the whole turn: {text:?}");

    // A later connection of a newer build asks again: no turn runs, it takes over.
    let mark = first.mark();
    let fourth = newer_editor(&setup, &newer, &[]).await;
    tokio::time::timeout(STEP, process_exit(old))
        .await
        .unwrap_or_else(|_| panic!("the old daemon exits\n{}", setup.logs()));
    reattached(&setup, &first, &sid, mark).await;
    let status = setup.status();
    assert_eq!(
        std::fs::canonicalize(status["exe"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&newer).unwrap(),
        "{status}"
    );
    for editor in [first, third, fourth] {
        editor.shutdown(STEP).await.unwrap();
    }
    assert_eq!(setup.daemon(&["stop"]).0, 0);
    setup.finish().await;
}
