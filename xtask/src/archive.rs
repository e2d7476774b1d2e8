//! Release archives and their checksums, in cargo-dist's layout: a `.tar.gz` holds one
//! folder named like the archive (`tether-<version>-<triple>/`) with the files in it; a
//! `.zip` (Windows) holds the files at its root. `SHA256SUMS` has one
//! `<hex sha256>  <file name>` line per file, the format `sha256sum -c` reads.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One file to pack: its name in the archive and where it is read from.
pub struct Entry {
    pub name: String,
    pub source: PathBuf,
    /// Whether the file is executable (mode 0755 rather than 0644).
    pub executable: bool,
}

/// Writes `entries` to the `.tar.gz` at `out`, under the folder `root/`.
///
/// # Errors
/// Any I/O error reading an entry or writing `out`, with the path in the message.
pub fn write_tar_gz(out: &Path, root: &str, entries: &[Entry]) -> Result<(), String> {
    let file = File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let gz = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    for entry in entries {
        let data = read(&entry.source)?;
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(if entry.executable { 0o755 } else { 0o644 });
        header.set_mtime(mtime());
        tar.append_data(
            &mut header,
            format!("{root}/{}", entry.name),
            data.as_slice(),
        )
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    let finish = |e: io::Error| format!("cannot write {}: {e}", out.display());
    tar.into_inner()
        .map_err(finish)?
        .finish()
        .map_err(finish)?
        .flush()
        .map_err(finish)
}

/// Writes `entries` to the `.zip` at `out`, at its root.
///
/// # Errors
/// Any I/O error reading an entry or writing `out`, with the path in the message.
pub fn write_zip(out: &Path, entries: &[Entry]) -> Result<(), String> {
    let file = File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut zip = zip::ZipWriter::new(BufWriter::new(file));
    for entry in entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if entry.executable { 0o755 } else { 0o644 });
        let data = read(&entry.source)?;
        zip.start_file(entry.name.as_str(), options)
            .map_err(io::Error::from)
            .and_then(|()| zip.write_all(&data))
            .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    zip.finish()
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(())
}

/// Writes `dir/SHA256SUMS` for `files` (names in `dir`), in the order given.
///
/// # Errors
/// A file that cannot be read, or `SHA256SUMS` that cannot be written.
pub fn write_sha256sums(dir: &Path, files: &[String]) -> Result<(), String> {
    let mut text = String::new();
    for name in files {
        let digest = Sha256::digest(read(&dir.join(name))?);
        text.push_str(&format!("{}  {name}\n", hex::encode(digest)));
    }
    let out = dir.join("SHA256SUMS");
    std::fs::write(&out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(data)
}

/// The files' modification time in the archive, seconds since 1970: `SOURCE_DATE_EPOCH`
/// when set (reproducible builds, <https://reproducible-builds.org/specs/source-date-epoch/>),
/// else now.
fn mtime() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_what_sha256sum_computes() {
        let dir = std::env::temp_dir().join(format!("xtask-sums-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), b"abc").unwrap();
        write_sha256sums(&dir, &["a.txt".to_owned()]).unwrap();
        let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
        // SHA-256 of "abc": FIPS 180-2, appendix B.1.
        assert_eq!(
            sums,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  a.txt\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
