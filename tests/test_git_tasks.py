"""Git tasks: a revert on a branch of a generated history.

The registry-wide test validates them (nop, oracle, alternative, mutants, probes); this
checks in the bwrap sandbox that a red-team round's forgeries of a revert earn 0 and honest
variants 1.
"""

from __future__ import annotations

import re

import pytest
from endings import rewards, task_for

REVERT = ("git.revert_commit",)


@pytest.mark.bwrap
def test_a_revert_left_off_the_branch_or_half_done_earns_nothing(bwrap_runtime):
    """The branch must stay checked out with nothing left over (forger: a HEAD detached at
    the old tip kept the change in the files, an untracked `.gitignore` of `*` hid junk, a
    REVERT_HEAD said a revert was still going on; each earned 1)."""
    seed = 9  # a revert by issue number
    task = task_for(REVERT, seed)
    (repo,) = re.findall(r"git repository `([^`]+)`", task.instruction)
    git = f"git -C {repo}"
    found = rewards(bwrap_runtime, REVERT, seed, {
        "reference": "",
        "gc": f"{git} gc -q --aggressive\n",
        "detached": f"{git} checkout -q --detach HEAD~1\n",
        "on-another-branch": f"{git} checkout -q -b wip HEAD~1\n",
        "ignored-junk": f"echo junk > {repo}/notes.tmp\nprintf '*\\n' > {repo}/.gitignore\n",
        "in-progress": f"{git} rev-parse HEAD~1 > {repo}/.git/REVERT_HEAD\n",
    })
    assert found == {"reference": 1.0, "gc": 1.0, "detached": 0.0, "on-another-branch": 0.0,
                     "ignored-junk": 0.0, "in-progress": 0.0}, found
