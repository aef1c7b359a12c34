//! The v1 application of `v2_serve_v1.rs` in a real child process: this test binary runs
//! itself with `ACP_V2_CHILD=1` as the agent, serving the v1 `Coder` to v2 on its stdin and
//! stdout through `v2::serve_v1`, and the parent drives it as a v2 editor over the pipes:
//! the same turn with a permission, an edit and a terminal command. A harness-less test
//! (`harness = false`): the child's stdout is the protocol stream.

#[cfg(feature = "v2")]
mod v2_coder;

#[cfg(feature = "v2")]
#[tokio::main]
async fn main() {
    use std::process::Stdio;
    use std::sync::Mutex;
    use std::time::Duration;

    use acp_dialects::AdapterOptions;
    use v2_coder::{Coder, Editor, MemFs, edit_turn};

    if std::env::var_os("ACP_V2_CHILD").is_some() {
        let options = AdapterOptions::default()
            .with_fs(MemFs::default())
            .with_local_terminals(true)
            .with_cwd("/");
        let coder = Coder {
            mode: Mutex::default(),
        };
        let served =
            acp_agent::v2::serve_v1(coder, tokio::io::stdin(), tokio::io::stdout(), options);
        served.closed().await;
        return;
    }
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env("ACP_V2_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the test binary runs itself as the agent");
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let conn = acp_dialects::v2::connect(Editor { updates: tx }, stdout, stdin);
    let turn = edit_turn(conn.agent(), &mut updates);
    tokio::time::timeout(Duration::from_secs(30), turn)
        .await
        .expect("the turn over the child process ends in time");
    conn.close();
    drop(conn);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    assert!(status.is_ok(), "the child ends when its client goes");
    println!("v2_serve_v1_process: ok");
}

#[cfg(not(feature = "v2"))]
fn main() {}
