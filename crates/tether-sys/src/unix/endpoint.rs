//! The daemon's endpoint on Unix: a Unix domain socket in the runtime folder.
//!
//! The socket is `<runtime folder>/tether-p<N>.sock` (mode 0600 in a 0700 folder of the
//! user's, R-DAEMON-1); the daemon's peer is checked with the socket's peer credentials
//! (`SO_PEERCRED` on Linux, `getpeereid` on the BSDs and macOS, both through tokio's
//! `peer_cred`): only this user's uid is served (R-DAEMON-3).

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{UnixListener, UnixStream};

/// Where a daemon listens: the socket's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address(PathBuf);

impl Address {
    /// The socket of the daemon named `name` (its key: `p<protocol version>`, R-DAEMON-1)
    /// in the runtime folder `dir`: `<dir>/tether-<name>.sock`.
    #[must_use]
    pub fn of_daemon(dir: &Path, name: &str) -> Self {
        Self(dir.join(format!("tether-{name}.sock")))
    }

    /// The socket's path (logged, shown in errors).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The runtime folder the endpoint belongs to (the socket's folder).
    #[must_use]
    pub fn runtime_dir(&self) -> &Path {
        self.0
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }

    /// Whether the endpoint is there: a daemon listens on it, or one that did not stop on
    /// purpose (killed, crashed) left it behind. A daemon that stops on purpose removes it
    /// first ([`Address::remove`]).
    #[must_use]
    pub fn exists(&self) -> bool {
        std::fs::symlink_metadata(&self.0).is_ok()
    }

    /// Removes the endpoint (a daemon stopping on purpose, or a stale socket nobody answers
    /// on). Errors are ignored: it may be gone already.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.display().fmt(f)
    }
}

/// A user, as the daemon's peer check compares them: a uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(u32);

impl std::fmt::Display for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}", self.0)
    }
}

/// The user this process runs as (its effective uid).
///
/// # Errors
/// Never on Unix (the signature is the Windows one's, where the token may be unreadable).
pub fn current_user() -> io::Result<User> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    Ok(User(unsafe { libc::geteuid() }))
}

/// Why [`Listener::bind`] failed.
#[derive(Debug)]
pub enum BindError {
    /// A daemon answers on the address already.
    AlreadyRunning,
    /// Binding failed.
    Io(io::Error),
}

/// A daemon's listening endpoint.
#[derive(Debug)]
pub struct Listener(UnixListener);

impl Listener {
    /// Binds `address` (mode 0600), after removing a stale socket there that nobody
    /// answers on. The caller has made its folder private.
    ///
    /// # Errors
    /// [`BindError::AlreadyRunning`] when a daemon answers there; [`BindError::Io`] when
    /// binding fails.
    pub async fn bind(address: &Address) -> Result<Self, BindError> {
        if address.exists() {
            if UnixStream::connect(address.path()).await.is_ok() {
                return Err(BindError::AlreadyRunning);
            }
            // Left by a daemon that died: nobody answers on it.
            address.remove();
        }
        let listener = UnixListener::bind(address.path()).map_err(BindError::Io)?;
        // The folder is 0700 already; the socket is private too, whatever the umask.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(address.path(), std::fs::Permissions::from_mode(0o600));
        Ok(Self(listener))
    }

    /// The next client's connection. Cancel-safe (tokio's `UnixListener::accept`).
    ///
    /// # Errors
    /// `accept(2)`'s error.
    pub async fn accept(&mut self) -> io::Result<Stream> {
        self.0.accept().await.map(|(stream, _)| Stream(stream))
    }
}

/// One connection to or from a daemon, both ways.
#[derive(Debug)]
pub struct Stream(UnixStream);

/// The reading half of a [`Stream`].
pub type ReadHalf = tokio::net::unix::OwnedReadHalf;
/// The writing half of a [`Stream`]: shutting it down (or dropping it) ends the other
/// side's input.
pub type WriteHalf = tokio::net::unix::OwnedWriteHalf;

impl Stream {
    /// Connects to the daemon at `address`.
    ///
    /// # Errors
    /// `connect(2)`'s error (`NotFound` or `ConnectionRefused` when no daemon listens).
    pub async fn connect(address: &Address) -> io::Result<Self> {
        UnixStream::connect(address.path()).await.map(Self)
    }

    /// The user at the other end (the daemon's side of a connection it accepted).
    ///
    /// # Errors
    /// The peer credentials cannot be read.
    pub fn peer_user(&self) -> io::Result<User> {
        self.0.peer_cred().map(|c| User(c.uid()))
    }

    /// Splits the stream into its two directions (no lock between them).
    #[must_use]
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        self.0.into_split()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_named_after_the_build_in_the_runtime_folder() {
        assert_eq!(
            Address::of_daemon(Path::new("/run/user/1000/tether"), "0123456789ab").path(),
            Path::new("/run/user/1000/tether/tether-0123456789ab.sock")
        );
    }
}
