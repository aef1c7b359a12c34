//! Collecting samples, taking medians, and printing the table and the targets.

use std::collections::BTreeMap;

/// The columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Impl {
    /// acp-rs.
    Ours,
    /// `agent-client-protocol` 5.2.0.
    Official,
    /// The official TypeScript SDK, agent and client (`benches/peers/ts`).
    Ts,
    /// The official Python SDK, agent and client (`benches/peers/py`).
    Py,
    /// serde_json over pipes, no RPC layer.
    Raw,
}

/// Every column, in table order.
pub const COLUMNS: [Impl; 5] = [Impl::Ours, Impl::Official, Impl::Ts, Impl::Py, Impl::Raw];

impl Impl {
    /// The column name.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Official => "official",
            Impl::Ts => "ts",
            Impl::Py => "py",
            Impl::Raw => "raw",
        }
    }
}

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Throughput.
    Higher,
    /// Latency, memory, time.
    Lower,
}

struct Row {
    key: &'static str,
    scenario: &'static str,
    metric: &'static str,
    better: Better,
}

const ROWS: &[Row] = &[
    Row {
        key: "a_duplex",
        scenario: "a. streaming, in-process duplex",
        metric: "notifications/s",
        better: Better::Higher,
    },
    Row {
        key: "a_stdio",
        scenario: "a. streaming, stdio, two processes",
        metric: "notifications/s",
        better: Better::Higher,
    },
    Row {
        key: "a_rss",
        scenario: "a. (same runs) agent peak RSS",
        metric: "MiB",
        better: Better::Lower,
    },
    Row {
        key: "b_p50",
        scenario: "b. sequential fs/read_text_file",
        metric: "p50 µs",
        better: Better::Lower,
    },
    Row {
        key: "b_p99",
        scenario: "b. (same runs)",
        metric: "p99 µs",
        better: Better::Lower,
    },
    Row {
        key: "b_rate",
        scenario: "b. (same runs)",
        metric: "requests/s",
        better: Better::Higher,
    },
    Row {
        key: "c_rate",
        scenario: "c. 64 outstanding requests",
        metric: "requests/s",
        better: Better::Higher,
    },
    Row {
        key: "d_rate",
        scenario: "d. 1 MiB responses",
        metric: "MB/s",
        better: Better::Higher,
    },
    Row {
        key: "e_bytes",
        scenario: "e. idle sessions kept",
        metric: "bytes/session",
        better: Better::Lower,
    },
    Row {
        key: "e_rate",
        scenario: "e. (same runs)",
        metric: "session/new per s",
        better: Better::Higher,
    },
    Row {
        key: "f_ms",
        scenario: "f. cold handshake",
        metric: "ms",
        better: Better::Lower,
    },
    Row {
        key: "g100_rate",
        scenario: "g. 100 sessions at once",
        metric: "notifications/s",
        better: Better::Higher,
    },
    Row {
        key: "g100_p99",
        scenario: "g. 100 sessions (same runs)",
        metric: "median session's p99 chunk latency µs",
        better: Better::Lower,
    },
    Row {
        key: "g100_fair",
        scenario: "g. 100 sessions (same runs)",
        metric: "worst session's p99 / median session's",
        better: Better::Lower,
    },
    Row {
        key: "g100_first",
        scenario: "g. 100 sessions (same runs)",
        metric: "longest wait for a first chunk ms",
        better: Better::Lower,
    },
    Row {
        key: "g100_rss",
        scenario: "g. 100 sessions (same runs)",
        metric: "agent peak RSS MiB",
        better: Better::Lower,
    },
    Row {
        key: "g1000_rate",
        scenario: "g. 1,000 sessions at once",
        metric: "notifications/s",
        better: Better::Higher,
    },
    Row {
        key: "g1000_p99",
        scenario: "g. 1,000 sessions (same runs)",
        metric: "median session's p99 chunk latency µs",
        better: Better::Lower,
    },
    Row {
        key: "g1000_fair",
        scenario: "g. 1,000 sessions (same runs)",
        metric: "worst session's p99 / median session's",
        better: Better::Lower,
    },
    Row {
        key: "g1000_first",
        scenario: "g. 1,000 sessions (same runs)",
        metric: "longest wait for a first chunk ms",
        better: Better::Lower,
    },
    Row {
        key: "g1000_rss",
        scenario: "g. 1,000 sessions (same runs)",
        metric: "agent peak RSS MiB",
        better: Better::Lower,
    },
    Row {
        key: "gn_rate",
        scenario: "g. sessions at once (--many)",
        metric: "notifications/s",
        better: Better::Higher,
    },
    Row {
        key: "gn_p99",
        scenario: "g. sessions (same runs)",
        metric: "median session's p99 chunk latency µs",
        better: Better::Lower,
    },
    Row {
        key: "gn_fair",
        scenario: "g. sessions (same runs)",
        metric: "worst session's p99 / median session's",
        better: Better::Lower,
    },
    Row {
        key: "gn_first",
        scenario: "g. sessions (same runs)",
        metric: "longest wait for a first chunk ms",
        better: Better::Lower,
    },
    Row {
        key: "gn_rss",
        scenario: "g. sessions (same runs)",
        metric: "agent peak RSS MiB",
        better: Better::Lower,
    },
    Row {
        key: "h_ms",
        scenario: "h. full exchange (spawn to exit)",
        metric: "ms",
        better: Better::Lower,
    },
];

/// Samples per (row, column).
#[derive(Debug, Default)]
pub struct Results {
    samples: BTreeMap<(&'static str, Impl), Vec<f64>>,
}

impl Results {
    /// Records one sample.
    pub fn add(&mut self, key: &'static str, imp: Impl, value: f64) {
        self.samples.entry((key, imp)).or_default().push(value);
    }

    /// The median of a cell, if it was measured.
    pub fn median(&self, key: &str, imp: Impl) -> Option<f64> {
        let samples = self
            .samples
            .iter()
            .find(|((k, i), _)| *k == key && *i == imp)?
            .1;
        median(samples)
    }
}

/// The median (mean of the middle two for an even count).
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// A number with thousands separators and sensible decimals.
pub fn format_value(v: f64) -> String {
    let decimals = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let s = format!("{v:.decimals$}");
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), format_value)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => format!("{:.2}×", a / b),
        _ => "–".to_owned(),
    }
}

/// The table of medians and ratios, as markdown.
pub fn render(results: &Results) -> String {
    let mut out = String::from(
        "| scenario | metric | better | ours | official | ts | py | raw | ours / official | \
         ours / ts | ours / py | ours / raw |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for row in ROWS {
        let cells = COLUMNS.map(|i| results.median(row.key, i));
        if cells.iter().all(Option::is_none) {
            continue;
        }
        let [ours, official, ts, py, raw] = cells;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.scenario,
            row.metric,
            match row.better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            },
            cell(ours),
            cell(official),
            cell(ts),
            cell(py),
            cell(raw),
            ratio(ours, official),
            ratio(ours, ts),
            ratio(ours, py),
            ratio(ours, raw),
        ));
    }
    out
}

/// The targets, each with the figure of this run and whether it is met.
pub fn targets(results: &Results) -> String {
    let m = |key, imp| results.median(key, imp);
    let mut out = String::from("Targets (ratios of medians from this run):\n");
    let mut line = |what: &str, figure: Option<(f64, bool)>, show: &dyn Fn(f64) -> String| {
        let text = match figure {
            Some((v, met)) => format!("{} -> {}", show(v), if met { "met" } else { "NOT met" }),
            None => "not measured".to_owned(),
        };
        out.push_str(&format!("- {what}: {text}\n"));
    };
    let div = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let times = |v: f64| format!("{v:.2}×");
    let percent = |v: f64| format!("{:.0}%", v * 100.0);
    let r = div(m("a_stdio", Impl::Ours), m("a_stdio", Impl::Official));
    line(
        "a, stdio: ours >= 10× official",
        r.map(|v| (v, v >= 10.0)),
        &times,
    );
    let r = div(m("a_stdio", Impl::Ours), m("a_stdio", Impl::Raw));
    line(
        "a, stdio: ours >= 85% of raw",
        r.map(|v| (v, v >= 0.85)),
        &percent,
    );
    let r = div(m("b_p50", Impl::Ours), m("b_p50", Impl::Raw));
    line("b: p50 <= 1.15× raw", r.map(|v| (v, v <= 1.15)), &times);
    let r = div(m("d_rate", Impl::Ours), m("d_rate", Impl::Raw));
    line("d: ours >= 80% of raw", r.map(|v| (v, v >= 0.8)), &percent);
    let r = div(m("e_bytes", Impl::Ours), m("e_bytes", Impl::Official));
    line(
        "e: bytes per idle session <= official",
        r.map(|v| (v, v <= 1.0)),
        &times,
    );
    let r = m("a_rss", Impl::Ours);
    line(
        "a: agent peak RSS <= 32 MiB",
        r.map(|v| (v, v <= 32.0)),
        &|v| format!("{v:.1} MiB"),
    );
    for (imp, name) in [(Impl::Ts, "TypeScript"), (Impl::Py, "Python")] {
        let r = div(m("a_stdio", Impl::Ours), m("a_stdio", imp));
        line(
            &format!("a, stdio: ours >= 10× the {name} SDK pair"),
            r.map(|v| (v, v >= 10.0)),
            &times,
        );
        let r = div(m("h_ms", imp), m("h_ms", Impl::Ours));
        line(
            &format!("h: ours-ours <= 1/10 of the {name} pair's time"),
            r.map(|v| (v, v >= 10.0)),
            &|v| format!("{v:.1}× faster"),
        );
    }
    let r = div(m("b_p99", Impl::Ours), m("b_p99", Impl::Official));
    line("b: p99 <= official", r.map(|v| (v, v <= 1.0)), &times);
    let r = m("g1000_rss", Impl::Ours);
    line(
        "g, 1,000 sessions: agent peak RSS <= 64 MiB",
        r.map(|v| (v, v <= 64.0)),
        &|v| format!("{v:.1} MiB"),
    );
    let r = m("g1000_fair", Impl::Ours);
    line(
        "g, 1,000 sessions: no session's p99 over 3× the median session's",
        r.map(|v| (v, v <= 3.0)),
        &times,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn values_are_grouped_and_rounded() {
        assert_eq!(format_value(1_234_567.4), "1,234,567");
        assert_eq!(format_value(42.345), "42.3");
        assert_eq!(format_value(1.23456), "1.23");
        assert_eq!(format_value(-1234.0), "-1,234");
    }

    #[test]
    fn rows_without_samples_are_left_out_and_ratios_use_medians() {
        let mut r = Results::default();
        for v in [100.0, 300.0, 200.0] {
            r.add("c_rate", Impl::Ours, v);
        }
        r.add("c_rate", Impl::Official, 50.0);
        let table = render(&r);
        assert!(table.contains(
            "| c. 64 outstanding requests | requests/s | higher | 200 | 50.0 | – | – | – | 4.00× | – | – | – |"
        ));
        assert!(!table.contains("d. 1 MiB"));
    }
}
