"""The LLM backend: planner, generator, refiner and judge on any OpenAI-compatible model.

- `exchange`: the requests and answers a stage records (what the run store caches).
- `client`: the `ChatModel` protocol, the openai transport (retries, concurrency, how the
  answer schema is imposed) and the replaying, recording `Session`.
- `prompts`: prompt files (`prompts/*.md`) whose fingerprints key the cache and stages.
- `answers`: the pydantic models answers are validated against; `render`: answer ⇄ Task.
- `agents`: the planner, generator and refiner of the `llm` and `hybrid` backends.
- `mock`: the offline model behind `--model mock` (no server, no `openai`).

Nothing here imports `openai` at module level: the procedural backend never needs it.
"""
