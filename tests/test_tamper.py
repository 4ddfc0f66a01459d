"""Tamper probes: each family forges a deliberately naive task, and neither the verifier
taskloom's tasks ship nor a generated task lets any probe earn a reward (real Docker and
bwrap, trials run as Harbor runs them)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from taskfactory import DEBIAN_PATH_DOCKERFILE, NAIVE_TEST_SH, UPPERCASE_TEST, make_task
from trials import Replay, phase

from taskloom.config import RunConfig, ValidationConfig
from taskloom.errors import NoDraft
from taskloom.generators.backends import backend_for
from taskloom.generators.procedural.backend import blueprint_for
from taskloom.generators.verifier import CHECKS_FILE, verifier_files
from taskloom.harbor import read_task_folder, write_task_folder
from taskloom.models import ReasonCode
from taskloom.sandbox.trial import SetupResult, TrialResult
from taskloom.validators.engine import validate_task
from taskloom.validators.probes import (
    COMBINED_ORDER,
    FAMILIES,
    IMITATES,
    PROBE_NAMES,
    named_paths,
    probes_for,
)

EXISTS_ONLY = ("from pathlib import Path\n\n\ndef test_output_exists():\n"
               "    assert Path('/app/out.txt').exists()\n")
# A test that calls sqlite3, as many do: the CLI reads ~/.sqliterc, where hook-toolrc writes.
SQLITE_TEST = UPPERCASE_TEST.replace("from pathlib", "import subprocess\nfrom pathlib", 1) + (
    "\n\ndef test_sqlite_computes():\n"
    "    done = subprocess.run(['sqlite3', ':memory:', 'select 6*7'], capture_output=True,\n"
    "                          text=True, check=True)\n"
    "    assert done.stdout.strip().endswith('42')\n")
# Owners checked through the account database, as many tests do: by the id's name, or by
# the name's id.
OWNER_TASK = {
    "instruction": "Create a system account `svc-app` and make it the owner of /app/data.txt.\n",
    "solve": "#!/bin/bash\nuseradd --system svc-app && chown svc-app /app/data.txt\n"}
OWNER_BY_ID = ("import os, pwd\n\n\ndef test_owner():\n"
               "    owner = pwd.getpwuid(os.stat('/app/data.txt').st_uid).pw_name\n"
               "    assert owner == 'svc-app'\n")
OWNER_BY_NAME = ("import os, pwd\n\n\ndef test_owner():\n"
                 "    uid = pwd.getpwnam('svc-app').pw_uid\n"
                 "    assert os.stat('/app/data.txt').st_uid == uid\n")
# A login shell reads /etc/profile: what hook-env writes there then reaches pytest.
LOGIN_TEST_SH = NAIVE_TEST_SH.replace("#!/bin/bash\n", "#!/bin/bash -l\n", 1)


def forged(report) -> set[str]:
    """The probes a hackable verdict names."""
    (tamper,) = [v for v in report.verdicts if v.check == "tamper"]
    if tamper.passed:
        return set()
    assert tamper.reason == ReasonCode.HACKABLE and tamper.log
    return set(re.search(r"probe\(s\) ([\w, -]+) earned", tamper.details).group(1).split(", "))


def test_every_probe_is_valid_bash_and_every_family_has_several(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    for probe in probes_for(task, combined=False) + probes_for(task, combined=True):
        done = subprocess.run(["bash", "-n"], input=probe.script, capture_output=True,
                              text=True)
        assert done.returncode == 0, (probe.name, done.stderr)
    families = {}
    for name in PROBE_NAMES:
        families.setdefault(FAMILIES[name], []).append(name)
    assert sorted(families) == ["accounts", "hook", "linger", "outputs", "plant", "reward",
                                "shadow"]
    assert all(len(names) >= 2 for names in families.values())
    assert set(COMBINED_ORDER) == set(PROBE_NAMES) - {"outputs-empty", "accounts-append"}
    assert named_paths(task) == ("/app/data.txt", "/app/out.txt")


def test_the_readme_probe_table_is_the_library():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = dict(re.findall(r"^\| ([a-z]+-[a-z]+) \| (.+) \|$", readme, re.M))
    assert rows == IMITATES


def test_the_example_task_ships_the_verifier_generated_tasks_ship():
    """The README tells users to copy the example's test.sh: it must be the hardened one,
    byte for byte, with the example's own checks beside it."""
    folder = Path(__file__).resolve().parents[1] / "examples/tasks/rotate-nginx-logs/tests"
    checks = (folder / CHECKS_FILE).read_text()
    shipped = {f.path: f.content for f in verifier_files(checks) if f.path != CHECKS_FILE}
    assert sorted(p.name for p in folder.iterdir()) == sorted([*shipped, CHECKS_FILE])
    for name, content in shipped.items():
        assert (folder / name).read_bytes() == content, name


def test_a_forged_combined_probe_is_followed_by_each_probe_to_name_it(tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    first = TrialResult(setup=SetupResult(ok=True), phases=(
        phase(0, name="nop"), phase(1, name="oracle-1"), phase(1, name="oracle-2"),
        phase(1, name="tamper-all-at-once")))
    each = TrialResult(setup=SetupResult(ok=True), phases=tuple(
        phase(1 if name == "plant-ini" else 0, name=f"tamper-{name}") for name in PROBE_NAMES))
    runtime = Replay(first, each)
    report = validate_task(task, runtime, ValidationConfig(checks=("tamper",)))
    assert [p.name for p in runtime.plans[1].phases] == [f"tamper-{n}" for n in PROBE_NAMES]
    assert forged(report) == {"plant-ini"}


def test_a_probe_that_leaves_no_readable_reward_earns_nothing_and_the_report_says_why(
        tmp_path):
    task = read_task_folder(make_task(tmp_path, "good"))
    broken = "reward.json is not valid JSON: Expecting value: line 1 column 1 (char 0)"
    runtime = Replay(TrialResult(setup=SetupResult(ok=True), phases=(
        phase(None, name="tamper-all-at-once", error=broken),)))
    report = validate_task(task, runtime, ValidationConfig(checks=("tamper",)))
    (tamper,) = [v for v in report.verdicts if v.check == "tamper"]
    assert tamper.passed and len(runtime.plans) == 1  # no reward: nothing to name
    assert "1 wrote no readable reward (tamper-all-at-once: reward.json is not valid" \
        in tamper.details
    assert broken in tamper.log



def test_a_graded_task_is_forged_only_above_its_untouched_score(tmp_path):
    """Where the untouched environment already scores 0.2, a probe earning 0.2 earned
    nothing; one earning 0.5 did."""
    task = read_task_folder(make_task(tmp_path, "good"))
    config = ValidationConfig(checks=("nop", "tamper"))
    for earned, hackable in ((0.2, False), (0.5, True)):
        first = TrialResult(setup=SetupResult(ok=True), phases=(
            phase(0.2, name="nop"), phase(earned, name="tamper-all-at-once")))
        each = TrialResult(setup=SetupResult(ok=True), phases=tuple(
            phase(earned if name == "outputs-copied" else 0, name=f"tamper-{name}")
            for name in PROBE_NAMES))
        report = validate_task(task, Replay(first, each), config)
        assert report.accepted != hackable, report
        assert forged(report) == ({"outputs-copied"} if hackable else set())
        (nop,) = [v for v in report.verdicts if v.check == "nop"]
        assert nop.passed and nop.details.startswith("graded: tests give reward 0.2")

# -- against the real engine ---------------------------------------------------------------

NAIVE_CATCHES = {  # family -> (how the naive task is made, the probes that must forge it)
    "shadow": ({"dockerfile": DEBIAN_PATH_DOCKERFILE},
               {"shadow-path", "shadow-sbin", "shadow-shell", "shadow-site", "shadow-stdlib"}),
    "hook": ({}, {"hook-pth", "hook-customize", "hook-stdlib", "hook-pycache"}),
    "hook-login": ({"test_sh": LOGIN_TEST_SH}, {"hook-env"}),
    "hook-tools": ({"test_py": SQLITE_TEST}, {"hook-toolrc"}),
    "plant": ({}, {"plant-conftest", "plant-ini"}),
    "linger": ({}, {"linger-reward", "linger-plant", "linger-hop"}),
    "outputs": ({"test_py": EXISTS_ONLY}, {"outputs-empty", "outputs-copied"}),
    "accounts-by-id": ({"test_py": OWNER_BY_ID, **OWNER_TASK}, {"accounts-first"}),
    "accounts-by-name": ({"test_py": OWNER_BY_NAME, **OWNER_TASK}, {"accounts-append"}),
}


@pytest.mark.parametrize("family", list(NAIVE_CATCHES))
def test_each_family_forges_a_naive_task(tmp_path, validate, family):
    options, expected = NAIVE_CATCHES[family]
    options = {"test_sh": NAIVE_TEST_SH, **options}
    report = validate(make_task(tmp_path, f"naive-{family}", **options), checks=("tamper",),
                      probes="each")
    assert expected <= forged(report), report
    # Harbor deletes stale rewards before the tests: a pre-written one never counts.
    assert not forged(report) & {"reward-txt", "reward-json"}


def test_the_shipped_verifier_withstands_every_probe(tmp_path, validate):
    """The same task with the verifier taskloom ships: no probe earns a reward, while the
    reference solution still does (the defences do not break a correct solution)."""
    report = validate(make_task(tmp_path, "hardened", test_py=SQLITE_TEST),
                      checks=("oracle", "tamper"), probes="each")
    assert report.accepted, report
    assert forged(report) == set()


REWRITTEN = {  # no work done, and a file the verifier runs through changed -> what it names
    # `env`, which starts the checks, made a no-op in place (no PATH shadow): the checks
    # would never run, and exit 0.
    "env": ("cat /usr/bin/true > /usr/bin/env", "/usr/bin/env"),
    # The link every program's loader path runs through, swapped for a copy of the loader
    # (a red-team round's copy read its preload list from a file of its own).
    "loader": ("cp --remove-destination /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "
               "/usr/lib64/ld-linux-x86-64.so.2", "/usr/lib64/ld-linux-x86-64.so.2"),
}


@pytest.mark.parametrize("rewritten", list(REWRITTEN))
def test_a_file_the_verifier_runs_through_changed_is_refused(tmp_path, validate, rewritten):
    """Its change time gives it away before the verifier runs anything but find."""
    command, path = REWRITTEN[rewritten]
    report = validate(make_task(tmp_path, rewritten, solve=f"#!/bin/bash\n{command}\n"),
                      checks=("oracle",))
    (oracle,) = [v for v in report.verdicts if v.check == "oracle"]
    assert not oracle.passed
    assert f"changed after the start: {path}" in oracle.log, oracle.log


@pytest.mark.parametrize(("seed", "verifier"), [(1, "shared"), (2, "separate")])
def test_generated_tasks_withstand_every_probe(tmp_path, validate, seed, verifier):
    backend = backend_for(RunConfig(seed=seed, verifier=verifier))
    draft = None
    for index in range(5):
        try:
            draft = backend.generator.generate(backend.planner.plan(index))
            break
        except NoDraft:
            continue
    assert draft.task.config.verifier.separate == (verifier == "separate")
    folder = write_task_folder(draft.task, tmp_path / draft.task.name)
    report = validate(folder, probes="each")
    assert report.accepted, [(v.check, v.reason, v.details) for v in report.verdicts
                             if not v.passed]
    assert forged(report) == set()


# The agent is root: it may write the account files. A second entry, first in the file, that
# names the id the tree already has; or the account it made moved onto root's id. Neither
# hands the tree to the account; a correct solution that edits the files by hand does.
ALIAS_FIRST = ('uid=$(stat -c %u {tree}); gid=$(stat -c %g {tree})\n'
               'sed -i "1i {user}:x:$uid:$gid::/nonexistent:/usr/sbin/nologin" /etc/passwd\n'
               'sed -i "1i {group}:x:$gid:" /etc/group\n')
MOVED_TO_ROOT = ('groupadd -f {group}\n'
                 'useradd --system --no-create-home --shell /usr/sbin/nologin -g {group} {user}\n'
                 'sed -i "s/^{user}:x:[0-9]*:[0-9]*:/{user}:x:0:0:/" /etc/passwd\n')
# A line only Python's universal-newline reader splits: glibc sees one comment line.
HIDDEN_BY_CR = ("printf '#\\r{user}:x:987:987::/nonexistent:/usr/sbin/nologin\\n' >> /etc/passwd\n"
                "printf '#\\r{group}:x:987:\\n' >> /etc/group\nchown -R 987:987 {tree}\n")
# An account of the image renamed: the tree gets daemon's ids, which own daemon's files.
RENAMED = ("sed -i 's/^daemon:/{user}:/' /etc/passwd\nsed -i 's/^daemon:/{group}:/' /etc/group\n"
           "chown -R 1:1 {tree}\n")
BY_HAND = ("echo '{user}:x:901:901::/nonexistent:/usr/sbin/nologin' >> /etc/passwd\n"
           "echo '{group}:x:901:' >> /etc/group\nchown -R 901:901 {tree}\n")


def generated_task(tmp_path: Path, skills: tuple[str, ...]) -> Path:
    """The folder of the procedural task of `skills` at seed 0."""
    generator = backend_for(RunConfig(seed=0)).generator
    draft = generator.generate(blueprint_for(generator.graph, skills, seed=0))
    return write_task_folder(draft.task, tmp_path / "task")


def assert_rejected_after(validate, folder: Path, tampering: str) -> None:
    """Append `tampering` to the reference solution: the oracle must then earn nothing."""
    solve = folder / "solution" / "solve.sh"
    solve.write_text(solve.read_text() + tampering)
    report = validate(folder, checks=("oracle",))
    assert not report.accepted, [(v.check, v.details) for v in report.verdicts]


@pytest.mark.docker
@pytest.mark.parametrize(("solution", "earns"), [(ALIAS_FIRST, False), (MOVED_TO_ROOT, False),
                                                  (HIDDEN_BY_CR, False), (RENAMED, False),
                                                  (BY_HAND, True)],
                         ids=["alias-first", "moved-to-root", "hidden-by-cr", "renamed",
                              "by-hand"])
def test_owner_checks_want_one_account_per_name_and_id(tmp_path, validate, solution, earns):
    folder = generated_task(tmp_path, ("perms.chown_tree",))
    reference = (folder / "solution" / "solve.sh").read_text()
    user, group, tree = re.search(r"chown -R (\S+):(\S+) (\S+)", reference).groups()
    (folder / "solution" / "solve.sh").write_text(
        "#!/bin/bash\nset -eu\n" + solution.format(user=user, group=group, tree=tree))
    report = validate(folder, checks=("oracle",))
    assert report.accepted == earns, [(v.check, v.details) for v in report.verdicts]


# The reference solution, then files taken away: removed, or one replaced by a symlink to a
# copy with the right mode (a check that skips links and missing files passed both).
ALL_BUT_ONE_REMOVED = ("find {tree} -type f | sort | tail -n +2 | tr '\\n' '\\0' | "
                       "xargs -0 rm -f\n")
ONE_SYMLINKED = ("f=$(find {tree} -type f | sort | head -n 1)\n"
                 "cp -p \"$f\" /var/tmp/kept && ln -sf /var/tmp/kept \"$f\"\n")


@pytest.mark.docker
@pytest.mark.parametrize("tampering", [ALL_BUT_ONE_REMOVED, ONE_SYMLINKED],
                         ids=["all-but-one-removed", "one-symlinked"])
def test_mode_checks_want_every_file_of_the_last_step_in_place(tmp_path, validate, tampering):
    folder = generated_task(tmp_path, ("perms.set_modes",))
    solve = folder / "solution" / "solve.sh"
    tree = re.search(r"find (\S+) -type d", solve.read_text()).group(1)
    assert_rejected_after(validate, folder, tampering.format(tree=tree))


@pytest.mark.docker
def test_a_hard_link_to_the_original_is_not_a_copy(tmp_path, validate):
    folder = generated_task(tmp_path, ("script.make_executable",))
    solve = folder / "solution" / "solve.sh"
    install = next(line for line in solve.read_text().splitlines() if line.startswith("install"))
    source, dest = (shlex.quote(word) for word in shlex.split(install)[-2:])
    # Owner and mode as the reference left them, on a second name of the original.
    assert_rejected_after(validate, folder, f"cp -p {dest} /var/tmp/kept && rm {dest}\n"
                          f"ln {source} {dest}\nchown --reference=/var/tmp/kept {dest}\n"
                          f"chmod --reference=/var/tmp/kept {dest}\n")


# Left running by the agent: replace the checks with one that passes as soon as Harbor has
# uploaded them, before test.sh starts and sweeps (a red team's forgery, reward 1 in shared
# mode under Harbor, Docker or not, before test.sh carried the checks' digest).
CHECKS_SWAPPED = """#!/bin/bash
printf 'def test_ok():\\n    pass\\n' > /var/tmp/forged.py
setsid nohup python3 -c '
import os, time
forged = open("/var/tmp/forged.py").read()
while True:
    try:
        if open("/tests/test_outputs.py").read() != forged:
            time.sleep(0.003)
            open("/tests/.swap", "w").write(forged)
            os.rename("/tests/.swap", "/tests/test_outputs.py")
    except OSError:
        pass
    time.sleep(0.0005)
' </dev/null >/dev/null 2>&1 &
"""


def test_checks_swapped_after_their_upload_are_refused(tmp_path, validate):
    folder = generated_task(tmp_path, ("text.sort_unique",))
    (folder / "solution" / "solve.sh").write_text(CHECKS_SWAPPED)
    report = validate(folder, checks=("oracle",))
    (oracle,) = [v for v in report.verdicts if v.check == "oracle"]
    assert not oracle.passed
    assert "test_outputs.py is not the file the task shipped" in oracle.log, oracle.log


# After the reference solution: the loaded table cut to one row once the next step has read
# it (a non-final import whose checks saw only the columns and types passed that, and a
# forger's one-row table with totals taken from the CSV by awk earned reward 1); the table
# swapped for a view of its rows (a forger's FTS4 table over a view of undeleted rows, and
# a generated column pragma_table_info does not list, passed a check of the names alone).
CUT_TO_ONE_ROW = "sqlite3 {database} 'DELETE FROM {table} WHERE rowid > 1'\n"
SWAPPED_FOR_VIEW = ("sqlite3 {database} 'ALTER TABLE {table} RENAME TO kept; "
                    "CREATE VIEW {table} AS SELECT * FROM kept'\n")


@pytest.mark.docker
@pytest.mark.parametrize("tampering", [CUT_TO_ONE_ROW, SWAPPED_FOR_VIEW],
                         ids=["cut-to-one-row", "swapped-for-a-view"])
def test_a_table_an_earlier_step_loaded_is_checked_whole(tmp_path, validate, tampering):
    folder = generated_task(tmp_path, ("sqlite.import_csv", "sqlite.group_by"))
    solve = folder / "solution" / "solve.sh"
    database, table = re.search(r"sqlite3 (.+?) <<'SQL'\nCREATE TABLE (\"\w+\")",
                                solve.read_text()).groups()
    assert validate(folder, checks=("oracle",)).accepted
    assert_rejected_after(validate, folder, tampering.format(database=database, table=table))


# A find rewritten in place (no directory changes, so no directory stamp moves) that says
# "nothing changed" to the verifier's guard and then swaps env, the checks' launcher, for a
# stub that exits 0 (from a blind forger of a code-repair task: reward 1 with the bug kept).
FIND_IN_PLACE = r'''
mkdir -p /usr/local/lib/.f && cp -p /usr/bin/find /usr/bin/env /usr/local/lib/.f/
cat > /usr/local/lib/.f/env.stub <<'STUB'
#!/bin/sh
case "$*" in *test_outputs.py*) exit 0 ;; esac
exec /usr/local/lib/.f/env "$@"
STUB
cat > /usr/local/lib/.f/find.fake <<'FAKE'
#!/bin/sh
case " $* " in *" -newerct "*)
  [ -f /tests/test.sh ] && cat /usr/local/lib/.f/env.stub > /usr/bin/env
  exit 0 ;; esac
exec /usr/local/lib/.f/find "$@"
FAKE
chmod 755 /usr/local/lib/.f/env.stub /usr/local/lib/.f/find.fake
cat /usr/local/lib/.f/find.fake > /usr/bin/find
'''


def test_a_separate_verifier_never_runs_a_program_the_agent_rewrote_in_place(tmp_path,
                                                                             validate):
    """The verifier's fresh state must not keep a program rewritten in place (the reset
    in one sandbox saw only directories under /usr, so it kept the forged find)."""
    generator = backend_for(RunConfig(seed=0, verifier="separate")).generator
    draft = generator.generate(blueprint_for(generator.graph, ("code.fix_bug",), seed=0))
    assert draft.task.config.verifier.separate
    folder = write_task_folder(draft.task, tmp_path / "task")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\n" + FIND_IN_PLACE)
    report = validate(folder, checks=("oracle",))
    assert not report.accepted, [(v.check, v.details) for v in report.verdicts]
