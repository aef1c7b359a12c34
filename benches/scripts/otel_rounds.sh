#!/bin/bash
# The OpenTelemetry on/off figure of scenario a (issue 51, BENCHMARKS.md "OpenTelemetry"),
# alternated: each round runs every build off then on, so that a noisy host's drift falls
# on all of them alike. Builds are `acp-bench` binaries built with `--features otel`
# (`cargo build --release -p acp-bench --features otel`, copied aside under any name).
#
# usage: otel_rounds.sh ROUNDS OUT BUILD...
#   CHUNKS (default 200000) and RUNS (default 3) are passed on as --chunks and --runs.
# Then `otel_rounds.py OUT` prints each build's medians and on/off ratios.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
rounds=$1
out=$2
shift 2
: >"$out"
for i in $(seq 1 "$rounds"); do
  for build in "$@"; do
    for mode in off on; do
      env=()
      if [ "$mode" = on ]; then env=(ACP_BENCH_OTEL=1); fi
      line=$(timeout 300 env "${env[@]}" "$build" --only a --impls ours --transport stdio \
        --runs "${RUNS:-3}" --chunks "${CHUNKS:-200000}" 2>/dev/null |
        grep -E '^\| a. str' | tr '\n' ' ' || true)
      echo "$i $build $mode $line" >>"$out"
    done
  done
done
