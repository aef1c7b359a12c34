//! Cleaning up the processes a terminal command or an agent leaves behind after they leave
//! its process group (a `setsid` grandchild, a double-forked daemon), on Linux, and the one
//! helper that signals a process group ([`signal_group`]).
//!
//! The client process makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): an
//! orphan among its descendants is reparented to it instead of to init, so it can still be
//! found (its parent is us) and stopped. Each terminal command is started with a marker in its
//! environment ([`MARKER_ENV`]` = <client pid>.<sequence number>`; agent processes get one
//! too), which its descendants inherit; a sweep stops the direct children of ours that carry
//! the marker (and their process groups), reaps them, and repeats while stopping them orphans
//! more. Orphans are stopped the way [`crate::process::AgentProcess::shutdown`] stops the
//! helpers in the agent's group: SIGTERM, a grace period to exit (and remove their
//! temporary files), and SIGKILL only for what is still running after it.
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
//! sweep stopped it stays a zombie until the client exits.
//!
//! Our direct children are listed from `/proc/self/task/*/children` (as many reads as we have
//! threads), not by reading the `stat` of every process on the system; without that file (a
//! kernel built without `CONFIG_PROC_CHILDREN`) the sweep falls back to walking `/proc`.

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

/// Our direct children.
fn children() -> Vec<Child> {
    match child_pids() {
        Some(pids) => pids.into_iter().filter_map(child).collect(),
        None => all_children(),
    }
}

/// The pids our threads' `/proc/self/task/<tid>/children` list; `None` if the kernel has no
/// such file. The files are read twice and the lists merged: the kernel walks a thread's
/// children one by one, and a child reaped during the walk (by a thread of ours) can make
/// it skip the next one; two walks both skipping the same orphan would take two such reaps.
fn child_pids() -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    let mut found_file = false;
    for _ in 0..2 {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return None;
        };
        for task in tasks.flatten() {
            let Ok(list) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            found_file = true;
            pids.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    found_file.then_some(pids)
}

/// Our direct children, found by reading the `stat` of every process in `/proc`.
fn all_children() -> Vec<Child> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(child)
        .collect()
}

/// What `/proc/<pid>/stat` says of `pid`: `(state, ppid, pgrp)`; `None` once it is gone.
fn stat(pid: i32) -> Option<(char, i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// `pid` as a [`Child`], if it is still a child of ours.
fn child(pid: i32) -> Option<Child> {
    let me = std::process::id() as i32;
    let (state, ppid, pgrp) = stat(pid)?;
    (ppid == me).then_some(Child {
        pid,
        pgrp,
        zombie: state == 'Z',
    })
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

/// How long a sweep goes on finding new orphans (beyond the grace of its last round).
const SWEEP_BUDGET: Duration = Duration::from_secs(2);

/// Whether one of our children that are still running carries one of `markers`: the orphans
/// a [`sweep`] would stop. Cheap (it reads our own children's entries in `/proc`, not every
/// process's), so a clean exit that left nothing behind costs no sweep.
pub(crate) fn has_marked_orphans(markers: &[String]) -> bool {
    become_subreaper()
        && children()
            .iter()
            .any(|child| !child.zombie && has_marker(child.pid, markers))
}

/// Stops and reaps the orphans carrying one of `markers`, with their process groups: SIGTERM,
/// up to `grace` for them (and their groups) to exit, then SIGKILL; and again for the orphans
/// that stopping them makes, for up to [`SWEEP_BUDGET`] plus a grace. Also reaps orphan
/// zombies (see the module docs). Blocking: run it on the blocking pool. Returns how many
/// orphans it stopped.
///
/// `settled`: every process whose exit could still hand us orphans is known to be gone
/// (the caller saw the agent and its whole group exit). Orphans are re-parented when their
/// parent exits, before it can be waited for, so they are ours already and one quiet round
/// is enough. Otherwise (a group was just sent SIGKILL and may still be dying) the sweep
/// looks a few more times, 20 ms apart, before it concludes that nothing is left.
///
/// `spare`: children of ours that carry a marker but are not orphans (a terminal's own
/// command, which its waiter reaps to learn the exit status): never signalled or reaped here.
pub(crate) fn sweep(markers: &[String], spare: &[i32], grace: Duration, settled: bool) -> usize {
    if !become_subreaper() {
        return 0;
    }
    let deadline = Instant::now() + SWEEP_BUDGET + grace;
    let mut stopped = 0;
    let mut quiet_rounds = 0;
    // Stopping one can make more orphans (its children): after one, look again a few times
    // as well.
    let rounds = |stopped: usize| if settled && stopped == 0 { 1 } else { 3 };
    while Instant::now() < deadline && quiet_rounds < rounds(stopped) {
        reap_orphan_zombies();
        let found: Vec<Child> = children()
            .into_iter()
            .filter(|child| {
                !child.zombie && !spare.contains(&child.pid) && has_marker(child.pid, markers)
            })
            .collect();
        if found.is_empty() {
            quiet_rounds += 1;
        } else {
            quiet_rounds = 0;
            stopped += found.len();
            terminate(&found, grace);
        }
        if quiet_rounds < rounds(stopped) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    stopped
}

/// SIGTERM to `orphans` and their process groups, up to `grace` for all of them to exit,
/// SIGKILL to what is left; then reaps them.
fn terminate(orphans: &[Child], grace: Duration) {
    // SAFETY: getpgrp has no preconditions.
    let our_group = unsafe { libc::getpgrp() };
    // Their own groups only: never ours (`signal_group` refuses it too).
    let group = |child: &Child| {
        u32::try_from(child.pgrp)
            .ok()
            .filter(|_| child.pgrp != our_group)
    };
    let signal = |signal: libc::c_int, pending: &[&Child]| {
        for child in pending {
            if let Some(pgrp) = group(child) {
                signal_group(pgrp, signal);
            }
            // SAFETY: kill(2) on a child of ours that was not reaped yet (so its pid cannot
            // have been reused).
            unsafe { libc::kill(child.pid, signal) };
        }
    };
    let all: Vec<&Child> = orphans.iter().collect();
    signal(libc::SIGTERM, &all);
    let until = Instant::now() + grace;
    let mut left: Vec<&Child> = all.clone();
    let mut exited = Vec::new();
    loop {
        left.retain(|child| {
            if !exited.contains(&child.pid) && reap(child.pid) {
                exited.push(child.pid);
            }
            !exited.contains(&child.pid) || group(child).is_some_and(group_alive)
        });
        if left.is_empty() || Instant::now() >= until {
            break;
        }
        // Their children exit as zombies of ours (reparented): reap those too.
        reap_orphan_zombies();
        std::thread::sleep(Duration::from_millis(5));
    }
    if !left.is_empty() {
        tracing::debug!(
            orphans = left.len(),
            ?grace,
            "orphans outlived SIGTERM: SIGKILL"
        );
        let unreaped: Vec<&Child> = left
            .iter()
            .copied()
            .filter(|child| !exited.contains(&child.pid))
            .collect();
        for child in &left {
            if let Some(pgrp) = group(child) {
                signal_group(pgrp, libc::SIGKILL);
            }
        }
        signal(libc::SIGKILL, &unreaped);
    }
    for child in orphans {
        let until = Instant::now() + Duration::from_millis(500);
        while !exited.contains(&child.pid) && !reap(child.pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Sends `signal` (`libc::SIGTERM`, `libc::SIGKILL`, or 0 to only test for existence) to
/// process group `pgid` with kill(2); `true` if some process received it. Never to group 0
/// (ours, for kill(2)), 1 (every process) or our own group. The one place that signals a
/// group: agent processes, terminals and orphans all go through it.
pub(crate) fn signal_group(pgid: u32, signal: libc::c_int) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: getpgrp has no preconditions.
    if pgid <= 1 || pgid == unsafe { libc::getpgrp() } {
        return false;
    }
    // SAFETY: kill(2) on a negative pid signals that process group; no memory is involved.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether some process of group `pgid` is still running (zombies waiting to be reaped do
/// not count: in a container PID 1 may never reap them). A group with no process at all is
/// told by one kill(2) (signal 0, failing with `ESRCH`); only a group that still has one
/// (or that we may not signal: `EPERM`) is looked up in `/proc`.
pub(crate) fn group_alive(pgid: u32) -> bool {
    let Ok(id) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if id <= 1 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks that group `id` exists.
    let gone = unsafe { libc::kill(-id, 0) } == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    !gone && group_has_live_process(pgid).unwrap_or(true)
}

/// Whether `/proc` lists a process of group `pgid` that is not a zombie; `None` without a
/// readable `/proc`.
fn group_has_live_process(pgid: u32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let pgid = pgid as i32;
    Some(entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
            .and_then(stat)
            .is_some_and(|(state, _, pgrp)| pgrp == pgid && !matches!(state, 'Z' | 'X'))
    }))
}

/// Reaps `pid` if it has exited; true when it is gone.
fn reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one specific pid of ours, without blocking.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    r == pid || r == -1
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Two `sleep 30` children of this process, killed and reaped on drop.
    struct Sleepers(Vec<std::process::Child>);

    impl Sleepers {
        /// Two `sleep 30` children with `env`, returned once both have exec'd: between
        /// fork and exec a child's `/proc/<pid>/environ` is still ours, without the marker,
        /// which made a test that looked too early fail under load.
        fn spawn(env: &[(&str, &str)]) -> Sleepers {
            let sleepers = Sleepers(
                (0..2)
                    .map(|_| {
                        std::process::Command::new("sleep")
                            .arg("30")
                            .envs(env.iter().copied())
                            .spawn()
                            .unwrap()
                    })
                    .collect(),
            );
            let deadline = Instant::now() + Duration::from_secs(5);
            while !sleepers.pids().iter().all(|pid| has_execd_sleep(*pid)) {
                assert!(Instant::now() < deadline, "the children never exec'd");
                std::thread::sleep(Duration::from_millis(2));
            }
            sleepers
        }
        fn pids(&self) -> Vec<i32> {
            self.0.iter().map(|c| c.id() as i32).collect()
        }
    }

    /// Whether `pid` runs `sleep` now (has exec'd): its command line is no longer ours.
    fn has_execd_sleep(pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).next() == Some(b"sleep"))
    }

    impl Drop for Sleepers {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// A terminal's own command carries the terminal's marker too; the sweep after a kill
    /// must leave it to its waiter (were it reaped here, the waiter would get no exit status).
    #[test]
    fn a_sweep_leaves_the_children_it_is_told_to_spare() {
        let marker = new_marker();
        let mut sleepers = Sleepers::spawn(&[(MARKER_ENV, &marker)]);
        let pids = sleepers.pids();
        let stopped = sweep(
            std::slice::from_ref(&marker),
            &pids[..1],
            Duration::from_millis(100),
            true,
        );
        assert_eq!(stopped, 1, "the unspared one is stopped");
        let spared = &mut sleepers.0[0];
        assert!(
            spared.try_wait().unwrap().is_none(),
            "the spared child still runs and is still ours to wait for"
        );
        spared.kill().unwrap();
        let status = spared.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "its waiter sees how it ended"
        );
    }

    #[test]
    fn our_children_are_listed_from_our_own_tasks_and_agree_with_the_walk_of_proc() {
        let sleepers = Sleepers::spawn(&[]);
        assert!(
            child_pids().is_some(),
            "no /proc/self/task/*/children: every sweep walks all of /proc"
        );
        let listed: Vec<i32> = children().iter().map(|c| c.pid).collect();
        let walked: Vec<i32> = all_children().iter().map(|c| c.pid).collect();
        for pid in sleepers.pids() {
            assert!(listed.contains(&pid), "{pid} not in {listed:?}");
            assert!(walked.contains(&pid), "{pid} not in {walked:?}");
        }
    }

    #[test]
    fn a_group_is_alive_while_it_runs_a_process_and_not_as_a_zombie_nor_once_gone() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        assert!(group_alive(pgid));
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(pgid as i32, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while stat(pgid as i32).is_none_or(|(state, _, _)| state != 'Z') {
            assert!(
                Instant::now() < deadline,
                "the killed child never became a zombie"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!group_alive(pgid), "a group of one zombie counted as alive");
        child.wait().unwrap();
        assert!(
            !group_alive(pgid),
            "a group with no process counted as alive"
        );
    }

    #[test]
    fn a_running_child_with_the_marker_is_found_and_one_without_is_not() {
        let marker = new_marker();
        let other = new_marker();
        let sleepers = Sleepers::spawn(&[(MARKER_ENV, marker.as_str())]);
        assert!(has_marked_orphans(std::slice::from_ref(&marker)));
        assert!(!has_marked_orphans(&[other]));
        drop(sleepers);
        assert!(!has_marked_orphans(&[marker]));
    }
}
