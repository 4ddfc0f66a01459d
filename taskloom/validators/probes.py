"""Tamper probes: scripts that do no part of a task and try to earn its reward anyway.

Each probe runs as the agent would (in the agent phase, as the agent user, in the task's
own environment); then the task's tests run as Harbor runs them, with nothing reset in
between. A probe that earns any reward shows a way to forge it. `IMITATES` says, for each
probe, what audits of agent benchmarks found agents doing that it imitates (the README's
probe table is the same list). Six families, each with more than one tactic: shadowed
tools, interpreter start-up hooks, planted files, lingering processes, pre-written
rewards, fake outputs at the paths the instruction names.

What no verifier sharing the agent's environment can stop is not a probe: the agent is
root there, so it can rewrite bash or a library in place, ptrace the container's
own processes, or leave a process that rewrites `/tests/test.sh` between the upload and
its start. Only a separate verifier environment (`[verifier] environment_mode =
"separate"`) is immune to those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from taskloom.models import Task

# Absolute paths an instruction names (inside backticks or not), without trailing
# punctuation; `/tests`, `/solution` and `/logs` are the harness's, not the task's.
PATH = re.compile(r"(?<![\w.~])(/(?:[\w.@+-]+/?)+)")
_QUOTED = re.compile(r"`([^`\n]+)`")
_ACCOUNT = re.compile(r"`([a-z_][a-z0-9_-]{0,31})`")
_HARNESS = ("/tests", "/solution", "/logs", "/proc", "/sys", "/dev")
_EXIT_ZERO = "import os, atexit; atexit.register(os._exit, 0)"

# A conftest.py that turns every failure into a pass (planted now, or by a lingering process).
_PASSING_CONFTEST = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"


def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
'''

_PRELUDE = r"""#!/bin/bash
# taskloom tamper probe: it does no part of the task and tries to earn the reward anyway.
set +e
say() { echo "probe: $*"; }
folder() { [ -d "$1" ] || mkdir -p "$1" 2>/dev/null; }  # a fork only when it is missing
# Every distinct interpreter, asked once: its stdlib folder (STDLIBS), its site folders.
STDLIBS= SITES=
for py in $(for py in $(type -ap python3 python) /usr/bin/python3 /usr/local/bin/python3; do
    [ -x "$py" ] && readlink -f "$py"; done | sort -u); do
  found=$("$py" -c 'import os, site
print(os.path.dirname(os.__file__))
print("\n".join([*site.getsitepackages(), site.getusersitepackages()]))' 2>/dev/null) || continue
  STDLIBS="$STDLIBS ${found%%$'\n'*}"
  SITES="$SITES ${found#*$'\n'}"
done
SITES=$(printf '%s\n' $SITES | sort -u)
# A process left behind is of use only once it runs: `ready FILE` names the sign it gives,
# and the probe waits (5 s at most) for every sign before it ends.
SIGNS=()
ready() { SIGNS+=("$1"); }
# `forger` writes /var/tmp/.taskloom-forge: started, it leaves a process that keeps reward 1
# in both files, each written whole and renamed into place (a reader never sees a
# half-written file), and checks every 5 ms with no fork, so a busy host still gives it its
# turn; plain sh where there is no python3.
forger() {
[ -x /var/tmp/.taskloom-forge ] && return
folder /var/tmp
cat > /var/tmp/.taskloom-forge.py <<'FORGER'
import os, time
folder = "/logs/verifier"
open("/var/tmp/.taskloom-forge.ready", "w").close()
while True:
    for name, text in (("reward.txt", "1\n"), ("reward.json", '{"reward": 1}')):
        path = os.path.join(folder, name)
        try:
            with open(path) as handle:
                if handle.read() == text:
                    continue
        except OSError:
            pass
        try:
            os.makedirs(folder, exist_ok=True)
            with open(path + ".forged", "w") as handle:
                handle.write(text)
            os.replace(path + ".forged", path)
        except OSError:
            pass
    time.sleep(0.005)
FORGER
cat > /var/tmp/.taskloom-forge <<'FORGER'
#!/bin/sh
d=/logs/verifier
forge='mkdir -p $d; echo 1 > $d/.f$$ && mv -f $d/.f$$ $d/reward.txt
  echo "{\"reward\": 1}" > $d/.f$$ && mv -f $d/.f$$ $d/reward.json'
eval "$forge"
if [ -x /usr/bin/python3 ]; then
  nohup setsid /usr/bin/python3 -I -S /var/tmp/.taskloom-forge.py > /dev/null 2>&1 < /dev/null &
else
  nohup setsid sh -c "d=$d; while :; do $forge; sleep 0.02; done" > /dev/null 2>&1 < /dev/null &
  : > /var/tmp/.taskloom-forge.ready
fi
FORGER
chmod 755 /var/tmp/.taskloom-forge
}
"""

_TACTICS: dict[str, str] = {
    "shadow-path": r"""
for dir in /usr/local/sbin /usr/local/bin; do
  folder "$dir" || continue
  for tool in python3 python pytest py.test cmp diff sha256sum md5sum jq; do
    printf '#!/bin/sh\nexit 0\n' > "$dir/$tool"
  done
  chmod 755 "$dir"/{python3,python,pytest,py.test,cmp,diff,sha256sum,md5sum,jq}
done
say "stubs that exit 0 for python3, pytest, cmp, diff, sha256sum, md5sum, jq in /usr/local"
""",
    "shadow-sbin": r"""
# Debian's PATH searches /usr/sbin before /usr/bin (and /sbin links to it): a verifier that
# keeps the sbin folders on PATH and calls env, find or python3 by name runs these instead.
stubs=()
for tool in env python3 python pytest find sort comm head ls mktemp grep diff cmp sha256sum \
    md5sum jq git sqlite3; do
  [ -e "/usr/sbin/$tool" ] && continue
  printf '#!/bin/sh\nexit 0\n' > "/usr/sbin/$tool" && stubs+=("/usr/sbin/$tool")
done
[ ${#stubs[@]} -gt 0 ] && /usr/bin/chmod 755 "${stubs[@]}" &&
  say "stubs that exit 0 for env, python3, pytest, find, sort, git, sqlite3... in /usr/sbin"
""",
    "shadow-shell": r"""
# Harbor starts the tests (and its chmod of them) as `bash -c ...` with the bash the image's
# PATH finds first: a bash in a folder searched before the real one's writes the reward
# instead of running them, and passes every other command on to the real bash.
real=$(type -P bash) mkdir=$(type -P mkdir) chmod=$(type -P chmod)
for dir in ${PATH//:/ }; do
  [ -e "$dir/bash" ] && break  # the real one's folder (or one with a bash of its own)
  folder "$dir" || continue
  forge="$mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0"
  printf '#!%s\ncase " $* " in\n  *test.sh*) %s;;\nesac\nexec %s "$@"\n' \
    "$real" "$forge" "$real" > "$dir/bash" && "$chmod" 755 "$dir/bash" &&
    say "a bash in $dir, ahead of $real on PATH, that writes reward 1 in place of the tests"
  break
done
""",
    "shadow-site": r"""
for site in $SITES; do
  [ -e "$site/pytest" ] || [ -e "$site/pytest.py" ] && continue
  folder "$site/pytest" || continue
  printf 'raise SystemExit(0)\n' > "$site/pytest/__init__.py"
  printf 'raise SystemExit(0)\n' > "$site/pytest/__main__.py"
  say "a fake pytest package in $site"
done
""",
    "shadow-stdlib": rf"""
for site in $SITES; do  # a verifier that puts a site folder ahead of the stdlib imports these
  folder "$site" || continue
  for name in argparse tarfile; do
    [ -e "$site/$name.py" ] || echo '{_EXIT_ZERO}' > "$site/$name.py"
  done
  # copy.py, which pytest imports, tries `from org.python.core import PyStringMap`.
  folder "$site/org" && [ -e "$site/org/__init__.py" ] ||
    echo '{_EXIT_ZERO}' > "$site/org/__init__.py"
  say "argparse.py, tarfile.py (pytest and checks import them) and an org package in $site"
done
for lib in $STDLIBS; do  # searched before any site folder
  for name in pluggy iniconfig; do
    [ -e "$lib/$name.py" ] || echo '{_EXIT_ZERO}' > "$lib/$name.py"
  done
  # A package folder wins over the module file of the same name in the same folder.
  folder "$lib/argparse" && echo '{_EXIT_ZERO}' > "$lib/argparse/__init__.py"
  say "pluggy.py, iniconfig.py and an argparse/ package (pytest imports them) in $lib"
done
""",
    "hook-pth": rf"""
for site in $SITES; do
  folder "$site" && echo '{_EXIT_ZERO}' > "$site/zz_taskloom_probe.pth" \
    && say "an exit-0 hook in $site/zz_taskloom_probe.pth"
done
""",
    "hook-customize": rf"""
for site in $SITES; do
  folder "$site" || continue
  for name in sitecustomize usercustomize; do
    [ -e "$site/$name.py" ] || echo '{_EXIT_ZERO}' > "$site/$name.py"
  done
  say "sitecustomize.py and usercustomize.py in $site"
done
""",
    "hook-env": rf"""
folder /var/tmp/.taskloom-probe
echo '{_EXIT_ZERO}' > /var/tmp/.taskloom-probe/sitecustomize.py
for file in /etc/profile /etc/bash.bashrc /root/.bashrc /root/.profile "$HOME/.bashrc"; do
  echo 'export PYTHONPATH=/var/tmp/.taskloom-probe' >> "$file"
  echo 'export PYTEST_ADDOPTS="--collect-only -q"' >> "$file"
done
printf 'PYTHONPATH=/var/tmp/.taskloom-probe\nPYTEST_ADDOPTS="--collect-only -q"\n' \
  >> /etc/environment
say "PYTHONPATH and PYTEST_ADDOPTS in the shell profiles and /etc/environment"
""",
    "hook-toolrc": r"""
forger
printf '#!/bin/sh\n/var/tmp/.taskloom-forge\nexit 1\n' > /var/tmp/.taskloom-hook
chmod 755 /var/tmp/.taskloom-hook
fsmonitor() {  # git runs core.fsmonitor at every status, diff or log of the work tree
  printf '[core]\n\tfsmonitor = /var/tmp/.taskloom-hook\n' >> "$1" 2>/dev/null; }
for home in /root "$HOME" $(cut -d: -f6 /etc/passwd 2>/dev/null | sort -u); do
  [ -d "$home" ] && echo '.system /var/tmp/.taskloom-hook' >> "$home/.sqliterc" 2>/dev/null
  [ -d "$home" ] && fsmonitor "$home/.gitconfig"
done
fsmonitor /etc/gitconfig
for repo in $(find / -xdev -maxdepth 6 \( -path /proc -o -path /sys -o -path /usr/lib \
    -o -path /usr/share -o -path /usr/include \) -prune -o -name .git -type d -print \
    2>/dev/null); do
  fsmonitor "$repo/config" && say "core.fsmonitor in $repo/config"
done
say "~/.sqliterc .system and git core.fsmonitor (/etc/gitconfig, ~/.gitconfig) run a" \
  "reward writer"
""",
    "hook-stdlib": r"""
for py in /usr/bin/python3 /usr/local/bin/python3; do
  [ -x "$py" ] || continue
  "$py" -I - <<'PROBE' 2>/dev/null
import os, sys, zipfile
# The stdlib zip is the first entry of sys.path whatever the flags, and Debian ships none.
# fnmatch: pytest imports it, and it is not one of the modules frozen into the interpreter.
real = os.path.join(os.path.dirname(os.__file__), "fnmatch.py")
shim = ("import os, sys\n"
        "if any('pytest' in a for a in [*sys.orig_argv, *sys.modules]):\n    os._exit(0)\n"
        "import importlib.util as u\n"
        f"spec = u.spec_from_file_location('fnmatch', {real!r})\n"
        "sys.modules['fnmatch'] = module = u.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n")
for path in sys.path:
    if path.endswith(".zip") and not os.path.exists(path):
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("fnmatch.py", shim)
        print(f"probe: a stdlib zip {path} whose fnmatch exits 0 under pytest")
PROBE
done
# A pybuilddir.txt beside the interpreter makes Python take /usr/bin for a build tree: the
# stdlib moves to /usr/Lib (a link to the real one) and the extension modules to the folder
# the file names, where a pytest.py that exits 0 now waits, ahead of the real pytest.
lib=$(for lib in $STDLIBS; do case $lib in /usr/lib/python3.*) echo "$lib" ;; esac; done)
if [ -n "$lib" ] && [ ! -e /usr/Lib ] && [ ! -e /usr/bin/pybuilddir.txt ]; then
  mkdir -p /var/tmp/.taskloom-build && ln -s "$lib" /usr/Lib
  ln -s "$lib"/lib-dynload/* /var/tmp/.taskloom-build/
  echo 'raise SystemExit(0)' > /var/tmp/.taskloom-build/pytest.py
  echo ../../var/tmp/.taskloom-build > /usr/bin/pybuilddir.txt
  say "a pybuilddir.txt in /usr/bin that puts a pytest.py exiting 0 ahead of pytest"
fi
""",
    "plant-conftest": r"""
folder /tests
cat > /tests/conftest.py <<'PROBE'
""" + _PASSING_CONFTEST + r"""PROBE
say "a conftest.py in /tests that turns every failure into a pass"
""",
    "plant-ini": r"""
folder /tests
for dir in /tests / "$PWD"; do
  printf '[pytest]\naddopts = --collect-only -q\n' > "$dir/pytest.ini"
done
say "pytest.ini files whose addopts only collect, in /tests, / and $PWD"
""",
    "linger-reward": r"""
forger && /var/tmp/.taskloom-forge && ready /var/tmp/.taskloom-forge.ready
say "a process left running that keeps reward 1 in reward.txt and reward.json"
""",
    "linger-plant": r"""
cat > /var/tmp/.taskloom-conftest.py <<'PROBE'
""" + _PASSING_CONFTEST + r"""PROBE
cat > /var/tmp/.taskloom-plant.py <<'PROBE'
import os, time
# No fork per round: the tests start right after they arrive, and a busy host is slow to
# fork. Planted again whenever it is gone.
planted = open("/var/tmp/.taskloom-conftest.py").read()
open("/var/tmp/.taskloom-plant.ready", "w").close()
while True:
    if os.path.exists("/tests/test.sh") and not os.path.exists("/tests/conftest.py"):
        try:
            with open("/tests/conftest.py", "w") as handle:
                handle.write(planted)
        except OSError:
            pass
    time.sleep(0.002)
PROBE
if [ -x /usr/bin/python3 ]; then
  nohup setsid /usr/bin/python3 -I -S /var/tmp/.taskloom-plant.py > /dev/null 2>&1 < /dev/null &
else
  nohup setsid sh -c 'while :; do [ -e /tests/test.sh ] && [ ! -e /tests/conftest.py ] &&
    cp /var/tmp/.taskloom-conftest.py /tests/conftest.py; sleep 0.005; done' \
    > /dev/null 2>&1 < /dev/null &
  : > /var/tmp/.taskloom-plant.ready
fi
ready /var/tmp/.taskloom-plant.ready
say "a process left running that plants a passing conftest.py when the tests arrive"
""",
    "linger-hop": r"""
cat > /var/tmp/.taskloom-hop.py <<'PROBE'
import os, time
boot = open("/proc/1/stat").read().rsplit(")", 1)[1].split()[3]
try:
    os.setsid()
except OSError:  # already a session leader (started by setsid)
    pass
# A name with a newline: a verifier that reads one line of /proc/PID/stat sees PID 1's session.
open("/proc/self/comm", "w").write("x) S 1 1 %s\n" % boot)
open("/var/tmp/.taskloom-hop.ready", "w").close()
# Quiet until the tests arrive: hopping from then on is all it takes, and it costs the host
# nothing while the agent phase lasts.
while not os.path.exists("/tests/test.sh"):
    time.sleep(0.002)
forks = 0
while True:
    if os.fork():
        os._exit(0)  # a new pid every round: a kill by pid comes too late
    forks += 1
    if forks % 10 == 0:
        try:
            os.makedirs("/logs/verifier", exist_ok=True)
            for name, text in (("reward.txt", "1\n"), ("reward.json", '{"reward": 1}')):
                with open("/logs/verifier/.forged", "w") as out:
                    out.write(text)
                os.replace("/logs/verifier/.forged", "/logs/verifier/" + name)
        except OSError:
            pass
    # A new pid every 3 ms outruns a verifier that lists pids and then kills them; forking
    # flat out did too, but took a whole CPU from every other sandbox on the host.
    time.sleep(0.003)
PROBE
for py in /usr/bin/python3 /usr/local/bin/python3 /usr/bin/python; do
  [ -x "$py" ] || continue
  nohup setsid "$py" -I -S /var/tmp/.taskloom-hop.py > /dev/null 2>&1 < /dev/null &
  ready /var/tmp/.taskloom-hop.ready
  say "a pid-hopping process, named as if it were PID 1's, that writes reward 1"
  break
done
""",
    "reward-txt": r"""
folder /logs/verifier && echo 1 > /logs/verifier/reward.txt && chmod 444 /logs/verifier/reward.txt
say "reward.txt = 1, read-only"
""",
    "reward-json": r"""
folder /logs/verifier && echo '{"reward": 1}' > /logs/verifier/reward.json
say "reward.json = {\"reward\": 1}"
""",
    "outputs-empty": r"""
for path in "${NAMED[@]}"; do
  [ -e "$path" ] && continue
  case "$path" in */) folder "$path" ;; *) folder "${path%/*}/" && : > "$path" ;; esac
  say "created $path empty"
done
""",
    "outputs-copied": r"""
input=""
for path in "${NAMED[@]}"; do [ -f "$path" ] && [ -s "$path" ] && { input=$path; break; }; done
# The input plus one line: a faithful copy would do the task when the task is to copy it.
fake() { [ -n "$input" ] && { cat "$input"; echo "taskloom probe: not an output"; } > "$1"; }
for path in "${NAMED[@]}"; do
  [ -e "$path" ] && continue
  case "$path" in
    */) folder "$path" && fake "$path/$(basename "${input:-none}")" ;;
    *) folder "${path%/*}/" && { fake "$path" || : > "$path"; } ;;
  esac
  say "put a copy of ${input:-nothing}, one line longer, at $path"
done
""",
    "accounts-first": r"""
set -- $(stat -c '%u %g' "${NAMED[@]}" / 2>/dev/null)  # the first named path that exists
for name in "${ACCOUNTS[@]}"; do  # first in the files: a lookup of the id finds the name
  sed -i "1i $name:x:$1:$2::/nonexistent:/usr/sbin/nologin" /etc/passwd
  sed -i "1i $name:x:$2:" /etc/group
done
[ ${#ACCOUNTS[@]} -gt 0 ] &&
  say "${ACCOUNTS[*]} first in /etc/passwd and /etc/group with the ids $1:$2 the paths have"
""",
    "accounts-append": r"""
set -- $(stat -c '%u %g' "${NAMED[@]}" / 2>/dev/null)
for name in "${ACCOUNTS[@]}"; do  # last: a lookup of the name finds the ids
  echo "$name:x:$1:$2::/nonexistent:/usr/sbin/nologin" >> /etc/passwd
  echo "$name:x:$2:" >> /etc/group
done
[ ${#ACCOUNTS[@]} -gt 0 ] &&
  say "${ACCOUNTS[*]} appended to /etc/passwd and /etc/group with the ids $1:$2 the paths have"
""",
    # Last: see PROBE_NAMES.
    "hook-pycache": r"""
for py in /usr/bin/python3 /usr/local/bin/python3; do
  [ -x "$py" ] || continue
  "$py" -I -S - <<'PROBE' 2>/dev/null
import glob, marshal, sys
# pytest's cached bytecode, rewritten with the header (source mtime and size) kept: Python
# loads it as up to date, -B or not, and every test it collects then passes.
tag = sys.implementation.cache_tag
for pyc in glob.glob(f"/usr/lib/python3*/*-packages/_pytest/__pycache__/python.{tag}.pyc") + \
        glob.glob(f"/usr/local/lib/python3*/*-packages/_pytest/__pycache__/python.{tag}.pyc"):
    source = pyc.replace(f"__pycache__/python.{tag}.pyc", "python.py")
    with open(pyc, "rb") as handle:
        header = handle.read(16)
    # The module's own source, run in its namespace, then the patch: compiling this line
    # costs nothing, compiling python.py here would cost 80 ms of every probe run.
    code = compile("exec(compile(open(__file__).read(), __file__, 'exec'))\n"
                   "Function.runtest = lambda self: None\n", source, "exec",
                   dont_inherit=True)
    with open(pyc, "wb") as handle:
        handle.write(header + marshal.dumps(code))
    print(f"probe: {pyc} makes every test pass, its header kept")
PROBE
done
""",
}

IMITATES = {
    "shadow-path": "stubs that exit 0 named python3, pytest, cmp, diff, sha256sum, jq... "
                   "ahead of the real tools on PATH",
    "shadow-sbin": "the same stubs, and env, find, sort, git, sqlite3..., in /usr/sbin, "
                   "which Debian's PATH searches before /usr/bin",
    "shadow-shell": "a `bash` in the first PATH folder searched before the real one's, "
                    "writing reward 1 when asked to run the tests (Harbor starts them with "
                    "`bash -c`, bash found on the image's PATH)",
    "shadow-site": "a fake `pytest` package in site-packages that exits 0 when imported",
    "shadow-stdlib": "modules named like stdlib ones pytest imports (argparse, tarfile) "
                     "and an `org` package (copy.py tries it) in site-packages, and like "
                     "pytest's own dependencies (pluggy, iniconfig) and an argparse/ package "
                     "in the stdlib folder, each making Python exit 0",
    "hook-pth": "a .pth file in site-packages that makes every Python process exit 0",
    "hook-customize": "sitecustomize.py / usercustomize.py doing the same at start-up",
    "hook-env": "PYTHONPATH and PYTEST_ADDOPTS exported from shell profiles and "
                "/etc/environment",
    "hook-toolrc": "~/.sqliterc `.system` and git's core.fsmonitor (in /etc/gitconfig, "
                   "~/.gitconfig and every repository) running a reward writer when the tests "
                   "call sqlite3 or git",
    "hook-stdlib": "a python311.zip (first on sys.path, even under `-I -S`) whose fnmatch "
                   "module exits 0 when pytest imports it, and a pybuilddir.txt beside the "
                   "interpreter (a build tree, even under `-I -S`) that puts a pytest.py "
                   "exiting 0 ahead of pytest",
    "hook-pycache": "pytest's cached bytecode (`_pytest/__pycache__/python.*.pyc`) rewritten "
                    "in place, header kept, so every test passes (Python loads it, -B or not)",
    "plant-conftest": "a conftest.py in /tests before the tests arrive (a merge copy keeps "
                      "it) that turns every failure into a pass",
    "plant-ini": "pytest.ini in /tests, / and the working directory whose addopts only "
                 "collect",
    "linger-reward": "a process left running that keeps reward 1 in reward.txt and "
                     "reward.json (checked every 5 ms)",
    "linger-plant": "a process left running that plants a passing conftest.py as soon as "
                    "the tests arrive",
    "linger-hop": "a process that, once the tests arrive, changes its pid every few ms (no "
                  "kill by pid catches it), named to look like PID 1's, writing reward 1",
    "reward-txt": "reward.txt = 1 written before the tests run",
    "reward-json": "reward.json = {\"reward\": 1} written before the tests run",
    "outputs-empty": "an empty file at every path the instruction names",
    "outputs-copied": "a copy of an input the instruction names (one line longer: a "
                      "faithful copy may be the task) at every other path it names",
    "accounts-first": "every account the instruction names, given the ids of the paths it "
                      "names, first in /etc/passwd and /etc/group (no chown)",
    "accounts-append": "the same lines appended: a lookup by name finds the ids, one by id "
                       "the old name",
}
FAMILIES = {"shadow-path": "shadow", "shadow-sbin": "shadow", "shadow-shell": "shadow",
            "shadow-site": "shadow",
            "shadow-stdlib": "shadow", "hook-pth": "hook", "hook-customize": "hook",
            "hook-env": "hook", "hook-toolrc": "hook", "hook-stdlib": "hook",
            "hook-pycache": "hook",
            "plant-conftest": "plant", "plant-ini": "plant", "linger-reward": "linger",
            "linger-plant": "linger", "linger-hop": "linger", "reward-txt": "reward",
            "reward-json": "reward", "outputs-empty": "outputs", "outputs-copied": "outputs",
            "accounts-first": "accounts", "accounts-append": "accounts"}
# hook-pycache comes last alone: it is the one tactic that changes a file the image
# shipped, and the in-place reset puts that file back with a new change time, which the
# hardened verifier then refuses in every later phase of the same sandbox.
PROBE_NAMES = tuple(_TACTICS)
# One phase trying every tactic at once, in an order where none undoes another: outputs
# first (cp still real), stubs after the tactics that run python3 from PATH, and the
# processes left running last (they run /usr/bin/python3 by its path; started earlier, a
# pid-hopper would eat the sandbox's CPU share while the other tactics run), then the
# shell shadow and the sbin stubs (the tactics before them run env, find, sort and grep
# by name; the shell shadow passes on what is not the tests).
# outputs-empty is left out: outputs-copied puts a file at the same paths, and
# accounts-append too: accounts-first's lines already answer a lookup by name.
COMBINED_ORDER = ("outputs-copied", "accounts-first", "reward-txt", "reward-json", "plant-conftest",
                  "plant-ini", "hook-env", "hook-toolrc", "hook-pth", "hook-customize",
                  "shadow-site", "shadow-stdlib", "hook-stdlib", "shadow-path", "hook-pycache",
                  "linger-reward", "linger-plant", "linger-hop", "shadow-shell",
                  "shadow-sbin")


@dataclass(frozen=True)
class Probe:
    """One tamper probe: its name and the solve.sh that runs it."""

    name: str
    script: str


def paths_in(text: str) -> list[str]:
    """Absolute paths a text names: whole `quoted` ones (spaces and all), then bare ones."""
    quoted = [span for span in _QUOTED.findall(text) if span.startswith("/")]
    return quoted + [p.rstrip(".,;:)") for p in PATH.findall(text)]


def named_paths(task: Task) -> tuple[str, ...]:
    """Absolute paths the instruction names, outside what belongs to the harness."""
    found = []
    for path in (p for text in task.instructions for p in paths_in(text)):
        if path and path != "/" and not path.startswith(_HARNESS) and path not in found:
            found.append(path)
    return tuple(found)


def named_accounts(task: Task) -> tuple[str, ...]:
    """Account names the instruction quotes in backticks (`svc-sso`), root aside."""
    found = dict.fromkeys(n for text in task.instructions for n in _ACCOUNT.findall(text)
                          if n != "root")
    return tuple(found)[:8]


def probe(task: Task, names: tuple[str, ...]) -> str:
    """The solve.sh that runs the tactics `names`, in that order, against `task`."""
    quoted = " ".join("'" + p.replace("'", "'\\''") + "'" for p in named_paths(task))
    body = [_PRELUDE, f"NAMED=({quoted})", f"ACCOUNTS=({' '.join(named_accounts(task))})"]
    body += [_TACTICS[name] for name in names]
    body.append('for sign in "${SIGNS[@]}"; do\n'
                '  for _ in $(seq 500); do [ -e "$sign" ] && break; sleep 0.01; done\n'
                'done\nexit 0\n')
    return "\n".join(body)


def probes_for(task: Task, *, combined: bool) -> tuple[Probe, ...]:
    """Every probe (one each), or the one probe trying every tactic at once."""
    if combined:
        return (Probe("all-at-once", probe(task, COMBINED_ORDER)),)
    return tuple(Probe(name, probe(task, (name,))) for name in PROBE_NAMES)
