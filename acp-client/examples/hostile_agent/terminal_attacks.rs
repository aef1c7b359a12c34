//! The hostile agent's terminal attacks: escaping the workspace, bursts and floods of
//! terminals, and processes that leave the process group (`setsid`).

use super::*;

/// `terminal/create` for `command args...`; the attack adds what it tries with the builders.
fn terminal(cx: &Ctx, command: &str, args: &[&str]) -> CreateTerminalRequest {
    CreateTerminalRequest::new(cx.session(), command).args(args.iter().map(|a| (*a).to_owned()))
}

fn create_terminal(cx: &Ctx, request: CreateTerminalRequest) -> Receiver<Value> {
    cx.peer.request(&request)
}

/// Waits for the terminal's command to exit.
fn wait_for_exit(cx: &Ctx, id: &TerminalId) -> Option<Value> {
    cx.peer
        .call(&WaitForTerminalExitRequest::new(cx.session(), id.clone()))
}

/// The terminal's output so far.
fn terminal_output(cx: &Ctx, id: &TerminalId) -> Option<Value> {
    cx.peer
        .call(&TerminalOutputRequest::new(cx.session(), id.clone()))
}

/// Releases the terminal.
fn release(cx: &Ctx, id: &TerminalId) -> Option<Value> {
    cx.peer
        .call(&ReleaseTerminalRequest::new(cx.session(), id.clone()))
}

/// Commands that write outside, run outside, and carry an injected variable; one without
/// `cwd` reports where it ran.
pub(super) fn term_escape(cx: &Ctx) {
    let mut tally = Tally::default();
    let before = cx.outside_entries();
    let outside = path_str(&cx.outside);
    let script =
        format!("echo pwned > '{outside}/term-pwned'; echo \"$INJECTED\" > '{outside}/term-env'");
    let attempts = [
        create_terminal(cx, terminal(cx, "sh", &["-c", &script])),
        create_terminal(
            cx,
            terminal(cx, "sh", &["-c", "echo pwned > term-cwd"]).cwd(outside.clone()),
        ),
        create_terminal(
            cx,
            terminal(cx, "sh", &["-c", "echo \"$INJECTED\""])
                .env([EnvVariable::new("INJECTED", "1")]),
        ),
        create_terminal(cx, terminal(cx, "pwd", &[])),
    ];
    let mut ran = 0;
    let mut default_cwd = Value::Null;
    let mut messages = Vec::new();
    for (i, rx) in attempts.into_iter().enumerate() {
        let started = Instant::now();
        let Some(v) = tally.wait(rx, started, &cx.secret) else {
            continue;
        };
        if let Some(m) = v["error"]["message"].as_str() {
            messages.push(m.to_owned());
            continue;
        }
        ran += 1;
        let Some(id) = terminal_id(&v) else {
            continue;
        };
        let _ = wait_for_exit(cx, &id);
        if i == 3 {
            let out = terminal_output(cx, &id);
            default_cwd = out.map_or(Value::Null, |o| o["result"]["output"].clone());
        }
        let _ = release(cx, &id);
    }
    let after = cx.outside_entries();
    let created_outside = after.iter().filter(|e| !before.contains(e)).count();
    tally.report(
        "term-escape",
        json!({"ran": ran, "createdOutside": created_outside, "defaultCwd": default_cwd, "messages": messages}),
    );
}

/// 300 `terminal/create` in a burst.
pub(super) fn term_burst(cx: &Ctx) {
    let mut tally = Tally::default();
    let started = Instant::now();
    let rxs: Vec<_> = (0..300)
        .map(|_| create_terminal(cx, terminal(cx, "sleep", &["30"])))
        .collect();
    let mut ids = Vec::new();
    let mut message = Value::Null;
    for rx in rxs {
        if let Some(v) = tally.wait(rx, started, &cx.secret) {
            if v.get("result").is_some() {
                ids.extend(terminal_id(&v));
            } else if message.is_null() {
                message = v["error"]["message"].clone();
            }
        }
    }
    let started_count = ids.len();
    for id in ids {
        let _ = release(cx, &id);
    }
    tally.report(
        "term-burst",
        json!({"started": started_count, "firstRefusal": message}),
    );
}

/// A command printing 500 MB with `outputByteLimit: 2^62`.
pub(super) fn term_flood(cx: &Ctx) {
    let mut tally = Tally::default();
    let started = Instant::now();
    let rx = create_terminal(
        cx,
        terminal(
            cx,
            "sh",
            &["-c", "head -c 500000000 /dev/zero | tr '\\0' a"],
        )
        .output_byte_limit(1u64 << 62),
    );
    let mut output_bytes = 0;
    let mut truncated = Value::Null;
    if let Some(v) = tally.wait(rx, started, &cx.secret)
        && let Some(id) = terminal_id(&v)
    {
        let exit = cx
            .peer
            .request(&WaitForTerminalExitRequest::new(cx.session(), id.clone()));
        let _ = exit.recv_timeout(Duration::from_secs(120));
        let out = cx
            .peer
            .request(&TerminalOutputRequest::new(cx.session(), id.clone()));
        if let Some(o) = tally.wait(out, Instant::now(), &cx.secret) {
            output_bytes = o["result"]["output"].as_str().map_or(0, str::len);
            truncated = o["result"]["truncated"].clone();
        }
        let _ = release(cx, &id);
    }
    tally.report(
        "term-flood",
        json!({"outputBytes": output_bytes, "truncated": truncated, "seconds": started.elapsed().as_secs_f64()}),
    );
}

/// A grandchild that leaves the process group with `setsid` (its pid is reported; whoever
/// runs us checks it is gone once the client cleaned up). The terminal is left unreleased.
pub(super) fn term_setsid(cx: &Ctx) {
    let mut tally = Tally::default();
    let started = Instant::now();
    let rx = create_terminal(
        cx,
        terminal(cx, "sh", &["-c", "setsid sleep 300 & echo $!"]),
    );
    let mut pid = Value::Null;
    if let Some(v) = tally.wait(rx, started, &cx.secret)
        && let Some(id) = terminal_id(&v)
    {
        let _ = wait_for_exit(cx, &id);
        if let Some(o) = terminal_output(cx, &id) {
            pid = o["result"]["output"]
                .as_str()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map_or(Value::Null, Value::from);
        }
    }
    tally.report("term-setsid", json!({"grandchildPid": pid}));
}

/// The agent's own grandchild leaves its process group with `setsid` (its pid is reported;
/// whoever runs us checks it is gone once the client shut the agent down).
pub(super) fn agent_setsid(_cx: &Ctx) {
    let pid = std::process::Command::new("sh")
        .args(["-c", "setsid sleep 300 > /dev/null 2>&1 & echo $!"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(Value::Null, Value::from);
    Tally::default().report("agent-setsid", json!({"grandchildPid": pid}));
}
