//! What the forwarder must remember to survive its daemon (R-DAEMON-8): the editor's
//! requests still unanswered, the daemon's requests the editor has not answered, the
//! `initialize` to say again, and the sessions the editor has attached. Pure: fed the JSON
//! bodies of the frames that pass each way, it returns what to do with each, and on the
//! daemon's loss the frames that tell the editor and the frames that take its sessions back
//! from a new daemon.
//!
//! It reads only the top-level `id` and `method` of a frame (and the params or result of
//! the few methods that attach a session); a daemon frame without `"id"` in its bytes, which
//! is every notification (`session/update` among them), is passed on without being parsed.
//!
//! Ids: a daemon that replaced a lost one numbers its requests to the editor from 0 again,
//! so the editor could answer the old daemon's question 3 as if it answered the new one's.
//! From the first replacement on (generation 1), the forwarder gives each request of the
//! daemon to the editor the id `"tether-fwd:<generation>:<original id>"` and maps the
//! editor's answer back; an answer bearing any other id belongs to a daemon that is gone and
//! is dropped. Its own requests (the replayed `initialize` and `session/resume`s) have ids
//! `"tether-fwd-replay:<generation>:<n>"`, and their answers never reach the editor.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// What to do with one frame's body.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Pass the frame on unchanged.
    Forward,
    /// Pass on this body instead (an id mapped).
    Replace(Vec<u8>),
    /// Do not pass it on.
    Drop,
}

/// What the forwarder does when its daemon is lost.
#[derive(Debug, Default, PartialEq)]
pub struct Loss {
    /// Bodies for the editor: an error answer for each of its unanswered requests, and a
    /// `$/cancelRequest` for each request of the lost daemon it has not answered.
    pub to_editor: Vec<Value>,
    /// Whether to start a new daemon and take the sessions back (false once the editor has
    /// asked for `shutdown` or `exit`). An editor lost before or during its `initialize`
    /// recovers too: a daemon handing over to a newer build (R-DAEMON-12) may close a
    /// connection that has just started.
    pub recover: bool,
}

/// The sessions an editor attached, and what is in flight both ways.
#[derive(Debug, Default)]
pub struct Ledger {
    /// How many daemons were lost so far.
    generation: u32,
    /// The editor's requests not yet answered, by id (its JSON text).
    pending: HashMap<String, Pending>,
    /// The daemon's requests the editor has not answered, by the id the editor knows.
    asked: HashSet<String>,
    /// The editor's `initialize` params.
    initialize: Option<Value>,
    /// Whether the editor sent `initialized`.
    initialized: bool,
    /// Whether the editor asked for `shutdown` or sent `exit`.
    closing: bool,
    /// Attached sessions: id → the `session/resume` params that take it back.
    sessions: BTreeMap<String, Value>,
    /// Replayed requests not answered yet: internal id → the session it resumes (`None`:
    /// the `initialize`).
    replays: HashMap<String, Option<String>>,
    /// The next replay number.
    next_replay: u64,
    /// The id of the editor's `initialize` when the lost daemon had not answered it: the
    /// replayed `initialize`'s answer goes to the editor under this id.
    initialize_unanswered: Option<Value>,
}

#[derive(Debug)]
struct Pending {
    id: Value,
    method: String,
    /// Params of a method that attaches a session.
    params: Option<Value>,
}

/// The top level of a JSON-RPC message, read without copying the rest.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

/// The methods whose answer names a session the editor is now attached to.
const ATTACHING: [&str; 3] = [
    "session/resume",
    "session/recoveryChoice",
    "session/handoff",
];

/// The prefix of the ids given to a replacement daemon's requests to the editor.
const ASKED_PREFIX: &str = "tether-fwd:";
/// The prefix of the forwarder's own requests' ids.
const REPLAY_PREFIX: &str = "tether-fwd-replay:";

impl Ledger {
    /// How many daemons this editor has lost so far.
    #[must_use]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether replayed requests still wait for the new daemon's answer.
    #[must_use]
    pub fn replaying(&self) -> bool {
        !self.replays.is_empty()
    }

    /// The sessions the editor is attached to, by id.
    #[must_use]
    pub fn sessions(&self) -> Vec<String> {
        self.sessions.keys().cloned().collect()
    }

    /// A frame from the editor, on its way to the daemon.
    pub fn from_editor(&mut self, body: &[u8]) -> Verdict {
        let Ok(peek) = serde_json::from_slice::<Peek>(body) else {
            // The daemon's input guard answers what is not JSON-RPC.
            return Verdict::Forward;
        };
        match (peek.id, peek.method) {
            (Some(id), Some(method)) => {
                let key = id.get().to_owned();
                let id: Value = serde_json::from_str(&key).unwrap_or(Value::Null);
                if method == "initialize" {
                    self.initialize = peek.params.and_then(|p| serde_json::from_str(p.get()).ok());
                }
                if method == "shutdown" {
                    self.closing = true;
                }
                let params = ATTACHING
                    .contains(&method.as_ref())
                    .then(|| peek.params.and_then(|p| serde_json::from_str(p.get()).ok()))
                    .flatten();
                self.pending.insert(
                    key,
                    Pending {
                        id,
                        method: method.into_owned(),
                        params,
                    },
                );
                Verdict::Forward
            }
            (None, Some(method)) => {
                match method.as_ref() {
                    "initialized" => self.initialized = true,
                    "exit" => self.closing = true,
                    _ => {}
                }
                Verdict::Forward
            }
            (Some(id), None) => self.editor_answered(id.get(), body),
            (None, None) => Verdict::Forward,
        }
    }

    /// The editor answered the daemon's request `id` (its JSON text).
    fn editor_answered(&mut self, id: &str, body: &[u8]) -> Verdict {
        let known = self.asked.remove(id);
        if self.generation == 0 {
            return Verdict::Forward;
        }
        // From generation 1 on, every live request carries a mapped id.
        let own = format!("\"{ASKED_PREFIX}{}:", self.generation);
        if !known || !id.starts_with(&own) {
            tracing::debug!(id, "an answer to a request of a lost daemon; dropped");
            return Verdict::Drop;
        }
        let Ok(Value::String(mapped)) = serde_json::from_str::<Value>(id) else {
            return Verdict::Drop;
        };
        let original = &mapped[own.len() - 1..];
        match (
            serde_json::from_str::<Value>(original),
            serde_json::from_slice::<Value>(body),
        ) {
            (Ok(original), Ok(mut message)) => {
                message["id"] = original;
                Verdict::Replace(serde_json::to_vec(&message).unwrap_or_default())
            }
            _ => Verdict::Drop,
        }
    }

    /// A frame from the daemon, on its way to the editor. Returns the verdict and, when it
    /// answers a replayed `session/resume`, the params of the
    /// [`crate::protocol::notify::REATTACHED`] notification to send the editor.
    pub fn from_daemon(&mut self, body: &[u8]) -> (Verdict, Option<Value>) {
        // Notifications carry no top-level id: most frames stop here, unparsed.
        if memchr::memmem::find(body, b"\"id\"").is_none() {
            return (Verdict::Forward, None);
        }
        let Ok(peek) = serde_json::from_slice::<Peek>(body) else {
            return (Verdict::Forward, None);
        };
        match (peek.id, peek.method) {
            (Some(id), Some(_)) => (self.daemon_asked(id.get(), body), None),
            (Some(id), None) => self.daemon_answered(id.get(), peek.result, peek.error),
            _ => (Verdict::Forward, None),
        }
    }

    /// The daemon sends the editor a request with id `id` (its JSON text).
    fn daemon_asked(&mut self, id: &str, body: &[u8]) -> Verdict {
        if self.generation == 0 {
            self.asked.insert(id.to_owned());
            return Verdict::Forward;
        }
        let mapped = Value::String(format!("{ASKED_PREFIX}{}:{id}", self.generation));
        let Ok(mut message) = serde_json::from_slice::<Value>(body) else {
            return Verdict::Forward;
        };
        self.asked.insert(mapped.to_string());
        message["id"] = mapped;
        Verdict::Replace(serde_json::to_vec(&message).unwrap_or_default())
    }

    /// The daemon answers the request `id` (its JSON text).
    fn daemon_answered(
        &mut self,
        id: &str,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) -> (Verdict, Option<Value>) {
        // The result is parsed only when it is read (a replay's, an attaching method's):
        // every other answer passes on as its bytes.
        let parse = |r: &RawValue| serde_json::from_str::<Value>(r.get()).ok();
        if let Some(session) = self.replays.remove(id) {
            let result = result.and_then(parse);
            let error: Value = error
                .and_then(|e| serde_json::from_str(e.get()).ok())
                .unwrap_or(Value::Null);
            let Some(session) = session else {
                if !error.is_null() {
                    tracing::warn!(%error, "the new daemon refused the replayed initialize");
                }
                if let Some(id) = self.initialize_unanswered.take() {
                    // The editor still waits for its `initialize`: this is its answer.
                    let mut answer = json!({"jsonrpc": "2.0", "id": id});
                    if error.is_null() {
                        answer["result"] = result.unwrap_or(Value::Null);
                    } else {
                        answer["error"] = error;
                    }
                    return (
                        Verdict::Replace(serde_json::to_vec(&answer).unwrap_or_default()),
                        None,
                    );
                }
                return (Verdict::Drop, None);
            };
            let reattached = match result {
                Some(result) => {
                    self.attached(Some(&session), None, &result);
                    json!({"sessionId": session, "result": result})
                }
                None => {
                    tracing::warn!(session, %error, "the new daemon could not resume a session");
                    json!({"sessionId": session, "error": error})
                }
            };
            return (Verdict::Drop, Some(reattached));
        }
        if let Some(pending) = self.pending.remove(id)
            && ATTACHING.contains(&pending.method.as_str())
            && let Some(result) = &result.and_then(parse)
        {
            let from = pending
                .params
                .as_ref()
                .and_then(|p| p["sessionId"].as_str())
                .map(str::to_owned);
            self.attached(from.as_deref(), pending.params.as_ref(), result);
        }
        (Verdict::Forward, None)
    }

    /// A `ResumeResult` names the session the editor now has: remember how to resume it.
    fn attached(&mut self, from: Option<&str>, params: Option<&Value>, result: &Value) {
        let Some(sid) = result["sessionId"].as_str() else {
            return;
        };
        let previous = result["previousSessionId"].as_str().or(from);
        let mut resume = previous
            .and_then(|p| self.sessions.get(p).cloned())
            .unwrap_or_else(|| json!({}));
        if let Some(params) = params {
            for field in ["workspace", "agent"] {
                if !params[field].is_null() {
                    resume[field] = params[field].clone();
                }
            }
        }
        if resume["workspace"].is_null() {
            return;
        }
        resume["sessionId"] = json!(sid);
        if let Some(previous) = previous
            && previous != sid
        {
            self.sessions.remove(previous);
        }
        self.sessions.insert(sid.to_owned(), resume);
    }

    /// The daemon (process `daemon_pid`) is gone: what to tell the editor, and whether to
    /// take its sessions back. Everything in flight is forgotten.
    pub fn lost(&mut self, daemon_pid: u32) -> Loss {
        let mut to_editor = Vec::new();
        let mut pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        pending.sort_by_key(|p| p.id.to_string());
        for p in pending {
            if p.method == "initialize" {
                // Said again to the new daemon ([`Self::replay_initialize`]), whose answer
                // is the editor's.
                self.initialize_unanswered = Some(p.id);
                continue;
            }
            let message = format!(
                "the Tether daemon (pid {daemon_pid}) stopped while `{}` was in flight; a new daemon is taking this editor's sessions back",
                p.method
            );
            to_editor.push(json!({
                "jsonrpc": "2.0",
                "id": p.id,
                "error": {
                    "code": crate::protocol::code::REQUEST_FAILED,
                    "message": message,
                    "data": {
                        "kind": "agentCrashed",
                        "message": message,
                        "retryable": true,
                        "source": "process",
                        "daemonRestarted": true,
                    },
                },
            }));
        }
        let mut asked: Vec<String> = self.asked.drain().collect();
        asked.sort();
        for id in asked {
            let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
            to_editor
                .push(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}));
        }
        self.replays.clear();
        Loss {
            to_editor,
            recover: !self.closing,
        }
    }

    /// A new daemon is connected: the editor's `initialize` to say again, first and alone
    /// (the daemon serves nothing else before it has answered it), or `None` when the
    /// editor never initialized.
    pub fn replay_initialize(&mut self) -> Option<Value> {
        self.generation += 1;
        let params = self.initialize.clone()?;
        let id = self.replay_id(None);
        Some(json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params}))
    }

    /// Once the new daemon has answered `initialize`: `initialized` (when the editor had
    /// sent it), then a `session/resume` of each attached session.
    pub fn replay_sessions(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if self.initialized {
            out.push(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        }
        let sessions: Vec<(String, Value)> = self
            .sessions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (sid, params) in sessions {
            let id = self.replay_id(Some(sid));
            out.push(
                json!({"jsonrpc": "2.0", "id": id, "method": "session/resume", "params": params}),
            );
        }
        out
    }

    fn replay_id(&mut self, session: Option<String>) -> Value {
        self.next_replay += 1;
        let id = Value::String(format!(
            "{REPLAY_PREFIX}{}:{}",
            self.generation, self.next_replay
        ));
        self.replays.insert(id.to_string(), session);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    fn editor(ledger: &mut Ledger, v: Value) -> Verdict {
        ledger.from_editor(&body(v))
    }

    fn daemon(ledger: &mut Ledger, v: Value) -> (Verdict, Option<Value>) {
        ledger.from_daemon(&body(v))
    }

    fn initialized() -> Ledger {
        let mut l = Ledger::default();
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}),
        );
        daemon(&mut l, json!({"jsonrpc":"2.0","id":0,"result":{}}));
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","method":"initialized","params":{}}),
        );
        l
    }

    #[test]
    fn unanswered_requests_get_an_error_and_questions_a_cancel() {
        let mut l = initialized();
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}}),
        );
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":"p","method":"session/persist","params":{}}),
        );
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":8,"method":"session/list"}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":8,"result":{"sessions":[]}}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":3,"method":"session/requestPermission","params":{}}),
        );
        let loss = l.lost(42);
        assert!(loss.recover);
        let ids: Vec<&Value> = loss.to_editor.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!("p"), &json!(7), &Value::Null]);
        assert_eq!(loss.to_editor[1]["error"]["code"], -32803);
        assert_eq!(loss.to_editor[1]["error"]["data"]["kind"], "agentCrashed");
        assert!(
            loss.to_editor[1]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("pid 42")
        );
        assert_eq!(loss.to_editor[2]["method"], "$/cancelRequest");
        assert_eq!(loss.to_editor[2]["params"]["id"], 3);
        assert_eq!(l.lost(42).to_editor, Vec::<Value>::new(), "said once");
    }

    #[test]
    fn no_recovery_after_shutdown_or_exit() {
        let mut fresh = Ledger::default();
        let loss = fresh.lost(1);
        assert!(
            loss.recover,
            "an editor not initialized yet still gets a daemon"
        );
        assert_eq!(fresh.replay_initialize(), None, "nothing to say again");
        let mut l = initialized();
        editor(&mut l, json!({"jsonrpc":"2.0","id":9,"method":"shutdown"}));
        assert!(!l.lost(1).recover);
        let mut l = initialized();
        editor(&mut l, json!({"jsonrpc":"2.0","method":"exit"}));
        assert!(!l.lost(1).recover);
    }

    /// R-DAEMON-12: a daemon handing over may close the connection of an editor whose
    /// `initialize` it has not answered: the editor gets no error but the new daemon's
    /// answer, under its own id.
    #[test]
    fn an_unanswered_initialize_is_answered_by_the_new_daemon() {
        let mut l = Ledger::default();
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}),
        );
        let loss = l.lost(7);
        assert!(loss.recover);
        assert_eq!(loss.to_editor, Vec::<Value>::new(), "no error for it");
        let replay = l.replay_initialize().expect("said again");
        assert_eq!(replay["params"], json!({"capabilities":{}}));
        let (verdict, note) = daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":replay["id"],"result":{"capabilities":{"x":1}}}),
        );
        assert_eq!(note, None);
        let Verdict::Replace(body) = verdict else {
            panic!("the answer goes to the editor: {verdict:?}")
        };
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            answer,
            json!({"jsonrpc":"2.0","id":0,"result":{"capabilities":{"x":1}}})
        );
        assert!(!l.replaying());
        // Answered once: a later loss replays it again, silently.
        l.lost(8);
        let again = l.replay_initialize().unwrap();
        let (verdict, _) = daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":again["id"],"result":{}}),
        );
        assert_eq!(verdict, Verdict::Drop);
    }

    #[test]
    fn attached_sessions_follow_resume_choice_and_handoff_answers() {
        let mut l = initialized();
        let ws = json!({"root": "/w"});
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"workspace":ws,"afterSeq":4,"workDoneToken":"t"}}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":1,"result":{"outcome":"started","sessionId":"a"}}),
        );
        assert_eq!(l.sessions(), ["a"]);
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":2,"method":"session/recoveryChoice","params":{"sessionId":"a","choice":"new"}}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":2,"result":{"outcome":"started","sessionId":"b","previousSessionId":"a"}}),
        );
        assert_eq!(l.sessions(), ["b"]);
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":3,"method":"session/handoff","params":{"sessionId":"b","agent":"codex"}}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":3,"result":{"outcome":"started","sessionId":"c","previousSessionId":"b"}}),
        );
        assert_eq!(l.sessions(), ["c"]);
        // A failed resume attaches nothing; an error answer neither.
        editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"workspace":{"root":"/x"}}}),
        );
        daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"no"}}),
        );
        assert_eq!(l.sessions(), ["c"]);
        l.lost(1);
        let init = l.replay_initialize().expect("initialize first");
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"], json!({"capabilities":{}}));
        assert!(l.replaying());
        // The new daemon's answers go to the forwarder, not the editor.
        let answer = daemon(&mut l, json!({"jsonrpc":"2.0","id":init["id"],"result":{}}));
        assert_eq!(answer, (Verdict::Drop, None));
        assert!(!l.replaying());
        let replay = l.replay_sessions();
        assert_eq!(replay[0]["method"], "initialized");
        assert_eq!(
            replay[1]["params"],
            json!({"workspace": ws, "agent": "codex", "sessionId": "c"}),
            "no stale afterSeq or progress token"
        );
        assert!(l.replaying());
        let (verdict, reattached) = daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":replay[1]["id"],"result":{"outcome":"resumed","sessionId":"c"}}),
        );
        assert_eq!(verdict, Verdict::Drop);
        assert_eq!(
            reattached,
            Some(json!({"sessionId":"c","result":{"outcome":"resumed","sessionId":"c"}}))
        );
        assert!(!l.replaying());
        // A resume the new daemon refuses is reported too.
        l.lost(2);
        l.replay_initialize();
        l.from_daemon(&body(
            json!({"jsonrpc":"2.0","id":"tether-fwd-replay:2:3","result":{}}),
        ));
        let replay = l.replay_sessions();
        let (_, reattached) = daemon(
            &mut l,
            json!({"jsonrpc":"2.0","id":replay[1]["id"],"error":{"code":-32803,"message":"x"}}),
        );
        assert_eq!(reattached.unwrap()["error"]["code"], -32803);
    }

    #[test]
    fn a_new_daemons_questions_get_ids_no_lost_daemons_answer_can_take() {
        let mut l = initialized();
        let ask = |id: Value| json!({"jsonrpc":"2.0","id":id,"method":"window/showMessageRequest","params":{}});
        assert_eq!(daemon(&mut l, ask(json!(0))).0, Verdict::Forward);
        l.lost(1);
        l.replay_initialize();
        let (Verdict::Replace(mapped), None) = daemon(&mut l, ask(json!(0))) else {
            panic!("mapped");
        };
        let mapped: Value = serde_json::from_slice(&mapped).unwrap();
        assert_eq!(mapped["id"], "tether-fwd:1:0");
        // The lost daemon's question 0, answered late: dropped.
        assert_eq!(
            editor(&mut l, json!({"jsonrpc":"2.0","id":0,"result":null})),
            Verdict::Drop
        );
        // The new one's, answered: mapped back.
        let Verdict::Replace(back) = editor(
            &mut l,
            json!({"jsonrpc":"2.0","id":"tether-fwd:1:0","result":{"title":"x"}}),
        ) else {
            panic!("mapped back");
        };
        let back: Value = serde_json::from_slice(&back).unwrap();
        assert_eq!(back, json!({"jsonrpc":"2.0","id":0,"result":{"title":"x"}}));
        // Answered twice: the second is dropped.
        assert_eq!(
            editor(
                &mut l,
                json!({"jsonrpc":"2.0","id":"tether-fwd:1:0","result":null})
            ),
            Verdict::Drop
        );
    }

    #[test]
    fn notifications_and_bad_frames_pass_unparsed() {
        let mut l = initialized();
        for body in [
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"text":"\"id\" inside"}}"#
                .as_slice(),
            b"not json",
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
        ] {
            assert_eq!(l.from_daemon(body), (Verdict::Forward, None));
            assert_eq!(l.from_editor(body), Verdict::Forward);
        }
    }
}
