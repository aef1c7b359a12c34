//! `SandboxedFs`: escapes are refused (`..`, symlinks, relative paths, a root's sibling),
//! `line`/`limit` are honoured, the size limit applies, writes create files inside roots,
//! and non-regular files (FIFO, socket, directory) are refused without blocking. The races
//! are in `sandbox_hostile_agent.rs`.

use std::path::{Path, PathBuf};

#[path = "support/mod.rs"]
mod support;

use support::TempDir;

use acp_client::ErrorCode;
use acp_client::fs::SandboxedFs;
use acp_types::v1::{ReadTextFileRequest, WriteTextFileRequest};

fn read(path: impl AsRef<Path>, line: Option<u32>, limit: Option<u32>) -> ReadTextFileRequest {
    let mut r = ReadTextFileRequest::new("s1", path.as_ref().to_string_lossy());
    if let Some(line) = line {
        r = r.line(line);
    }
    if let Some(limit) = limit {
        r = r.limit(limit);
    }
    r
}

fn write(path: impl AsRef<Path>, content: &str) -> WriteTextFileRequest {
    WriteTextFileRequest::new("s1", path.as_ref().to_string_lossy(), content)
}

#[tokio::test]
async fn reads_and_writes_inside_a_root_work() {
    let root = TempDir::new("ok");
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let file = root.path().join("sub/dir/a.txt");
    fs.write_text_file(write(&file, "hello\n")).await.unwrap();
    let r = fs.read_text_file(read(&file, None, None)).await.unwrap();
    assert_eq!(r.content, "hello\n");
}

#[tokio::test]
async fn line_and_limit_select_lines_one_based() {
    let root = TempDir::new("lines");
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let file = root.path().join("l.txt");
    std::fs::write(&file, "one\ntwo\nthree\nfour").unwrap();
    let content = |line, limit| {
        let fs = fs.clone();
        let file = file.clone();
        async move {
            fs.read_text_file(read(&file, line, limit))
                .await
                .unwrap()
                .content
        }
    };
    assert_eq!(content(Some(2), Some(2)).await, "two\nthree\n");
    assert_eq!(content(Some(3), None).await, "three\nfour");
    assert_eq!(content(None, Some(1)).await, "one\n");
    assert_eq!(content(Some(10), None).await, "");
}

#[tokio::test]
async fn dot_dot_components_are_refused_even_when_they_stay_inside() {
    let root = TempDir::new("dots");
    let fs = SandboxedFs::new([root.path()]).unwrap();
    std::fs::write(root.path().join("f"), "x").unwrap();
    for p in [
        root.path().join("sub/../f"),
        root.path().join("../../etc/passwd"),
    ] {
        let err = fs.read_text_file(read(&p, None, None)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("`..`"), "{}", err.message);
    }
    let err = fs
        .write_text_file(write(root.path().join("../escape.txt"), "x"))
        .await
        .unwrap_err();
    assert!(err.message.contains("`..`"), "{}", err.message);
}

#[tokio::test]
async fn relative_paths_are_refused() {
    let root = TempDir::new("rel");
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let err = fs
        .read_text_file(read("f.txt", None, None))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("not absolute"), "{}", err.message);
}

#[tokio::test]
async fn symlinks_to_outside_are_refused_for_read_and_write() {
    let root = TempDir::new("link");
    let outside = TempDir::new("outside");
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("s")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("d")).unwrap();
    let fs = SandboxedFs::new([root.path()]).unwrap();
    for p in [root.path().join("s"), root.path().join("d/secret")] {
        let err = fs.read_text_file(read(&p, None, None)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("symbolic link"), "{}", err.message);
    }
    let err = fs
        .write_text_file(write(root.path().join("d/new.txt"), "x"))
        .await
        .unwrap_err();
    assert!(err.message.contains("symbolic link"), "{}", err.message);
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "s3cret"
    );
}

#[tokio::test]
async fn a_sibling_sharing_the_roots_name_prefix_is_outside() {
    let root = TempDir::new("rootA");
    let evil = PathBuf::from(format!("{}-evil", root.path().display()));
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("f"), "x").unwrap();
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let err = fs
        .read_text_file(read(evil.join("f"), None, None))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("outside the allowed roots"),
        "{}",
        err.message
    );
    let err = fs
        .write_text_file(write(evil.join("g"), "x"))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("outside the allowed roots"),
        "{}",
        err.message
    );
    assert!(!evil.join("g").exists());
    std::fs::remove_dir_all(&evil).unwrap();
}

#[tokio::test]
async fn any_of_several_roots_is_allowed() {
    let a = TempDir::new("a");
    let b = TempDir::new("b");
    let fs = SandboxedFs::new([a.path(), b.path()]).unwrap();
    fs.write_text_file(write(b.path().join("x"), "in b"))
        .await
        .unwrap();
    let r = fs
        .read_text_file(read(b.path().join("x"), None, None))
        .await
        .unwrap();
    assert_eq!(r.content, "in b");
}

#[tokio::test]
async fn files_over_the_size_limit_are_refused() {
    let root = TempDir::new("size");
    let fs = SandboxedFs::new([root.path()])
        .unwrap()
        .with_max_file_size(8);
    std::fs::write(root.path().join("big"), "0123456789").unwrap();
    let err = fs
        .read_text_file(read(root.path().join("big"), None, None))
        .await
        .unwrap_err();
    assert!(err.message.contains("size limit"), "{}", err.message);
    let err = fs
        .write_text_file(write(root.path().join("w"), "0123456789"))
        .await
        .unwrap_err();
    assert!(err.message.contains("size limit"), "{}", err.message);
}

#[tokio::test]
async fn a_missing_file_is_resource_not_found() {
    let root = TempDir::new("missing");
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let err = fs
        .read_text_file(read(root.path().join("nope"), None, None))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Neither a read nor a write may open a FIFO in a way that blocks: both are refused at once
/// with `-32602` (before the fix, a write blocked forever in `open`).
#[tokio::test]
async fn a_fifo_is_refused_for_reading_and_writing_without_blocking() {
    let root = TempDir::new("fifo");
    let fifo = root.path().join("pipe");
    mkfifo(&fifo);
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let within = std::time::Duration::from_secs(5);
    let err = tokio::time::timeout(within, fs.read_text_file(read(&fifo, None, None)))
        .await
        .expect("a read of a FIFO is answered at once")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(
        err.message.contains("not a regular file"),
        "{}",
        err.message
    );
    let err = tokio::time::timeout(within, fs.write_text_file(write(&fifo, "x")))
        .await
        .expect("a write to a FIFO is answered at once")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(
        err.message.contains("not a regular file"),
        "{}",
        err.message
    );
    let err = tokio::time::timeout(within, fs.read_bytes(&fifo.to_string_lossy(), None, None))
        .await
        .expect("a binary read of a FIFO is answered at once")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn a_directory_and_a_socket_are_refused_for_reading_and_writing() {
    let root = TempDir::new("nonreg");
    std::fs::create_dir(root.path().join("dir")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(root.path().join("sock")).unwrap();
    let fs = SandboxedFs::new([root.path()]).unwrap();
    for (name, what) in [("dir", "a directory"), ("sock", "a socket")] {
        let p = root.path().join(name);
        let err = fs.read_text_file(read(&p, None, None)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains(what), "{}", err.message);
        let err = fs.write_text_file(write(&p, "x")).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains(what), "{}", err.message);
    }
    // The root itself is a directory too.
    let err = fs
        .read_text_file(read(root.path(), None, None))
        .await
        .unwrap_err();
    assert!(err.message.contains("a directory"), "{}", err.message);
}

/// A dangling symlink is not written through (the old code's `create_dir_all` + `write`
/// would have created its target), and a file used as a directory is named clearly.
#[tokio::test]
async fn a_dangling_symlink_is_not_written_through() {
    let root = TempDir::new("dangling");
    let outside = TempDir::new("dangling-out");
    std::os::unix::fs::symlink(outside.path().join("created"), root.path().join("l")).unwrap();
    std::fs::write(root.path().join("file"), "x").unwrap();
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let err = fs
        .write_text_file(write(root.path().join("l"), "pwned"))
        .await
        .unwrap_err();
    assert!(err.message.contains("symbolic link"), "{}", err.message);
    assert!(!outside.path().join("created").exists());
    let err = fs
        .write_text_file(write(root.path().join("file/under"), "x"))
        .await
        .unwrap_err();
    assert!(err.message.contains("not a directory"), "{}", err.message);
}

/// A root opened once keeps serving the directory that was opened, even if its path is
/// later replaced by a symlink to somewhere else.
#[tokio::test]
async fn a_root_replaced_by_a_symlink_keeps_serving_the_opened_directory() {
    let parent = TempDir::new("moved");
    let outside = TempDir::new("moved-out");
    std::fs::write(outside.path().join("f"), "outside").unwrap();
    let root = parent.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f"), "inside").unwrap();
    let fs = SandboxedFs::new([&root]).unwrap();
    std::fs::rename(&root, parent.path().join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &root).unwrap();
    let r = fs
        .read_text_file(read(root.join("f"), None, None))
        .await
        .unwrap();
    assert_eq!(r.content, "inside");
}

#[tokio::test]
async fn stat_reports_through_handles_and_refuses_symlinks() {
    let root = TempDir::new("stat");
    std::fs::create_dir(root.path().join("d")).unwrap();
    std::os::unix::fs::symlink("/", root.path().join("l")).unwrap();
    let fs = SandboxedFs::new([root.path()]).unwrap();
    let s = fs
        .stat(&root.path().join("d").to_string_lossy())
        .await
        .unwrap();
    assert!(s.exists && s.is_directory);
    let s = fs
        .stat(&root.path().join("d/none").to_string_lossy())
        .await
        .unwrap();
    assert!(!s.exists);
    let err = fs
        .stat(&root.path().join("l/etc").to_string_lossy())
        .await
        .unwrap_err();
    assert!(err.message.contains("symbolic link"), "{}", err.message);
}
