"""The dataset `generate --count 20 --seed 0` writes, and its Hugging Face export, are pinned.

The digests were first measured on commit 5f176d9, before the package was restructured (issue 16:
validators and stages as tables, typed store reads); a restructuring that changes what the
main job produces fails here. `dataset_digest` says what the digests cover and which
run-to-run differences (run id, start time, check seconds) they mask.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from dataset_digest import hf_export_digest, tasks_digest

from taskloom.pipeline.store import RunStore

pytestmark = [pytest.mark.docker, pytest.mark.slow]
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]
# Measured on 5f176d9 (two runs, same values): tests/dataset_digest.py on the run and export.
# Re-measured for issue 17, whose changes to the tasks are deliberate: every task's tests/
# now hold the hardened test.sh, its pytest.ini and checks that run git, sqlite3 and
# agent-written programs isolated; the validation verdicts gain the tamper check. Then its
# test.sh refuses Python, glibc-converter and loader files changed after the container
# started, and a Python library or pytest found anywhere but where Debian puts them. Then
# checks of owners and accounts read /etc/passwd and /etc/group themselves and want one
# entry per name and per id, read as glibc reads them and confirmed by the system's own
# lookups, each account of the image (the base image's and the world's, now created with
# pinned ids) at its own id and a new one at none of them (alias lines, lines hidden behind
# a carriage return and renamed accounts forged chown_tree); a tree's last step wants every
# file in place and no symlink, and a copy is not a hard link to its original; test.sh also
# refuses shared libraries changed after the start, reads the start time with builtins
# only, and runs the checks with no OpenSSL configuration. Re-measured for issue 18 (two
# runs, same values): every task ships solution/alternatives/other-tools.sh and its
# verdicts gain the alternatives check; CSV outputs below strictness 3 are compared as
# RFC 4180 rows; a few sentences now state what their checks demanded unsaid (a clean
# working tree, kept modification times, no leading `./`, unquoted CSV at strictness 3);
# a tool's checks run it on a copy of its example input, not on an earlier step's file;
# an archive of a step the goal-only instruction does not show has no path prefix, and a
# goal-only task plans no tool after a hidden step (nothing would check that step), and no
# task whose checks read a path the instruction does not name (a hidden step's folder).
# Then every task ships solution/mutants/*.sh (one per stated rule its data exercises; the
# sources now hold the cases that exercise them), each check cites the instruction words
# that demand it (a comment in the test, the requirement map in task.toml), and a goal-only
# instruction names the results of hidden steps A, B, ... instead of nesting them. Then a
# last step's listing below strictness 3 no longer states "no leading `./`" (its check and
# alternative take `./` paths), and rules are kept only where the checks' own line reading
# tells the mutant apart. Then (two runs, same values) test.sh runs with a PATH of /usr/bin
# alone, names its tools by their full paths, and refuses those tools (and git, sqlite3,
# crontab) changed after the start, before it runs any but find (a blind forger's `env`
# planted in /usr/sbin earned reward 1).
# Then (issue 23) test.sh runs the checks with a stdlib check runner instead of pytest
# and tests/ ships no pytest.ini: only the verifier files changed.
# Then (the tasks digest the same in two runs) a last step at strictness 1, whose checks
# compare lines in any order, says "in any order" instead of stating an order nothing
# checks, and a step that a later step reads compares its lines in order at every
# strictness. Then (two runs, same values) a table a step loads or edits in place is
# checked whole as the chain leaves it even when a later step reads it (a forger's one-row
# table with totals taken from the CSV earned reward 1), and a loaded table must be an
# ordinary table whose columns have the stated types (a view, a virtual table over
# undeleted rows and a hidden generated column passed a check of the column names).
# Then (issue 20) the hf export holds a tasks/ tree and dataset.toml (the HF digest now
# covers both, the manifest's left-out counts masked as the card's are), and (two runs,
# same values) test.sh carries the sha256 of its checks and runs no other bytes (a
# process left running swapped them between the upload and test.sh's sweep).
# Then (issue 19, two runs, same values) the export rows gain the `calibration` column (null:
# the main job does not calibrate) and the row schema is 2; the tasks are unchanged.
# Then (issue 21, two runs, same values) the graph gains the code, debugging and security
# skills and their scenarios, so the sampler plans other paths from seed 0; every opening
# draws a persona and circumstances; a world that stages files in /tmp leaves it 1777; the
# near-duplicate filter is on by default (the embed extra is installed).
# Then (issue 21, two runs, same values) the graph gains the services, statistics,
# scheduling and credential-rotation skills, every kind of work gets an equal share of the
# plans (each path ends in a drawn work's skill), the checks share `_swap`/`_stamp`, and the
# debugging and scrubbing rules read three ways; a task may now ship a gzip file, which the
# HF digest hashes as bytes.
# Then (issue 23, two runs, same values) a git check reads the repository's objects where
# they are instead of copying them first, with replace refs, the commit-graph and the
# multi-pack index off; `status` reads the index rebuilt from its entries; a link among
# the refs is read from the repository (forgers' replace ref, commit-graph and relative
# ref links passed), and a name the checks give that is also a tag is refused; the
# secret scan reads a tar by its checksum (v7, signed), gzip with bytes after it, .lzma
# and raw xz, compressed streams and zips behind other bytes, a bundle's pack after 4 KiB
# of refs and a pack's deltas, and counts what inflates past its cap as a leak (forgers'
# backups passed); an archive of the `src/` folder names `PREFIX/src/` as its paths' start.
# Then (issue 23, two runs, same values) a git task compares a branch it changes or must
# leave alone whole (build-time hashes, one parent each, subjects, the tip's tree), and
# the secret scan reads UTF-16, base64 and hex runs, raw xz with LZMA1 or a delta filter,
# and counts an encrypted zip member as a leak (round 4 of the forgers); then (round 5)
# branches are named in full, what makes plain git show another repository is refused,
# objects are checked against their names, a branch's commits are compared with their
# authors, committers and messages, the scan reads past wrong checksums, more encodings and
# transforms, and a place that is a link, and a revert's hint and identity read plainly.
# Then (two runs, same values, the same 30 tasks from 32 items) every test.sh passes
# TASKLOOM_FIRST_FAILURE to its check runner, and the scan reads each alphabet of a
# file as one run (what an encoding holds read on by its marks or as text).
# Then (two runs, same values, the same 30 tasks from 32 items) test_outputs.py holds
# only the imports, constants and helpers its checks name, the runner words failures
# without `traceback`, and the scan's guesses are read on part by part.
# Then (red-team rounds 7 and 8, two runs, same values, the same 30 tasks from 32-33 items;
# base image 2, whose PATH searches /usr/bin first) a step that reads a hidden step's result
# where it lies checks that file too; a broken job keeps its watch list and crontab entry,
# is rerun on words that tell plain, case-sensitive line counts apart, and nothing else is
# made world-writable (sticky folders included); a crontab is read as cron loads it; a tool
# is tried on more usage errors, each saying why on stderr; a copy is no link; a system
# account has no home; the booking a later step sees is named.
# Then (two runs, same values, the same 30 tasks from 33-35 items) the costly checks (the
# secret scan, the world-writable walk) render after the others.
# Then (two runs, same values, the same 30 tasks from 32-35 items) the checks that run the
# agent's code (a job, a tool, a service) render after every check that only reads; the
# world-writable walk goes below /tmp, /var/tmp, /dev and /run too and reads every folder a
# job file's links pass through; a debug job is rerun with its crontab's variables, under
# its SHELL; a crontab holding characters cron reads otherwise than Python fails; a
# crontab command's words are read as sh reads them, and the SHELL and PATH set above an
# entry must let cron run it.
# Then (two runs, same values, the same 30 tasks from 32-34 items) a tool runs as a fresh
# account (a member of an installed command's group), from /tmp, on fixtures whose names
# hold a space, and is held to every rule of its contract; a mode is checked with no ACL
# beside it; a crontab's schedule is read as cron reads it (its day fields, its digits),
# with no variable above the entry that changes how the shell runs it, a step after `*`
# or a range only, and its command's words split at the shell's operators.
# Then (two runs, same values) a table edited in place is read through quote() and must
# keep its kind and types; a booking leaves each calendar one calendar, read in any case;
# a file whose mode a step sets has one link. Then (two runs, same values) an earlier
# step's mode and owner checks cover what a later rotation plants in the tree, and a check
# two steps repeat (a clean working tree, a table's schema) runs once.
# Then (two runs, same values) 20 tasks, the README main job's count (30 took 220 s of CI);
# a rotation's stale backups must be gone from the whole disk, a sealed copy (openssl enc)
# counts as one, and a booking's request is drawn again until lunch matters. Then (two
# runs, same values) the deletion and world-writable checks walk by one shared helper,
# a mode step on a chain's tree plants a script and a hidden file in it, and a broken
# job's runs are checked to leave nothing world-writable, its files with one link.
# Then (two runs, same values) a mirror made at a later step starts with files its source
# no longer has, so its delete rule is exercised (00019's step 6), and a tree's listing
# counts every entry but a folder and takes no link for the folder itself.
# Then (two runs, same values) task.toml lists the steps the instruction states; a git
# history holds issue numbers that start a longer one on either side; a cron entry at a
# later step goes in a crontab with work in it, which keeps its settings, read as cron's
# load_env reads them, and its account may run it (a maintenance script goes in root's);
# a revert leaves its branch checked out, nothing ignored; a written tool's hint names its
# own tools; a repaired program's hidden runs hold a joined name and a usage error.
# Then (two runs, same values) every git step checks a clean tree one way (nothing half
# done, HEAD on a branch at the last step), a git step that is not the last checks
# its commits as the branch's oldest, the checks' header runs a process as an account by
# one helper, and a scenario's story opens only a task that does the work it asks for.
TASKS_DIGEST = "42bf702af7f1c79021148f400de7464a26e7b93eed93c1507f65055c63966dc5"
HF_EXPORT_DIGEST = "8e38453dd6d0f427ff83a06636a2ec8da2bc83016a5275170e51d91f6f7f65be"


def test_main_job_dataset_and_hf_export_are_unchanged(tmp_path):
    run = tmp_path / "run"
    done = subprocess.run([*TASKLOOM, "generate", "--count", "20", "--seed", "0", "--out",
                           str(run)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    export = tmp_path / "hf"
    done = subprocess.run([*TASKLOOM, "export", str(run), "--format", "hf", "--out",
                           str(export)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with RunStore(run / "run.duckdb", read_only=True) as store:
        run_id = store.run().id
    assert tasks_digest(run) == TASKS_DIGEST
    assert hf_export_digest(export, run_id) == HF_EXPORT_DIGEST
