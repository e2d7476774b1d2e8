//! A half-close for named pipes: the bytes of each direction travel as chunks, each a
//! 4-byte little-endian length and that many bytes, and a chunk of length 0 is the end of
//! that direction's input.
//!
//! A named pipe has no half-close: no call ends one direction and keeps the other (a
//! socket's `shutdown(SHUT_WR)`), and a zero-length `WriteFile` on a byte-mode pipe does not
//! reach the reader under Wine 8 (measured) nor, reliably, on Windows. The daemon's
//! protocol needs one: `tether acp`'s client closes its input and waits for the daemon's last
//! answers, and a forwarder whose editor is gone ends the daemon's input and drains
//! (R-DAEMON-4). Both ends of the daemon's pipe are Tether's own `endpoint::Stream` (Windows),
//! so the chunks never meet another program. Platform-neutral code, so that its tests run
//! everywhere; only Windows uses it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest chunk written: 64 KiB of payload.
pub const MAX_CHUNK: usize = 64 << 10;

/// Where the reader is in the incoming chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// `got` bytes of the next length read, into `header`.
    Header { header: [u8; 4], got: usize },
    /// `left` bytes of the current chunk still to come.
    Body { left: usize },
    /// The end chunk came: the other side's input has ended.
    Ended,
}

/// A chunk being written: its bytes, how many are out, and the payload length it carries.
#[derive(Debug)]
struct Writing {
    bytes: Vec<u8>,
    sent: usize,
    payload: usize,
}

/// `inner` with chunked directions: reads return the payload bytes and then the end of
/// input at the end chunk; `poll_shutdown` writes the end chunk.
#[derive(Debug)]
pub struct Chunked<T> {
    inner: T,
    reading: Reading,
    writing: Option<Writing>,
    shut: bool,
}

impl<T> Chunked<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            reading: Reading::Header {
                header: [0; 4],
                got: 0,
            },
            writing: None,
            shut: false,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

/// The bytes of one chunk carrying `payload` (empty: the end chunk).
#[must_use]
pub fn chunk(payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut bytes = Vec::with_capacity(4 + payload.len());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

impl<T: AsyncWrite + Unpin> Chunked<T> {
    /// Writes out the chunk in progress; its payload length once it is all out.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(w) = &mut self.writing else {
            return Poll::Ready(Ok(0));
        };
        while w.sent < w.bytes.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &w.bytes[w.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            w.sent += n;
        }
        let payload = w.payload;
        self.writing = None;
        Poll::Ready(Ok(payload))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Chunked<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            match &mut this.reading {
                Reading::Ended => return Poll::Ready(Ok(())),
                Reading::Header { header, got } => {
                    let mut part = ReadBuf::new(&mut header[*got..]);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut part))?;
                    let n = part.filled().len();
                    if n == 0 {
                        // The pipe closed between chunks: the end of input as well.
                        this.reading = Reading::Ended;
                        return Poll::Ready(Ok(()));
                    }
                    *got += n;
                    if *got == 4 {
                        let len = u32::from_le_bytes(*header) as usize;
                        this.reading = if len == 0 {
                            Reading::Ended
                        } else {
                            Reading::Body { left: len }
                        };
                    }
                }
                Reading::Body { left } => {
                    let want = (*left).min(buf.remaining());
                    let mut part = buf.take(want);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut part))?;
                    let n = part.filled().len();
                    if n == 0 {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the pipe closed in the middle of a chunk",
                        )));
                    }
                    // SAFETY: `part` filled these `n` bytes of `buf`'s unfilled part.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    *left -= n;
                    if *left == 0 {
                        this.reading = Reading::Header {
                            header: [0; 4],
                            got: 0,
                        };
                    }
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Chunked<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.shut {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "written after shutdown",
            )));
        }
        if this.writing.is_none() {
            if buf.is_empty() {
                return Poll::Ready(Ok(0));
            }
            let payload = buf.len().min(MAX_CHUNK);
            this.writing = Some(Writing {
                bytes: chunk(&buf[..payload]),
                sent: 0,
                payload,
            });
        }
        // A chunk left pending by an earlier call is this call's (a caller that got
        // `Pending` calls again with the same bytes).
        this.poll_send(cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        if !this.shut {
            this.shut = true;
            this.writing = Some(Writing {
                bytes: chunk(&[]),
                sent: 0,
                payload: 0,
            });
        }
        match ready!(this.poll_send(cx)) {
            // The other side closed already: its input has ended.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                this.writing = None;
                Poll::Ready(Ok(()))
            }
            Err(e) => Poll::Ready(Err(e)),
            Ok(_) => Pin::new(&mut this.inner).poll_flush(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Both directions of an in-memory duplex: a shut-down side's input ends at the other
    /// side while the other direction still flows, and bytes pass whole whatever the
    /// chunking.
    #[tokio::test]
    async fn a_shutdown_ends_one_direction_only() {
        let (a, b) = tokio::io::duplex(7);
        let (mut a, mut b) = (Chunked::new(a), Chunked::new(b));
        let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let sent = big.clone();
        let writer = tokio::spawn(async move {
            a.write_all(&sent).await.unwrap();
            a.shutdown().await.unwrap();
            let mut back = Vec::new();
            a.read_to_end(&mut back).await.unwrap();
            back
        });
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, big);
        b.write_all(b"answer").await.unwrap();
        b.shutdown().await.unwrap();
        assert_eq!(writer.await.unwrap(), b"answer");
    }

    #[test]
    fn a_chunk_is_its_length_then_its_bytes() {
        assert_eq!(chunk(b"ab"), vec![2, 0, 0, 0, b'a', b'b']);
        assert_eq!(chunk(b""), vec![0, 0, 0, 0]);
    }
}
