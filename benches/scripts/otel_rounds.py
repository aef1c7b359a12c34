#!/usr/bin/env python3
"""Medians of `otel_rounds.sh`'s output: per build, scenario a's notifications/s off and on
and the on/off ratio, both as the ratio of the medians and as the median of the per-round
ratios (the steadier of the two on a noisy host).

usage: otel_rounds.py OUT
"""
import re
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) (\S+) (on|off) .*?notifications/s \| higher \| ([\d,]+)", line)
    if m:
        by_mode = rows.setdefault(m.group(2), {}).setdefault(m.group(3), {})
        by_mode[int(m.group(1))] = int(m.group(4).replace(",", ""))
for build, modes in rows.items():
    off, on = modes.get("off", {}), modes.get("on", {})
    rounds = sorted(set(off) & set(on))
    if not rounds:
        print(f"{build}: no round with both off and on")
        continue
    ratios = [on[r] / off[r] for r in rounds]
    off_median, on_median = statistics.median(off.values()), statistics.median(on.values())
    print(
        f"{build}: {len(rounds)} rounds, off {off_median:,.0f}, on {on_median:,.0f}, "
        f"ratio of medians {on_median / off_median:.3f}, "
        f"median of ratios {statistics.median(ratios):.3f}"
    )
