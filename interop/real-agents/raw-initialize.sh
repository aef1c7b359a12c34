#!/usr/bin/env bash
# Sends one raw `initialize` per protocolVersion to each agent and prints its first line:
# what it answers to versions it does not speak (acp check's unsupported_version offers 65535).
# Run with the same environment as run.sh (WORK, and the agent's env, see README).
WORK=${WORK:-/tmp/real-agents}
export PATH="$WORK/bin:$WORK/npm/node_modules/.bin:$PATH"
for cmd in "claude-agent-acp" "qwen --acp" "gemini --experimental-acp"; do
  for v in 0 1 2 65535 '"1"'; do
    echo "== $cmd: protocolVersion $v"
    (printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'"$v"',"clientCapabilities":{}}}'
     sleep 6) | timeout 20 $cmd 2>/dev/null | head -1 | cut -c1-400
  done
done
