"""Small Harbor task folders made by tests, each proving one behaviour.

By default a task ships the verifier taskloom's own tasks ship (`taskloom.generators.
verifier`), so it withstands the tamper probes; `test_sh=NAIVE_TEST_SH` gives it the naive
verifier most hand-written tasks have, which the probes forge.
"""

from __future__ import annotations

from pathlib import Path

from taskloom.generators.verifier import INI_FILE, PYTEST_INI, TEST_SH
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
              test_py: str | None = UPPERCASE_TEST, test_sh: str = TEST_SH,
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
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "tests" / "test.sh").chmod(0o755)
    if test_sh == TEST_SH:
        (folder / "tests" / INI_FILE).write_text(PYTEST_INI)
    if test_py is not None:
        (folder / "tests" / "test_outputs.py").write_text(test_py)
    return folder
