//! The daemon's runtime folder (`tether::daemon::paths::ensure_private_dir`, R-DAEMON-1):
//! made private when missing, closed again when opened up, refused when it is a symbolic
//! link or a file. Unix only: the modes are Unix's (on Windows the folder's ACL is the
//! platform layer's, tests/wine/).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;

use tether::daemon::paths::{PathError, ensure_private_dir};

#[test]
fn a_missing_runtime_folder_is_made_private_and_an_open_one_is_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a/b/run");
    ensure_private_dir(&dir).unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    ensure_private_dir(&dir).unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "closed again");
}

#[test]
fn a_symlink_or_a_file_is_refused_as_the_runtime_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(matches!(
        ensure_private_dir(&link),
        Err(PathError::NotPrivate { .. })
    ));
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert!(ensure_private_dir(&file).is_err());
}
