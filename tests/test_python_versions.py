"""taskloom installs and works on Python 3.12 and 3.13 too (Harbor needs >= 3.12, and the
Harbor plugin runs in Harbor's interpreter): a fresh virtualenv per version (pyenv's
interpreters), `pip install` of this checkout with its dependencies from PyPI, then the CLI,
the plugin's modules and a procedural task made in that interpreter."""

from __future__ import annotations

import glob
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


def interpreter(version: str) -> str:
    found = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python{version}")))
    if not found:
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    return found[-1]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_taskloom_installs_and_runs_on(version, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([interpreter(version), "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", str(REPO)],
                             capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert install.returncode == 0, install.stderr[-3000:]
    shown = subprocess.run([str(venv / "bin" / "taskloom"), "--help"], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert shown.returncode == 0 and "generate" in shown.stdout, shown.stderr[-2000:]
    made = subprocess.run([python, "-c", DRAFT], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    here = subprocess.run([sys.executable, "-c", DRAFT], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert made.stdout == here.stdout and made.stdout.strip()
