== claude: HOME=/work/realagents/home/claude-2363220 ANTHROPIC_BASE_URL=http://127.0.0.1:18101 ANTHROPIC_API_KEY=sk-ant-dummy-offline CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 IS_SANDBOX=1 /work/realagents/acp check  -- claude-agent-acp
exit status 1
