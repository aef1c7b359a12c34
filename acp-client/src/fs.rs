//! The file system methods (`fs/read_text_file`, `fs/write_text_file`) served from a set of
//! root directories: [`SandboxedFs`].
//!
//! Rules: paths must be absolute; `..` components are refused; no component below a root may
//! be a symbolic link; the resolved path must lie inside a root (compared component by
//! component, so `/tmp/rootA-evil` is not inside `/tmp/rootA`); for writes, the nearest
//! existing ancestor is canonicalized and checked before missing directories are created.
//! Files larger than the size limit are refused. The checks happen before the I/O, so a
//! process racing to swap a directory for a symlink in between is outside this model.

use std::io;
use std::path::{Component, Path, PathBuf};

use acp_rpc::Error;
use acp_types::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use serde_json::json;

/// Default size limit for reads and writes: 10 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// Text file access restricted to root directories. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SandboxedFs {
    /// (as given, canonical) for each root.
    roots: Vec<(PathBuf, PathBuf)>,
    max_file_size: u64,
}

impl SandboxedFs {
    /// A sandbox over `roots` (each must be an existing absolute directory).
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
            out.push((normalize(root), canonical));
        }
        Ok(SandboxedFs {
            roots: out,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
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
        self.roots.iter().map(|(_, c)| c.as_path())
    }

    /// Checks `path` against the rules and returns the path to use for I/O.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, Error> {
        let p = Path::new(path);
        if !p.is_absolute() {
            return Err(refused(path, "the path is not absolute"));
        }
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(refused(path, "`..` components are not allowed"));
        }
        let lexical = normalize(p);
        let (root, rest) = self
            .roots
            .iter()
            .find_map(|(given, canonical)| {
                lexical
                    .strip_prefix(given)
                    .or_else(|_| lexical.strip_prefix(canonical))
                    .ok()
                    .map(|rest| (canonical, rest.to_path_buf()))
            })
            .ok_or_else(|| refused(path, "the path is outside the allowed roots"))?;
        // Walk down from the root: no component may be a symlink.
        let mut cur = root.clone();
        let mut existing = root.clone();
        for comp in rest.components() {
            cur.push(comp);
            match std::fs::symlink_metadata(&cur) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(refused(path, "symbolic links are not followed"));
                }
                Ok(_) => existing = cur.clone(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(e) => return Err(io_error(path, &e)),
            }
        }
        // Defence in depth: the deepest existing ancestor must canonicalize inside a root.
        let canonical = std::fs::canonicalize(&existing).map_err(|e| io_error(path, &e))?;
        if !self.roots.iter().any(|(_, c)| canonical.starts_with(c)) {
            return Err(refused(path, "the path resolves outside the allowed roots"));
        }
        Ok(cur_from(root, &rest))
    }

    /// Serves `fs/read_text_file`: honours `line` (1-based) and `limit` (number of lines).
    pub async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        let path = self.resolve(&params.path)?;
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(|e| io_error(&params.path, &e))?;
        if !meta.is_file() {
            return Err(
                Error::invalid_params(format!("{} is not a file", params.path))
                    .with_data(json!({ "path": params.path })),
            );
        }
        if meta.len() > self.max_file_size {
            return Err(too_large(&params.path, meta.len(), self.max_file_size));
        }
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| io_error(&params.path, &e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::invalid_params(format!("{} is not valid UTF-8 text", params.path))
                .with_data(json!({ "path": params.path }))
        })?;
        let content = select_lines(&text, params.line, params.limit);
        Ok(ReadTextFileResponse {
            content,
            meta: None,
        })
    }

    /// Serves `fs/write_text_file`: creates the file (and missing parent directories inside
    /// the root) or replaces its content.
    pub async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        let len = params.content.len() as u64;
        if len > self.max_file_size {
            return Err(too_large(&params.path, len, self.max_file_size));
        }
        let path = self.resolve(&params.path)?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| io_error(&params.path, &e))?;
        }
        tokio::fs::write(&path, params.content.as_bytes())
            .await
            .map_err(|e| io_error(&params.path, &e))?;
        Ok(WriteTextFileResponse::default())
    }
}

/// What [`SandboxedFs::stat`] found at a path.
pub use acp_dialects::PathStat;

/// At most this many matches are returned by [`SandboxedFs::glob`].
pub const MAX_GLOB_MATCHES: usize = 10_000;

impl SandboxedFs {
    /// Reads up to `limit` bytes of a file from `offset` (both optional), under the same
    /// rules and size limit as text reads. Served for the threads dialect's `readBinaryFile`.
    pub async fn read_bytes(
        &self,
        path: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<Vec<u8>, Error> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let resolved = self.resolve(path)?;
        let meta = tokio::fs::metadata(&resolved)
            .await
            .map_err(|e| io_error(path, &e))?;
        if !meta.is_file() {
            return Err(Error::invalid_params(format!("{path} is not a file"))
                .with_data(json!({ "path": path })));
        }
        let offset = offset.unwrap_or(0).min(meta.len());
        let wanted = limit.unwrap_or(u64::MAX).min(meta.len() - offset);
        if wanted > self.max_file_size {
            return Err(too_large(path, wanted, self.max_file_size));
        }
        let mut file = tokio::fs::File::open(&resolved)
            .await
            .map_err(|e| io_error(path, &e))?;
        file.seek(io::SeekFrom::Start(offset))
            .await
            .map_err(|e| io_error(path, &e))?;
        let mut bytes = Vec::with_capacity(wanted as usize);
        file.take(wanted)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| io_error(path, &e))?;
        Ok(bytes)
    }

    /// Whether `path` exists and is a directory. A path outside the roots is refused (not
    /// reported as missing), so the sandbox does not leak what exists elsewhere.
    pub async fn stat(&self, path: &str) -> Result<PathStat, Error> {
        let resolved = self.resolve(path)?;
        match tokio::fs::metadata(&resolved).await {
            Ok(meta) => Ok(PathStat {
                exists: true,
                is_directory: meta.is_dir(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(PathStat {
                exists: false,
                is_directory: false,
            }),
            Err(e) => Err(io_error(path, &e)),
        }
    }

    /// The files under the roots matching a glob `pattern` (`*` and `?` stay within one path
    /// component, `**` crosses directories), as absolute paths in sorted order. A relative
    /// pattern is matched against paths relative to each root, an absolute one against the
    /// full path. Symbolic links are not followed; at most [`MAX_GLOB_MATCHES`] are returned.
    #[cfg(feature = "legacy-threads")]
    pub async fn glob(&self, pattern: &str) -> Result<Vec<String>, Error> {
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                Error::invalid_params(format!("bad glob pattern {pattern:?}: {e}"))
                    .with_data(json!({ "pattern": pattern }))
            })?
            .compile_matcher();
        let absolute = Path::new(pattern).is_absolute();
        let roots: Vec<PathBuf> = self.roots().map(Path::to_path_buf).collect();
        tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            for root in &roots {
                walk(root, &mut |file: &Path| {
                    let candidate = if absolute {
                        file
                    } else {
                        file.strip_prefix(root).unwrap_or(file)
                    };
                    if matcher.is_match(candidate) {
                        found.push(file.to_string_lossy().into_owned());
                    }
                    found.len() < MAX_GLOB_MATCHES
                });
            }
            found.sort();
            found.dedup();
            found
        })
        .await
        .map_err(|e| Error::internal_error(format!("glob search failed: {e}")))
    }
}

/// Visits every regular file below `dir` (no symlinks followed) until `visit` returns false.
#[cfg(feature = "legacy-threads")]
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path) -> bool) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let go_on = if kind.is_dir() {
            walk(&path, visit)
        } else if kind.is_file() {
            visit(&path)
        } else {
            true
        };
        if !go_on {
            return false;
        }
    }
    true
}

fn cur_from(root: &Path, rest: &Path) -> PathBuf {
    let mut p = root.to_path_buf();
    p.push(rest);
    p
}

/// Lines `line..line+limit` (1-based; `None` = from the start / to the end), line endings kept.
fn select_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let skip = line.unwrap_or(1).max(1) as usize - 1;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// Removes `.` components (no `..` reaches here).
fn normalize(p: &Path) -> PathBuf {
    p.components().filter(|c| *c != Component::CurDir).collect()
}

/// What a legacy translation falls back on for the file calls a v1 client does not serve.
#[async_trait::async_trait]
impl acp_dialects::LocalFiles for SandboxedFs {
    async fn read_text_file(
        &self,
        request: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        SandboxedFs::read_text_file(self, request).await
    }

    async fn write_text_file(
        &self,
        request: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        SandboxedFs::write_text_file(self, request).await
    }

    async fn read_bytes(
        &self,
        path: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<Vec<u8>, Error> {
        SandboxedFs::read_bytes(self, path, offset, limit).await
    }

    async fn stat(&self, path: &str) -> Result<PathStat, Error> {
        SandboxedFs::stat(self, path).await
    }

    async fn glob(&self, pattern: &str) -> Result<Vec<String>, Error> {
        #[cfg(feature = "legacy-threads")]
        return SandboxedFs::glob(self, pattern).await;
        #[cfg(not(feature = "legacy-threads"))]
        return Err(Error::new(
            acp_rpc::ErrorCode::METHOD_NOT_FOUND,
            format!("glob {pattern:?}: built without the legacy-threads feature"),
        ));
    }

    fn default_cwd(&self) -> Option<PathBuf> {
        self.roots().next().map(PathBuf::from)
    }
}

fn refused(path: &str, why: &str) -> Error {
    Error::invalid_params(format!("access to {path} refused: {why}"))
        .with_data(json!({ "path": path, "reason": why }))
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
