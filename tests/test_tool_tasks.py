"""Tool tasks: a command-line tool the agent writes (and may install on the PATH), judged by
running it as the people who use it would.

The registry-wide test validates these tasks (nop, oracle, alternative, mutants, probes);
these replay, in the bwrap sandbox, what a red team did to earn the reward with a tool that
works only under the checks or that its users cannot run, and honest variants that must
still earn it.
"""

from __future__ import annotations

import re

import pytest
from endings import rewards, task_for

# An ACL that leaves the owning group nothing while `stat` still shows 0750 (its mask).
ACL_LOCKS_OUT_THE_GROUP = """python3 - <<'PY'
import os, struct
entries = [(0x01, 7, 0xffffffff), (0x04, 0, 0xffffffff), (0x08, 0, 0), (0x10, 5, 0xffffffff),
           (0x20, 0, 0xffffffff)]
os.setxattr("{command}", "system.posix_acl_access",
            struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries))
PY
"""


@pytest.mark.bwrap
def test_an_installed_command_runs_for_its_group_by_name(bwrap_runtime):
    """`top-lines` installed 0750 root:staff: the checks ran a copy as nobody, so a command
    staff cannot run (an ACL, a closed /usr/local/bin), one a login shell or sudo finds
    another of first, a tool that works only as nobody or with HOME beside it, and the
    original replaced by a link to the copy, all earned 1 (forger). A tool file only root
    may run is still a tool."""
    tool, command = "/srv/ops/output/top-lines.sh", "/usr/local/bin/top-lines"
    detect = "sed -i '2i {test} || exit 0' " + f"{tool} {command}\n"
    found = rewards(bwrap_runtime, ("text.sort_unique", "script.write_tool",
                                    "script.make_executable"), 2, {
        "reference": "",
        "tool-private-to-root": f"chmod 0700 {tool}\n",
        "acl-locks-out-staff": ACL_LOCKS_OUT_THE_GROUP.format(command=command),
        "bin-closed": "chmod 0700 /usr/local/bin\n",
        "shadow-for-sudo": "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/sbin/top-lines\n"
                           "chmod 0755 /usr/local/sbin/top-lines\n",
        "only-as-nobody": detect.format(test='[ "$EUID" = 65534 ]'),
        "only-with-home-beside-it": detect.format(test='[ "$HOME" = "${0%/*}" ]'),
        "original-now-a-link": f"rm {tool}\nln -s {command} {tool}\n",
    })
    assert found == {"reference": 1.0, "tool-private-to-root": 1.0, "acl-locks-out-staff": 0.0,
                     "bin-closed": 0.0, "shadow-for-sudo": 0.0, "only-as-nobody": 0.0,
                     "only-with-home-beside-it": 0.0, "original-now-a-link": 0.0}, found


def rewritten(path: str, tool: str, old: str, new: str) -> str:
    """An ending that rewrites the tool at `path` with `old` replaced by `new`."""
    assert old in tool, old
    return f"cat > {path} <<'TASKLOOM_TOOL'\n{tool.replace(old, new)}TASKLOOM_TOOL\n"


@pytest.mark.bwrap
def test_a_tool_is_held_to_every_rule_of_its_contract(bwrap_runtime):
    """`line-range`: a red team's tool printed on stdout on a usage error, took `2+1` as a
    number (bash arithmetic, which also runs code), read a file it may not read as empty,
    dropped backslashes (`read` without -r), and left a last line unended (`sed -n` alone
    copies a missing final newline, as the reference itself did); round 2's left FILE
    unquoted, refused FIRST = LAST, began with `cd /` and read 010 as octal: each earned 1."""
    skills, seed = ("text.sort_unique", "script.write_tool"), 0
    task = task_for(skills, seed)
    solution = task.file("solution", "solve.sh").content.decode()
    tool = re.search(r"<<'TASKLOOM_TOOL'\n(.*?)TASKLOOM_TOOL", solution, re.DOTALL).group(1)
    path = "/srv/ops/output/line-range.sh"
    usage = 'echo "usage: $0 FIRST LAST FILE" >&2; exit 2; }'
    checked = ('case "$1$2" in *[!0-9]*) ' + usage.replace("; }", ";; esac") + "\n"
               '[ "$1" -ge 1 ] && [ "$1" -le "$2" ] || { ' + usage + "\n")
    found = rewards(bwrap_runtime, skills, seed, {
        "reference": "",
        "usage-on-stdout": rewritten(path, tool, "{ " + usage, "{ echo; " + usage),
        "arithmetic-numbers": rewritten(path, tool, checked,
                                        "(( $1 >= 1 && $1 <= $2 )) 2>/dev/null || { "
                                        + usage + "\n"),
        "exists-is-not-readable": rewritten(path, tool, '[ -r "$3" ]', '[ -e "$3" ]'),
        "backslashes-dropped": rewritten(
            path, tool, 'sed -n "$1,$2p" "$3" | sed \'$a\\\'',
            'n=0; while IFS= read line || [ -n "$line" ]; do n=$((n + 1)); '
            '[ "$n" -ge "$1" ] && [ "$n" -le "$2" ] && printf "%s\\n" "$line"; '
            'done < "$3"; exit 0'),
        "last-line-unended": rewritten(path, tool, " | sed '$a\\'", ""),
        "file-unquoted": rewritten(path, tool, '"$3" |', "$3 |"),
        "first-equal-to-last-refused": rewritten(path, tool, '-le "$2"', '-lt "$2"'),
        "starts-in-root": rewritten(path, tool, "#!/bin/bash\n", "#!/bin/bash\ncd /\n"),
        "leading-zero-octal": rewritten(path, tool, 'sed -n "$1,$2p"',
                                        'sed -n "$(($1)),$(($2))p"'),
    })
    assert found == {"reference": 1.0, "usage-on-stdout": 0.0, "arithmetic-numbers": 0.0,
                     "exists-is-not-readable": 0.0, "backslashes-dropped": 0.0,
                     "last-line-unended": 0.0, "file-unquoted": 0.0,
                     "first-equal-to-last-refused": 0.0, "starts-in-root": 0.0,
                     "leading-zero-octal": 0.0}, found


@pytest.mark.bwrap
def test_a_ranking_tool_is_held_to_its_contract(bwrap_runtime):
    """`top-lines` (red team, round 2): counts sorted as text, a line of a tab counted, the
    top line printed for N = 0, and lines merged that differ by a trailing space, each
    earned 1 while the fixture's counts had one digit and its blank lines no tab."""
    skills, seed = ("text.sort_unique", "script.write_tool", "script.make_executable"), 2
    task = task_for(skills, seed)
    solution = task.file("solution", "solve.sh").content.decode()
    tool = re.search(r"<<'TASKLOOM_TOOL'\n(.*?)TASKLOOM_TOOL", solution, re.DOTALL).group(1)
    path, count = "/srv/ops/output/top-lines.sh", "LC_ALL=C sort -s -k1,1nr"
    installed = f"install -m 0750 -o root -g staff {path} /usr/local/bin/top-lines\n"
    found = rewards(bwrap_runtime, skills, seed, {
        name: rewritten(path, tool, old, new) + installed for name, (old, new) in {
            "reference": (count, count),
            "counts-as-text": (count, "LC_ALL=C sort -s -k1,1r"),
            "a-tab-is-not-blank": ("'^[[:space:]]*$'", "'^ *$'"),
            "zero-prints-the-top": ('head -n "$1"', 'sed -n "1,${1}p"'),
            "trailing-space-merged": ('"$2" |', '"$2" | sed "s/ *$//" |'),
        }.items()})
    assert found == {"reference": 1.0, "counts-as-text": 0.0, "a-tab-is-not-blank": 0.0,
                     "zero-prints-the-top": 0.0, "trailing-space-merged": 0.0}, found
