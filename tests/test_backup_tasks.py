"""Backup tasks: a mirror kept in step with its source.

The registry-wide test validates them (nop, oracle, alternative, mutants, probes); these
check in the bwrap sandbox what the data must exercise for a stated rule to count.
"""

from __future__ import annotations

import re

import pytest
from endings import solution_rewards, task_for

CHAIN = ("archive.create_tar", "archive.extract", "backup.mirror_rsync")


def test_a_mirror_made_by_a_later_step_has_files_to_delete():
    """A mirror of a tree an earlier step makes starts with files its source no longer has
    (the source is not there at the start, so nothing else of an older mirror can be): its
    instruction's delete rule shipped no mutant in 6 of 6 such steps of a 300-task run
    (`benchmarks/rule_coverage.py`)."""
    shipped = [seed for seed in range(10) if any(
        f.path == "mutants/step-3-delete.sh" for f in task_for(CHAIN, seed).solution)]
    assert len(shipped) >= 6, shipped


@pytest.mark.bwrap
def test_a_later_mirror_keeping_what_its_source_lost_earns_nothing(bwrap_runtime):
    """The delete mutant earns 0; so do a pipe or a socket left at a gone file's name, and
    a link to a clean copy elsewhere in the mirror's place (forger: each earned 1, the
    listing counted regular files and links, and took the folder's link)."""
    task = task_for(CHAIN, 0)
    stale = [f.path.removeprefix("files") for f in task.environment
             if "/removed-" in f.path]
    (mirror,) = re.findall(r"`([^`]+)` already holds files of an older mirror",
                           task.instruction)
    assert stale and all(path.startswith(mirror + "/") for path in stale), stale
    scripts = {f.path: f.content.decode() for f in task.solution
               if f.path in ("mutants/step-3-delete.sh", "alternatives/other-tools.sh")}
    assert len(scripts) == 2, [f.path for f in task.solution]
    reference = task.file("solution", "solve.sh").content.decode()
    names = " ".join(f"'{path}'" for path in stale)
    endings = {
        "pipes": f"for f in {names}; do mkfifo \"$f\"; done\n",
        "sockets": f"for f in {names}; do python3 -c 'import socket, sys; "
                   "socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \"$f\"; done\n",
        "linked": f"mv '{mirror}' /var/tmp/clean && ln -s /var/tmp/clean '{mirror}'\n",
    }
    found = solution_rewards(bwrap_runtime, task, {
        "reference": reference, **scripts,
        **{name: reference + end for name, end in endings.items()}})
    assert found == {"reference": 1.0, "mutants/step-3-delete.sh": 0.0,
                     "alternatives/other-tools.sh": 1.0, "pipes": 0.0, "sockets": 0.0,
                     "linked": 0.0}, found
