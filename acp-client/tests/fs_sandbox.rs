//! `SandboxedFs`: escapes are refused (`..`, symlinks, relative paths, a root's sibling),
//! `line`/`limit` are honoured, the size limit applies, writes create files inside roots.

use std::path::{Path, PathBuf};

use acp_client::ErrorCode;
use acp_client::fs::SandboxedFs;
use acp_types::v1::{ReadTextFileRequest, WriteTextFileRequest};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "acp-client-fs-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(std::fs::canonicalize(&p).unwrap())
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: impl AsRef<Path>, line: Option<u32>, limit: Option<u32>) -> ReadTextFileRequest {
    ReadTextFileRequest {
        session_id: "s1".into(),
        path: path.as_ref().to_string_lossy().into_owned(),
        line,
        limit,
        meta: None,
    }
}

fn write(path: impl AsRef<Path>, content: &str) -> WriteTextFileRequest {
    WriteTextFileRequest {
        session_id: "s1".into(),
        path: path.as_ref().to_string_lossy().into_owned(),
        content: content.to_owned(),
        meta: None,
    }
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
