"""Cron tasks: an entry scheduled in a crontab that already has work in it.

The registry-wide test validates them (nop, oracle, alternative, mutants, probes); these
check how the crontab is read (as Debian's cron reads it) and, in the bwrap sandbox, that
the forgeries of a red-team round on a written tool's and a fixed tool's entry earn 0.
"""

from __future__ import annotations

import os
import pwd
import re

import pytest
from endings import rewards, task_for

from taskloom.generators.procedural.checks import HEADER
from taskloom.generators.procedural.primitives import cron

WRITTEN = ("script.write_tool", "cron.schedule_script")
FIXED = ("code.fix_bug", "cron.schedule_script")


def helpers() -> dict:
    namespace: dict = {}
    exec("\n".join(cron.CRON_HELPERS), namespace)
    return namespace


# Each line above `0 1 * * * /bin/true`, installed with Debian's `crontab` (3.0pl1-162, the
# base image's): refused where it is no setting, as it is no entry either; the values are
# the ones the cron daemon gave a job.
LINES = [
    ("X='a'b'", None),  # after a closing quote, only blanks (a forger's line: no job ran)
    ("MAILTO=", None),  # no value
    ("X= ", None),
    ("X='a", None),  # no closing quote
    ("X = 'a' # c", None),  # no comment after a value
    ("X=a'b", ("X", "a'b")),
    ("FOO-BAR=1", ("FOO-BAR", "1")),
    ("'A B'=x", ("A B", "x")),
    ('X="a"  ', ("X", "a")),
    ('X=""', ("X", "")),
    ("X = y z  ", ("X", "y z")),
    ("'X'='y'", ("X", "y")),
    ("X=='y'", ("X", "='y'")),
    ("=x", ("", "x")),
]


@pytest.mark.parametrize(("line", "read"), LINES)
def test_a_line_sets_a_variable_only_where_cron_reads_it_so(line, read):
    assert helpers()["setting"](line) == read


@pytest.mark.bwrap
def test_the_base_images_crontab_takes_exactly_the_lines_read_as_settings(bwrap_rootfs):
    """The real `crontab` of the base image, run on each line in a sandbox with a spool of
    its own: it installs the table where `setting()` reads a variable and refuses it
    where `setting()` reads none."""
    import subprocess

    for line, read in LINES:
        done = subprocess.run(
            ["bwrap", "--ro-bind", str(bwrap_rootfs.path), "/", "--dev", "/dev", "--proc",
             "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/spool/cron/crontabs",
             "--unshare-net", "crontab", "-"], input=f"{line}\n0 1 * * * /bin/true\n",
            capture_output=True, text=True, timeout=60)
        assert (done.returncode == 0) == (read is not None), (line, done.stderr)
        assert (helpers()["setting"](line) is not None) == (read is not None), line


def entry_check(tmp_path, monkeypatch, text: str, kept: tuple[str, ...] = (),
                kept_entries: int = 0):
    """The body of a CrontabEntry for /opt/job.sh at 5 4 * * *, over the crontab `text` of
    the current user, as a function (the job is a script in `tmp_path`: it must exist)."""
    user = pwd.getpwuid(os.getuid()).pw_name
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/sh\n")
    job.chmod(0o755)
    table = tmp_path / user
    table.write_text(text.replace("/opt/job.sh", str(job)))
    table.chmod(0o600)
    monkeypatch.setattr(cron, "CRONTABS", str(tmp_path))
    check = cron.CrontabEntry("t", user=user, command=(str(job),), schedule="5 4 * * *",
                              kept=kept, kept_entries=kept_entries)
    namespace: dict = {"IMAGE_USERS": {user: os.getuid()}, "IMAGE_GROUPS": {}}
    exec(HEADER, namespace)
    exec("def run():\n" + "\n".join("    " + line for line in check.body()), namespace)
    return namespace["run"]


KEPT = ("MAILTO=ops@example.com", "# existing jobs, keep them", "7 3 * * * /usr/bin/find /tmp")
NEW = "5 4 * * * /opt/job.sh"


@pytest.mark.parametrize(("text", "passes"), [
    ([*KEPT, NEW], True),
    (["PATH=/usr/bin:/bin:/usr/local/bin", *KEPT, "SHELL=/bin/bash", NEW], True),
    ([NEW, *KEPT], True),  # the new entry first: it runs without the MAILTO, which is free
    ([*KEPT[1:], NEW, KEPT[0]], False),  # the MAILTO moved below every entry
    ([KEPT[0], 'MAILTO=""', *KEPT[1:], NEW], False),  # overridden
    ([KEPT[0], "SHELL=/bin/false", *KEPT[1:], "SHELL=/bin/sh", NEW], False),
    ([KEPT[0], "PYTHONPATH=/tmp", *KEPT[1:], NEW], False),
    ([*KEPT, "PYTHONHOME=/nonexistent", NEW], False),
    ([*KEPT, "X='a'b'", NEW], False),
])
def test_the_kept_entries_keep_what_they_run_with(tmp_path, monkeypatch, text, passes):
    """Every variable set above a kept entry still is, with its value, and what is set above
    it is as safe as for the new entry (forgers: a MAILTO moved last or emptied, a
    `SHELL=/bin/false` above the old jobs, a `PYTHONHOME` that broke a Python tool)."""
    run = entry_check(tmp_path, monkeypatch, "\n".join(text) + "\n", KEPT, 1)
    if passes:
        run()
    else:
        with pytest.raises(AssertionError):
            run()


def test_no_folder_first_on_the_path_shadows_a_system_program(tmp_path, monkeypatch):
    """A PATH may put other folders before /usr/bin and /bin, but none holding a program of
    theirs (forger: a `sed` that did nothing, first on the entry's PATH)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "report-tool").write_text("#!/bin/sh\n")
    table = tmp_path / "tables"
    table.mkdir()
    above = f"PATH={tools}:/usr/bin:/bin\n"
    entry_check(table, monkeypatch, above + NEW + "\n")()
    (tools / "sed").write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(AssertionError, match="shadows"):
        entry_check(table, monkeypatch, above + NEW + "\n")()
    entry_check(table, monkeypatch, f"PATH=/usr/bin:/bin:{tools}\n" + NEW + "\n")()


def test_a_maintenance_script_is_scheduled_for_root_and_a_tool_for_an_account_too():
    """A first step's script (root's own maintenance, mode 0700 or 0744) went in a service
    account's crontab in 17 of 40 seeds: a job cron could never run."""
    users = {re.search(r"crontab of the user `([^`]+)`|(root)'s crontab",
                       task_for(("cron.schedule_script",), seed).instruction).group(0)
             for seed in range(20)}
    assert users == {"root's crontab"}, users
    written = {seed for seed in range(10) if "crontab of the user" in
               task_for(WRITTEN, seed).instruction}
    assert 3 <= len(written) <= 8, written


@pytest.mark.bwrap
def test_a_written_tools_entry_forged_earns_nothing(bwrap_runtime):
    """Red team on a tool's entry in a service account's crontab (each earned 1 before; a
    tool only root may run and an input the account may not read are mistakes, not
    forgeries, and cron's job fails on them all the same)."""
    table = "crontab -u ops-jobs -l > /root/table\n"
    install = "crontab -u ops-jobs /root/table\n"
    found = rewards(bwrap_runtime, WRITTEN, 0, {
        "reference": "",
        "path-first": "{ echo PATH=/usr/local/bin:/usr/bin:/bin; crontab -u ops-jobs -l; } "
                      "| crontab -u ops-jobs -\n",
        "mailto-moved-last": table + "grep -v '^MAILTO=' /root/table > /root/t2\n"
                             "grep '^MAILTO=' /root/table >> /root/t2\n"
                             "crontab -u ops-jobs /root/t2\n",
        "shell-false-above-kept": table + "sed -i '/^MAILTO=/a SHELL=/bin/false' /root/table\n"
                                  + install,
        "expired": "usermod -e 1 ops-jobs\n",
        "root-only-tool": "chmod 700 /srv/ops/output/line-range.sh\n",
        "unreadable-input": "chmod 600 /etc/ops/services.ini\n",
        "poison-line": "printf '%s\\n' \"X='a'b'\" >> /var/spool/cron/crontabs/ops-jobs\n",
        "shadowing-sed": "mkdir -p /srv/ops/output/bin\n"
                         "printf '#!/bin/sh\\nexit 0\\n' > /srv/ops/output/bin/sed\n"
                         "chmod 755 /srv/ops/output/bin/sed\n"
                         "{ echo PATH=/srv/ops/output/bin:/usr/bin:/bin; "
                         "crontab -u ops-jobs -l; } | crontab -u ops-jobs -\n",
    })
    assert found == {"reference": 1.0, "path-first": 1.0, "mailto-moved-last": 0.0,
                     "shell-false-above-kept": 0.0, "expired": 0.0, "root-only-tool": 0.0,
                     "unreadable-input": 0.0, "poison-line": 0.0,
                     "shadowing-sed": 0.0}, found


@pytest.mark.bwrap
def test_a_fixed_python_tools_entry_under_pythonhome_earns_nothing(bwrap_runtime):
    found = rewards(bwrap_runtime, FIXED, 0, {
        "reference": "",
        "pythonhome": "{ crontab -u ops-jobs -l | grep -v '^[0-9]'; echo "
                      "PYTHONHOME=/nonexistent; crontab -u ops-jobs -l | grep '^[0-9]'; } "
                      "> /root/table\ncrontab -u ops-jobs /root/table\n",
    })
    assert found == {"reference": 1.0, "pythonhome": 0.0}, found
