//! Archives made here, good and hostile; each hostile one is refused and writes nothing
//! outside the directory.

use std::io::Write;

use super::*;

enum E<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Link(&'a str, &'a str),
    Hard(&'a str, &'a str),
}

/// A tar header whose name and link name are written raw (the tar crate's own setters
/// refuse `..`, which is what the hostile archives need).
fn header(name: &str, kind: tar::EntryType, size: u64, mode: u32, link: &str) -> tar::Header {
    let mut h = tar::Header::new_old();
    {
        let old = h.as_old_mut();
        old.name = [0; 100];
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        old.linkname = [0; 100];
        old.linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_cksum();
    h
}

fn tar_gz(entries: &[E]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for e in entries {
        let (h, data): (_, &[u8]) = match e {
            E::File(n, d, m) => (
                header(n, tar::EntryType::Regular, d.len() as u64, *m, ""),
                d,
            ),
            E::Dir(n) => (header(n, tar::EntryType::Directory, 0, 0o755, ""), b""),
            E::Link(n, t) => (header(n, tar::EntryType::Symlink, 0, 0o777, t), b""),
            E::Hard(n, t) => (header(n, tar::EntryType::Link, 0, 0o644, t), b""),
        };
        builder.append(&h, data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn zip(entries: &[E]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for e in entries {
        let options = zip::write::SimpleFileOptions::default();
        match e {
            E::File(n, d, m) => {
                w.start_file(*n, options.unix_permissions(*m)).unwrap();
                w.write_all(d).unwrap();
            }
            E::Dir(n) => w.add_directory(*n, options).unwrap(),
            E::Link(n, t) => w.add_symlink(*n, *t, options).unwrap(),
            E::Hard(..) => unreachable!("zip has no hard links"),
        }
    }
    w.finish().unwrap().into_inner()
}

/// A scratch directory holding `out/` (the unpack target) and the archive.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("acp-unpack-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("out")).unwrap();
        Scratch(dir)
    }

    fn unpack(&self, bytes: &[u8]) -> Result<(), RegistryError> {
        let archive = self.0.join("archive");
        fs::write(&archive, bytes).unwrap();
        unpack(&archive, &self.0.join("out"))
    }

    /// Nothing but `out/` and the archive beside it: nothing escaped.
    fn nothing_escaped(&self) {
        let mut names: Vec<_> = fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["archive", "out"]);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
#[cfg(unix)]
fn a_good_tar_gz_unpacks_with_its_modes_and_inside_links() {
    let s = Scratch::new("good-tar");
    let bytes = tar_gz(&[
        E::Dir("pkg/"),
        E::File("pkg/lib/agent", b"#!/bin/sh\n", 0o4755),
        E::File("pkg/README", b"hi", 0o666),
        E::Link("pkg/bin/agent", "../lib/agent"),
    ]);
    s.unpack(&bytes).unwrap();
    let out = s.0.join("out");
    assert_eq!(
        mode(&out.join("pkg/lib/agent")),
        0o755,
        "set-uid dropped, exec kept"
    );
    assert_eq!(
        mode(&out.join("pkg/README")),
        0o644,
        "others' write dropped"
    );
    assert_eq!(fs::read(out.join("pkg/bin/agent")).unwrap(), b"#!/bin/sh\n");
}

#[test]
#[cfg(unix)]
fn a_good_zip_unpacks_with_its_modes_and_inside_links() {
    let s = Scratch::new("good-zip");
    let bytes = zip(&[
        E::File("agent", b"#!/bin/sh\n", 0o755),
        E::Dir("d/"),
        E::Link("d/agent", "../agent"),
    ]);
    s.unpack(&bytes).unwrap();
    let out = s.0.join("out");
    assert_eq!(mode(&out.join("agent")), 0o755);
    assert_eq!(fs::read(out.join("d/agent")).unwrap(), b"#!/bin/sh\n");
}

#[test]
fn entries_through_dot_dot_or_absolute_are_refused() {
    for (name, archive, why) in [
        (
            "dotdot-tar",
            tar_gz(&[E::File("../evil", b"x", 0o644)]),
            "`..`",
        ),
        (
            "deep-dotdot-tar",
            tar_gz(&[E::File("a/../../evil", b"x", 0o644)]),
            "`..`",
        ),
        (
            "abs-tar",
            tar_gz(&[E::File("/tmp/acp-evil-abs", b"x", 0o644)]),
            "absolute",
        ),
        (
            "dotdot-zip",
            zip(&[E::File("../evil", b"x", 0o644)]),
            "`..`",
        ),
    ] {
        let s = Scratch::new(name);
        let e = s.unpack(&archive).unwrap_err().to_string();
        assert!(e.contains(why), "{name}: {e}");
        s.nothing_escaped();
    }
    assert!(!Path::new("/tmp/acp-evil-abs").exists());
}

#[test]
fn links_pointing_out_are_refused() {
    for (name, archive, why) in [
        ("abs-link", tar_gz(&[E::Link("etc", "/etc")]), "absolute"),
        (
            "up-link",
            tar_gz(&[E::Link("a/up", "../../x")]),
            "out of the archive",
        ),
        (
            "mid-dotdot",
            tar_gz(&[E::Link("x", "a/../..")]),
            "after a name",
        ),
        (
            "zip-link",
            zip(&[E::Link("up", "../x")]),
            "out of the archive",
        ),
        ("hard", tar_gz(&[E::Hard("h", "/etc/passwd")]), "hard link"),
    ] {
        let s = Scratch::new(name);
        let e = s.unpack(&archive).unwrap_err().to_string();
        assert!(e.contains(why), "{name}: {e}");
        s.nothing_escaped();
    }
}

#[test]
#[cfg(unix)]
fn nothing_is_written_through_a_link_of_the_archive() {
    // `x -> .` is inside, but `x/x/x/y -> ../../..` would climb out through it.
    let s = Scratch::new("through-link");
    let archive = tar_gz(&[E::Link("x", "."), E::Link("x/x/x/y", "../../..")]);
    let e = s.unpack(&archive).unwrap_err().to_string();
    assert!(e.contains("through a link"), "{e}");
    // A file may not replace a link either (it would be written where the link points).
    let s = Scratch::new("replace-link");
    let archive = tar_gz(&[E::Dir("d/"), E::Link("l", "d"), E::File("l", b"x", 0o644)]);
    let e = s.unpack(&archive).unwrap_err().to_string();
    assert!(e.contains("replaces a link"), "{e}");
}

#[test]
fn what_is_neither_tar_gz_nor_zip_or_is_cut_short_is_refused() {
    let s = Scratch::new("neither");
    let e = s.unpack(b"<html>not found</html>").unwrap_err().to_string();
    assert!(e.contains("neither tar.gz nor zip"), "{e}");
    let good = tar_gz(&[E::File("agent", &[7u8; 100_000], 0o755)]);
    let e = s.unpack(&good[..good.len() / 2]).unwrap_err().to_string();
    assert!(e.contains("damaged"), "{e}");
}
