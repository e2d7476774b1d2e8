//! Windows: a connection is a Winsock `SOCKET`.

use std::os::windows::io::AsRawSocket;

/// The connection's socket, for [`set_linger_zero`] while the connection is open.
pub type RawFd = std::os::windows::io::RawSocket;

/// The connection's socket handle.
pub fn raw_fd(stream: &tokio::net::TcpStream) -> RawFd {
    stream.as_raw_socket()
}

/// Sets `SO_LINGER {on, 0}` so that closing the socket resets the connection.
pub fn set_linger_zero(fd: RawFd) {
    use windows_sys::Win32::Networking::WinSock::{LINGER, SO_LINGER, SOL_SOCKET, setsockopt};
    let linger = LINGER {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is the connection's socket, open while its response body is being
    // streamed; the option value is a valid LINGER of the size passed.
    let rc = unsafe {
        setsockopt(
            fd as usize,
            SOL_SOCKET,
            SO_LINGER,
            (&raw const linger).cast(),
            size_of::<LINGER>() as i32,
        )
    };
    if rc != 0 {
        tracing::warn!(fd, err = %std::io::Error::last_os_error(), "SO_LINGER failed; the drop will be a FIN");
    }
}
