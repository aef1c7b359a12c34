== qwen-script: HOME=/work/realagents/home/qwen-3220713934 OPENAI_BASE_URL=http://127.0.0.1:18102/v1 OPENAI_API_KEY=sk-dummy-offline OPENAI_MODEL=fake-model /work/realagents/acp check --prompt-script /work/wt-realagents/interop/real-agents/prompt-script.json -- qwen --acp
exit status 1
