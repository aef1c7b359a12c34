//! Fresh directories for the suite's file-backed stores, cleaned up run after run.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh, not yet existing directory for one case's store, named after `kind`:
/// `<temp>/acp-store-conformance/<pid>-<kind>-<n>`.
///
/// The test harness runs no destructor when it exits, so a run cannot remove its own
/// directories; instead the first call of each run removes those left by runs whose process
/// is gone (on systems with `/proc`; elsewhere nothing is removed).
pub fn scratch_dir(kind: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static SWEEP: Once = Once::new();
    let parent = std::env::temp_dir().join("acp-store-conformance");
    SWEEP.call_once(|| remove_dead_runs(&parent));
    let dir = parent.join(format!(
        "{}-{kind}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Removes the directories under `parent` whose creating process no longer runs.
fn remove_dead_runs(parent: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(pid) = name.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_runs_directory_goes_and_a_live_ones_stays() {
        let parent =
            std::env::temp_dir().join(format!("acp-store-scratch-test-{}", std::process::id()));
        // No process has pid 4294967295 (above pid_max); ours is alive.
        let dead = parent.join("4294967295-jsonl-0");
        let live = parent.join(format!("{}-jsonl-0", std::process::id()));
        let other = parent.join("not-a-run");
        for dir in [&dead, &live, &other] {
            std::fs::create_dir_all(dir).unwrap();
        }
        remove_dead_runs(&parent);
        assert!(!dead.exists(), "a dead run's directory is removed");
        assert!(live.exists(), "a live run's directory stays");
        assert!(other.exists(), "what is not a run's directory stays");
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
