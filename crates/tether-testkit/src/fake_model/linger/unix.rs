//! Unix: a connection is a file descriptor.

use std::os::fd::AsRawFd;
pub use std::os::fd::RawFd;

/// The connection's descriptor, for [`set_linger_zero`] while the connection is open.
pub fn raw_fd(stream: &tokio::net::TcpStream) -> RawFd {
    stream.as_raw_fd()
}

/// Sets `SO_LINGER {on, 0}` so that closing the socket resets the connection.
pub fn set_linger_zero(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is the connection's socket, open while its response body is being
    // streamed (this runs before the body ends); the option value is a valid `linger`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::warn!(fd, err = %std::io::Error::last_os_error(), "SO_LINGER failed; the drop will be a FIN");
    }
}
