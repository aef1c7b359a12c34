//! Unpacking an agent's archive (tar.gz or zip, told apart by their first bytes) into a
//! fresh directory, refusing anything that could reach outside it:
//!
//! * an entry path that is absolute or goes through `..`;
//! * an entry written through a symbolic link (a parent component that is a link), so a
//!   link in the archive is never a way out for a later entry;
//! * a symbolic link whose target is absolute, climbs above the directory, or has `..` after
//!   a name (`x/../..` can escape when `x` is itself a link); hard links, devices and fifos.
//!
//! One bad entry refuses the whole archive (the caller removes the directory). Sizes and
//! entry counts are capped (a zip bomb stops at [`MAX_UNPACKED_BYTES`]); set-id bits are
//! dropped.

use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use super::RegistryError;

/// The most bytes an archive may unpack to.
pub const MAX_UNPACKED_BYTES: u64 = 4 << 30;

/// The most entries an archive may hold.
pub const MAX_ENTRIES: usize = 200_000;

/// The archive formats of the registry's agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// gzip-compressed tar (`.tar.gz`, `.tgz`).
    TarGz,
    /// zip (deflate or stored).
    Zip,
}

impl ArchiveKind {
    /// The format of a file from its first bytes (gzip `1f 8b`, zip `PK\x03\x04`).
    pub fn sniff(head: &[u8]) -> Option<ArchiveKind> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(ArchiveKind::TarGz)
        } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
            Some(ArchiveKind::Zip)
        } else {
            None
        }
    }
}

/// Unpacks `archive` into `dest` (an existing empty directory).
pub fn unpack(archive: &Path, dest: &Path) -> Result<(), RegistryError> {
    let mut head = [0u8; 4];
    let mut file = fs::File::open(archive).map_err(io_error)?;
    let read = file.read(&mut head).map_err(io_error)?;
    let kind = ArchiveKind::sniff(&head[..read])
        .ok_or_else(|| RegistryError::Unpack("the archive is neither tar.gz nor zip".to_owned()))?;
    let file = fs::File::open(archive).map_err(io_error)?;
    let mut out = Writer {
        root: dest.to_path_buf(),
        written: 0,
        entries: 0,
    };
    match kind {
        ArchiveKind::TarGz => untar(file, &mut out),
        ArchiveKind::Zip => unzip(file, &mut out),
    }
}

fn io_error(e: io::Error) -> RegistryError {
    RegistryError::Io(e.to_string())
}

fn refuse(name: &Path, why: &str) -> RegistryError {
    RegistryError::Unpack(format!("entry {:?} {why}; nothing was installed", name))
}

fn untar(file: fs::File, out: &mut Writer) -> Result<(), RegistryError> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let bad = |e: io::Error| RegistryError::Unpack(format!("the tar.gz archive is damaged: {e}"));
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let name = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if kind.is_dir() {
            out.dir(&name)?;
        } else if kind.is_file() {
            let mode = entry.header().mode().unwrap_or(0o644);
            out.file(&name, mode, &mut entry)?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(bad)?
                .ok_or_else(|| refuse(&name, "is a link without a target"))?
                .into_owned();
            out.symlink(&name, &target)?;
        } else if kind.is_hard_link() {
            return Err(refuse(&name, "is a hard link (not supported)"));
        } else {
            return Err(refuse(&name, "is a device, fifo or other special file"));
        }
    }
    Ok(())
}

fn unzip(file: fs::File, out: &mut Writer) -> Result<(), RegistryError> {
    let bad = |e: zip::result::ZipError| {
        RegistryError::Unpack(format!("the zip archive is damaged: {e}"))
    };
    let mut archive = zip::ZipArchive::new(file).map_err(bad)?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(bad)?;
        let name = PathBuf::from(entry.name());
        if entry.is_dir() {
            out.dir(&name)?;
        } else if entry.is_symlink() {
            let mut target = String::new();
            (&mut entry)
                .take(4096)
                .read_to_string(&mut target)
                .map_err(|e| {
                    refuse(&name, &format!("is a link with an unreadable target ({e})"))
                })?;
            out.symlink(&name, Path::new(&target))?;
        } else if entry.is_file() {
            let mode = entry.unix_mode().unwrap_or(0o644);
            out.file(&name, mode, &mut entry)?;
        } else {
            return Err(refuse(&name, "is neither a file, a directory nor a link"));
        }
    }
    Ok(())
}

/// Writes entries beneath `root`, checking each.
struct Writer {
    root: PathBuf,
    written: u64,
    entries: usize,
}

impl Writer {
    /// The entry's path relative to the root: only names (and `.`), at least one.
    fn relative(&mut self, name: &Path) -> Result<PathBuf, RegistryError> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(RegistryError::Unpack(format!(
                "the archive has over {MAX_ENTRIES} entries"
            )));
        }
        let mut rel = PathBuf::new();
        for component in name.components() {
            match component {
                Component::Normal(part) => rel.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(refuse(name, "goes out through `..`")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(name, "is an absolute path"));
                }
            }
        }
        Ok(rel)
    }

    /// Creates the directories above `rel` (none of them a link) and returns the full path.
    fn parent_ready(&self, name: &Path, rel: &Path) -> Result<PathBuf, RegistryError> {
        let mut at = self.root.clone();
        let parts: Vec<_> = rel.components().collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(refuse(name, "is written through a link"));
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(refuse(name, "is beneath a file")),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&at).map_err(io_error)?;
                }
                Err(e) => return Err(io_error(e)),
            }
        }
        let full = self.root.join(rel);
        // A later entry of the same name replaces a file, never follows a link.
        if let Ok(meta) = fs::symlink_metadata(&full) {
            if meta.file_type().is_symlink() {
                return Err(refuse(name, "replaces a link"));
            }
            if meta.is_file() {
                fs::remove_file(&full).map_err(io_error)?;
            }
        }
        Ok(full)
    }

    fn dir(&mut self, name: &Path) -> Result<(), RegistryError> {
        let rel = self.relative(name)?;
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        let full = self.parent_ready(name, &rel)?;
        match fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => Ok(()),
            Ok(_) => Err(refuse(name, "is a directory over a file")),
            Err(_) => fs::create_dir(&full).map_err(io_error),
        }
    }

    fn file(&mut self, name: &Path, mode: u32, data: &mut dyn Read) -> Result<(), RegistryError> {
        let rel = self.relative(name)?;
        if rel.as_os_str().is_empty() {
            return Err(refuse(name, "names no file"));
        }
        let full = self.parent_ready(name, &rel)?;
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Executable bits kept, set-id and sticky bits and others' write dropped.
            let exec = mode & 0o111 != 0;
            options.mode(if exec { 0o755 } else { 0o644 });
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = options.open(&full).map_err(io_error)?;
        let left = MAX_UNPACKED_BYTES - self.written;
        let copied = io::copy(&mut data.take(left + 1), &mut file).map_err(|e| {
            RegistryError::Unpack(format!("the archive is damaged at {name:?}: {e}"))
        })?;
        self.written += copied;
        if copied > left {
            return Err(RegistryError::Unpack(format!(
                "the archive unpacks to over {MAX_UNPACKED_BYTES} bytes"
            )));
        }
        Ok(())
    }

    fn symlink(&mut self, name: &Path, target: &Path) -> Result<(), RegistryError> {
        let rel = self.relative(name)?;
        if rel.as_os_str().is_empty() {
            return Err(refuse(name, "names no file"));
        }
        // `..` only at the start, and no more of them than the link is deep.
        let depth = rel.components().count() - 1;
        let mut ups = 0;
        let mut named = false;
        for component in target.components() {
            match component {
                Component::ParentDir if !named => ups += 1,
                Component::ParentDir => {
                    return Err(refuse(
                        name,
                        "is a link with `..` after a name in its target",
                    ));
                }
                Component::Normal(_) => named = true,
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(name, "is a link to an absolute path"));
                }
            }
        }
        if ups > depth {
            return Err(refuse(name, "is a link pointing out of the archive"));
        }
        let full = self.parent_ready(name, &rel)?;
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(target, &full).map_err(io_error)
        }
        #[cfg(not(unix))]
        {
            let _ = full;
            Err(refuse(name, "is a link (not supported on this platform)"))
        }
    }
}

#[cfg(test)]
mod tests;
