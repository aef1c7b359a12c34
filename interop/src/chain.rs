//! The proxy-chain cells: the cell's client spawns a conductor (through the recording tap, as
//! it would an agent), and the conductor runs two proxies and the cell's agent, each behind a
//! tap of its own, so every hop is on record:
//!
//! ```text
//! client -tap(wire.jsonl)- conductor -tap(hop-1.jsonl)- proxy
//!                                    -tap(hop-2.jsonl)- proxy
//!                                    -tap(hop-3.jsonl)- agent
//! ```
//!
//! The two proxies are one of each Rust library (ours first under the official conductor,
//! the official one first under ours), both forwarding everything, so the script's checks
//! hold on the client's hop as in any cell. [`check`] adds what makes it a chain: each proxy
//! was asked `proxy/initialize` and answered, and traffic crossed it in `proxy/successor`
//! envelopes both ways; the agent got a plain `initialize`. The matrix validates the proxy
//! hops against the official unstable schema (`schema.unstable.json`), where
//! `proxy/initialize` and `proxy/successor` are defined, envelope and wrapped message both.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::checks::{Check, Sdk};
use crate::tap::Side;
use crate::transcript::Wire;

/// One recorded hop: the conductor on its client side, a component on its agent side.
#[derive(Clone, Debug)]
pub struct Hop {
    /// Its transcript.
    pub wire: PathBuf,
    /// Who wrote the conductor.
    pub conductor: Sdk,
    /// Who wrote the component.
    pub component: Sdk,
    /// Whether the component is a proxy (else it is the chain's agent).
    pub proxy: bool,
}

impl Hop {
    /// `proxy-1 (ours)` or `agent (rust)`, for reports.
    pub fn label(&self, index: usize) -> String {
        if self.proxy {
            format!("proxy-{} ({})", index + 1, self.component.name())
        } else {
            format!("agent ({})", self.component.name())
        }
    }
}

/// The proxies of a chain under `conductor`, in chain order: the other library's first.
pub fn proxies(conductor: Sdk) -> [Sdk; 2] {
    match conductor {
        Sdk::Ours => [Sdk::Rust, Sdk::Ours],
        _ => [Sdk::Ours, Sdk::Rust],
    }
}

/// The hops of a chain under `conductor` ending in an `agent_sdk` agent, recorded in `dir`.
pub fn hops(conductor: Sdk, agent_sdk: Sdk, dir: &Path) -> Vec<Hop> {
    let components = proxies(conductor)
        .into_iter()
        .map(|sdk| (sdk, true))
        .chain([(agent_sdk, false)]);
    components
        .enumerate()
        .map(|(n, (component, proxy))| Hop {
            wire: dir.join(format!("hop-{}.jsonl", n + 1)),
            conductor,
            component,
            proxy,
        })
        .collect()
}

/// The conductor's command line: `acp-interop <which>-conductor --chain <dir>/chain.json`,
/// the file holding each component's command line (each behind a tap writing its hop into
/// `dir`). A file, not words: the taps' own `--` would read as chain separators. `exe` is the
/// `acp-interop` binary, `agent` the agent's own command line.
pub fn command(
    exe: &Path,
    conductor: Sdk,
    agent_sdk: Sdk,
    agent: Vec<OsString>,
    dir: &Path,
) -> Result<Vec<OsString>, String> {
    let which = match conductor {
        Sdk::Ours => "ours-conductor",
        Sdk::Rust => "rust-conductor",
        other => return Err(format!("no {} conductor in the matrix", other.name())),
    };
    let exe_word = exe.to_string_lossy().into_owned();
    let mut agent = Some(agent);
    let mut chain = Vec::new();
    for (n, hop) in hops(conductor, agent_sdk, dir).into_iter().enumerate() {
        let mut line = vec![
            exe_word.clone(),
            "tap".to_owned(),
            "--wire".to_owned(),
            hop.wire.to_string_lossy().into_owned(),
            "--stderr".to_owned(),
            dir.join(format!("hop-{}.stderr", n + 1))
                .to_string_lossy()
                .into_owned(),
            "--".to_owned(),
        ];
        if hop.proxy {
            line.extend([exe_word.clone(), format!("{}-proxy", hop.component.name())]);
        } else {
            let words = agent.take().unwrap_or_default();
            line.extend(words.iter().map(|w| w.to_string_lossy().into_owned()));
        }
        chain.push(line);
    }
    let file = dir.join("chain.json");
    std::fs::write(&file, Value::from(chain).to_string())
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok(vec![
        exe.as_os_str().to_owned(),
        which.into(),
        "--chain".into(),
        file.into(),
    ])
}

/// Checks that the chain worked as a chain (see the module docs).
pub fn check(hops: &[Hop]) -> Check {
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let label = hop.label(i);
        let wire = match Wire::read(&hop.wire) {
            Ok(wire) => wire,
            Err(e) => {
                problems.push(format!("{label}: {e}"));
                continue;
            }
        };
        if hop.proxy {
            let answered = wire
                .requests(Side::Client, "proxy/initialize")
                .any(|r| wire.response_to(r).is_some_and(|a| !a.result().is_null()));
            if !answered {
                problems.push(format!("{label}: no answered proxy/initialize"));
            }
            let wrapped = |side: Side| {
                wire.from(side)
                    .filter(|m| m.method() == Some("proxy/successor"))
                    .count()
            };
            let (down, up) = (wrapped(Side::Agent), wrapped(Side::Client));
            if down == 0 || up == 0 {
                problems.push(format!(
                    "{label}: proxy/successor {down} towards the agent, {up} back: both ways expected"
                ));
            }
            seen.push(format!("{label} {down}/{up} proxy/successor"));
        } else {
            if wire.requests(Side::Client, "initialize").next().is_none() {
                problems.push(format!("{label}: no plain initialize"));
            }
            if wire
                .requests(Side::Client, "proxy/initialize")
                .next()
                .is_some()
            {
                problems.push(format!("{label}: the agent was asked proxy/initialize"));
            }
            seen.push(format!("{label} {} lines", wire.messages.len()));
        }
    }
    Check {
        name: "chain",
        ok: problems.is_empty(),
        detail: if problems.is_empty() {
            format!(
                "proxy/initialize answered by each proxy; {}",
                seen.join(", ")
            )
        } else {
            problems.join("; ")
        },
    }
}

/// The validator's entries for the hops (`schema: "unstable"`, `hop: true`), named
/// `<cell>/<label>`.
/// Each hop's deliberate bad calls (see [`crate::checks::bad_call_messages`]) are exempt.
pub fn validator_entries(cell: &str, hops: &[Hop]) -> Vec<Value> {
    hops.iter()
        .enumerate()
        .filter_map(|(i, hop)| {
            let wire = Wire::read(&hop.wire).ok()?;
            let exempt: Vec<u64> = crate::checks::bad_call_messages(&wire)
                .iter()
                .map(|m| m.seq)
                .collect();
            Some(json!({
                "name": format!("{cell}/{}", hop.label(i)),
                "wire": hop.wire,
                "exempt": exempt,
                "schema": "unstable",
                "hop": true,
            }))
        })
        .collect()
}
