//! Gives back the resident pages of the read-only images (this binary and the shared
//! libraries it loaded: libc, libm, the loader) that start-up mapped.
//!
//! Most of an idle forwarder's or daemon's RSS is not memory it allocated but pages of the
//! executable itself: every page fault on its code or read-only data maps the fault's whole
//! 64 KiB window of pages already in the page cache (the kernel's fault-around), so the
//! start-up work that runs once (argument parsing, the log filter, the runtime, the socket
//! handshake) leaves megabytes of a 10 MB `.text` mapped (measured with
//! `/proc/PID/smaps_rollup` on an idle forwarder: 0.7 MB anonymous, 6.1 MB file-backed, of
//! which 3.3 MB `.text`; benches/daemon.rs section 2). Those pages stay in the page cache,
//! shared with every other Tether process; [`release_read_only_pages`] only drops this
//! process's mappings of them, and the next use of any of them is a minor fault that maps
//! it again.
//!
//! Called when start-up is over (the forwarder once it relays, the daemon once it listens)
//! and when an editor's set-up is (its `initialized`: its configuration was parsed, its hub
//! and cache opened), in the daemon and in-process alike.
//!
//! The shared libraries count the same way (libc's code: 1.1 MB resident in an idle
//! forwarder). Only segments that are never written are released: the `PT_LOAD` segments without
//! `PF_W` (code, read-only data, unwind tables), shrunk to whole pages of their own. The
//! RELRO data (relocated at start-up, then made read-only) lies in a writable `PT_LOAD`
//! segment and is never touched: its pages are private copies that a release would replace
//! with the file's unrelocated bytes.

/// One read-only range of the image, page-aligned: `(start address, length in bytes)`.
type Range = (usize, usize);

/// Releases this process's mappings of the read-only segments of the executable and of
/// the shared libraries loaded from files (the vDSO is left alone). Returns the
/// number of bytes of address space released (not the resident bytes: pages never mapped
/// count too); 0 where this is not supported or the ranges could not be found.
///
/// Safe to call at any time from any thread: the released pages hold code and constants
/// read from the file, which the next access maps again unchanged.
///
/// Does nothing (returns 0) while a debugger traces the process: its software breakpoints
/// are written into private copies of code pages, which a release would throw away.
#[must_use]
pub fn release_read_only_pages() -> usize {
    if traced() {
        tracing::debug!("a debugger traces this process; its image is left as it is");
        return 0;
    }
    let page = page_size();
    let mut released = 0;
    for (start, len) in read_only_ranges(page) {
        // SAFETY: the range lies inside a read-only, file-backed, private mapping of the
        // executable or a library (a `PT_LOAD` segment without `PF_W`, trimmed to its own pages), whose
        // pages were never written: dropping them only makes the next access fault the
        // same bytes back in from the file.
        let rc = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        if rc == 0 {
            released += len;
        } else {
            tracing::debug!(
                start,
                len,
                error = %std::io::Error::last_os_error(),
                "madvise(MADV_DONTNEED) of the image failed"
            );
        }
    }
    released
}

/// Whether a tracer (a debugger, `strace`) is attached: `TracerPid` in
/// `/proc/self/status` (proc(5)) is not 0. Unknown counts as traced.
fn traced() -> bool {
    std::fs::read_to_string("/proc/self/status").map_or(true, |status| tracer_in(&status))
}

/// Whether a `/proc/PID/status` text names a tracer (a missing line counts as one).
fn tracer_in(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .is_none_or(|pid| pid.trim() != "0")
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

/// The page-aligned ranges of the `PT_LOAD` segments without `PF_W` of the main executable
/// (the loader's first object) and of each library loaded from a file (its name a path).
fn read_only_ranges(page: usize) -> Vec<Range> {
    struct Found {
        page: usize,
        /// Objects seen so far (the first is the main program).
        objects: usize,
        ranges: Vec<Range>,
    }
    unsafe extern "C" fn each_object(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `Found` passed to dl_iterate_phdr below, and `info` the
        // loader's description of an object, valid for the duration of this call.
        let (found, info) = unsafe { (&mut *data.cast::<Found>(), &*info) };
        let first = found.objects == 0;
        found.objects += 1;
        // SAFETY: the loader's names are NUL-terminated strings (or null).
        let from_file = !info.dlpi_name.is_null()
            && unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                .to_bytes()
                .starts_with(b"/");
        if info.dlpi_phdr.is_null() || !(first || from_file) {
            return 0;
        }
        // SAFETY: the loader gives `dlpi_phnum` program headers at `dlpi_phdr`.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let base = info.dlpi_addr as usize;
        // SAFETY: the object is loaded: its PT_DYNAMIC segment is mapped at `base + p_vaddr`.
        if unsafe { has_text_relocations(base, headers) } {
            return 0;
        }
        for h in headers {
            if h.p_type != libc::PT_LOAD || h.p_flags & libc::PF_W != 0 {
                continue;
            }
            let start = base + h.p_vaddr as usize;
            let end = start + h.p_memsz as usize;
            // Whole pages only: a page shared with a neighbouring segment may be writable.
            let start = start.div_ceil(found.page) * found.page;
            let end = end / found.page * found.page;
            if end > start {
                found.ranges.push((start, end - start));
            }
        }
        0
    }
    let mut found = Found {
        page,
        objects: 0,
        ranges: Vec::new(),
    };
    // SAFETY: the callback only reads the loader's headers and writes to `found`, which
    // outlives the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each_object),
            std::ptr::from_mut(&mut found).cast::<libc::c_void>(),
        );
    }
    found.ranges
}

/// Whether the object's dynamic section asks for text relocations (`DT_TEXTREL`, or
/// `DF_TEXTREL` in `DT_FLAGS`): its read-only segments were then written at load time, and
/// releasing them would bring back the unrelocated bytes.
///
/// # Safety
/// `headers` are the program headers of an object loaded at `base`.
unsafe fn has_text_relocations(base: usize, headers: &[libc::Elf64_Phdr]) -> bool {
    const DT_NULL: i64 = 0;
    const DT_TEXTREL: i64 = 22;
    const DT_FLAGS: i64 = 30;
    const DF_TEXTREL: u64 = 4;
    let Some(dynamic) = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC) else {
        return false;
    };
    let mut entry = (base + dynamic.p_vaddr as usize) as *const [u64; 2];
    loop {
        // SAFETY: the dynamic section is an array of (tag, value) pairs ending in DT_NULL,
        // mapped while the object is loaded.
        let [tag, value] = unsafe { entry.read() };
        match tag as i64 {
            DT_NULL => return false,
            DT_TEXTREL => return true,
            DT_FLAGS if value & DF_TEXTREL != 0 => return true,
            _ => {}
        }
        // SAFETY: not past DT_NULL yet.
        entry = unsafe { entry.add(1) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rss_file_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("RssFile:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn the_read_only_segments_are_found_whole_pages_and_exclude_this_writable_static() {
        static WRITABLE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(7);
        let page = page_size();
        let ranges = read_only_ranges(page);
        assert!(!ranges.is_empty());
        let code = read_only_ranges as fn(usize) -> Vec<Range> as usize;
        let data = std::ptr::from_ref(&WRITABLE) as usize;
        let within = |a: usize| ranges.iter().any(|&(s, l)| a >= s && a < s + l);
        assert!(
            within(code),
            "this function's code is in a read-only segment"
        );
        assert!(!within(data), "a writable static is never released");
        for &(s, l) in &ranges {
            assert_eq!((s % page, l % page), (0, 0));
        }
    }

    #[test]
    fn a_tracer_is_read_from_the_status_file() {
        for (status, traced) in [
            (
                "Name:	tether
TracerPid:	0
Uid:	0
",
                false,
            ),
            (
                "Name:	tether
TracerPid:	4242
",
                true,
            ),
            (
                "Name:	tether
",
                true,
            ),
        ] {
            assert_eq!(tracer_in(status), traced, "{status:?}");
        }
    }

    #[test]
    fn releasing_drops_file_backed_pages_and_the_code_runs_on() {
        assert!(
            !traced(),
            "run this test without a debugger: a traced process releases nothing"
        );
        let before = rss_file_kib();
        let released = release_read_only_pages();
        let after = rss_file_kib();
        assert!(released > 0);
        assert!(after < before, "RssFile {before} kB → {after} kB");
        // Code and constants fault back in unchanged.
        let text = format!("{:?}", std::collections::BTreeMap::from([("after", after)]));
        assert!(text.contains("after"));
        assert!(release_read_only_pages() > 0, "and again");
    }
}
