//! The scripted agent's process I/O: its stdin recorded line by line before it is read,
//! and its stdout written behind by a task of its own in batches.

use std::path::PathBuf;

/// `stdin` as the agent reads it, each line appended to `file` first ([`super::RECEIVED_FILE`]):
/// a task copies the lines into a pipe the agent reads, so a line is on disk before the
/// agent acts on it, and the pipe ends when `stdin` does. Several agents may share one
/// state folder: each line goes down in one `write` of a file opened for appending. A file
/// that cannot be opened or written is logged once and the lines flow on unrecorded.
pub(super) fn record_input<R>(stdin: R, file: PathBuf) -> tokio::io::DuplexStream
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    use std::io::Write;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (mut tee, agent_side) = tokio::io::duplex(64 << 10);
    tokio::spawn(async move {
        let open = || {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
        };
        let mut record = open()
            .map_err(|e| eprintln!("scripted agent: not recording {}: {e}", file.display()))
            .ok();
        let mut reader = tokio::io::BufReader::new(stdin);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(f) = record.as_mut() {
                let mut whole = line.clone();
                if whole.last() != Some(&b'\n') {
                    whole.push(b'\n');
                }
                if let Err(e) = f.write_all(&whole) {
                    eprintln!("scripted agent: recording {}: {e}", file.display());
                    record = None;
                }
            }
            if tee.write_all(&line).await.is_err() {
                break;
            }
        }
        // Dropping `tee` ends the agent's input.
    });
    agent_side
}

/// Lines the write-behind queue holds before the agent's writes wait.
const WRITE_BEHIND_LINES: usize = 1024;
/// Bytes gathered into one `write` of stdout at most.
const WRITE_BEHIND_BATCH: usize = 64 << 10;

/// The agent's stdout, written behind by a task of its own.
///
/// The ACP SDK flushes after every line, and `tokio::io::stdout()` hands every write to a
/// blocking-pool thread: a flooding scripted agent spent its time in those handoffs and
/// emitted about 40,000 lines/s (measured with a plain pipe reader). Here a line is queued
/// (in order, bounded: a slow reader still slows the agent down) and the writer task
/// writes whatever has gathered, up to [`WRITE_BEHIND_BATCH`] bytes, in one call. A flush
/// returns once the line is queued; the writer has written everything when the task ends
/// (after the last handle is dropped), which [`super::run_scripted_agent`] awaits.
pub(super) struct WriteBehind {
    tx: tokio_util::sync::PollSender<Vec<u8>>,
}

pub(super) fn write_behind<W>(
    mut out: W,
) -> (
    WriteBehind,
    tokio::sync::mpsc::Sender<Vec<u8>>,
    tokio::task::JoinHandle<()>,
)
where
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use tokio::io::AsyncWriteExt;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(WRITE_BEHIND_LINES);
    let task = tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Some(first) = rx.recv().await {
            batch.clear();
            batch.extend_from_slice(&first);
            while batch.len() < WRITE_BEHIND_BATCH
                && let Ok(more) = rx.try_recv()
            {
                batch.extend_from_slice(&more);
            }
            if out.write_all(&batch).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    (
        WriteBehind {
            tx: tokio_util::sync::PollSender::new(tx.clone()),
        },
        tx,
        task,
    )
}

impl tokio::io::AsyncWrite for WriteBehind {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let gone = |_| std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        std::task::ready!(this.tx.poll_reserve(cx)).map_err(gone)?;
        this.tx.send_item(buf.to_vec()).map_err(gone)?;
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        // Queued lines are the writer task's to write, in order, as soon as it can.
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.get_mut().tx.close();
        std::task::Poll::Ready(Ok(()))
    }
}
