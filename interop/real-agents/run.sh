#!/usr/bin/env bash
# Starts the three loopback model fakes (127.0.0.1 only), runs `acp check` against each
# agent in each variant, writes the tables (and `acp trace` files) to $OUT, stops the fakes.
#
#   WORK=/tmp/real-agents ACP=target/debug/acp OUT=/tmp/real-agents/results ./run.sh [AGENT...]
#
# AGENT is claude, qwen, gemini, opencode or codex (all five when none is named).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/real-agents}
ACP=$(realpath "${ACP:-acp}")
OUT=${OUT:-$WORK/results}
mkdir -p "$OUT" "$WORK/logs"
AGENTS=("$@"); [ ${#AGENTS[@]} -eq 0 ] && AGENTS=(claude qwen gemini opencode codex)

PIDS=()
for vp in anthropic:18101 openai:18102 gemini:18103; do
  v=${vp%%:*}; p=${vp##*:}
  python3 "$HERE/fake_model_api.py" --vendor "$v" --port "$p" --log "$WORK/logs/$v.ndjson" \
    2>"$WORK/logs/fake-$v.stderr" &
  PIDS+=($!)
done
python3 "$HERE/fake_responses_api.py" --port 18104 2>"$WORK/logs/fake-responses.stderr" &
PIDS+=($!)
trap 'kill "${PIDS[@]}" 2>/dev/null' EXIT
sleep 1

# A fresh HOME per run, seeded from home/AGENT (or left empty for the "no settings" variants).
fresh_home() { # AGENT SEED(yes|no)
  local h="$WORK/home/$1-$RANDOM$RANDOM"; mkdir -p "$h"
  [ "$2" = yes ] && cp -r "$HERE/home/$1/." "$h/"
  echo "$h"
}

check() { # NAME AGENT SEED EXTRA_ENV... -- ACP_ARGS... -- COMMAND...
  local name=$1 agent=$2 seed=$3; shift 3
  local envs=() args=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do args+=("$1"); shift; done; shift
  local home; home=$(fresh_home "$agent" "$seed")
  echo "== $name: HOME=$home ${envs[*]} $ACP check ${args[*]} -- $*" | tee "$OUT/$name.cmd"
  env PATH="$WORK/bin:$WORK/npm/node_modules/.bin:$PATH" HOME="$home" "${envs[@]}" \
    timeout 1500 "$ACP" check "${args[@]}" --trace "$OUT/$name.trace.ndjson" -- "$@" \
    >"$OUT/$name.txt" 2>"$WORK/logs/$name.stderr"
  echo "exit status $?" >>"$OUT/$name.cmd"
  tail -1 "$OUT/$name.txt"
}

CLAUDE_ENV=(ANTHROPIC_BASE_URL=http://127.0.0.1:18101 ANTHROPIC_API_KEY=sk-ant-dummy-offline
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
  DISABLE_ERROR_REPORTING=1 IS_SANDBOX=1)
QWEN_ENV=(OPENAI_BASE_URL=http://127.0.0.1:18102/v1 OPENAI_API_KEY=sk-dummy-offline OPENAI_MODEL=fake-model)
GEMINI_ENV=(GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18103 GEMINI_API_KEY=dummy-offline-key GEMINI_CLI_NO_RELAUNCH=true)
# OpenCode finds the fake through home/opencode/.config/opencode/opencode.json (an
# OpenAI-compatible provider on the openai fake); npm offline keeps it from starting a
# background `npm install` of a plugin at every start.
OPENCODE_ENV=(npm_config_offline=true)
# Codex reads ~/.codex/config.toml (seeded from home/codex/.codex): a `wire_api = "responses"` provider
# on the Responses fake, its key from FAKE_API_KEY; its own sandbox needs a helper the npm
# package does not ship here, hence `sandbox_mode = "danger-full-access"`.
CODEX_ENV=(FAKE_API_KEY=dummy-offline)
SCRIPT=(--prompt-script "$HERE/prompt-script.json")

for a in "${AGENTS[@]}"; do
  case $a in
  claude)
    check claude claude yes "${CLAUDE_ENV[@]}" -- -- claude-agent-acp
    check claude-script claude yes "${CLAUDE_ENV[@]}" -- "${SCRIPT[@]}" -- claude-agent-acp
    check claude-no-settings claude no "${CLAUDE_ENV[@]}" -- -- claude-agent-acp ;;
  qwen)
    check qwen qwen yes "${QWEN_ENV[@]}" -- -- qwen --acp
    check qwen-script qwen yes "${QWEN_ENV[@]}" -- "${SCRIPT[@]}" -- qwen --acp
    check qwen-no-settings qwen no "${QWEN_ENV[@]}" -- -- qwen --acp ;;
  gemini)
    check gemini gemini yes "${GEMINI_ENV[@]}" -- -- gemini --experimental-acp
    check gemini-script gemini yes "${GEMINI_ENV[@]}" -- "${SCRIPT[@]}" -- gemini --experimental-acp
    check gemini-no-settings gemini no "${GEMINI_ENV[@]}" -- -- gemini --experimental-acp ;;
  opencode)
    check opencode opencode yes "${OPENCODE_ENV[@]}" -- -- opencode acp
    check opencode-script opencode yes "${OPENCODE_ENV[@]}" -- "${SCRIPT[@]}" -- opencode acp ;;
  codex)
    check codex codex yes "${CODEX_ENV[@]}" -- -- codex-acp ;;
  *) echo "unknown agent $a" >&2 ;;
  esac
done
