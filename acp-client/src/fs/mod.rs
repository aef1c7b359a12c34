//! The file system methods (`fs/read_text_file`, `fs/write_text_file`) served from a set of
//! root directories: [`SandboxedFs`].
//!
//! # Rules
//!
//! Paths must be absolute; `..` components are refused; the path must lie inside a root
//! (compared component by component, so `/tmp/rootA-evil` is not inside `/tmp/rootA`); no
//! component below the root may be a symbolic link; only regular files are read or written
//! (a FIFO, socket, device or directory is refused with `-32602`); reads and writes are
//! limited to [`DEFAULT_MAX_FILE_SIZE`] bytes (configurable).
//!
//! # How the rules are enforced: handles, not paths
//!
//! Each root is opened once, when the sandbox is built, as a directory handle
//! (`cap_std::fs::Dir`). A request's path is checked lexically (absolute, no `..`, inside
//! a root) and then walked **one component at a time from the root's handle**: every
//! directory is opened with `O_NOFOLLOW | O_DIRECTORY` relative to the handle of its parent,
//! and the file itself with `O_NOFOLLOW | O_NONBLOCK` relative to the handle of the last
//! directory. The type check (`fstat`) and the I/O are done on the file handle that was
//! opened; no path is ever opened a second time. Missing parent directories of a write are
//! created with `mkdirat` on the same handles, then opened the same way.
//!
//! So a process that swaps a directory for a symbolic link (or a file for a FIFO, or a small
//! file for a huge one) between the check and the use gains nothing: the swap either happens
//! before the component is opened (the open sees the link and fails with `ELOOP`, reported
//! as "symbolic links are not followed") or after (the open handle still refers to the
//! directory or file that was checked).
//!
//! The handles come from `cap-std`, chosen over hand-written `openat` calls because it is the
//! maintained capability-style file API for Rust: its `Dir::open_with` resolves beneath the
//! directory with `openat2(RESOLVE_BENEATH)` where the kernel has it (Linux 5.6+) and a
//! checked `O_NOFOLLOW` walk where it does not, so even a single component cannot leave the
//! directory through an absolute symlink or `..`. We still pass exactly one component per
//! open and add `O_NOFOLLOW`, because our rule is stricter than cap-std's (it follows
//! symlinks that stay inside the directory; we follow none).
//!
//! Reads are bounded while reading: a file whose handle's `fstat` size is over the limit is
//! refused without reading, and the opened file is read through `take(limit + 1)`, so a file
//! that grows (or is swapped for a 100 MiB one) after any size check can never make us hold
//! more than `limit + 1` bytes; `line`/`limit` slicing works on what was read. At most
//! [`MAX_CONCURRENT_READS`] reads buffer at once per sandbox, so pipelined reads cannot
//! multiply that. A FIFO cannot block an open: the read open uses `O_NONBLOCK` (a FIFO opens
//! at once and `fstat` refuses it), the write open uses `O_NONBLOCK` as well (a FIFO without a
//! reader fails with `ENXIO`, one with a reader is refused by `fstat` before a byte is
//! written). A write only truncates the file after `fstat` said it is a regular file.
//! Before opening, the last component is also looked at with `fstatat(AT_SYMLINK_NOFOLLOW)`
//! on its directory's handle, so a device node placed in the workspace is refused without
//! being opened (opening some devices has side effects); the `fstat` after the open is the
//! check that counts.
//!
//! # Threat model
//!
//! The agent is assumed hostile and may run code on the machine as the same user (it can
//! create, rename and swap files, directories, symlinks and FIFOs inside the workspace while
//! it pipelines requests). Defended:
//!
//! * static escapes: relative paths, `..`, paths outside the roots, a root's sibling that
//!   shares its name prefix, symlinks to files or directories (inside or outside), NUL bytes;
//! * symlink races: a directory or file swapped with a symlink (e.g. `renameat2` with
//!   `RENAME_EXCHANGE` in a loop) while requests are in flight never makes a read return a
//!   byte from outside the roots, nor a write create or change a file outside them;
//! * size races: a read never buffers more than `limit + 1` bytes, whatever the file becomes;
//! * blocking targets: FIFOs, sockets, devices and directories are refused for reading and
//!   writing before anything can block, so no request parks a thread.
//!
//! Not defended (outside this model):
//!
//! * **hard links**: an agent that can already write outside the workspace can hard-link an
//!   outside file into it; that file is then a regular file inside a root, and we serve it.
//!   Refusing files with a link count above one would break ordinary files (and is racy
//!   itself); an agent with that power needs no help from us;
//! * bind mounts or FUSE file systems made inside the workspace (they need privileges the
//!   agent is assumed not to have), and a root that is itself replaced: a root is opened once,
//!   so requests keep going to the directory that was opened, whatever its path becomes;
//! * the responses' memory after they leave this module (queued for an agent that does not
//!   read its stdin): that is the connection's bound, not the file system's.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use acp_rpc::Error;
use acp_types::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use serde_json::json;
use tokio::sync::Semaphore;

mod legacy;

pub use legacy::*;

/// Default size limit for reads and writes: 10 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// At most this many reads per sandbox hold their buffer at once (the others wait), so
/// pipelined reads use at most this many times the size limit.
pub const MAX_CONCURRENT_READS: usize = 4;

/// One root: the path as given and canonical (for matching request paths) and the
/// directory handle every access goes through.
#[derive(Debug)]
struct Root {
    given: PathBuf,
    canonical: PathBuf,
    dir: Dir,
}

/// Text file access restricted to root directories (see the module docs for the rules and
/// the threat model). Cheap to clone: clones share the root handles and the read budget.
#[derive(Clone, Debug)]
pub struct SandboxedFs {
    roots: Arc<Vec<Root>>,
    max_file_size: u64,
    reads: Arc<Semaphore>,
}

/// A request path, checked lexically: which root, and the components below it.
struct Located {
    root: usize,
    components: Vec<OsString>,
}

impl SandboxedFs {
    /// A sandbox over `roots` (each must be an existing absolute directory). Each root is
    /// opened now and kept open: later requests go through these handles.
    pub fn new<I, P>(roots: I) -> io::Result<Self>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut out = Vec::new();
        for root in roots {
            let root = root.as_ref();
            if !root.is_absolute() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sandbox root {} is not absolute", root.display()),
                ));
            }
            let canonical = std::fs::canonicalize(root)?;
            if !canonical.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sandbox root {} is not a directory", root.display()),
                ));
            }
            let dir = Dir::open_ambient_dir(&canonical, cap_std::ambient_authority())?;
            out.push(Root {
                given: normalize(root),
                canonical,
                dir,
            });
        }
        Ok(SandboxedFs {
            roots: Arc::new(out),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            reads: Arc::new(Semaphore::new(MAX_CONCURRENT_READS)),
        })
    }

    /// Sets the size limit (bytes) for reads and writes.
    #[must_use]
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// The canonical roots.
    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.canonical.as_path())
    }

    /// The lexical rules: absolute, no `..`, inside a root.
    fn locate(&self, path: &str) -> Result<Located, Error> {
        let p = Path::new(path);
        if path.contains('\0') {
            return Err(refused(path, "the path contains a NUL byte"));
        }
        if !p.is_absolute() {
            return Err(refused(path, "the path is not absolute"));
        }
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(refused(path, "`..` components are not allowed"));
        }
        let lexical = normalize(p);
        self.roots
            .iter()
            .enumerate()
            .find_map(|(i, root)| {
                let rest = lexical
                    .strip_prefix(&root.given)
                    .or_else(|_| lexical.strip_prefix(&root.canonical))
                    .ok()?;
                Some(Located {
                    root: i,
                    components: rest
                        .components()
                        .map(|c| c.as_os_str().to_owned())
                        .collect(),
                })
            })
            .ok_or_else(|| refused(path, "the path is outside the allowed roots"))
    }

    /// Runs `work` on the blocking pool with the root handle of `path` (all file system
    /// calls are synchronous `openat`-style calls on handles).
    async fn on_handles<T, F>(&self, path: &str, work: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Dir, &[OsString], &str) -> Result<T, Error> + Send + 'static,
    {
        let located = self.locate(path)?;
        let roots = self.roots.clone();
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || {
            work(&roots[located.root].dir, &located.components, &path)
        })
        .await
        .map_err(|e| Error::internal_error(format!("file system task failed: {e}")))?
    }

    /// Serves `fs/read_text_file`: honours `line` (1-based) and `limit` (number of lines).
    pub async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        let max = self.max_file_size;
        let _slot = self.read_slot().await?;
        let bytes = self
            .on_handles(&params.path, move |root, comps, path| {
                let mut file = open_regular(root, comps, path, Access::Read)?;
                read_bounded(&mut file, max, path)
            })
            .await?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::invalid_params(format!("{} is not valid UTF-8 text", params.path))
                .with_data(json!({ "path": params.path }))
        })?;
        let content = select_lines(text, params.line, params.limit);
        Ok(ReadTextFileResponse::new(content))
    }

    /// Serves `fs/write_text_file`: creates the file (and missing parent directories inside
    /// the root, through the same handles) or replaces its content.
    pub async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        let len = params.content.len() as u64;
        if len > self.max_file_size {
            return Err(too_large(&params.path, len, self.max_file_size));
        }
        let WriteTextFileRequest { path, content, .. } = params;
        self.on_handles(&path, move |root, comps, path| {
            let mut file = open_regular(root, comps, path, Access::Write)?;
            // Truncate only now that `fstat` said this is a regular file inside the root.
            file.set_len(0)
                .and_then(|()| file.write_all(content.as_bytes()))
                .map_err(|e| io_error(path, &e))
        })
        .await?;
        Ok(WriteTextFileResponse::default())
    }

    async fn read_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, Error> {
        self.reads
            .acquire()
            .await
            .map_err(|_| Error::internal_error("the file system handler is shutting down"))
    }
}

/// Whether a file is opened to read or to write (create if missing).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// Opens the directory `name` (one component) beneath `dir`, never following a symlink.
fn open_dir_nofollow(dir: &Dir, name: &OsStr) -> io::Result<Dir> {
    let file = dir.open_with(
        name,
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW),
    )?;
    Ok(Dir::from_std_file(file.into_std()))
}

/// Walks `comps` down from `root`, one directory handle at a time; with `create`, missing
/// directories are made (`mkdirat` on the parent's handle) and then opened the same way.
/// A missing directory without `create` is `RESOURCE_NOT_FOUND`.
fn walk_dirs(root: &Dir, comps: &[OsString], path: &str, create: bool) -> Result<Dir, Error> {
    let mut cur = root.try_clone().map_err(|e| io_error(path, &e))?;
    for name in comps {
        let next = match open_dir_nofollow(&cur, name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                match cur.create_dir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(explain(&cur, name, path, &e)),
                }
                open_dir_nofollow(&cur, name)
            }
            other => other,
        };
        cur = next.map_err(|e| explain(&cur, name, path, &e))?;
    }
    Ok(cur)
}

/// Opens the regular file at `comps` beneath `root` (see the module docs): parents through
/// handles, the file with `O_NOFOLLOW | O_NONBLOCK`, and `fstat` on the opened handle.
fn open_regular(root: &Dir, comps: &[OsString], path: &str, access: Access) -> Result<File, Error> {
    let Some((last, parents)) = comps.split_last() else {
        return Err(not_regular(path, "a directory"));
    };
    let dir = walk_dirs(root, parents, path, access == Access::Write)?;
    // A look before opening, so that a device node is never opened (the check that counts is
    // the `fstat` below, on what was opened).
    match dir.symlink_metadata(last) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(refused(path, "symbolic links are not followed"));
        }
        Ok(meta) if !meta.is_file() => return Err(not_regular(path, kind_of(&meta.file_type()))),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound && access == Access::Write => {}
        Err(e) => return Err(io_error(path, &e)),
    }
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::Write => options.write(true).create(true),
    };
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = dir
        .open_with(last, &options)
        .map_err(|e| explain(&dir, last, path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    if !meta.is_file() {
        return Err(not_regular(path, kind_of(&meta.file_type())));
    }
    Ok(file)
}

/// Reads the opened file: refused at once if `fstat` on the handle says it is over `max`;
/// otherwise read through `take(max + 1)`, so a file that grows while it is read is still
/// refused after at most `max + 1` bytes.
fn read_bounded(file: &mut File, max: u64, path: &str) -> Result<Vec<u8>, Error> {
    let len = file.metadata().map_err(|e| io_error(path, &e))?.len();
    if len > max {
        return Err(too_large(path, len, max));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, &e))?;
    if bytes.len() as u64 > max {
        return Err(Error::invalid_params(format!(
            "{path} grew over the {max}-byte size limit while it was read"
        ))
        .with_data(json!({ "path": path, "limit": max })));
    }
    Ok(bytes)
}

/// Turns a failed open of `name` beneath `dir` into a clear error: a symlink (`ELOOP` from
/// `O_NOFOLLOW`, or anything else where `name` is now a link) is "not followed", a FIFO
/// without a reader (`ENXIO`) is "not a regular file".
fn explain(dir: &Dir, name: &OsStr, path: &str, e: &io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ENXIO) {
        return not_regular(path, "a FIFO or socket");
    }
    if e.kind() == io::ErrorKind::NotFound {
        return io_error(path, e);
    }
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => {
            refused(path, "symbolic links are not followed")
        }
        _ if e.raw_os_error() == Some(libc::ELOOP) => {
            refused(path, "symbolic links are not followed")
        }
        Ok(meta) if e.raw_os_error() == Some(libc::ENOTDIR) => Error::invalid_params(format!(
            "{path}: {} is {}, not a directory",
            name.to_string_lossy(),
            kind_of(&meta.file_type())
        ))
        .with_data(json!({ "path": path, "reason": "not a directory" })),
        _ if e.raw_os_error() == Some(libc::EISDIR) => not_regular(path, "a directory"),
        _ => io_error(path, e),
    }
}

fn kind_of(kind: &cap_std::fs::FileType) -> &'static str {
    use cap_std::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Lines `line..line+limit` (1-based; `None` = from the start / to the end), line endings kept.
/// Without either, the text itself is returned (no copy).
fn select_lines(text: String, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text;
    }
    let skip = line.unwrap_or(1).max(1) as usize - 1;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// Removes `.` components (no `..` reaches here).
fn normalize(p: &Path) -> PathBuf {
    p.components().filter(|c| *c != Component::CurDir).collect()
}

fn refused(path: &str, why: &str) -> Error {
    Error::invalid_params(format!("access to {path} refused: {why}"))
        .with_data(json!({ "path": path, "reason": why }))
}

fn not_regular(path: &str, what: &str) -> Error {
    Error::invalid_params(format!(
        "{path} is not a regular file ({what}): only regular files are read or written"
    ))
    .with_data(json!({ "path": path, "reason": "not a regular file" }))
}

fn too_large(path: &str, size: u64, max: u64) -> Error {
    Error::invalid_params(format!(
        "{path} is {size} bytes, over the {max}-byte size limit"
    ))
    .with_data(json!({ "path": path, "size": size, "limit": max }))
}

fn io_error(path: &str, e: &io::Error) -> Error {
    if e.kind() == io::ErrorKind::NotFound {
        Error::resource_not_found(format!("{path}: {e}")).with_data(json!({ "path": path }))
    } else {
        Error::internal_error(format!("{path}: {e}")).with_data(json!({ "path": path }))
    }
}
