//! `acp trace`: record an agent's stdio ([`proxy`]) and look at a recording ([`view`](mod@view),
//! [`html`]). A trace file holds one JSON object per line ([`record`]). The analysis
//! ([`view`](mod@view)) knows nothing of its renderings: the terminal summary and the page
//! ([`html`]) both read it, and [`view()`] puts them together for `acp trace view`. The live
//! dashboard (`acp trace --serve`, `acp serve --dashboard`) draws the same analysis of a
//! bounded [`window`] of the run on the same page, fed as it goes ([`live`]).

use std::io::Write;
use std::path::Path;

pub mod html;
pub mod live;
pub mod proxy;
pub mod record;
pub mod view;
pub mod window;

/// `acp trace view`: prints the summary (and writes the page); 0 when the file read cleanly,
/// 1 when it has unreadable lines or could not be read.
pub fn view(file: &Path, html: Option<&Path>) -> i32 {
    let trace = match view::load(file) {
        Ok(trace) => trace,
        Err(e) => {
            eprintln!("acp trace view: {e}");
            return 1;
        }
    };
    let analysis = view::analyse(&trace);
    let name = file.display().to_string();
    // A closed stdout (`| head`) is not an error worth a panic: stop writing.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(view::summary(&analysis, &name).as_bytes());
    if let Some(out) = html {
        let page = html::page(&analysis, &name);
        if let Err(e) = std::fs::write(out, page) {
            eprintln!("acp trace view: cannot write {}: {e}", out.display());
            return 1;
        }
        let _ = writeln!(stdout, "\npage written to {}", out.display());
    }
    for problem in &trace.problems {
        eprintln!("acp trace view: {name}: {problem}");
    }
    i32::from(!trace.problems.is_empty())
}
