== gemini: HOME=/work/realagents/home/gemini-2094730228 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18103 GEMINI_API_KEY=dummy-offline-key GEMINI_CLI_NO_RELAUNCH=true /work/realagents/acp check  -- gemini --experimental-acp
exit status 1
