//! The daemon's endpoint on Windows: a named pipe per user, runtime folder and protocol version.
//!
//! - **Name.** `\\.\pipe\tether-p<N>-<key>`, where `<key>` is the first 16 hex digits
//!   of SHA-256 over the user's SID, a newline and the runtime folder's absolute path in
//!   lower case (Windows compares paths without case): two users, two runtime folders
//!   (tests give each daemon its own) or two protocol versions never share a pipe, and the name tells
//!   nobody else whose it is (R-DAEMON-1). A pipe has no file to leave behind, so the
//!   daemon also writes `<runtime folder>\tether-p<N>.pipe` (holding the pipe's name)
//!   when it binds and removes it when it stops on purpose: a forwarder that finds the file
//!   but no pipe knows the daemon was lost, not stopped (R-DAEMON-8).
//! - **Who may open it.** Every instance is created with a security descriptor whose DACL
//!   is protected (no inherited entries) and grants `GENERIC_ALL` to the current user's SID
//!   alone, SDDL `D:P(A;;GA;;;<SID>)` ([`owner_only_sddl`]); the default DACL of a named
//!   pipe would also let `Everyone` and anonymous logons read it. `LocalSystem` gets no
//!   entry: nothing that runs as SYSTEM has business with the user's daemon, and an
//!   administrator can still take ownership. Remote clients are rejected
//!   (`PIPE_REJECT_REMOTE_CLIENTS`).
//! - **One daemon.** A bind first asks whether the pipe exists (`WaitNamedPipeW` with a
//!   1 ms timeout, which connects to nothing), then creates the first instance with
//!   `FILE_FLAG_FIRST_PIPE_INSTANCE`: a second daemon, or anyone who created the name first
//!   (a squatter), makes the bind fail ([`BindError::AlreadyRunning`]); the flag also
//!   closes the race between two binds that both found no pipe. A new instance is created
//!   before each connected one is handed over, so a client always finds one waiting
//!   (tokio's `named_pipe` server loop).
//! - **The peer.** The daemon asks for the client's process id
//!   (`GetNamedPipeClientProcessId`), opens that process's token and compares its user SID
//!   (`TokenUser`) with its own, as `SO_PEERCRED` does on Linux (R-DAEMON-3); a client
//!   checks the server's process the same way (`GetNamedPipeServerProcessId`) before it
//!   says hello, so a squatter's pipe never receives an editor's environment.
//! - **Half-close.** A pipe has none, so each direction's bytes travel in chunks and a
//!   [`Stream`]'s `poll_shutdown` sends the end chunk (`sys/chunks.rs`): the other side
//!   reads the end of its input while it can still answer.
//!
//! Wine (where the Windows suite runs) enforces neither pipe DACLs nor the first-instance
//! flag (Wine 8.0 creates a second first instance without a word): the tests below check
//! what is asked of Windows (the SDDL, the name, the options), not that Windows enforces
//! it; under Wine a second daemon is refused by the `WaitNamedPipeW` probe alone.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::chunks::Chunked;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::windows::named_pipe::{
    ClientOptions, NamedPipeClient, NamedPipeServer, PipeMode, ServerOptions,
};
use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_PIPE_BUSY, ERROR_SEM_TIMEOUT, HANDLE, HLOCAL, LocalFree,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    TokenUser,
};
use windows_sys::Win32::System::Pipes::{
    GetNamedPipeClientProcessId, GetNamedPipeServerProcessId, WaitNamedPipeW,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

/// How long [`Stream::connect`] keeps trying while every instance of the pipe is busy
/// (`ERROR_PIPE_BUSY`: the daemon has not yet created the next instance).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a daemon listens: its pipe's name and the marker file in the runtime folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pipe: PathBuf,
    dir: PathBuf,
    marker: PathBuf,
}

impl Address {
    /// The pipe of the daemon named `name` (its key: `p<protocol version>`, R-DAEMON-1) for
    /// the runtime folder `dir` and this user: `\\.\pipe\tether-<name>-<key>`
    /// ([`pipe_name`]).
    #[must_use]
    pub fn of_daemon(dir: &Path, name: &str) -> Self {
        let sid = current_user().map_or_else(
            |e| {
                tracing::warn!("cannot read this process's user SID ({e}); the pipe's name is keyed on the folder alone");
                String::new()
            },
            |u| u.0,
        );
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
        Self {
            pipe: PathBuf::from(pipe_name(name, &sid, &absolute)),
            dir: dir.to_owned(),
            marker: dir.join(format!("tether-{name}.pipe")),
        }
    }

    /// The pipe's name (logged, shown in errors).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.pipe
    }

    /// The runtime folder the endpoint belongs to (where its marker file is).
    #[must_use]
    pub fn runtime_dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the endpoint is there: a daemon listens on it, or one that did not stop on
    /// purpose (killed, crashed) left its marker file behind. A daemon that stops on
    /// purpose removes the marker first ([`Address::remove`]).
    #[must_use]
    pub fn exists(&self) -> bool {
        std::fs::symlink_metadata(&self.marker).is_ok()
    }

    /// Removes the marker file (a daemon stopping on purpose); the pipe itself goes with
    /// its last handle. Errors are ignored: it may be gone already.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.marker);
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pipe.display().fmt(f)
    }
}

/// The pipe's name for the daemon named `name` (`p<protocol version>`), the user `sid` (a
/// string SID, `S-1-5-21-…`) and the absolute runtime folder `dir`:
/// `\\.\pipe\tether-<name>-<key>`, `<key>` the first 16 hex digits of SHA-256 over
/// `<sid>\n<dir in lower case>`. 46 characters with a 12-character name, far under the 256
/// a pipe name may have.
#[must_use]
pub fn pipe_name(name: &str, sid: &str, dir: &Path) -> String {
    let mut hash = Sha256::new();
    hash.update(sid.as_bytes());
    hash.update(b"\n");
    hash.update(dir.to_string_lossy().to_lowercase().as_bytes());
    let key = hex::encode(&hash.finalize()[..8]);
    format!(r"\\.\pipe\tether-{name}-{key}")
}

/// The SDDL of the security descriptor every instance of the daemon's pipe gets: a
/// protected DACL (`P`: nothing inherited) with one entry allowing (`A`) `GENERIC_ALL`
/// (`GA`) to `sid`. No entry for `Everyone`, anonymous logons, or `LocalSystem`.
#[must_use]
pub fn owner_only_sddl(sid: &str) -> String {
    format!("D:P(A;;GA;;;{sid})")
}

/// The server options of the daemon's pipe: byte mode both ways, remote clients rejected,
/// and `FILE_FLAG_FIRST_PIPE_INSTANCE` for the first instance (`first`).
#[must_use]
pub fn server_options(first: bool) -> ServerOptions {
    let mut options = ServerOptions::new();
    options
        .pipe_mode(PipeMode::Byte)
        .access_inbound(true)
        .access_outbound(true)
        .reject_remote_clients(true)
        .first_pipe_instance(first);
    options
}

/// A user, as the daemon's peer check compares them: a string SID (`S-1-5-21-…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(String);

impl User {
    /// The string SID (`S-1-5-21-…`).
    #[must_use]
    pub fn sid(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user {}", self.0)
    }
}

/// The user this process runs as: its token's user SID.
///
/// # Errors
/// The token cannot be opened or read.
pub fn current_user() -> io::Result<User> {
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
    unsafe { user_of_process(GetCurrentProcess()) }
}

/// The user SID of the process `pid`.
fn user_of_pid(pid: u32) -> io::Result<User> {
    // SAFETY: OpenProcess has no memory preconditions; the handle is owned below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just opened, owned (closed on drop) from here on.
    let process = unsafe { OwnedHandle::from_raw_handle(process) };
    // SAFETY: a valid process handle.
    unsafe { user_of_process(process.as_raw_handle()) }
}

/// The user SID of `process`'s token, as a string.
///
/// # Safety
/// `process` is a valid process handle with `PROCESS_QUERY_LIMITED_INFORMATION` access.
unsafe fn user_of_process(process: HANDLE) -> io::Result<User> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: `token` receives a new handle on success.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &raw mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just opened, owned (closed on drop) from here on.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut len = 0u32;
    // SAFETY: a size query (null buffer, length 0); fails with ERROR_INSUFFICIENT_BUFFER.
    unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            std::ptr::null_mut(),
            0,
            &raw mut len,
        )
    };
    // u64 words: TOKEN_USER's pointers are 8-byte aligned.
    let mut buf = vec![0u64; (len as usize).div_ceil(8).max(1)];
    // SAFETY: `buf` holds `len` bytes.
    if unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            buf.as_mut_ptr().cast(),
            len,
            &raw mut len,
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: GetTokenInformation(TokenUser) filled `buf` with a TOKEN_USER.
    let user = unsafe { &*buf.as_ptr().cast::<TOKEN_USER>() };
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: the SID points into `buf`; `text` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(user.User.Sid, &raw mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated wide string from ConvertSidToStringSidW, LocalAlloc'd.
    Ok(User(unsafe { take_local_wide(text) }))
}

/// The NUL-terminated wide string `text` as a `String`, then frees it.
///
/// # Safety
/// `text` is a NUL-terminated UTF-16 string allocated with `LocalAlloc`.
pub(super) unsafe fn take_local_wide(text: *mut u16) -> String {
    // SAFETY: NUL-terminated, per the caller.
    let string = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
    };
    // SAFETY: LocalAlloc'd, per the caller.
    unsafe { LocalFree(text as HLOCAL) };
    string
}

/// A self-relative security descriptor made from SDDL, freed with `LocalFree`.
struct SecurityDescriptor(PSECURITY_DESCRIPTOR);

// SAFETY: the descriptor is immutable after creation and only read by CreateNamedPipeW.
unsafe impl Send for SecurityDescriptor {}
// SAFETY: as above.
unsafe impl Sync for SecurityDescriptor {}

impl SecurityDescriptor {
    /// [`owner_only_sddl`] for `user`, converted.
    fn owner_only(user: &User) -> io::Result<Self> {
        let sddl: Vec<u16> = owner_only_sddl(&user.0)
            .encode_utf16()
            .chain(Some(0))
            .collect();
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: `sddl` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor.
        if unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &raw mut sd,
                std::ptr::null_mut(),
            )
        } == 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(Self(sd))
    }

    /// Creates an instance of the pipe `name` with this descriptor.
    fn create(&self, name: &Path, first: bool) -> io::Result<NamedPipeServer> {
        let mut attributes = SECURITY_ATTRIBUTES {
            nLength: u32::try_from(std::mem::size_of::<SECURITY_ATTRIBUTES>()).unwrap_or(0),
            lpSecurityDescriptor: self.0,
            bInheritHandle: 0,
        };
        // SAFETY: `attributes` is a valid SECURITY_ATTRIBUTES that outlives the call.
        unsafe {
            server_options(first)
                .create_with_security_attributes_raw(name, (&raw mut attributes).cast())
        }
    }
}

impl Drop for SecurityDescriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(self.0 as HLOCAL) };
    }
}

/// Whether any instance of the pipe `name` exists (free or busy): `WaitNamedPipeW` with a
/// 1 ms timeout succeeds for a free one and fails with `ERROR_SEM_TIMEOUT` for a busy one;
/// it connects to none.
fn pipe_exists(name: &Path) -> bool {
    use std::os::windows::ffi::OsStrExt;
    let wide: Vec<u16> = name.as_os_str().encode_wide().chain(Some(0)).collect();
    // SAFETY: `wide` is NUL-terminated and outlives the call.
    if unsafe { WaitNamedPipeW(wide.as_ptr(), 1) } != 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(ERROR_SEM_TIMEOUT as i32)
}

/// Why [`Listener::bind`] failed.
#[derive(Debug)]
pub enum BindError {
    /// The pipe exists already: another daemon listens there, or someone else created
    /// the name first.
    AlreadyRunning,
    /// Creating the pipe failed.
    Io(io::Error),
}

/// A daemon's listening endpoint: the instance that waits for the next client.
pub struct Listener {
    address: Address,
    security: SecurityDescriptor,
    next: Option<NamedPipeServer>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Creates the pipe's first instance (owner-only DACL, remote clients rejected,
    /// `FILE_FLAG_FIRST_PIPE_INSTANCE`) unless the pipe exists already ([`pipe_exists`]),
    /// then writes the marker file. The caller has made the runtime folder private.
    ///
    /// # Errors
    /// [`BindError::AlreadyRunning`] when the pipe exists already; [`BindError::Io`] when
    /// the user's SID cannot be read or the pipe or the marker cannot be created.
    pub async fn bind(address: &Address) -> Result<Self, BindError> {
        if pipe_exists(&address.pipe) {
            return Err(BindError::AlreadyRunning);
        }
        let user = current_user().map_err(BindError::Io)?;
        let security = SecurityDescriptor::owner_only(&user).map_err(BindError::Io)?;
        let first = match security.create(&address.pipe, true) {
            Ok(p) => p,
            Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
                return Err(BindError::AlreadyRunning);
            }
            Err(e) => return Err(BindError::Io(e)),
        };
        std::fs::write(&address.marker, address.pipe.to_string_lossy().as_bytes())
            .map_err(BindError::Io)?;
        Ok(Self {
            address: address.clone(),
            security,
            next: Some(first),
        })
    }

    /// The next client's connection. A new instance is created before the connected one
    /// is handed over. Cancel-safe (tokio's `NamedPipeServer::connect` is).
    ///
    /// # Errors
    /// Waiting for a client failed, or no new instance could be created (then after a
    /// pause of 100 ms, so that a caller that loops does not spin).
    pub async fn accept(&mut self) -> io::Result<Stream> {
        let waiting = match self.next.take() {
            Some(p) => p,
            None => match self.security.create(&self.address.pipe, false) {
                Ok(p) => p,
                Err(e) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return Err(e);
                }
            },
        };
        if let Err(e) = self.next.insert(waiting).connect().await {
            // The instance is spent (a client that came and went): a new one next time.
            self.next = None;
            return Err(e);
        }
        let connected = self.next.take();
        match self.security.create(&self.address.pipe, false) {
            Ok(p) => self.next = Some(p),
            Err(e) => tracing::warn!(error = %e, "cannot create the pipe's next instance yet"),
        }
        connected
            .map(|p| Stream::Server(Chunked::new(p)))
            .ok_or_else(|| io::Error::other("no pipe instance"))
    }
}

/// One connection to or from a daemon, both ways.
#[derive(Debug)]
pub enum Stream {
    /// The daemon's side.
    Server(Chunked<NamedPipeServer>),
    /// A client's side.
    Client(Chunked<NamedPipeClient>),
}

/// The reading half of a [`Stream`].
pub type ReadHalf = tokio::io::ReadHalf<Stream>;
/// The writing half of a [`Stream`]: shutting it down ends the other side's input (the
/// end chunk; see the module's documentation).
pub type WriteHalf = tokio::io::WriteHalf<Stream>;

impl Stream {
    /// Connects to the daemon at `address`, trying again for up to [`BUSY_TIMEOUT`] while
    /// every instance is busy, then checks that the pipe's server runs as this user.
    ///
    /// # Errors
    /// `NotFound` when no daemon listens; `PermissionDenied` when the pipe's server is
    /// another user's process; the open's error.
    pub async fn connect(address: &Address) -> io::Result<Self> {
        let deadline = Instant::now() + BUSY_TIMEOUT;
        let client = loop {
            match ClientOptions::new().open(&address.pipe) {
                Ok(c) => break c,
                Err(e)
                    if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32)
                        && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e),
            }
        };
        let stream = Self::Client(Chunked::new(client));
        let (me, server) = (current_user()?, stream.peer_user()?);
        if me != server {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is held by a process of {server}, not of this {me}: refusing to talk to it",
                    address.pipe.display()
                ),
            ));
        }
        Ok(stream)
    }

    /// The user of the process at the other end: the client's for the daemon's side, the
    /// daemon's for a client's side.
    ///
    /// # Errors
    /// The process id, the process or its token cannot be read.
    pub fn peer_user(&self) -> io::Result<User> {
        let mut pid = 0u32;
        // SAFETY: a valid pipe handle; `pid` receives the process id.
        let ok = unsafe {
            match self {
                Self::Server(p) => {
                    GetNamedPipeClientProcessId(p.get_ref().as_raw_handle(), &raw mut pid)
                }
                Self::Client(p) => {
                    GetNamedPipeServerProcessId(p.get_ref().as_raw_handle(), &raw mut pid)
                }
            }
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        user_of_pid(pid)
    }

    /// Splits the stream into its two directions (`tokio::io::split`).
    #[must_use]
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        tokio::io::split(self)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Server(p) => Pin::new(p).poll_read(cx, buf),
            Self::Client(p) => Pin::new(p).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Server(p) => Pin::new(p).poll_write(cx, buf),
            Self::Client(p) => Pin::new(p).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Server(p) => Pin::new(p).poll_flush(cx),
            Self::Client(p) => Pin::new(p).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Server(p) => Pin::new(p).poll_shutdown(cx),
            Self::Client(p) => Pin::new(p).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is asked of Windows for the pipe's ACL. Wine does not enforce pipe DACLs, so
    /// the Windows suite (under Wine) can only check the request, not its enforcement.
    #[test]
    fn the_pipe_s_dacl_grants_the_user_alone() {
        let sid = "S-1-5-21-1004336348-1177238915-682003330-512";
        assert_eq!(owner_only_sddl(sid), format!("D:P(A;;GA;;;{sid})"));
        let me = current_user().expect("this process's SID");
        assert!(me.0.starts_with("S-1-"), "{me}");
        SecurityDescriptor::owner_only(&me).expect("Windows accepts the SDDL");
    }

    /// The DACL of the kernel object `handle`, as SDDL.
    fn dacl_of(handle: HANDLE) -> String {
        use windows_sys::Win32::Security::Authorization::{
            ConvertSecurityDescriptorToStringSecurityDescriptorW, GetSecurityInfo, SE_KERNEL_OBJECT,
        };
        use windows_sys::Win32::Security::DACL_SECURITY_INFORMATION;
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a valid handle; `sd` receives a LocalAlloc'd descriptor.
        let rc = unsafe {
            GetSecurityInfo(
                handle,
                SE_KERNEL_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut sd,
            )
        };
        assert_eq!(rc, 0, "GetSecurityInfo");
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: `sd` is valid; `text` receives a LocalAlloc'd string.
        let ok = unsafe {
            ConvertSecurityDescriptorToStringSecurityDescriptorW(
                sd,
                SDDL_REVISION_1,
                DACL_SECURITY_INFORMATION,
                &raw mut text,
                std::ptr::null_mut(),
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        // SAFETY: LocalAlloc'd by the calls above.
        unsafe {
            LocalFree(sd as HLOCAL);
            take_local_wide(text)
        }
    }

    /// The DACL a bound pipe carries, read back from its instance: one entry, allowing
    /// everything to this user (`GA` as asked, or `FA`, the file rights it maps to), nothing
    /// inherited. Wine stores the descriptor but does not enforce it, so this checks what
    /// Windows is asked, not that another user is kept out.
    #[tokio::test]
    async fn a_bound_pipe_carries_the_owner_only_dacl() {
        let tmp = tempfile::tempdir().unwrap();
        let address = Address::of_daemon(tmp.path(), "0123456789ab");
        let listener = Listener::bind(&address).await.unwrap();
        let sid = current_user().unwrap().0;
        let dacl = dacl_of(listener.next.as_ref().unwrap().as_raw_handle());
        assert!(
            [format!("D:P(A;;GA;;;{sid})"), format!("D:P(A;;FA;;;{sid})")].contains(&dacl),
            "{dacl}"
        );
        drop(listener);
        address.remove();
    }

    /// The pipe's name: per build, user and runtime folder (case-insensitively), short.
    #[test]
    fn the_pipe_name_is_keyed_on_build_user_and_folder() {
        let dir = Path::new(r"C:\Users\ada\AppData\Local\tether\run");
        let name = pipe_name("0123456789ab", "S-1-5-21-1-2-3-1001", dir);
        assert!(name.starts_with(r"\\.\pipe\tether-0123456789ab-"), "{name}");
        assert_eq!(name.len(), r"\\.\pipe\tether-0123456789ab-".len() + 16);
        let upper = Path::new(r"C:\USERS\ADA\APPDATA\LOCAL\TETHER\RUN");
        assert_eq!(
            name,
            pipe_name("0123456789ab", "S-1-5-21-1-2-3-1001", upper)
        );
        assert_ne!(name, pipe_name("0123456789ab", "S-1-5-21-1-2-3-1002", dir));
        assert_ne!(name, pipe_name("ba9876543210", "S-1-5-21-1-2-3-1001", dir));
        assert_ne!(
            name,
            pipe_name(
                "0123456789ab",
                "S-1-5-21-1-2-3-1001",
                Path::new(r"C:\other")
            )
        );
    }

    /// A daemon's side and a client's: the peer is this user both ways, and a shut-down
    /// write half is the other side's end of input while the other direction still flows.
    #[tokio::test]
    async fn a_client_reaches_the_listener_and_half_closes() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let tmp = tempfile::tempdir().unwrap();
        let address = Address::of_daemon(tmp.path(), "0123456789ab");
        let mut listener = Listener::bind(&address).await.unwrap();
        assert!(address.exists(), "the marker is written");
        let server = tokio::spawn(async move {
            let mut stream = listener.accept().await.unwrap();
            assert_eq!(stream.peer_user().unwrap(), current_user().unwrap());
            let mut got = Vec::new();
            stream.read_to_end(&mut got).await.unwrap();
            stream.write_all(b"answer").await.unwrap();
            stream.shutdown().await.unwrap();
            got
        });
        // The current-thread runtime runs the server task up to its pending connect.
        tokio::task::yield_now().await;
        assert!(matches!(
            Listener::bind(&address).await,
            Err(BindError::AlreadyRunning)
        ));
        let client = Stream::connect(&address).await.unwrap();
        let (mut read, mut write) = client.into_split();
        write.write_all(b"hello").await.unwrap();
        write.shutdown().await.unwrap();
        let mut answer = Vec::new();
        read.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"answer");
        assert_eq!(server.await.unwrap(), b"hello");
        address.remove();
        assert!(!address.exists());
    }
}
