"""taskloom installs and works on Python 3.12 and 3.13 too (Harbor needs >= 3.12, and the
Harbor plugin runs in Harbor's interpreter): a fresh virtualenv per version (pyenv's
interpreters), `pip install` of this checkout with its dependencies from PyPI, then the CLI,
the plugin's modules and a procedural task made in that interpreter; and on 3.12 the whole
of the suite that needs no sandbox, so CI runs it on a second Python (tests/py312_suite.py:
it starts with the session, behind the other tests, and its test here waits for it)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from py312_suite import REPO, SUITE_312, TEST_NAME, SuiteOn312, fresh_venv, interpreter

pytestmark = pytest.mark.slow
# Made in the other interpreter: the same bytes as here, since the generator is seeded.
DRAFT = """
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.skill_graph.model import load_graph
import taskloom.sandbox.bwrap_session, taskloom.outputs.export  # the plugin's and export's
graph = load_graph()
draft = ProceduralGenerator(graph).generate(blueprint_for(graph, ("csv.dedupe_rows",), seed=3))
print(draft.task.instruction)
"""


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_taskloom_installs_and_runs_on(version, tmp_path):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    bin_dir = fresh_venv(python, tmp_path, str(REPO))
    shown = subprocess.run([str(bin_dir / "taskloom"), "--help"], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
    assert shown.returncode == 0 and "generate" in shown.stdout, shown.stderr[-2000:]
    made = subprocess.run([str(bin_dir / "python"), "-c", DRAFT], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    here = subprocess.run([sys.executable, "-c", DRAFT], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert made.stdout == here.stdout and made.stdout.strip()


@pytest.mark.timeout(3600)
def test_the_tests_that_need_no_sandbox_pass_on_python_3_12(request):
    assert request.node.name == TEST_NAME  # the name conftest starts the run for
    suite = request.config.stash.get(SUITE_312, None) or SuiteOn312().start()
    try:
        outcome = suite.result(timeout=3300)
    finally:
        suite.stop()
    if outcome is None:
        pytest.skip("no Python 3.12 here (pyenv install 3.12)")
    assert outcome.returncode == 0, outcome.stdout[-6000:] + outcome.stderr[-2000:]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|skipped)", outcome.summary)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) == outcome.collected, \
        outcome.summary
    assert "skipped" not in counts, outcome.summary  # every extra it needs is installed
