//! What the legacy dialects ask of the file system beyond v1's two methods (the threads
//! dialect's binary reads, `stat` and glob search), and the [`acp_dialects::LocalFiles`]
//! fallback their translations use, under the same rules and handles as [`SandboxedFs`].

use std::io::{self, Read, Seek};
#[cfg(feature = "legacy-threads")]
use std::path::Path;
use std::path::PathBuf;

use acp_rpc::Error;
use acp_types::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
#[cfg(feature = "legacy-threads")]
use cap_std::fs::Dir;
#[cfg(feature = "legacy-threads")]
use serde_json::json;

#[cfg(feature = "legacy-threads")]
use super::open_dir_nofollow;
use super::{Access, SandboxedFs, io_error, open_regular, refused, too_large, walk_dirs};

/// What [`SandboxedFs::stat`] found at a path.
pub use acp_dialects::PathStat;

/// At most this many matches are returned by [`SandboxedFs::glob`].
pub const MAX_GLOB_MATCHES: usize = 10_000;

/// Directories deeper than this below a root are not searched by [`SandboxedFs::glob`]
/// (each level holds one open directory handle while it is walked).
pub const MAX_GLOB_DEPTH: usize = 64;

impl SandboxedFs {
    /// Reads up to `limit` bytes of a file from `offset` (both optional), under the same
    /// rules and size limit as text reads. Served for the threads dialect's `readBinaryFile`.
    pub async fn read_bytes(
        &self,
        path: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<Vec<u8>, Error> {
        let max = self.max_file_size;
        let _slot = self.read_slot().await?;
        self.on_handles(path, move |root, comps, path| {
            let mut file = open_regular(root, comps, path, Access::Read)?;
            let len = file.metadata().map_err(|e| io_error(path, &e))?.len();
            let offset = offset.unwrap_or(0).min(len);
            let wanted = limit.unwrap_or(u64::MAX).min(len - offset);
            if wanted > max {
                return Err(too_large(path, wanted, max));
            }
            file.seek(io::SeekFrom::Start(offset))
                .map_err(|e| io_error(path, &e))?;
            let mut bytes = Vec::with_capacity(usize::try_from(wanted).unwrap_or(0));
            (&mut file)
                .take(limit.unwrap_or(u64::MAX).min(max.saturating_add(1)))
                .read_to_end(&mut bytes)
                .map_err(|e| io_error(path, &e))?;
            if bytes.len() as u64 > max {
                return Err(too_large(path, bytes.len() as u64, max));
            }
            Ok(bytes)
        })
        .await
    }

    /// Whether `path` exists and is a directory. A path outside the roots is refused (not
    /// reported as missing), so the sandbox does not leak what exists elsewhere; so is a
    /// symbolic link.
    pub async fn stat(&self, path: &str) -> Result<PathStat, Error> {
        self.on_handles(path, |root, comps, path| {
            const MISSING: PathStat = PathStat {
                exists: false,
                is_directory: false,
            };
            let Some((last, parents)) = comps.split_last() else {
                return Ok(PathStat {
                    exists: true,
                    is_directory: true,
                });
            };
            let parent = match walk_dirs(root, parents, path, false) {
                Ok(dir) => dir,
                Err(e) if e.code == acp_rpc::ErrorCode::RESOURCE_NOT_FOUND => return Ok(MISSING),
                Err(e) => return Err(e),
            };
            match parent.symlink_metadata(last) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    Err(refused(path, "symbolic links are not followed"))
                }
                Ok(meta) => Ok(PathStat {
                    exists: true,
                    is_directory: meta.is_dir(),
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(MISSING),
                Err(e) => Err(io_error(path, &e)),
            }
        })
        .await
    }

    /// The files under the roots matching a glob `pattern` (`*` and `?` stay within one path
    /// component, `**` crosses directories), as absolute paths in sorted order. A relative
    /// pattern is matched against paths relative to each root, an absolute one against the
    /// full path. Directories are walked through handles; symbolic links are not followed;
    /// at most [`MAX_GLOB_MATCHES`] are returned, [`MAX_GLOB_DEPTH`] levels deep.
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
        let roots = self.roots.clone();
        tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            for root in roots.iter() {
                let mut relative = PathBuf::new();
                walk(&root.dir, &mut relative, 0, &mut |file: &Path| {
                    let full = root.canonical.join(file);
                    let candidate = if absolute { full.as_path() } else { file };
                    if matcher.is_match(candidate) {
                        found.push(full.to_string_lossy().into_owned());
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

/// Visits every regular file below `dir` (`relative` is its path below the root; no
/// symlinks followed) until `visit` returns false.
#[cfg(feature = "legacy-threads")]
fn walk(
    dir: &Dir,
    relative: &mut PathBuf,
    depth: usize,
    visit: &mut dyn FnMut(&Path) -> bool,
) -> bool {
    let Ok(entries) = dir.entries() else {
        return true;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        relative.push(&name);
        let go_on = if kind.is_dir() && depth < MAX_GLOB_DEPTH {
            match open_dir_nofollow(dir, &name) {
                Ok(child) => walk(&child, relative, depth + 1, visit),
                Err(_) => true,
            }
        } else if kind.is_file() {
            visit(relative)
        } else {
            true
        };
        relative.pop();
        if !go_on {
            return false;
        }
    }
    true
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
