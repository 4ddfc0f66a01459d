"""Git tasks: a revert on a branch of a generated history, and steps that commit after
another step changed the repository.

The registry-wide test validates them (nop, oracle, alternative, mutants, probes), and its
chain test one successor of each; this checks in the bwrap sandbox that a red-team round's
forgeries of a revert earn 0 and honest variants 1, and that every chain of two steps that
both change the repository validates.
"""

from __future__ import annotations

import re

import pytest
from endings import rewards, task_for

from taskloom.config import ValidationConfig
from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
from taskloom.skill_graph.model import load_graph
from taskloom.validators.engine import validate_all, validate_task

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


@pytest.mark.bwrap
def test_a_step_that_commits_after_another_validates(bwrap_runtime):
    """Each step that changes a repository, followed by one that commits to it or checks
    out another branch. The first step's checks read the state it leaves as the last step,
    so a revert followed by a release branch (63 of 2,000 plans of a default run) never
    validated: its branch was no longer checked out; a purge followed by a revert failed
    its exact log and working tree. Now such a step's commits are the branch's oldest and
    its working tree is only clean."""
    graph = load_graph()
    generator = ProceduralGenerator(graph)
    chains = [("git.revert_commit", "git.branch_commit"),
              ("git.branch_commit", "git.revert_commit"),
              ("git.revert_commit", "git.revert_commit"),
              ("security.purge_git_secret", "git.revert_commit"),
              ("security.purge_git_secret", "git.branch_commit")]
    drafts = [generator.generate(blueprint_for(graph, chain, seed=0)) for chain in chains]
    jobs = [lambda d=d: validate_task(d.task, bwrap_runtime, ValidationConfig(),
                                      expected_values=d.expected_values) for d in drafts]
    reports = validate_all(jobs, bwrap_runtime, workers=2)
    failed = {chain: [(v.check, v.reason) for v in report.verdicts if not v.passed]
              for chain, report in zip(chains, reports, strict=True) if not report.accepted}
    assert not failed, failed


@pytest.mark.bwrap
def test_a_release_branch_after_a_revert_is_left_checked_out_or_main_and_nothing_half_done(
        bwrap_runtime):
    """After a revert and a release branch, either branch may be checked out; a detached
    HEAD, a paused rebase, a MERGE_HEAD or a CHERRY_PICK_HEAD earn 0 (forger: each earned 1
    on the work done; the chain checked no HEAD at all)."""
    chain, seed = ("git.revert_commit", "git.branch_commit"), 1
    task = task_for(chain, seed)
    (repo,) = set(re.findall(r"git repository `([^`]+)`", task.instruction))
    git = f"git -C {repo}"
    found = rewards(bwrap_runtime, chain, seed, {
        "reference": "",
        "back-on-main": f"{git} checkout -q main\n",
        "detached": f"{git} checkout -q --detach HEAD~1\n",
        "rebase-paused": f"GIT_SEQUENCE_EDITOR='sed -i 1ibreak' {git} -c user.name=x "
                         "-c user.email=x@y rebase -i HEAD~2 >/dev/null 2>&1 || true\n",
        "merge-pending": f"{git} rev-parse main > {repo}/.git/MERGE_HEAD\n",
        "cherry-pick-pending": f"{git} rev-parse main > {repo}/.git/CHERRY_PICK_HEAD\n",
    })
    assert found == {"reference": 1.0, "back-on-main": 1.0, "detached": 0.0,
                     "rebase-paused": 0.0, "merge-pending": 0.0,
                     "cherry-pick-pending": 0.0}, found
