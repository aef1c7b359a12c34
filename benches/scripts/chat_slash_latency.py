#!/usr/bin/env python3
"""How long `acp chat` takes from the Enter of a slash command to its answer on screen.

Drives `acp chat` (the built-in agent) in a tmux window of its own, as a person would, and
times two commands RUNS times each: `/mode` (the list, answered by the CLI itself) and
`/mode code` / `/mode ask` in turn (a `session/set_mode` round trip to the agent, then the
agent's `current_mode_update`). The clock starts just before tmux sends Enter and stops at
the first screen capture that shows the answer; a capture costs a few milliseconds, which
is the resolution.

    python3 benches/scripts/chat_slash_latency.py path/to/acp [RUNS]

It also times the start: from the command's launch to the first prompt line, which waits for
the agent's slash commands (the built-in agent sends them right after the session's answer).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

ACP = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
BASE = f"acp-slash-latency-{os.getpid()}"
SOCKET = BASE


def tmux(*args):
    return subprocess.run(
        ["tmux", "-L", SOCKET, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def screen():
    return tmux("capture-pane", "-p", "-t", "0", "-S", "-5000").stdout


def wait(predicate, what, limit=30.0):
    deadline = time.monotonic() + limit
    while True:
        text = screen()
        if predicate(text):
            return text
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}; the screen:\n{text}")


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].rstrip() if lines else ""


def timed(command, answer):
    """Types `command`, presses Enter, returns the seconds until `answer` shows once more."""
    before = screen().count(answer)
    tmux("send-keys", "-t", "0", "-l", command)
    wait(lambda t: last_line(t) == f"you> {command}", f"the typed {command!r}")
    start = time.perf_counter()
    tmux("send-keys", "-t", "0", "Enter")
    wait(lambda t: t.count(answer) > before, f"the answer to {command!r}")
    took = time.perf_counter() - start
    wait(lambda t: last_line(t) == "you>", "the next prompt")
    return took


def startup(runs):
    """Seconds from launching `acp chat` to its first prompt line, `runs` times."""
    global SOCKET
    times = []
    for i in range(runs):
        # A tmux server of its own each time (a server being killed still holds its socket).
        SOCKET = f"{BASE}-start{i}"
        workdir = tempfile.mkdtemp(prefix="acp-start-")
        line = f"cd {workdir} && ACP_HISTORY={workdir}/h {ACP} chat; sleep 30"
        start = time.perf_counter()
        started = tmux("new-session", "-d", "-x", "100", "-y", "50", "sh", "-c", line)
        if started.returncode != 0:
            sys.exit(f"tmux: {started.stderr}")
        wait(lambda t: last_line(t) == "you>", "the first prompt")
        times.append(time.perf_counter() - start)
        tmux("kill-server")
    return times


def report(name, times):
    ms = sorted(t * 1000 for t in times)
    p90 = ms[int(len(ms) * 0.9) - 1]
    print(
        f"{name:22} runs={len(ms)} median={statistics.median(ms):.1f} ms "
        f"p90={p90:.1f} ms min={ms[0]:.1f} ms max={ms[-1]:.1f} ms"
    )


def main():
    global SOCKET
    report("start to first prompt", startup(max(RUNS // 2, 3)))
    SOCKET = BASE
    workdir = tempfile.mkdtemp(prefix="acp-slash-")
    history = os.path.join(workdir, "history")
    line = f"cd {workdir} && ACP_HISTORY={history} {ACP} chat; sleep 30"
    tmux("new-session", "-d", "-x", "100", "-y", "50", "sh", "-c", line)
    try:
        wait(lambda t: last_line(t) == "you>", "the first prompt")
        listing, switch = [], []
        for i in range(RUNS):
            listing.append(timed("/mode", "* "))
            mode = "code" if i % 2 == 0 else "ask"
            switch.append(timed(f"/mode {mode}", f"mode set to {mode}"))
        report("/mode (list)", listing)
        report("/mode ID (set_mode)", switch)
    finally:
        tmux("kill-server")


main()
