//! The file-level pieces of [`super::JsonlStore`]: the directory lock, the file name of a
//! session, reading whole lines from an offset (a torn last line ignored) and cutting a torn
//! tail before appending.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use acp_types::v1::SessionId;

use super::StoreError;

#[cfg(unix)]
pub(crate) fn try_lock(file: &File) -> Result<(), Option<std::io::Error>> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(None)
    } else {
        Err(Some(err))
    }
}

#[cfg(not(unix))]
pub(crate) fn try_lock(file: &File) -> Result<(), Option<std::io::Error>> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Some(e)),
    }
}

/// The file name (without extension) of a session: the id itself when it is a plain name,
/// else `h-` and its hex bytes (ids come from peers and must never name a path).
pub(crate) fn file_stem(id: &SessionId) -> String {
    let s = id.0.as_str();
    let plain = !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain {
        format!("s-{s}")
    } else {
        let mut out = String::with_capacity(2 + s.len() * 2);
        out.push_str("h-");
        for b in s.bytes().take(512) {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }
}

/// Reads the complete lines of `path` from `offset`: calls `each(line, offset_of_line)`,
/// ignores a torn last line (no newline) with a warning. Returns the offset after the last
/// line read and whether it stopped early (when `each` returns `false`).
pub(crate) fn read_lines(
    path: &Path,
    offset: u64,
    mut each: impl FnMut(&[u8], u64) -> bool,
) -> Result<(u64, bool), StoreError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((offset, false)),
        Err(e) => return Err(StoreError::io(format!("cannot read {}", path.display()), e)),
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    reader
        .seek(SeekFrom::Start(offset))
        .map_err(|e| StoreError::io(format!("cannot read {}", path.display()), e))?;
    let mut at = offset;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| StoreError::io(format!("cannot read {}", path.display()), e))?;
        if n == 0 {
            return Ok((at, false));
        }
        if line.last() != Some(&b'\n') {
            tracing::warn!(
                file = %path.display(),
                offset = at,
                bytes = n,
                "ignoring a torn last record (the process writing it was interrupted)"
            );
            return Ok((at, false));
        }
        let start = at;
        at += n as u64;
        if !each(&line[..n - 1], start) {
            return Ok((at, true));
        }
    }
}

/// Cuts a torn last line off `file` (opened for reading and writing) so the next append
/// starts on a line of its own.
pub(crate) fn cut_torn_tail(file: &mut File, path: &Path) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last newline, reading backwards in blocks.
    let mut end = len;
    let mut keep = 0;
    let mut block = vec![0u8; 8192];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let chunk = &mut block[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    tracing::warn!(
        file = %path.display(),
        offset = keep,
        bytes = len - keep,
        "cutting off a torn last record before appending"
    );
    file.set_len(keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain ids keep their name; anything that could name a path is hex-encoded, and the two
    /// forms cannot collide.
    #[test]
    fn session_ids_never_name_a_path() {
        assert_eq!(file_stem(&SessionId("echo-1".into())), "s-echo-1");
        assert_eq!(file_stem(&SessionId("../x".into())), "h-2e2e2f78");
        assert_eq!(file_stem(&SessionId("".into())), "h-");
        assert_ne!(
            file_stem(&SessionId("h-41".into())),
            file_stem(&SessionId("A".into()))
        );
    }
}
