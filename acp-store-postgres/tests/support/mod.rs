//! A real PostgreSQL for the tests: Debian's server binaries (`apt-get install postgresql`),
//! a cluster made with `initdb` in a temporary directory, started with `pg_ctl` on a free
//! loopback port (never a system service), and stopped when the test process exits.
//! [`Server::start_tls`] starts one with `ssl = on` and a certificate that a throwaway
//! authority (made with the `openssl` command in the same directory) issued.
//!
//! Without the binaries the tests skip with a loud message, except under CI (`CI=true`),
//! where they fail: `.ci/run` installs them.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// A running test server.
pub struct Server {
    pub bin: PathBuf,
    pub data: PathBuf,
    pub port: u16,
    /// Its TLS material, when started with [`Server::start_tls`].
    pub tls: Option<Tls>,
}

/// The role of a TLS server that signs in with a password (SCRAM), and only over TLS; the
/// test creates it.
pub const PASSWORD_ROLE: &str = "pwuser";

/// The certificates of a server with `ssl = on`, made with `openssl` in its directory.
pub struct Tls {
    /// The authority that signed the server's certificate (PEM), to trust.
    pub ca: PathBuf,
    /// Another authority, which signed nothing of this server (PEM).
    pub other_ca: PathBuf,
}

/// Every server this process started, for the exit hook (statics are not dropped).
static STOP: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

extern "C" fn stop_at_exit() {
    let taken = STOP
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    for (bin, data) in taken {
        let _ = as_postgres(&bin.join("pg_ctl"))
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(&data)
            .output();
        let _ = std::fs::remove_dir_all(data.parent().unwrap_or(&data));
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb`, or `$PG_BIN`.
fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// A command that runs as the `postgres` user when we are root (the server refuses root).
fn as_postgres(program: &Path) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().unwrap().port()
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Server {
    /// Starts a server in a fresh temporary cluster; `None` (after a loud message) when
    /// the binaries are missing outside CI.
    pub fn start() -> Option<Server> {
        Self::start_with(false)
    }

    /// [`Server::start`] with `ssl = on`: a certificate for `localhost` and `127.0.0.1`
    /// signed by a throwaway authority (see [`Tls`]).
    pub fn start_tls() -> Option<Server> {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Option<Server> {
        let Some(bin) = server_bin() else {
            let msg = "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): \
                       `apt-get install -y postgresql`, or set PG_BIN";
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg} (CI installs them: .ci/run)");
            }
            eprintln!("\n!!! SKIPPED: {msg} !!!\n");
            return None;
        };
        // One directory per server: a test may start its own beside the shared one.
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("acp-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let data = root.join("data");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres:postgres").arg(&root);
                    c
                },
                "chown the test cluster's directory",
            );
        }
        let mut initdb = as_postgres(&bin.join("initdb"));
        initdb
            .args(["-A", "trust", "-U", "acp", "-E", "UTF8", "--no-sync", "-D"])
            .arg(&data);
        run(initdb, "initdb");
        let tls = tls.then(|| make_tls(&root, &data));
        let port = free_port();
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            root.display()
        );
        let mut start = as_postgres(&bin.join("pg_ctl"));
        start
            .args(["start", "-w", "-t", "30", "-D"])
            .arg(&data)
            .args(["-l"])
            .arg(root.join("log"))
            .args(["-o", &options]);
        run(start, "pg_ctl start");
        let first = {
            let mut stop = STOP.lock().unwrap();
            stop.push((bin.clone(), data.clone()));
            stop.len() == 1
        };
        if first {
            // SAFETY: registers a plain extern "C" function.
            unsafe { libc::atexit(stop_at_exit) };
        }
        Some(Server {
            bin,
            data,
            port,
            tls,
        })
    }

    /// The URL of database `db` on this server.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://acp@127.0.0.1:{}/{db}", self.port)
    }

    /// A new, empty database.
    pub fn fresh_db(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        self.named_db(&format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed)))
    }

    /// A new, empty database named `name`; its URL.
    pub fn named_db(&self, name: &str) -> String {
        let mut c = Command::new(self.bin.join("createdb"));
        c.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "acp",
            name,
        ]);
        run(c, "createdb");
        self.url(name)
    }

    /// Stops the server (fast), as a database that goes away.
    pub fn stop(&self) {
        let mut c = as_postgres(&self.bin.join("pg_ctl"));
        c.args(["stop", "-m", "fast", "-w", "-D"]).arg(&self.data);
        run(c, "pg_ctl stop");
    }

    /// Starts it again on the same port.
    pub fn restart(&self) {
        let root = self.data.parent().unwrap();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off",
            self.port,
            root.display()
        );
        let mut c = as_postgres(&self.bin.join("pg_ctl"));
        c.args(["start", "-w", "-t", "30", "-D"])
            .arg(&self.data)
            .arg("-l")
            .arg(root.join("log"))
            .args(["-o", &options]);
        run(c, "pg_ctl start (again)");
    }
}

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let mut c = Command::new("openssl");
    c.args(args).current_dir(dir);
    run(c, &format!("openssl {args:?} (Debian's openssl package)"));
}

/// A throwaway authority `NAME.pem` (key `NAME.key`) in `dir`, as acp-cli's HAProxy test
/// makes one.
fn make_authority(dir: &Path, name: &str) {
    let key = format!("{name}.key");
    let pem = format!("{name}.pem");
    let subject = format!("/CN=acp test {name}");
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-days",
            "2",
            "-subj",
            &subject,
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
        ],
    );
}

/// The CA, another CA and a server certificate for `localhost`/`127.0.0.1` in `root`, and
/// `ssl = on` with them in the cluster's configuration.
fn make_tls(root: &Path, data: &Path) -> Tls {
    make_authority(root, "ca");
    make_authority(root, "other");
    openssl(
        root,
        &[
            "req",
            "-subj",
            "/CN=localhost",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        root.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        root,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    );
    // The server reads its key only when the key is its own and private.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("chown");
        c.arg("postgres:postgres")
            .arg(root.join("server.key"))
            .arg(root.join("server.crt"));
        run(c, "chown the server's key");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        root.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let conf = data.join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!(
        "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
        root.join("server.crt").display(),
        root.join("server.key").display()
    ));
    std::fs::write(&conf, text).unwrap();
    // One role that must sign in with a password (SCRAM), over TLS only: a real set-up.
    let hba = data.join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!(
            "hostssl all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n\
             hostnossl all {PASSWORD_ROLE} 127.0.0.1/32 reject\n{rules}"
        ),
    )
    .unwrap();
    Tls {
        ca: root.join("ca.pem"),
        other_ca: root.join("other.pem"),
    }
}

/// The server shared by the tests of one test binary (started on first use).
pub fn shared() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER.get_or_init(Server::start).as_ref()
}
