//! A scripted editor: what the demo and the tests use to drive `tether serve` exactly as an
//! editor does, either in-process (the tower service served over an in-memory duplex pipe)
//! or as a real child process over its stdio.
//!
//! It records every notification the server sends and answers the server's requests by a
//! [`Answers`] policy (the button a user would click in `window/showMessageRequest`, the
//! option chosen for `session/requestPermission`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use crate::lsp_client::{Incoming, LspClient, RpcError};

/// How the scripted editor answers the server's requests.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// The action title chosen in `window/showMessageRequest` ("Try Again", "Start New
    /// Session"); `None` = dismiss (answer `null`).
    pub show_message_request: Option<String>,
    /// The option chosen for `session/requestPermission`: its `optionId`, or, when no
    /// option has that id, the first option of that `kind` (`allow_once`, …; agents name
    /// their options differently); `None` = `cancelled`.
    pub permission: Option<String>,
    /// Leave `session/requestPermission` unanswered (a user who has not decided yet).
    pub hold_permission: bool,
}

/// One message the server sent, with when it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// Time since the editor started.
    pub at: Duration,
    /// The message.
    pub message: Incoming,
}

impl Received {
    /// The method of the notification or request.
    #[must_use]
    pub fn method(&self) -> &str {
        match &self.message {
            Incoming::Notification { method, .. } | Incoming::Request { method, .. } => method,
        }
    }

    /// Its params.
    #[must_use]
    pub fn params(&self) -> &Value {
        match &self.message {
            Incoming::Notification { params, .. } | Incoming::Request { params, .. } => params,
        }
    }
}

#[derive(Default)]
struct Log {
    received: Mutex<Vec<Received>>,
    changed: Notify,
}

/// A read-only, cloneable view of what an [`Editor`] received.
#[derive(Clone)]
pub struct LogView {
    log: Arc<Log>,
}

impl LogView {
    /// Everything received so far.
    #[must_use]
    pub fn received(&self) -> Vec<Received> {
        self.log.received.lock().expect("log lock").clone()
    }
}

/// A connected scripted editor.
pub struct Editor {
    client: Arc<LspClient>,
    log: Arc<Log>,
    answers: Arc<Mutex<Answers>>,
    started: Instant,
    child: Option<Child>,
    server_task: Option<tokio::task::JoinHandle<()>>,
}

/// Where the server runs.
#[derive(Debug, Clone)]
pub enum ServerProcess {
    /// In this process: `build_service` served over an in-memory pipe.
    InProcess,
    /// A child process: this binary and its arguments (e.g. `["serve", "--stdio"]`).
    Binary {
        /// The `tether` executable.
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
        /// Discard the server's stderr (its log file still has everything).
        quiet: bool,
    },
}

impl Editor {
    /// Starts (or spawns) the server and connects to it, without initializing.
    ///
    /// # Errors
    /// The child process could not be spawned.
    pub fn connect(server: ServerProcess, answers: Answers) -> std::io::Result<Self> {
        let (client, incoming, child, server_task) = match server {
            ServerProcess::InProcess => {
                let (client_io, server_io) = tokio::io::duplex(1 << 20);
                let (server_read, server_write) = tokio::io::split(server_io);
                let task = tokio::spawn(crate::server::transport::serve(
                    server_read,
                    server_write,
                    crate::server::ServeOptions::default(),
                ));
                let (read, write) = tokio::io::split(client_io);
                let (client, incoming) = LspClient::new(read, write);
                (client, incoming, None, Some(task))
            }
            ServerProcess::Binary {
                program,
                args,
                env,
                quiet,
            } => {
                let mut child = Command::new(program)
                    .args(args)
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(if quiet {
                        Stdio::null()
                    } else {
                        Stdio::inherit()
                    })
                    .kill_on_drop(true)
                    .spawn()?;
                let stdin = child.stdin.take().expect("piped stdin");
                let stdout = child.stdout.take().expect("piped stdout");
                let (client, incoming) = LspClient::new(stdout, stdin);
                (client, incoming, Some(child), None)
            }
        };
        let log = Arc::new(Log::default());
        let answers = Arc::new(Mutex::new(answers));
        let started = Instant::now();
        tokio::spawn(pump(
            incoming,
            client.clone(),
            log.clone(),
            answers.clone(),
            started,
        ));
        Ok(Self {
            client,
            log,
            answers,
            started,
            child,
            server_task,
        })
    }

    /// `initialize` + `initialized` with the given options and `experimental` capabilities.
    ///
    /// # Errors
    /// The server refused `initialize`.
    pub async fn initialize(
        &self,
        initialization_options: Value,
        experimental: Value,
    ) -> Result<Value, RpcError> {
        let result = self
            .client
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "rootUri": null,
                    "capabilities": {"experimental": experimental, "window": {"workDoneProgress": true}},
                    "initializationOptions": initialization_options,
                    "clientInfo": {"name": "tether-scripted-editor"}
                }),
            )
            .await?;
        self.client
            .notify("initialized", json!({}))
            .await
            .map_err(|e| RpcError::Closed(e.to_string()))?;
        Ok(result)
    }

    /// Sends a request and waits for its answer.
    ///
    /// # Errors
    /// The server's error answer, or the connection closing.
    ///
    /// Returns once everything the server sent before its answer is in [`Self::received`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let answer = self.client.request(method, params).await;
        self.client.sync().await;
        answer
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// The server is gone.
    pub async fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        self.client.notify(method, params).await
    }

    /// The underlying client, for raw writes.
    #[must_use]
    pub fn client(&self) -> &Arc<LspClient> {
        &self.client
    }

    /// Changes how the server's requests are answered from now on.
    pub fn set_answers(&self, answers: Answers) {
        *self.answers.lock().expect("answers lock") = answers;
    }

    /// A read-only handle on what the server sent, usable while the editor is in use
    /// elsewhere.
    #[must_use]
    pub fn view(&self) -> LogView {
        LogView {
            log: self.log.clone(),
        }
    }

    /// Everything received so far.
    #[must_use]
    pub fn received(&self) -> Vec<Received> {
        self.log.received.lock().expect("log lock").clone()
    }

    /// The text of the agent's `agent_message_chunk` updates (`session/update`) received at
    /// or after index `from` whose params satisfy `pred` (e.g. one session's, not replayed),
    /// joined in arrival order.
    #[must_use]
    pub fn agent_text_since(&self, from: usize, pred: impl Fn(&Value) -> bool) -> String {
        let received = self.log.received.lock().expect("log lock");
        received
            .iter()
            .skip(from)
            .filter(|r| {
                r.method() == "session/update"
                    && r.params()["update"]["sessionUpdate"] == "agent_message_chunk"
                    && pred(r.params())
            })
            .filter_map(|r| r.params()["update"]["content"]["text"].as_str())
            .collect()
    }

    /// How many messages have been received so far (a mark for [`Self::wait_for`]).
    #[must_use]
    pub fn mark(&self) -> usize {
        self.log.received.lock().expect("log lock").len()
    }

    /// Waits until a message with `method` whose params satisfy `pred` arrives at or after
    /// index `from`; returns it, or `None` after `timeout`.
    pub async fn wait_for(
        &self,
        from: usize,
        method: &str,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.log.changed.notified();
            if let Some(found) = self
                .log
                .received
                .lock()
                .expect("log lock")
                .iter()
                .skip(from)
                .find(|r| r.method() == method && pred(r.params()))
            {
                return Some(found.clone());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    /// Time since the editor connected.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// `shutdown` + `exit`, then waits for the server to end (at most `timeout`). Returns
    /// the child's exit status when it was a child process.
    ///
    /// # Errors
    /// The server did not end in time.
    pub async fn shutdown(
        mut self,
        timeout: Duration,
    ) -> Result<Option<std::process::ExitStatus>, String> {
        let _ = self.client.request("shutdown", Value::Null).await;
        let _ = self.client.notify("exit", Value::Null).await;
        let _ = self.client.close().await;
        self.wait_end(timeout).await
    }

    /// Closes the server's stdin without `shutdown` (the editor vanished), then waits for the
    /// server to end (at most `timeout`).
    ///
    /// # Errors
    /// The server did not end in time.
    pub async fn vanish(
        mut self,
        timeout: Duration,
    ) -> Result<Option<std::process::ExitStatus>, String> {
        let _ = self.client.close().await;
        self.wait_end(timeout).await
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the server process, leaving its stdin open,
    /// then waits for it to end (at most `timeout`).
    ///
    /// # Errors
    /// The server is in-process (it has no process to signal), or it did not end in time.
    pub async fn signal(
        mut self,
        signal: i32,
        timeout: Duration,
    ) -> Result<Option<std::process::ExitStatus>, String> {
        let pid = self
            .child
            .as_ref()
            .and_then(Child::id)
            .ok_or("the server is not a child process")?;
        let pid = i32::try_from(pid).map_err(|e| e.to_string())?;
        crate::sys::send_signal(pid, signal).map_err(|e| format!("kill: {e}"))?;
        self.wait_end(timeout).await
    }

    async fn wait_end(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<std::process::ExitStatus>, String> {
        if let Some(task) = self.server_task.take() {
            tokio::time::timeout(timeout, task)
                .await
                .map_err(|_| format!("in-process server still running after {timeout:?}"))?
                .map_err(|e| e.to_string())?;
            return Ok(None);
        }
        if let Some(child) = self.child.as_mut() {
            let status = tokio::time::timeout(timeout, child.wait())
                .await
                .map_err(|_| format!("server process still running after {timeout:?}"))?
                .map_err(|e| e.to_string())?;
            return Ok(Some(status));
        }
        Ok(None)
    }
}

async fn pump(
    mut incoming: crate::lsp_client::IncomingStream,
    client: Arc<LspClient>,
    log: Arc<Log>,
    answers: Arc<Mutex<Answers>>,
    started: Instant,
) {
    while let Some(message) = incoming.recv().await {
        if let Incoming::Request { id, method, params } = &message {
            let answers = answers.lock().expect("answers lock").clone();
            let result = match method.as_str() {
                "window/showMessageRequest" => {
                    let wanted = answers.show_message_request;
                    Some(
                        params["actions"]
                            .as_array()
                            .and_then(|actions| {
                                actions.iter().find(|a| {
                                    Some(a["title"].as_str().unwrap_or_default())
                                        == wanted.as_deref()
                                })
                            })
                            .cloned()
                            .unwrap_or(Value::Null),
                    )
                }
                "session/requestPermission" if answers.hold_permission => None,
                "session/requestPermission" => Some(match answers.permission {
                    Some(wanted) => {
                        let options = params["options"].as_array().cloned().unwrap_or_default();
                        let by_id = options.iter().any(|o| o["optionId"] == wanted.as_str());
                        let option = if by_id {
                            Some(wanted)
                        } else {
                            options
                                .iter()
                                .find(|o| o["kind"] == wanted.as_str())
                                .and_then(|o| o["optionId"].as_str())
                                .map(str::to_owned)
                                .or(Some(wanted))
                        };
                        json!({"outcome": {"outcome": "selected", "optionId": option}})
                    }
                    None => json!({"outcome": {"outcome": "cancelled"}}),
                }),
                _ => Some(Value::Null),
            };
            if let Some(result) = result {
                let _ = client.respond(id.clone(), result).await;
            }
        }
        log.received.lock().expect("log lock").push(Received {
            at: started.elapsed(),
            message,
        });
        log.changed.notify_waiters();
    }
}
