"""Shared by the Python interop peers: arguments, the script, the report file."""

from __future__ import annotations

import json
import sys
from typing import Any


def parse_args(argv: list[str]) -> dict[str, Any]:
    """`--name value` pairs up to `--`; everything after `--` is `rest`."""
    opts: dict[str, Any] = {"rest": []}
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            opts["rest"] = argv[i + 1 :]
            break
        if not argv[i].startswith("--") or i + 1 >= len(argv):
            raise SystemExit(f"bad argument {argv[i]}")
        opts[argv[i][2:]] = argv[i + 1]
        i += 2
    if "script" not in opts:
        raise SystemExit("missing --script")
    return opts


def load_script(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def reporter(path: str | None):
    """Appends one JSON line per event to `path` (stderr when there is none)."""

    def report(event: dict[str, Any]) -> None:
        line = json.dumps(event) + "\n"
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)
        else:
            sys.stderr.write(line)

    return report


def error_code(e: BaseException) -> int | None:
    """The JSON-RPC code of a failed request, or None."""
    code = getattr(e, "code", None)
    return code if isinstance(code, int) else None
