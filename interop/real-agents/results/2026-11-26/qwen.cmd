== qwen: HOME=/work/realagents/home/qwen-968417478 OPENAI_BASE_URL=http://127.0.0.1:18102/v1 OPENAI_API_KEY=sk-dummy-offline OPENAI_MODEL=fake-model /work/realagents/acp check  -- qwen --acp
exit status 1
