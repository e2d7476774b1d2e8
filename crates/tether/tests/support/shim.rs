//! The chaos harness's fault shim (`fault_shim.c` beside this file): compiled with the C
//! compiler `cc` for the test, then loaded with `LD_PRELOAD` into the processes a test
//! starts. It slows `fsync`/`fdatasync` (a slow disk) and steps the wall clock while the
//! processes run, through two control files this handle writes.

use std::path::{Path, PathBuf};

/// A built shim and its control files.
pub struct FaultShim {
    library: PathBuf,
    slow_disk: PathBuf,
    clock: PathBuf,
}

impl FaultShim {
    /// Compiles the shim into `dir` (`cc -shared`; glibc's dynamic loader). Panics, naming
    /// what is missing, when there is no C compiler.
    pub fn build(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fault_shim.c");
        let library = dir.join("libtether_fault_shim.so");
        let out = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run cc (the C compiler builds the fault shim): {e}")
            });
        assert!(
            out.status.success(),
            "cc cannot build {}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let shim = Self {
            library,
            slow_disk: dir.join("slow-disk-ms"),
            clock: dir.join("clock-offset-secs"),
        };
        shim.slow_disk(0);
        shim.clock_offset(0);
        shim
    }

    /// The environment that loads the shim into a process and its children.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            (
                "TETHER_CHAOS_SLOW_DISK".into(),
                self.slow_disk.display().to_string(),
            ),
            (
                "TETHER_CHAOS_CLOCK".into(),
                self.clock.display().to_string(),
            ),
        ]
    }

    /// Every `fsync`/`fdatasync` sleeps `ms` first (0: a normal disk again).
    pub fn slow_disk(&self, ms: u64) {
        std::fs::write(&self.slow_disk, ms.to_string()).unwrap();
    }

    /// The wall clock (`CLOCK_REALTIME`) reads `secs` off the real time from now on.
    pub fn clock_offset(&self, secs: i64) {
        std::fs::write(&self.clock, secs.to_string()).unwrap();
    }
}
