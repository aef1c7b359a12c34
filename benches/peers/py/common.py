"""Shared by the Python benchmark peers: the job a prompt names, the agent's report, memory
and the wall clock (see benches/src/msg.rs, which these mirror: the same texts, the same
report fields)."""

from __future__ import annotations

import math
import re
import time

CWD = "/tmp/acp-bench"
SMALL_PATH = "/bench/small.rs"
SMALL_CONTENT = 'fn main() {\n    println!("hello");\n}\n'
REPORT_KEY = "acpBench"
EXCHANGE_UPDATES = 5
_LINE = '    let answer = compute("agent client protocol", 42); // line\n'


def parse_args(argv: list[str]) -> dict:
    """`--name value` pairs up to `--`; what follows `--` is `rest`."""
    opts: dict = {"rest": []}
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            opts["rest"] = argv[i + 1 :]
            break
        opts[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    return opts


def content_for(path: str) -> str | None:
    """The content the client serves for `path`, or None."""
    if path == SMALL_PATH:
        return SMALL_CONTENT
    m = re.fullmatch(r"/bench/big/(\d+)", path)
    if not m:
        return None
    size = int(m.group(1))
    return (_LINE * math.ceil(size / len(_LINE)))[:size]


def memory() -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB."""
    with open("/proc/self/status", encoding="utf-8") as f:
        status = f.read()

    def field(name: str) -> int:
        m = re.search(rf"^{name}:\s+(\d+)", status, re.M)
        return int(m.group(1)) if m else 0

    return field("VmRSS"), field("VmHWM")


def percentile(sorted_values: list[int], p: float) -> int:
    """The p-th percentile (nearest rank) of sorted numbers."""
    if not sorted_values:
        return 0
    rank = math.ceil(p / 100 * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def new_report() -> dict:
    return {"count": 0, "errors": 0, "elapsed_ns": 0, "p50_ns": 0, "p99_ns": 0, "bytes": 0, "rss_kib": 0, "hwm_kib": 0}


unix_nanos = time.time_ns
