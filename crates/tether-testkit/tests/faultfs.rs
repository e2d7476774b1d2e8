//! The fault-injecting file system itself ([`tether_testkit::faultfs`]): it mirrors its
//! backing folder, fails exactly the operations it is told to with the errno it is told,
//! and passes everything through again once healed. Mounting needs root and `/dev/fuse`:
//! `#[ignore]`d for a plain `cargo test`; CI (root) runs it with `--run-ignored all`, and
//! where the mount fails it fails naming what is missing.

#![cfg(target_os = "linux")]

use std::io::{ErrorKind, Read, Write};

use tether_testkit::faultfs::{FaultFs, Ops};

#[test]
#[ignore = "mounts a FUSE file system: needs root and /dev/fuse; CI runs it with --ignored"]
fn mirrors_fails_on_command_and_heals() {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mnt) = (dir.path().join("backing"), dir.path().join("mnt"));
    let fs = FaultFs::mount(&backing, &mnt).unwrap_or_else(|e| panic!("{e}"));

    // Passthrough: a file, a folder, a rename, an append, all on the backing folder.
    std::fs::create_dir(mnt.join("d")).unwrap();
    std::fs::write(mnt.join("d/a.tmp"), b"one\n").unwrap();
    std::fs::rename(mnt.join("d/a.tmp"), mnt.join("d/a")).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(mnt.join("d/a"))
        .unwrap();
    f.write_all(b"two\n").unwrap();
    f.sync_all().unwrap();
    assert_eq!(std::fs::read(backing.join("d/a")).unwrap(), b"one\ntwo\n");
    let names: Vec<_> = std::fs::read_dir(mnt.join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a"]);

    // fsync fails with EIO; writes still land.
    fs.fail(Ops::FSYNC, libc::EIO);
    f.write_all(b"three\n").unwrap();
    let err = f.sync_all().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // Writes fail with EIO, and with ENOSPC.
    fs.fail(Ops::WRITE, libc::EIO);
    assert_eq!(
        f.write_all(b"four\n").unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    f.sync_all().unwrap();
    fs.fail(Ops::WRITE | Ops::META, libc::ENOSPC);
    assert_eq!(
        f.write_all(b"five\n").unwrap_err().kind(),
        ErrorKind::StorageFull
    );
    assert_eq!(
        std::fs::write(mnt.join("d/new"), b"x").unwrap_err().kind(),
        ErrorKind::StorageFull
    );
    assert!(fs.injected() >= 4, "{}", fs.injected());
    // Reads work throughout.
    let mut text = String::new();
    std::fs::File::open(mnt.join("d/a"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "one\ntwo\nthree\n");

    fs.heal();
    f.write_all(b"six\n").unwrap();
    f.sync_all().unwrap();
    std::fs::remove_file(mnt.join("d/a")).unwrap();
    assert!(!backing.join("d/a").exists());
    drop(f);
    drop(fs);
}
