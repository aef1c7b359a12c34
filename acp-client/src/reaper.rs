//! Cleaning up the processes a terminal command or an agent leaves behind after they leave
//! its process group (a `setsid` grandchild, a double-forked daemon), on Linux.
//!
//! The client process makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): an
//! orphan among its descendants is reparented to it instead of to init, so it can still be
//! found (its parent is us) and killed. Each terminal command is started with a marker in its
//! environment ([`MARKER_ENV`]` = <client pid>.<sequence number>`; agent processes get one
//! too), which its descendants inherit; a sweep kills the direct children of ours that carry
//! the marker (and their process groups), reaps them, and repeats while killing them orphans
//! more.
//!
//! What is caught: descendants that left the group (by `setsid` or `setpgid`) and whose
//! parent died, as long as they kept the inherited environment. What is not: a descendant
//! that cleared or replaced its environment (`env -i`, `execve` with a new one), one whose
//! own parent (outside the group) is still alive when the sweep runs, one that double-forks
//! faster than the sweep's rounds, and anything on other systems (the subreaper is Linux
//! only). The subreaper setting is process-wide: orphans of the agent's own children come to
//! the client too. A zombie orphan that can be told apart from the application's own
//! children (it is in a process group led by someone else and not in ours) is reaped by a
//! background thread every two seconds and by each sweep; a `setsid` orphan (it leads its own
//! group, like a child the application may have spawned) that exits on its own before a
//! sweep killed it stays a zombie until the client exits.

use std::time::{Duration, Instant};

/// The environment variable that marks a terminal's processes.
pub(crate) const MARKER_ENV: &str = "ACP_RS_CLEANUP_TAG";

/// How often the background thread reaps orphan zombies.
const ZOMBIE_REAP_INTERVAL: Duration = Duration::from_secs(2);

/// Makes this process a child subreaper (once), and starts the thread that reaps the orphan
/// zombies it then inherits. Returns whether it is one.
pub(crate) fn become_subreaper() -> bool {
    use std::sync::OnceLock;
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
            let ok = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 };
            if ok {
                let _ = std::thread::Builder::new()
                    .name("acp-orphan-reaper".into())
                    .spawn(|| {
                        loop {
                            std::thread::sleep(ZOMBIE_REAP_INTERVAL);
                            reap_orphan_zombies();
                        }
                    });
            }
            ok
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    })
}

/// Reaps the zombies among our children that are orphans we inherited: in a process group
/// led by someone else and not ours (the children the application spawned itself lead their
/// group or share ours, and their owners reap them).
fn reap_orphan_zombies() {
    // SAFETY: getpgrp has no preconditions.
    let our_group = unsafe { libc::getpgrp() };
    for child in children() {
        if child.zombie && child.pgrp != child.pid && child.pgrp != our_group {
            reap(child.pid);
        }
    }
}

/// A fresh marker value, unique in this process (whichever `Terminals` asks).
pub(crate) fn new_marker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// One direct child of ours, as `/proc` shows it.
struct Child {
    pid: i32,
    pgrp: i32,
    zombie: bool,
}

/// Our direct children (from `/proc/<pid>/stat`).
fn children() -> Vec<Child> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = after.split_whitespace();
        let state = fields.next().unwrap_or("");
        let ppid: i32 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        let pgrp: i32 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        if ppid == me {
            out.push(Child {
                pid,
                pgrp,
                zombie: state == "Z",
            });
        }
    }
    out
}

fn has_marker(pid: i32, wanted: &[String]) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    environ.split(|b| *b == 0).any(|var| {
        var.strip_prefix(MARKER_ENV.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
            .is_some_and(|value| wanted.iter().any(|w| w.as_bytes() == value))
    })
}

/// Kills (SIGKILL) and reaps the orphans carrying one of `markers`, with their process
/// groups, for up to `budget`; also reaps orphan zombies (see the module docs). Blocking:
/// run it on the blocking pool. Returns how many processes were killed.
///
/// `settled`: every process whose exit could still hand us orphans is known to be gone
/// (the caller saw the agent and its whole group exit). Orphans are re-parented when their
/// parent exits, before it can be waited for, so they are ours already and one quiet round
/// is enough. Otherwise (a group was just sent SIGKILL and may still be dying) the sweep
/// looks a few more times, 20 ms apart, before it concludes that nothing is left.
pub(crate) fn sweep(markers: &[String], budget: Duration, settled: bool) -> usize {
    if !become_subreaper() {
        return 0;
    }
    // SAFETY: getpgrp has no preconditions.
    let our_group = unsafe { libc::getpgrp() };
    let deadline = Instant::now() + budget;
    let mut killed = 0;
    let mut quiet_rounds = 0;
    // A kill of ours can make more orphans (the killed one's children): after one, look
    // again a few times as well.
    let rounds = |killed: usize| if settled && killed == 0 { 1 } else { 3 };
    while Instant::now() < deadline && quiet_rounds < rounds(killed) {
        let mut found = false;
        reap_orphan_zombies();
        for child in children() {
            if child.zombie || !has_marker(child.pid, markers) {
                continue;
            }
            found = true;
            killed += 1;
            // SAFETY: plain kill(2) calls; the group is never ours nor 0/1.
            unsafe {
                if child.pgrp > 1 && child.pgrp != our_group {
                    libc::kill(-child.pgrp, libc::SIGKILL);
                }
                libc::kill(child.pid, libc::SIGKILL);
            }
            let until = Instant::now() + Duration::from_millis(500);
            while !reap(child.pid) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        quiet_rounds = if found { 0 } else { quiet_rounds + 1 };
        if quiet_rounds < rounds(killed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    killed
}

/// Reaps `pid` if it has exited; true when it is gone.
fn reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one specific pid of ours, without blocking.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    r == pid || r == -1
}
