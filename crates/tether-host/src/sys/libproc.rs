//! macOS's side of the process table ([`super::procs`]): libproc (`proc_pidinfo`,
//! `proc_listallpids`) and `sysctl` (`KERN_PROCARGS2`, `kern.bootsessionuuid`), since macOS
//! has no `/proc`. Type-checked here, never run (docs/platforms.md).

use std::ffi::{CStr, c_int, c_void};

use super::procs::ProcStat;

/// Process `pid` from `proc_pidinfo(PROC_PIDTBSDINFO)`; its start time in microseconds
/// since the Unix epoch (`pbi_start_tvsec`, `pbi_start_tvusec`).
#[must_use]
pub fn stat(pid: i32) -> Option<ProcStat> {
    // SAFETY: proc_bsdinfo is plain data; zeroed is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: `info` is writable and `size` bytes long for the duration of the call.
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&raw mut info).cast::<c_void>(),
            size,
        )
    };
    if written != size {
        return None;
    }
    Some(ProcStat {
        pid: i32::try_from(info.pbi_pid).ok()?,
        state: state_letter(info.pbi_status),
        pgrp: i32::try_from(info.pbi_pgid).ok()?,
        start_time: info
            .pbi_start_tvsec
            .saturating_mul(1_000_000)
            .saturating_add(info.pbi_start_tvusec),
    })
}

/// `ps`'s letter for a `p_stat` value (xnu `sys/proc.h`: `SIDL` 1 … `SZOMB` 5).
fn state_letter(status: u32) -> char {
    match status {
        1 => 'I',
        2 => 'R',
        3 => 'S',
        4 => 'T',
        libc::SZOMB => 'Z',
        _ => '?',
    }
}

/// `kern.bootsessionuuid`, a UUID the kernel draws at every boot.
#[must_use]
pub fn boot_id() -> Option<String> {
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    // SAFETY: the name is NUL-terminated; `buf` is writable for `len` bytes.
    let rc = unsafe {
        libc::sysctlbyname(
            c"kern.bootsessionuuid".as_ptr(),
            buf.as_mut_ptr().cast::<c_void>(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    let text = CStr::from_bytes_until_nul(&buf[..len.min(buf.len())]).ok()?;
    Some(text.to_string_lossy().trim().to_owned()).filter(|s| !s.is_empty())
}

/// Every process (`proc_listallpids`), each read with [`stat`].
#[must_use]
pub fn all_processes() -> Vec<ProcStat> {
    // SAFETY: a null buffer asks only for the count.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else {
        return Vec::new();
    };
    // Room for processes started between the two calls.
    let mut pids = vec![0 as libc::pid_t; count + 64];
    let Ok(bytes) = c_int::try_from(pids.len() * std::mem::size_of::<libc::pid_t>()) else {
        return Vec::new();
    };
    // SAFETY: `pids` is writable for `bytes` bytes.
    let found = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast::<c_void>(), bytes) };
    let found = usize::try_from(found).unwrap_or(0).min(pids.len());
    pids[..found].iter().filter_map(|&pid| stat(pid)).collect()
}

/// The environment process `pid` was started with (`sysctl` `KERN_PROCARGS2`), as
/// `KEY=VALUE` entries each ended by a NUL; `None` for another user's process.
#[must_use]
pub fn environment(pid: i32) -> Option<Vec<u8>> {
    let mut argmax: c_int = 0;
    let mut len = std::mem::size_of::<c_int>();
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    // SAFETY: `argmax` is writable for `len` bytes; `mib` holds 2 names.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            2,
            (&raw mut argmax).cast::<c_void>(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(argmax).ok()?];
    let mut len = buf.len();
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: `buf` is writable for `len` bytes; `mib` holds 3 names.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buf.as_mut_ptr().cast::<c_void>(),
            &raw mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    super::procargs::environment(&buf[..len.min(buf.len())])
}
