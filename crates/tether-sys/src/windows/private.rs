//! Files and folders private to the user: an owner-only DACL set at creation, read back.
//!
//! - **What is set.** Every folder Tether creates (the session cache, the daemon's runtime
//!   folder, the logs' folder, and their missing parents) is created (`CreateDirectoryW`)
//!   with a security descriptor whose DACL is protected (`P`: nothing inherited from the
//!   parent) and holds one entry allowing `FILE_ALL_ACCESS` to the current user's SID,
//!   inherited by the files (`OI`) and folders (`CI`) created inside:
//!   SDDL `D:P(A;OICI;FA;;;<SID>)` ([`owner_only_dir_sddl`]). A file Tether creates through
//!   this layer (the logs) gets `D:P(A;;FA;;;<SID>)` (`CreateFileW`,
//!   [`owner_only_file_sddl`]); any other file created in such a folder (the store's
//!   journals, written through `std::fs`) inherits the folder's one entry at its creation,
//!   so no file is ever open to others, not even for a moment.
//! - **Whom it leaves out.** Windows' own per-user folders (`%USERPROFILE%`,
//!   `%LOCALAPPDATA%`) also grant `SYSTEM` and `Administrators` full control. Tether's
//!   folders grant the user alone, as the daemon's pipe does (`endpoint`): what must read
//!   them as `SYSTEM` does so through privileges that DACLs do not stop (backup and restore,
//!   Volume Shadow Copy, an antivirus's file-system filter use `SeBackupPrivilege` or run in
//!   the kernel), and an administrator can still take ownership (`SeTakeOwnershipPrivilege`),
//!   so nothing is locked out for good; what reads with plain access as `SYSTEM` (the search
//!   indexer) has no business with transcripts. The entry names the user's SID, not
//!   `CREATOR OWNER`: an elevated process's objects are owned by `Administrators`, and the
//!   same user's unelevated processes must still open them.
//! - **Read back.** [`read_dacl`] (`GetNamedSecurityInfoW`) returns the DACL as entries;
//!   [`check_private`] accepts a path whose DACL allows nobody but the user (its entries
//!   explicit or inherited from a folder of ours) and `LocalSystem`
//!   ([`only_user_allowed`]). The store refuses a folder that fails it, naming the `icacls`
//!   that fixes it; the daemon's runtime folder, made by an older build or by hand, is
//!   given the owner-only DACL instead ([`set_owner_only`], `SetNamedSecurityInfoW`: the
//!   `chmod 700` of Unix), which Windows also passes down to what is inside.
//!
//! Under Wine (the `windows` suite) none of this is enforced, and little shows: Debian's
//! Wine 8 does not keep the security descriptor given to a file; it turns the one given at
//! creation into a Unix mode (0700 here) and reports a DACL made from the mode
//! (`LocalSystem`, the owner, and `Everyone` when others may read); a DACL set on an
//! existing file changes nothing it reports. The tests check the descriptor asked for
//! exactly everywhere, and the one read back exactly on Windows and in Wine's form under
//! Wine.

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::FromRawHandle;
use std::path::Path;

use windows_sys::Win32::Foundation::{HLOCAL, LocalFree};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
    GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT, SetNamedSecurityInfoW,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, GetAce,
    GetSecurityDescriptorControl, GetSecurityDescriptorDacl, OWNER_SECURITY_INFORMATION,
    PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, SE_DACL_PROTECTED,
    SECURITY_ATTRIBUTES,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateDirectoryW, CreateFileW, FILE_APPEND_DATA, FILE_ATTRIBUTE_NORMAL, FILE_READ_ATTRIBUTES,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_ALWAYS, SYNCHRONIZE,
};
use windows_sys::Win32::System::SystemServices::{ACCESS_ALLOWED_ACE_TYPE, ACCESS_DENIED_ACE_TYPE};

use super::endpoint::{current_user, take_local_wide};

/// The SDDL of a folder Tether creates: a protected DACL with one entry allowing
/// `FILE_ALL_ACCESS` (`FA`) to `sid` (a string SID, `S-1-5-21-…`), inherited by files
/// (`OI`) and folders (`CI`) created inside.
#[must_use]
pub fn owner_only_dir_sddl(sid: &str) -> String {
    format!("D:P(A;OICI;FA;;;{sid})")
}

/// The SDDL of a file Tether creates: a protected DACL with one entry allowing
/// `FILE_ALL_ACCESS` to `sid`.
#[must_use]
pub fn owner_only_file_sddl(sid: &str) -> String {
    format!("D:P(A;;FA;;;{sid})")
}

/// One entry of a DACL, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ace {
    /// `ACCESS_ALLOWED_ACE_TYPE` (0), `ACCESS_DENIED_ACE_TYPE` (1) or another type.
    pub kind: u8,
    /// The inheritance flags (`OBJECT_INHERIT_ACE` 0x1, `CONTAINER_INHERIT_ACE` 0x2,
    /// `INHERITED_ACE` 0x10, …).
    pub flags: u8,
    /// The access mask (`FILE_ALL_ACCESS` is `0x1F01FF`).
    pub mask: u32,
    /// The trustee, a string SID; empty for an entry type that carries none here.
    pub sid: String,
}

/// A file's or folder's DACL, as read back by [`read_dacl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dacl {
    /// `SE_DACL_PROTECTED`: no entry is inherited from the parent.
    pub protected: bool,
    /// The entries in order; `None` for a NULL DACL (everyone may do everything).
    pub entries: Option<Vec<Ace>>,
}

/// The DACL of `path` (`GetNamedSecurityInfoW`, `DACL_SECURITY_INFORMATION`).
///
/// # Errors
/// The call's error (the path does not exist, access is denied).
pub fn read_dacl(path: &Path) -> io::Result<Dacl> {
    let wide = wide(path);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `wide` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor, freed
    // after its entries are copied out.
    let rc = unsafe {
        GetNamedSecurityInfoW(
            wide.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &raw mut dacl,
            std::ptr::null_mut(),
            &raw mut sd,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc as i32));
    }
    let sd = LocalBox(sd);
    // SAFETY: the descriptor just returned, alive until `sd` drops.
    unsafe { dacl_of_descriptor(sd.0) }
}

/// The DACL held in the security descriptor `sd`.
///
/// # Safety
/// `sd` points to a valid security descriptor that outlives the call.
unsafe fn dacl_of_descriptor(sd: PSECURITY_DESCRIPTOR) -> io::Result<Dacl> {
    let mut control = 0u16;
    let mut revision = 0u32;
    // SAFETY: a valid descriptor, per the caller.
    if unsafe { GetSecurityDescriptorControl(sd, &raw mut control, &raw mut revision) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let (mut present, mut defaulted) = (0, 0);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    // SAFETY: as above; `dacl` points into the descriptor.
    if unsafe { GetSecurityDescriptorDacl(sd, &raw mut present, &raw mut dacl, &raw mut defaulted) }
        == 0
    {
        return Err(io::Error::last_os_error());
    }
    let entries = if present == 0 || dacl.is_null() {
        None
    } else {
        // SAFETY: `dacl` points to a valid ACL inside the descriptor.
        Some(unsafe { entries_of(dacl) }?)
    };
    Ok(Dacl {
        protected: control & SE_DACL_PROTECTED != 0,
        entries,
    })
}

/// The entries of `acl`.
///
/// # Safety
/// `acl` points to a valid ACL that outlives the call.
unsafe fn entries_of(acl: *const ACL) -> io::Result<Vec<Ace>> {
    // SAFETY: a valid ACL, per the caller.
    let count = unsafe { (*acl).AceCount };
    let mut out = Vec::with_capacity(usize::from(count));
    for i in 0..u32::from(count) {
        let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `i` is below the ACL's entry count; `ace` points into the ACL.
        if unsafe { GetAce(acl, i, &raw mut ace) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: every entry starts with an ACE_HEADER.
        let header = unsafe { *ace.cast::<ACE_HEADER>() };
        let allowed_or_denied = u32::from(header.AceType) == ACCESS_ALLOWED_ACE_TYPE
            || u32::from(header.AceType) == ACCESS_DENIED_ACE_TYPE;
        let (mask, sid) = if allowed_or_denied {
            // ACCESS_DENIED_ACE has the layout of ACCESS_ALLOWED_ACE: header, mask, SID.
            let entry = ace.cast::<ACCESS_ALLOWED_ACE>();
            // SAFETY: an allowed or denied entry; its SID starts at `SidStart`.
            unsafe {
                (
                    (*entry).Mask,
                    sid_string((&raw mut (*entry).SidStart).cast())?,
                )
            }
        } else {
            // SAFETY: every other common entry type also has its mask after the header.
            (
                unsafe { (*ace.cast::<ACCESS_ALLOWED_ACE>()).Mask },
                String::new(),
            )
        };
        out.push(Ace {
            kind: header.AceType,
            flags: header.AceFlags,
            mask,
            sid,
        });
    }
    Ok(out)
}

/// The SID at `sid` as a string.
///
/// # Safety
/// `sid` points to a valid SID.
unsafe fn sid_string(sid: *mut core::ffi::c_void) -> io::Result<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: a valid SID, per the caller; `text` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(sid, &raw mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated LocalAlloc'd string from ConvertSidToStringSidW.
    Ok(unsafe { take_local_wide(text) })
}

/// `LocalSystem`'s SID: the operating system itself.
pub const LOCAL_SYSTEM: &str = "S-1-5-18";

/// Whether `dacl` lets nobody but `sid` in: a DACL is present (a NULL one lets everyone
/// in), and every allowing entry names `sid` or [`LOCAL_SYSTEM`]. Tether never grants
/// `LocalSystem` (see the module's notes) but accepts an entry for it: what runs as
/// `SYSTEM` reads every file anyway through its privileges, so the entry shows nothing to
/// another user (Wine, which keeps no DACL of files, reports one made from the Unix mode,
/// and that one always allows `LocalSystem`). `Err` says what is wrong.
///
/// # Errors
/// The first entry allowing someone else, or a NULL DACL.
pub fn only_user_allowed(dacl: &Dacl, sid: &str) -> Result<(), String> {
    let Some(entries) = &dacl.entries else {
        return Err("it has no DACL, so everyone has access".into());
    };
    match entries.iter().find(|e| {
        u32::from(e.kind) != ACCESS_DENIED_ACE_TYPE && e.sid != sid && e.sid != LOCAL_SYSTEM
    }) {
        Some(e) if e.sid.is_empty() => Err(format!(
            "its DACL has an entry of type {} that this check does not know",
            e.kind
        )),
        Some(e) => Err(format!(
            "its DACL allows {} (access mask {:#x}), not only this user ({sid})",
            e.sid, e.mask
        )),
        None => Ok(()),
    }
}

/// Checks that `path` is private to the user: its DACL allows nobody else
/// ([`only_user_allowed`]). On failure, the reason names the fix: `icacls <path>
/// /inheritance:r /grant:r <user>:(OI)(CI)F` is the Windows `chmod 700`.
///
/// # Errors
/// `Ok(Err(why))` when someone else is allowed; `Err` when the DACL or the user's SID cannot
/// be read.
pub fn check_private(path: &Path) -> io::Result<Result<(), String>> {
    let me = current_user()?;
    Ok(only_user_allowed(&read_dacl(path)?, me.sid()).map_err(|why| {
        format!(
            "{why}; `icacls \"{}\" /inheritance:r /grant:r %USERNAME%:(OI)(CI)F` makes it the user's alone",
            path.display()
        )
    }))
}

/// A self-relative security descriptor made from SDDL, freed with `LocalFree`.
struct Descriptor(LocalBox);

impl Descriptor {
    /// The owner-only descriptor of a folder (`dir`) or a file, for the current user.
    fn owner_only(dir: bool) -> io::Result<Self> {
        let me = current_user()?;
        let sddl = if dir {
            owner_only_dir_sddl(me.sid())
        } else {
            owner_only_file_sddl(me.sid())
        };
        let sddl: Vec<u16> = sddl.encode_utf16().chain(Some(0)).collect();
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
        Ok(Self(LocalBox(sd)))
    }

    /// Security attributes pointing at this descriptor, valid while it lives.
    fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES {
            nLength: u32::try_from(std::mem::size_of::<SECURITY_ATTRIBUTES>()).unwrap_or(0),
            lpSecurityDescriptor: self.0.0,
            bInheritHandle: 0,
        }
    }
}

/// Memory from `LocalAlloc`, freed on drop.
struct LocalBox(PSECURITY_DESCRIPTOR);

impl Drop for LocalBox {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: LocalAlloc'd by the call that returned it.
            unsafe { LocalFree(self.0 as HLOCAL) };
        }
    }
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// Creates the folder `path` (its parent must exist) with the owner-only DACL.
///
/// # Errors
/// `CreateDirectoryW`'s error (`AlreadyExists` included).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    let sd = Descriptor::owner_only(true)?;
    let attributes = sd.attributes();
    let wide = wide(path);
    // SAFETY: `wide` is NUL-terminated; `attributes` and its descriptor outlive the call.
    if unsafe { CreateDirectoryW(wide.as_ptr(), &raw const attributes) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Creates `dir` and its missing parents, each new one with the owner-only DACL; an
/// existing folder is left as it is.
///
/// # Errors
/// The first creation's error other than an existing folder.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    match create_private_dir(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    if let Some(parent) = dir.parent() {
        create_private_dir_all(parent)?;
    }
    match create_private_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        done => done,
    }
}

/// Opens `path` for appending (`FILE_APPEND_DATA`; shared for reading, writing and
/// deleting, as `std` opens files), creating it with the owner-only DACL when it is missing
/// (an existing file keeps its DACL).
///
/// # Errors
/// `CreateFileW`'s error.
pub fn open_private_append(path: &Path) -> io::Result<std::fs::File> {
    let sd = Descriptor::owner_only(false)?;
    let attributes = sd.attributes();
    let wide = wide(path);
    // SAFETY: `wide` is NUL-terminated; `attributes` and its descriptor outlive the call;
    // the handle returned is owned by the File below.
    let handle = unsafe {
        CreateFileW(
            wide.as_ptr(),
            FILE_APPEND_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            &raw const attributes,
            OPEN_ALWAYS,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    if handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just opened, owned by the File from here on.
    Ok(unsafe { std::fs::File::from_raw_handle(handle) })
}

/// The owner of `path` as a string SID (`GetNamedSecurityInfoW`,
/// `OWNER_SECURITY_INFORMATION`).
///
/// # Errors
/// The call's error.
pub fn owner_sid(path: &Path) -> io::Result<String> {
    let wide = wide(path);
    let mut owner: *mut core::ffi::c_void = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `wide` is NUL-terminated; `owner` points into `sd`, a LocalAlloc'd
    // descriptor freed after the SID is copied out as text.
    let rc = unsafe {
        GetNamedSecurityInfoW(
            wide.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &raw mut owner,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &raw mut sd,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc as i32));
    }
    let sd = LocalBox(sd);
    // SAFETY: `owner` points into the descriptor `sd`, alive until the end of this scope.
    let sid = unsafe { sid_string(owner) };
    drop(sd);
    sid
}

/// Makes a folder that the current user owns but others may enter (one made before Tether
/// set its own DACL, which inherited its parent's: `SYSTEM`, `Administrators` and the user
/// under `%LOCALAPPDATA%`) the user's alone ([`set_owner_only`]), then checks it again. A
/// folder owned by someone else is left as it is and refused, as on Unix.
///
/// Returns `Ok(Ok(true))` when the folder was tightened and passes now, `Ok(Ok(false))` when
/// it passed already, `Ok(Err(why))` when it is refused.
///
/// # Errors
/// Reading the folder's owner or DACL failed.
pub fn tighten_if_mine(path: &Path) -> io::Result<Result<bool, String>> {
    if check_private(path)?.is_ok() {
        return Ok(Ok(false));
    }
    let me = current_user()?;
    if owner_sid(path)? != me.sid() {
        return check_private(path).map(|r| r.map(|()| false));
    }
    if let Err(e) = set_owner_only(path, true) {
        return Ok(Err(format!(
            "it is open to others and could not be made private: {e}"
        )));
    }
    check_private(path).map(|r| r.map(|()| true))
}

/// Gives `path` (a file or folder) the owner-only DACL, replacing whatever it had and
/// cutting inheritance from its parent (`SetNamedSecurityInfoW` with
/// `PROTECTED_DACL_SECURITY_INFORMATION`); a folder's new entry is inherited by what is
/// inside.
///
/// # Errors
/// The call's error.
pub fn set_owner_only(path: &Path, dir: bool) -> io::Result<()> {
    let sd = Descriptor::owner_only(dir)?;
    let mut present = 0;
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut defaulted = 0;
    // SAFETY: `sd` is a valid descriptor; `dacl` points into it.
    if unsafe {
        GetSecurityDescriptorDacl(sd.0.0, &raw mut present, &raw mut dacl, &raw mut defaulted)
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    let wide = wide(path);
    // SAFETY: `wide` is NUL-terminated; `dacl` lives as long as `sd`.
    let rc = unsafe {
        SetNamedSecurityInfoW(
            wide.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            dacl,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc as i32));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use windows_sys::Win32::Security::{CONTAINER_INHERIT_ACE, INHERITED_ACE, OBJECT_INHERIT_ACE};
    use windows_sys::Win32::Storage::FileSystem::FILE_ALL_ACCESS;

    const EVERYONE: &str = "S-1-1-0";
    const OICI: u8 = (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) as u8;

    fn me() -> String {
        current_user().expect("this process's SID").sid().to_owned()
    }

    /// Whether this process runs under Wine (ntdll exports `wine_get_version` there).
    fn under_wine() -> bool {
        use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
        let ntdll: Vec<u16> = "ntdll.dll".encode_utf16().chain(Some(0)).collect();
        // SAFETY: a NUL-terminated name; ntdll is loaded in every process.
        unsafe {
            let module = GetModuleHandleW(ntdll.as_ptr());
            !module.is_null()
                && GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_some()
        }
    }

    fn allow(sid: &str, flags: u8) -> Ace {
        Ace {
            kind: ACCESS_ALLOWED_ACE_TYPE as u8,
            flags,
            mask: FILE_ALL_ACCESS,
            sid: sid.into(),
        }
    }

    /// What is asked of Windows: the descriptor given to `CreateDirectoryW` and `CreateFileW`,
    /// read back as Windows parses it: a protected DACL of one entry, the user, full
    /// control, inherited from nothing (and, for a folder, inherited by what is inside).
    #[test]
    fn the_descriptor_asked_for_grants_the_user_alone() {
        assert_eq!(
            owner_only_dir_sddl("S-1-5-21-1-2-3-1001"),
            "D:P(A;OICI;FA;;;S-1-5-21-1-2-3-1001)"
        );
        assert_eq!(
            owner_only_file_sddl("S-1-5-21-1-2-3-1001"),
            "D:P(A;;FA;;;S-1-5-21-1-2-3-1001)"
        );
        for (dir, flags) in [(true, OICI), (false, 0)] {
            let sd = Descriptor::owner_only(dir).expect("Windows accepts the SDDL");
            // SAFETY: a valid descriptor, alive for the call.
            let dacl = unsafe { dacl_of_descriptor(sd.0.0) }.unwrap();
            assert_eq!(
                dacl,
                Dacl {
                    protected: true,
                    entries: Some(vec![allow(&me(), flags)]),
                },
                "folder: {dir}"
            );
            assert_eq!(u32::from(flags) & INHERITED_ACE, 0);
        }
    }

    /// A folder created here reads back as the user's alone. On Windows: the protected DACL
    /// of one entry that was asked for, and a file created inside by `std::fs` inherits
    /// that one entry. Wine keeps no security descriptor of a file (Debian's wineserver has
    /// no extended-attribute support): it turns the one asked for into the Unix mode 0700
    /// and reports a DACL made from the mode, `LocalSystem` and the owner, no `Everyone`.
    #[test]
    fn a_created_folder_reads_back_as_the_user_s_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b");
        create_private_dir_all(&dir).unwrap();
        for d in [tmp.path().join("a"), dir.clone()] {
            let dacl = read_dacl(&d).unwrap();
            let want = if under_wine() {
                Dacl {
                    protected: false,
                    entries: Some(vec![allow(LOCAL_SYSTEM, OICI), allow(&me(), OICI)]),
                }
            } else {
                Dacl {
                    protected: true,
                    entries: Some(vec![allow(&me(), OICI)]),
                }
            };
            assert_eq!(dacl, want, "{}", d.display());
            assert_eq!(check_private(&d).unwrap(), Ok(()));
        }
        let inside = dir.join("journal");
        std::fs::write(&inside, b"x").unwrap();
        if !under_wine() {
            let dacl = read_dacl(&inside).unwrap();
            let inherited = INHERITED_ACE as u8;
            assert_eq!(
                dacl.entries,
                Some(vec![allow(&me(), inherited)]),
                "{dacl:?}"
            );
            assert_eq!(check_private(&inside).unwrap(), Ok(()));
        }
        // An existing folder is left as it is.
        create_private_dir_all(&dir).unwrap();
        assert_eq!(
            create_private_dir(&dir).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    /// A log file created here reads back as the user's alone (under Wine: mode 0600, shown
    /// as `LocalSystem` and the owner).
    #[test]
    fn a_created_file_reads_back_as_the_user_s_alone() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tether.log");
        open_private_append(&path)
            .unwrap()
            .write_all(b"one\n")
            .unwrap();
        open_private_append(&path)
            .unwrap()
            .write_all(b"two\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        let want = if under_wine() {
            Dacl {
                protected: false,
                entries: Some(vec![allow(LOCAL_SYSTEM, 0), allow(&me(), 0)]),
            }
        } else {
            Dacl {
                protected: true,
                entries: Some(vec![allow(&me(), 0)]),
            }
        };
        assert_eq!(read_dacl(&path).unwrap(), want);
        assert_eq!(check_private(&path).unwrap(), Ok(()));
    }

    /// A folder made without our descriptor (by `std::fs`, inheriting its parent's entries:
    /// `Administrators` on Windows, `Everyone` under Wine) is found open, then closed. Wine
    /// accepts the new DACL (`SetNamedSecurityInfoW` succeeds) but reports the old one
    /// after it (it changes no mode for it), so the closing is checked on Windows only.
    #[test]
    fn a_folder_made_elsewhere_is_found_open_and_closed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("old");
        std::fs::create_dir(&dir).unwrap();
        let why = check_private(&dir).unwrap().expect_err("open to others");
        assert!(why.contains("icacls"), "{why}");
        set_owner_only(&dir, true).unwrap();
        if !under_wine() {
            assert_eq!(check_private(&dir).unwrap(), Ok(()));
            assert_eq!(
                read_dacl(&dir).unwrap(),
                Dacl {
                    protected: true,
                    entries: Some(vec![allow(&me(), OICI)]),
                }
            );
        }
    }

    #[test]
    fn only_the_user_may_be_allowed() {
        let ace = |kind: u32, sid: &str| Ace {
            kind: kind as u8,
            flags: 0,
            mask: FILE_ALL_ACCESS,
            sid: sid.into(),
        };
        let me = "S-1-5-21-1-2-3-1001";
        let table: &[(Option<Vec<Ace>>, bool)] = &[
            (Some(vec![ace(ACCESS_ALLOWED_ACE_TYPE, me)]), true),
            (Some(vec![]), true),
            (
                Some(vec![
                    ace(ACCESS_ALLOWED_ACE_TYPE, LOCAL_SYSTEM),
                    ace(ACCESS_ALLOWED_ACE_TYPE, me),
                ]),
                true,
            ),
            (
                Some(vec![
                    ace(ACCESS_DENIED_ACE_TYPE, EVERYONE),
                    ace(ACCESS_ALLOWED_ACE_TYPE, me),
                ]),
                true,
            ),
            (None, false),
            (
                Some(vec![ace(ACCESS_ALLOWED_ACE_TYPE, "S-1-5-32-544")]),
                false,
            ),
            (
                Some(vec![
                    ace(ACCESS_ALLOWED_ACE_TYPE, me),
                    ace(ACCESS_ALLOWED_ACE_TYPE, EVERYONE),
                ]),
                false,
            ),
            (Some(vec![ace(9, "")]), false),
        ];
        for (entries, ok) in table {
            let dacl = Dacl {
                protected: true,
                entries: entries.clone(),
            };
            let got = only_user_allowed(&dacl, me);
            assert_eq!(got.is_ok(), *ok, "{entries:?}: {got:?}");
        }
    }
}
