//! h's phases (`ACP_BENCH_SHOW_PHASES=1`): where the time of a full exchange goes, from
//! spawning the agent to the client's return after the agent's exit.
//!
//! Each column marks the end of every step it can see: `spawn` (ours only: the official
//! `AcpAgent` spawns inside its connect, so its `initialize` includes the spawn),
//! `initialize`, `session/new`, `prompt`, `agent exit` (when the agent process died, seen
//! by a thread blocked on a pidfd of it, so not when anyone reaped it) and `returned` (the
//! shutdown call or the connection returned). The watching thread notes the death when it
//! gets a core again, which on a busy machine can be after the client already returned:
//! `agent exit` is then taken as `returned` (the client cannot return before the death it
//! waits for), so it is an upper bound, and `returned` after it (then 0) a lower one. When
//! the client's part is below that resolution, read `agent exit` + `returned` together:
//! the time from the prompt's answer to the client's return, printed as `ending`. One line per exchange is printed, each figure
//! the time since the previous mark, and the medians per column at the end.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

/// The environment variable that turns the phase trace on.
pub const SHOW_PHASES_VAR: &str = "ACP_BENCH_SHOW_PHASES";

/// The phases' names, in their order.
const ORDER: [&str; 8] = [
    "spawn",
    "initialize",
    "session/new",
    "prompt",
    "agent exit",
    "returned",
    "ending",
    "total",
];

/// Whether the phase trace is on.
pub fn enabled() -> bool {
    std::env::var_os(SHOW_PHASES_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The figures of every exchange traced so far: column -> phase -> milliseconds.
static SEEN: Mutex<BTreeMap<&'static str, BTreeMap<&'static str, Vec<f64>>>> =
    Mutex::new(BTreeMap::new());

/// Records and prints one exchange of `column`: `marks` are the ends of its phases, `start`
/// is when the measurement began (before the spawn).
pub fn record(column: &'static str, start: Instant, marks: &[(&'static str, Instant)]) {
    let mut marks = marks.to_vec();
    // A death clamped to the return goes before it.
    marks.sort_by_key(|(name, at)| (*at, *name == "returned"));
    let mut line = format!("h phases {column}:");
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let phases = seen.entry(column).or_default();
    let mut previous = start;
    for (name, at) in &marks {
        let ms = at.duration_since(previous).as_secs_f64() * 1000.0;
        line.push_str(&format!(" {name} {ms:.3}"));
        phases.entry(name).or_default().push(ms);
        previous = *at;
    }
    // From the prompt's answer to the return: the agent's exit and the client's part.
    if let Some((_, answered)) = marks.iter().find(|(name, _)| *name == "prompt") {
        let ending = previous.duration_since(*answered).as_secs_f64() * 1000.0;
        line.push_str(&format!(" | ending {ending:.3}"));
        phases.entry("ending").or_default().push(ending);
    }
    let total = previous.duration_since(start).as_secs_f64() * 1000.0;
    line.push_str(&format!(" | total {total:.3} ms"));
    phases.entry("total").or_default().push(total);
    eprintln!("{line}");
}

/// The medians of every phase per column, as a small table (empty when nothing was traced).
pub fn summary() -> String {
    let seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.is_empty() {
        return String::new();
    }
    let mut out = format!("h phases (medians, ms; {SHOW_PHASES_VAR}):\n");
    out.push_str(&format!("{:<10}", "column"));
    for name in ORDER {
        out.push_str(&format!(" {name:>12}"));
    }
    out.push('\n');
    for (column, phases) in seen.iter() {
        out.push_str(&format!("{column:<10}"));
        for name in ORDER {
            match phases.get(name) {
                Some(values) => out.push_str(&format!(" {:>12.3}", median(values))),
                None => out.push_str(&format!(" {:>12}", "-")),
            }
        }
        out.push('\n');
    }
    out
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A thread waiting for a process to die (not to be reaped): a pidfd becomes readable when
/// its process terminates.
pub struct ExitWatch(std::thread::JoinHandle<Option<Instant>>);

impl ExitWatch {
    /// Starts watching `pid`; `None` if no pidfd could be opened (old kernel, pid gone).
    pub fn start(pid: u32) -> Option<ExitWatch> {
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        let fd = fd as libc::c_int;
        Some(ExitWatch(std::thread::spawn(move || {
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the descriptor is ours and closed once, below.
            let ready = unsafe { libc::poll(&mut poll, 1, 60_000) } == 1;
            let at = Instant::now();
            // SAFETY: closing the descriptor opened above.
            unsafe { libc::close(fd) };
            ready.then_some(at)
        })))
    }

    /// When the process died (`None` if the watch gave up).
    pub fn died_at(self) -> Option<Instant> {
        self.0.join().ok().flatten()
    }
}

/// The pid of this process's only child, if it has exactly one (the official column's agent,
/// whose pid its API does not give). Reads `/proc/self/task/*/children`.
pub fn only_child() -> Option<u32> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    match children[..] {
        [pid] => Some(pid),
        _ => None,
    }
}
