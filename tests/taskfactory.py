"""Small Harbor task folders made by tests, each proving one behaviour.

By default a task ships the verifier taskloom's own tasks ship (`taskloom.generators.
verifier`, with the digest of its checks), so it withstands the tamper probes;
`test_sh=NAIVE_TEST_SH` gives it the naive verifier most hand-written tasks have, which
the probes forge.
"""

from __future__ import annotations

from pathlib import Path

from taskloom.generators.verifier import test_sh as hardened_test_sh
from taskloom.sandbox.base_image import BASE_IMAGE

NAIVE_TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
cd /tests
if python3 -m pytest -q -p no:cacheprovider test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""

UPPERCASE_TEST = """from pathlib import Path


def test_output_is_uppercased():
    assert Path("/app/out.txt").read_text() == "HELLO\\nWORLD\\n"
"""

UPPERCASE_SOLVE = "#!/bin/bash\ntr a-z A-Z < /app/data.txt > /app/out.txt\n"

DOCKERFILE = f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY data.txt /app/data.txt\n"
# Debian's own PATH (/usr/local and the sbin folders before /usr/bin), which most images
# keep and taskloom's base image does not: a tool or a bash planted there shadows the real one.
DEBIAN_PATH_DOCKERFILE = (DOCKERFILE +
                          "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")


def task_toml(name: str, *, agent_timeout: float = 30.0, verifier_timeout: float = 30.0,
              memory_mb: int = 512, extra: str = "") -> str:
    return (f'schema_version = "1.4"\n\n[task]\nname = "tests/{name}"\n'
            f'description = "test task {name}"\n\n'
            f"[verifier]\ntimeout_sec = {verifier_timeout}\n\n"
            f"[agent]\ntimeout_sec = {agent_timeout}\n\n"
            f"[environment]\nbuild_timeout_sec = 60.0\ncpus = 1\nmemory_mb = {memory_mb}\n"
            + extra)


def make_task(root: Path, name: str, *, dockerfile: str = DOCKERFILE,
              environment: dict[str, str] | None = None, solve: str | None = UPPERCASE_SOLVE,
              test_py: str | None = UPPERCASE_TEST, test_sh: str | None = None,
              instruction: str | None = "Uppercase /app/data.txt into /app/out.txt.\n",
              toml: str | None = None, **toml_options) -> Path:
    """Write a task folder; every part can be replaced or left out (None)."""
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(toml if toml is not None else
                                      task_toml(name, **toml_options))
    if instruction is not None:
        (folder / "instruction.md").write_text(instruction)
    if dockerfile is not None:
        (folder / "environment" / "Dockerfile").write_text(dockerfile)
    files = {"data.txt": "hello\nworld\n"} if environment is None else environment
    for path, content in files.items():
        target = folder / "environment" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    if solve is not None:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text(solve)
        (folder / "solution" / "solve.sh").chmod(0o755)
    if test_sh is None:  # the verifier generated tasks ship, for these checks
        test_sh = hardened_test_sh(test_py or "")
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "tests" / "test.sh").chmod(0o755)
    if test_py is not None:
        (folder / "tests" / "test_outputs.py").write_text(test_py)
    return folder


# A two-step task (Harbor's [[steps]]): the first step writes /app/a.txt, the second, after
# its workdir/setup.sh has put seed.txt into the working directory, joins a.txt and seed.txt
# into /app/c.txt, so it needs what the first step left. Each step's test.sh scores its
# own output.
STEP_TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat {path} 2>/dev/null)" = "{expected}" ]; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""
TWO_STEPS = {
    "write": {"instruction": "Write hello into /app/a.txt.\n",
              "solve": "#!/bin/bash\necho hello > /app/a.txt\n",
              "test_sh": STEP_TEST_SH.format(path="/app/a.txt", expected="hello")},
    "join": {"instruction": "Join /app/a.txt and /app/seed.txt into /app/c.txt.\n",
             "solve": "#!/bin/bash\ncat /app/a.txt /app/seed.txt > /app/c.txt\n",
             "test_sh": STEP_TEST_SH.format(path="/app/c.txt", expected="hello\nworld"),
             "workdir": {"setup.sh": "#!/bin/bash\necho world > seed.txt\n"}},
}


def make_multi_step_task(root: Path, name: str, steps: dict[str, dict] | None = None, *,
                         settings: dict[str, str] | None = None, strategy: str | None = None,
                         solve: str | None = None) -> Path:
    """Write a multi-step task folder: `steps` maps a step name to its instruction, solve
    (None: none of its own), test_sh and workdir files; `settings` adds TOML lines to a
    step's [[steps]] table (`min_reward = 1.0`); `solve` is the task's own solve.sh."""
    steps = TWO_STEPS if steps is None else steps
    tables = "".join(f'\n[[steps]]\nname = "{step}"\n{(settings or {}).get(step, "")}'
                     for step in steps)
    head = f'multi_step_reward_strategy = "{strategy}"\n' if strategy else ""
    folder = make_task(root, name, solve=solve, test_py=None, instruction=None,
                       toml=head + task_toml(name) + tables)
    (folder / "tests" / "test.sh").unlink()
    for step, parts in steps.items():
        base = folder / "steps" / step
        files = {"instruction.md": parts["instruction"], "tests/test.sh": parts["test_sh"]}
        if parts.get("solve") is not None:
            files["solution/solve.sh"] = parts["solve"]
        files.update({f"workdir/{path}": text for path, text in parts.get("workdir", {}).items()})
        for path, text in files.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text)
            (base / path).chmod(0o755 if path.endswith(".sh") else 0o644)
    return folder
