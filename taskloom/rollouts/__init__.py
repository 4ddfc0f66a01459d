"""Agent rollouts: a model attempts tasks in live sessions, scored by the tasks' verifiers.

`agent` is the built-in terminal agent (one shell script per turn, from any
OpenAI-compatible chat server); `solve` runs k attempts per task, each in a fresh
environment, and scores them: pass@1, pass@k, mean reward, with infrastructure errors
counted apart from failures.
"""
