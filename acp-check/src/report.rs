//! What a run found: one [`CheckResult`] per check, printed as a table ([`Report::table`]) or
//! as JSON ([`Report::to_json`]).

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// How one check ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The agent did what the check asks.
    Pass {
        /// What was seen (a measured time, a code), possibly empty.
        note: String,
    },
    /// The agent did not; `evidence` says what it did instead (a line, a code, a time).
    Fail {
        /// What the agent did, quoted where possible.
        evidence: String,
    },
    /// The check could not run; `reason` says why (not advertised, nothing to look at, a
    /// step it needs failed).
    Skip {
        /// Why the check did not run.
        reason: String,
    },
    /// A timing check measured more than its bound: the agent did the right thing, slowly.
    /// Reported apart from protocol failures, because a loaded machine (a cold start on a
    /// busy CI runner) misses bounds a healthy agent meets; it still fails a run unless
    /// allowed (`acp check --timing-misses-ok`, or `--allow-fail NAME`).
    TimingMiss {
        /// The time measured and the bound.
        evidence: String,
    },
}

impl Outcome {
    /// A pass with a note.
    pub fn pass(note: impl Into<String>) -> Self {
        Outcome::Pass { note: note.into() }
    }
    /// A failure with its evidence.
    pub fn fail(evidence: impl Into<String>) -> Self {
        Outcome::Fail {
            evidence: evidence.into(),
        }
    }
    /// A skip with its reason.
    pub fn skip(reason: impl Into<String>) -> Self {
        Outcome::Skip {
            reason: reason.into(),
        }
    }
    /// A timing miss with its evidence (the time measured and the bound).
    pub fn timing_miss(evidence: impl Into<String>) -> Self {
        Outcome::TimingMiss {
            evidence: evidence.into(),
        }
    }
    /// Whether this fails the run by default: a protocol failure or a timing miss.
    pub fn is_fail(&self) -> bool {
        matches!(self, Outcome::Fail { .. } | Outcome::TimingMiss { .. })
    }
    /// Whether this is a protocol failure (the agent did the wrong thing).
    pub fn is_protocol_failure(&self) -> bool {
        matches!(self, Outcome::Fail { .. })
    }
    /// Whether this is a timing miss (the right thing, over its time bound).
    pub fn is_timing_miss(&self) -> bool {
        matches!(self, Outcome::TimingMiss { .. })
    }
    /// Whether this is a pass.
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass { .. })
    }
    /// The word for the table: `pass`, `FAIL`, `skip` or `SLOW` (a timing miss).
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Pass { .. } => "pass",
            Outcome::Fail { .. } => "FAIL",
            Outcome::Skip { .. } => "skip",
            Outcome::TimingMiss { .. } => "SLOW",
        }
    }
    /// The note, evidence or reason.
    pub fn detail(&self) -> &str {
        match self {
            Outcome::Pass { note } => note,
            Outcome::Fail { evidence } | Outcome::TimingMiss { evidence } => evidence,
            Outcome::Skip { reason } => reason,
        }
    }
}

/// One graded check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    /// The check's name (`group.name`, as `--only` takes it).
    pub name: &'static str,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// How long the check took, in milliseconds (for timing checks: the time measured).
    pub millis: u64,
}

/// Why a run stopped before running its checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stopped {
    /// What happened, as `acp chat` says it: the agent exited before answering
    /// `initialize`, with its exit status and the last lines it wrote to stderr.
    pub reason: String,
    /// How many selected checks did not run (none of them can without an agent that
    /// answers `initialize`).
    pub not_run: usize,
    /// Why no check can run, short, for the summary line: `the agent exited before
    /// answering `initialize``, or `the agent does not speak protocol version 2`.
    pub because: String,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The agent, as the user named it.
    pub agent: String,
    /// Every check that ran (when the run stopped early, only those), in the table's order.
    pub checks: Vec<CheckResult>,
    /// Set when the run stopped early: the agent exited before answering `initialize`, or
    /// it does not speak the version `--protocol` pinned.
    pub stopped: Option<Stopped>,
    /// The protocol version graded (1 or 2); `None` when the run could not start.
    pub protocol: Option<u16>,
    /// How that version was chosen, e.g. `pinned by --protocol 2` or `offered 2 and 1, the
    /// agent answered 1`.
    pub protocol_note: String,
}

impl Report {
    /// Whether any check failed: a protocol failure or a timing miss.
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.outcome.is_fail())
    }

    /// The names of the failed checks: protocol failures and timing misses.
    pub fn failures(&self) -> Vec<&'static str> {
        self.names(Outcome::is_fail)
    }

    /// The names of the checks the agent failed by doing the wrong thing.
    pub fn protocol_failures(&self) -> Vec<&'static str> {
        self.names(Outcome::is_protocol_failure)
    }

    /// The names of the timing checks over their bound.
    pub fn timing_misses(&self) -> Vec<&'static str> {
        self.names(Outcome::is_timing_miss)
    }

    fn names(&self, which: impl Fn(&Outcome) -> bool) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| which(&c.outcome))
            .map(|c| c.name)
            .collect()
    }

    /// The result of the check named `name`, if it was selected.
    pub fn get(&self, name: &str) -> Option<&CheckResult> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Counts of (pass, protocol failure, skip); timing misses are
    /// [`Report::timing_misses`].
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for c in &self.checks {
            match c.outcome {
                Outcome::Pass { .. } => counts.0 += 1,
                Outcome::Fail { .. } => counts.1 += 1,
                Outcome::Skip { .. } => counts.2 += 1,
                Outcome::TimingMiss { .. } => {}
            }
        }
        counts
    }

    /// The report as a plain-text table (one row per check, details wrapped to one line and
    /// cut at `width` columns when `width` is given) with a summary line:
    /// `N passed, N failed, N timing misses, N skipped`, where `failed` counts protocol
    /// failures only (`1 timing miss` in the singular).
    ///
    /// A run that stopped early ([`Report::stopped`]) says why on its first line (with the
    /// agent's stderr, indented, when it is more than one line) and counts the checks it did
    /// not run in the summary.
    pub fn table(&self, width: Option<usize>) -> String {
        let name_width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(5);
        let mut out = String::new();
        match &self.stopped {
            Some(stopped) => {
                let mut lines = stopped.reason.lines();
                let first = lines.next().unwrap_or("the run stopped");
                let _ = writeln!(out, "acp check: {}", one_line(first));
                for line in lines {
                    let _ = writeln!(out, "  {}", one_line(line));
                }
            }
            None => {
                let _ = writeln!(out, "acp check: {}", self.agent);
            }
        }
        if let Some(version) = self.protocol {
            let _ = writeln!(
                out,
                "graded on protocol v{version} ({})",
                one_line(&self.protocol_note)
            );
        }
        let _ = writeln!(
            out,
            "{:<name_width$}  {:<4}  {:>7}  detail",
            "check", "", "ms"
        );
        for c in &self.checks {
            let mut row = format!(
                "{:<name_width$}  {:<4}  {:>7}  {}",
                c.name,
                c.outcome.word(),
                c.millis,
                one_line(c.outcome.detail())
            );
            if let Some(width) = width {
                cut(&mut row, width.max(name_width + 20));
            }
            out.push_str(&row);
            out.push('\n');
        }
        let (pass, fail, skip) = self.counts();
        let slow = self.timing_misses().len();
        let misses = if slow == 1 { "miss" } else { "misses" };
        let _ = write!(
            out,
            "{pass} passed, {fail} failed, {slow} timing {misses}, {skip} skipped"
        );
        if let Some(stopped) = &self.stopped {
            let _ = write!(
                out,
                ", {} not run (the run stopped: {})",
                stopped.not_run,
                one_line(&stopped.because)
            );
        }
        out.push('\n');
        out
    }

    /// The report as one JSON document: `{"agent":..,"protocol":1|2|null,"protocol_note":..,
    /// "passed":..,"failed":..,"timing_misses":..,"skipped":..,"checks":[{"name":..,"status":"pass"|"fail"|"skip"|
    /// "timing_miss","note"|"evidence"|"reason":..,"millis":..}]}` (`failed` counts protocol
    /// failures only), plus `"stopped":{"reason":..,"not_run":..}` when the run stopped early.
    pub fn to_json(&self) -> serde_json::Value {
        let (pass, fail, skip) = self.counts();
        let mut json = serde_json::json!({
            "agent": self.agent,
            "protocol": self.protocol,
            "protocol_note": self.protocol_note,
            "passed": pass,
            "failed": fail,
            "timing_misses": self.timing_misses().len(),
            "skipped": skip,
            "checks": self.checks,
        });
        if let Some(stopped) = &self.stopped {
            json["stopped"] = serde_json::json!(stopped);
        }
        json
    }
}

/// Newlines and control characters become spaces: agent text cannot break the table (or pass
/// for a row of its own).
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn cut(s: &mut String, width: usize) {
    if let Some((i, _)) = s.char_indices().nth(width) {
        s.truncate(i.saturating_sub(1));
        s.push('…');
    }
}

/// Milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_keeps_agent_text_on_one_row_and_the_json_names_each_status() {
        let report = Report {
            agent: "a".into(),
            checks: vec![
                CheckResult {
                    name: "x.one",
                    outcome: Outcome::fail("line 1\nline 2\x1b[31m"),
                    millis: 3,
                },
                CheckResult {
                    name: "x.two",
                    outcome: Outcome::skip("not advertised"),
                    millis: 0,
                },
            ],
            stopped: None,
            protocol: Some(2),
            protocol_note: "pinned by --protocol 2".into(),
        };
        let table = report.table(None);
        assert_eq!(table.lines().count(), 6, "{table}");
        assert!(
            table.contains("graded on protocol v2 (pinned by --protocol 2)"),
            "{table}"
        );
        assert!(
            table.contains("x.one  FAIL        3  line 1 line 2 [31m"),
            "{table}"
        );
        assert!(table.ends_with("0 passed, 1 failed, 0 timing misses, 1 skipped\n"));
        let json = report.to_json();
        assert_eq!(json["failed"], 1);
        assert_eq!(json["protocol"], 2);
        assert_eq!(json["checks"][0]["status"], "fail");
        assert_eq!(json["checks"][0]["evidence"], "line 1\nline 2\x1b[31m");
        assert_eq!(json["checks"][1]["reason"], "not advertised");
        assert!(report.failed());
        assert_eq!(report.failures(), ["x.one"]);
    }
}
