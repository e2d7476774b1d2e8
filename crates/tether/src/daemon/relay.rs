//! The forwarder's relay: passes an editor's LSP frames to the daemon and back, unchanged,
//! and survives the daemon (R-DAEMON-8).
//!
//! Frames pass whole: the relay finds each frame's end ([`crate::framing::Splitter`]) and shows its
//! body to the [`Ledger`], which reads only its id and method; notifications from the daemon
//! are not parsed at all. When the daemon's side ends while the editor is still there and
//! the daemon did not stop on purpose (a daemon stopped by `tether daemon stop` or a signal
//! removes its endpoint first; a killed or crashed one leaves it:
//! [`crate::sys::endpoint::Address::exists`]), the relay
//!
//! 1. answers each of the editor's unanswered requests with an error that says the daemon
//!    stopped (a running `session/prompt` ends as `agentCrashed`) and cancels each of the
//!    daemon's unanswered requests to the editor (`$/cancelRequest`);
//! 2. connects to a new daemon, starting one (the start lock makes it one for every
//!    forwarder that lost the same daemon), within [`RECONNECT_TIMEOUT`];
//! 3. says the editor's `initialize` and `initialized` again and resumes each session the
//!    editor had attached (`session/resume`; the new daemon's hub reaps the lost daemon's
//!    agents when it opens the cache, and resumes from the journal through the breaker), and
//!    tells the editor each outcome in `session/reattached`;
//! 4. only then reads the editor's next frames, so nothing it sends meets a session that is
//!    not back yet.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::forwarder::{DRAIN_TIMEOUT, ForwardError, connect};
use super::handshake::{Purpose, Welcome};
use super::ledger::{Ledger, Verdict};
use super::paths::socket_path;
use crate::framing::{Piece, Splitter, frame_bytes, push_frame};
use crate::sys::endpoint::{ReadHalf, Stream, WriteHalf};

/// How long the relay keeps trying to reach a new daemon after losing one.
pub const RECONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many bytes one read takes.
const READ_CHUNK: usize = 64 << 10;

/// Where to find (or start) a daemon again.
#[derive(Debug, Clone)]
pub struct Reconnect<'a> {
    /// The runtime folder.
    pub dir: &'a Path,
    /// This binary, to start `tether daemon run`.
    pub exe: &'a Path,
}

/// One direction's bytes not yet passed on, and where its frames are.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    splitter: Splitter,
    /// Bytes at the start of `buf` the ledger has seen but whose write has not completed
    /// (the daemon went meanwhile): the ledger answers for them on the loss, so they are
    /// dropped then, never sent again to the next daemon.
    judged: usize,
}

/// Relays `input` → daemon and daemon → `output` until the editor's input ends, the daemon
/// stops on purpose, or a lost daemon cannot be replaced.
///
/// # Errors
/// Writing to the editor failed, or no new daemon could be reached (the editor was told why
/// with `window/showMessage` first).
pub async fn relay<R, W>(
    input: R,
    output: W,
    first: (BufReader<Stream>, Welcome),
    again: Reconnect<'_>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (mut input, mut output) = (input, output);
    let mut ledger = Ledger::default();
    let mut up = Pending::default();
    let (mut daemon, mut welcome) = first;
    let mut replay: Option<Value> = None;
    loop {
        // Bytes the handshake read already buffered belong to the LSP stream.
        let mut down = Pending {
            buf: daemon.buffer().to_vec(),
            splitter: Splitter::default(),
            judged: 0,
        };
        let (mut from_daemon, mut to_daemon) = daemon.into_inner().into_split();
        let mut ended = None;
        if let Some(initialize) = replay.take() {
            // `initialize` first and alone: the daemon refuses other requests before it has
            // answered it. Then `initialized` and the resumes.
            ended = match write_bodies(&mut to_daemon, &[initialize]).await {
                Err(err) => Some(err),
                Ok(()) => replayed(&mut from_daemon, &mut output, &mut down, &mut ledger).await,
            };
            if ended.is_none() {
                let sessions = ledger.replay_sessions();
                ended = match write_bodies(&mut to_daemon, &sessions).await {
                    Err(err) => Some(err),
                    Ok(()) => replayed(&mut from_daemon, &mut output, &mut down, &mut ledger).await,
                };
            }
        }
        let err = match ended {
            Some(e) => e,
            None => {
                let ledger = std::cell::RefCell::new(&mut ledger);
                let up_side = editor_to_daemon(&mut input, &mut to_daemon, &mut up, &ledger);
                let down_side = daemon_to_editor(&mut from_daemon, &mut output, &mut down, &ledger);
                tokio::pin!(up_side, down_side);
                tokio::select! {
                    () = &mut up_side => {
                        // The editor is done: let the daemon answer what is in flight (it
                        // closes this client's stream once it has seen the end of input).
                        return match tokio::time::timeout(DRAIN_TIMEOUT, down_side).await {
                            Ok(err) if err.kind() != std::io::ErrorKind::UnexpectedEof => Err(err),
                            _ => Ok(()),
                        };
                    }
                    e = &mut down_side => e,
                }
            }
        };
        let lost = welcome.daemon_pid;
        let on_purpose = !socket_path(again.dir).exists();
        // The editor's frames the ledger saw but the lost daemon may not have got: the
        // loss answers their requests (or replays the `initialize`); not sent again.
        up.buf.drain(..up.judged.min(up.buf.len()));
        up.judged = 0;
        let loss = ledger.lost(lost);
        write_bodies(&mut output, &loss.to_editor).await?;
        if on_purpose || !loss.recover {
            tracing::info!(daemon_pid = lost, error = %err, on_purpose, "the daemon's side ended; the forwarder ends");
            return Ok(());
        }
        tracing::warn!(daemon_pid = lost, error = %err, sessions = ?ledger.sessions(), "the daemon was lost: starting a new one and taking the sessions back");
        let started = Instant::now();
        match reconnect(&again).await {
            Ok((stream, w)) => {
                tracing::info!(
                    daemon_pid = w.daemon_pid,
                    lost_daemon_pid = lost,
                    after_ms = started.elapsed().as_millis() as u64,
                    "reconnected to a new daemon"
                );
                daemon = stream;
                welcome = w;
                replay = ledger.replay_initialize();
            }
            Err(err) => {
                let text = format!(
                    "Tether: the daemon (pid {lost}) stopped and no new one could be started: {err}"
                );
                tracing::error!("{text}");
                write_bodies(
                    &mut output,
                    &[json!({"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 1, "message": text}})],
                )
                .await?;
                return Err(std::io::Error::other(text));
            }
        }
    }
}

/// Connects to (or starts) a daemon, trying again until [`RECONNECT_TIMEOUT`].
async fn reconnect(again: &Reconnect<'_>) -> Result<(BufReader<Stream>, Welcome), ForwardError> {
    let deadline = Instant::now() + RECONNECT_TIMEOUT;
    let mut pause = Duration::from_millis(20);
    loop {
        match connect(again.dir, again.exe, Purpose::Editor, true).await {
            Ok(c) => return Ok(c),
            Err(err) if Instant::now() >= deadline => return Err(err),
            Err(err) => {
                tracing::debug!(error = %err, "no daemon yet; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
    }
}

/// Runs the daemon → editor direction alone until every replayed request is answered.
async fn replayed<W: AsyncWrite + Unpin>(
    from_daemon: &mut ReadHalf,
    output: &mut W,
    down: &mut Pending,
    ledger: &mut Ledger,
) -> Option<std::io::Error> {
    let ledger = std::cell::RefCell::new(ledger);
    loop {
        if let Err(err) =
            pass_frames(down, output, |body| ledger.borrow_mut().from_daemon(body)).await
        {
            return Some(err);
        }
        if !ledger.borrow().replaying() {
            return None;
        }
        down.buf.reserve(READ_CHUNK);
        match from_daemon.read_buf(&mut down.buf).await {
            Ok(0) => return Some(eof()),
            Ok(_) => {}
            Err(err) => return Some(err),
        }
    }
}

/// Editor → daemon until the editor's input ends, then ends the daemon's input. A write to
/// a daemon that is gone parks this direction: the other one sees the daemon's end and
/// decides.
async fn editor_to_daemon<R: AsyncRead + Unpin>(
    input: &mut R,
    to_daemon: &mut WriteHalf,
    up: &mut Pending,
    ledger: &std::cell::RefCell<&mut Ledger>,
) {
    loop {
        if !up.buf.is_empty() {
            let taken = take_frames(up, |body| (ledger.borrow_mut().from_editor(body), None));
            up.judged = taken.consumed;
            let out = taken.bytes(up);
            if !out.is_empty() && to_daemon.write_all(out).await.is_err() {
                return std::future::pending().await;
            }
            taken.consume(up);
            up.judged = 0;
        }
        up.buf.reserve(READ_CHUNK);
        match input.read_buf(&mut up.buf).await {
            Ok(0) | Err(_) => {
                let _ = to_daemon.shutdown().await;
                return;
            }
            Ok(_) => {}
        }
    }
}

/// Daemon → editor until the daemon's side ends.
async fn daemon_to_editor<W: AsyncWrite + Unpin>(
    from_daemon: &mut ReadHalf,
    output: &mut W,
    down: &mut Pending,
    ledger: &std::cell::RefCell<&mut Ledger>,
) -> std::io::Error {
    loop {
        if let Err(err) =
            pass_frames(down, output, |body| ledger.borrow_mut().from_daemon(body)).await
        {
            return err;
        }
        down.buf.reserve(READ_CHUNK);
        match from_daemon.read_buf(&mut down.buf).await {
            Ok(0) => return eof(),
            Ok(_) => {}
            Err(err) => return err,
        }
    }
}

/// Writes the complete frames in `stream` to `output` as the ledger decides.
async fn pass_frames<W: AsyncWrite + Unpin>(
    stream: &mut Pending,
    output: &mut W,
    judge: impl FnMut(&[u8]) -> (Verdict, Option<Value>),
) -> std::io::Result<()> {
    let taken = take_frames(stream, judge);
    let out = taken.bytes(stream);
    if !out.is_empty() {
        output.write_all(out).await?;
        output.flush().await?;
    }
    taken.consume(stream);
    Ok(())
}

/// What [`take_frames`] took from the start of a stream's buffer.
struct Taken {
    /// Bytes of the buffer's start the pieces took.
    consumed: usize,
    /// The bytes to pass on instead of them, when the ledger changed any piece.
    built: Option<Vec<u8>>,
}

impl Taken {
    /// The bytes to pass on: the pieces as they came (straight from the buffer), or as
    /// the ledger rebuilt them.
    fn bytes<'a>(&'a self, stream: &'a Pending) -> &'a [u8] {
        self.built
            .as_deref()
            .unwrap_or(&stream.buf[..self.consumed])
    }

    /// Drops the taken bytes from the buffer, which is kept for the next read (given back
    /// when a large frame grew it past a few reads' worth).
    fn consume(self, stream: &mut Pending) {
        stream.buf.drain(..self.consumed);
        if stream.buf.is_empty() && stream.buf.capacity() > 4 * READ_CHUNK {
            stream.buf = Vec::new();
        }
    }
}

/// Finds the complete pieces at the start of `stream`'s buffer and what to pass on for
/// them: the pieces themselves when every one is forwarded as it is (the common case: no
/// copy, written from the buffer), else each as the ledger decides, plus any notification
/// it asks for.
fn take_frames(
    stream: &mut Pending,
    mut judge: impl FnMut(&[u8]) -> (Verdict, Option<Value>),
) -> Taken {
    let mut at = 0;
    let mut out: Option<Vec<u8>> = None;
    while let Some(piece) = stream.splitter.next(&stream.buf[at..]) {
        let len = piece.len();
        let (verdict, notify) = match &piece {
            Piece::Frame { body, .. } => judge(&stream.buf[at + body.start..at + body.end]),
            Piece::Raw { .. } => (Verdict::Forward, None),
        };
        let plain = verdict == Verdict::Forward && notify.is_none();
        if !plain && out.is_none() {
            out = Some(stream.buf[..at].to_vec());
        }
        if let Some(out) = &mut out {
            match verdict {
                Verdict::Forward => out.extend_from_slice(&stream.buf[at..at + len]),
                Verdict::Replace(body) => push_frame(out, &body),
                Verdict::Drop => {}
            }
            if let Some(params) = notify {
                let note = json!({"jsonrpc": "2.0", "method": crate::protocol::notify::REATTACHED, "params": params});
                push_frame(out, &serde_json::to_vec(&note).unwrap_or_default());
            }
        }
        at += len;
    }
    Taken {
        consumed: at,
        built: out,
    }
}

/// Writes whole JSON-RPC messages (to the editor, or the forwarder's own to the daemon).
async fn write_bodies<W: AsyncWrite + Unpin>(
    output: &mut W,
    bodies: &[Value],
) -> std::io::Result<()> {
    for body in bodies {
        output
            .write_all(&frame_bytes(&serde_json::to_vec(body).unwrap_or_default()))
            .await?;
    }
    output.flush().await
}

/// The daemon's side ended.
fn eof() -> std::io::Error {
    std::io::ErrorKind::UnexpectedEof.into()
}
