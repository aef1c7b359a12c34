== gemini-script: HOME=/work/realagents/home/gemini-1759815700 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18103 GEMINI_API_KEY=dummy-offline-key GEMINI_CLI_NO_RELAUNCH=true /work/realagents/acp check --prompt-script /work/wt-realagents/interop/real-agents/prompt-script.json -- gemini --experimental-acp
exit status 1
