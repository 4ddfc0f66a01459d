#!/bin/bash
# The task's verifier (written by taskloom): reward 1 only when every check passes, with
# nothing the agent left behind taken into account (see the comments below).
{  # bash reads all of this block before it runs any: rewriting this file meanwhile is moot
# Only /usr/bin (/bin links to it): a tool planted in /usr/local or an sbin folder (an
# `env` that exits 0) would shadow the real one on a PATH that puts them first (Debian's).
# The checks' own tools (git, sqlite3) are found on it too; this script names its tools
# by their full paths, and runs none but find before the guard below has cleared them.
export PATH=/usr/bin
say() { echo "verifier: $*"; }

# 1. End every process the agent left: all but this one, its parents, and the container's
#    own (PID 1 and its children in its session: Harbor's `sh -c "sleep infinity"`; an
#    agent's command, run by exec, has a session of its own).
stat_of() {  # the whole file: a process name may hold a newline; no subshell (hot loop)
  local stat=; { read -r -d '' stat < "/proc/$1/stat"; } 2>/dev/null
  [ -n "$stat" ] || return 1
  set -- ${stat##*) }; state=$1; parent=$2; sess=$4; }
stat_of 1; boot=$sess
keep=" 1 $$ "
pid=$$
while [ "$pid" -gt 1 ] 2>/dev/null && stat_of "$pid"; do
  pid=$parent
  keep="$keep$pid "
done
killed=" "
sweep() {  # every other process stops at once (a stopped process cannot fork), then the
  strays= dying=  # agent's are killed and the rest resume: $strays are the pids first
  # killed now, $dying those killed before that have not finished dying yet
  kill -STOP -1 2>/dev/null
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = $$ ] && continue
    stat_of "$pid" || continue
    case "$state" in Z|X) continue ;; esac
    case "$keep" in *" $pid "*) kill -CONT "$pid" 2>/dev/null; continue ;; esac
    if [ "$sess" = "$boot" ] && [ "$parent" = 1 ]; then kill -CONT "$pid" 2>/dev/null
    else
      kill -KILL "$pid" 2>/dev/null
      case "$killed" in *" $pid "*) dying="$dying $pid" ;;
        *) killed="$killed$pid "; strays="$strays $pid" ;; esac
    fi
  done
}
exec {pause}<> <(:)  # an empty pipe held open: `read -t` on it sleeps with no tool
clean= starts=0
for ((round = 0; round < 100; round++)); do  # a killed process may take a moment to go
  sweep
  [ -z "$strays$dying" ] && clean=1 && break
  if [ -n "$strays" ]; then starts=$((starts + 1)); [ "$starts" -ge 5 ] && break
  else read -r -t 0.01 -u "$pause"; fi
done

# 2. Nothing this script or the checks run or load may have been created or changed since
#    the container started (a change time cannot be set back; the image's files predate
#    PID 1): the tools below, Python (interpreter, stdlib, Debian's dist-packages), the
#    shared libraries (libc, libcrypto that hashlib loads, and what they load
#    in turn: OpenSSL's providers and engines, NSS modules, glibc's charset converters,
#    through which Python decodes its arguments), the locales, the loader's and NSS's
#    configuration, and the links every program's loader path runs through
#    (/lib64/ld-linux-x86-64.so.2 via /lib64, /usr/lib64 and /lib: a copy of the loader
#    that reads its preload list from elsewhere forged every task of a red-team round).
#    That refuses a module planted where an import looks first (tarfile.py, an argparse/
#    package, an `org` package copy.py tries), a file or a __pycache__ .pyc rewritten in
#    place (Python loads one `-B` or not), a tool rewritten in place, a cache preferring a
#    planted library. find is the one tool trusted unchecked, as bash is.
tools="/usr/bin/env /usr/bin/mkdir /usr/bin/chmod /usr/bin/rm /usr/bin/mktemp /usr/bin/git
  /usr/lib/git-core /usr/bin/sqlite3 /usr/bin/crontab"
{ read -r -d '' first < /proc/1/stat; } 2>/dev/null; set -- ${first##*) }
while read -r key value; do [ "$key" = btime ] && booted=$value; done < /proc/stat
# Ticks are USER_HZ, 100 on Linux (no getconf: a tool run before this guard clears it);
# a start after now is refused: it would blind the guard.
started=$(( booted + ${20} / 100 ))
changed=$( (( started <= EPOCHSECONDS )) || echo "(the container started in the future)"
  /usr/bin/find $tools /usr/bin/python3* /usr/lib/python3* /usr/lib/*-linux-gnu \
    /usr/lib/locale /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d /etc/nsswitch.conf \
    /bin /sbin /lib /lib64 /usr/lib64 \
    -xdev ! -type d -newerct "@$started" -print -quit 2>/dev/null)
# Files Python reads at start-up whatever its flags (a stdlib zip first on sys.path, a
# venv or ._pth file beside the interpreter) and the loader's preload list: none in Debian.
startup=
for file in /usr/lib/python3*.zip /usr/bin/pyvenv.cfg /usr/pyvenv.cfg \
    /usr/bin/python3*._pth /etc/ld.so.preload; do
  [ -e "$file" ] || [ -L "$file" ] && startup="$startup $file"
done
# 3. /tests must hold exactly what the task shipped, as regular files.
strange=$(cd /tests && /usr/bin/find . -mindepth 1 ! \( -type f \( -path ./test.sh \
  -o -path ./test_outputs.py \) \) -printf ' %P' 2>/dev/null)

[ -d /logs/verifier ] || /usr/bin/mkdir -p /logs/verifier
reward=0 passed= home=
if [ -z "$changed" ]; then  # the tools are the image's own
  /usr/bin/chmod go-w /logs/verifier  # the agent's programs the checks run (as nobody)
  /usr/bin/chmod -R go-rwx /tests  # cannot write the reward, nor read the expected values
  /usr/bin/rm -rf /logs/verifier/reward.json /logs/verifier/reward.txt
  home=$(/usr/bin/mktemp -d)  # HOME for the checks: no ~/.gitconfig, ~/.sqliterc, rc file
fi
if [ -z "$clean" ]; then
  say "refusing to judge: processes keep starting outside this verifier:$strays"
elif [ -n "$changed" ]; then
  say "refusing to judge: a file of the tools, Python, glibc or the loader changed after" \
    "the start: $changed"
elif [ -n "$strange" ]; then
  say "refusing /tests: it holds files the task did not ship:$strange"
elif [ -n "$startup" ]; then
  say "refusing to judge: start-up files planted for the interpreter:$startup"
# 4. The checks, isolated from everything the agent could have changed: no site hooks,
#    no PYTHON*/PYTEST*/GIT* variables, no system or user git config, no rc files, no
#    OpenSSL configuration (libcrypto reads /etc/ssl/openssl.cnf, which may load a module).
#    TASKLOOM_FIRST_FAILURE=1 ends the checks at the first failure (the reward is the same).
elif cd /tests && /usr/bin/env -i HOME="$home" LANG=C.UTF-8 PATH="$PATH" GIT_CONFIG_NOSYSTEM=1 \
    OPENSSL_CONF=/dev/null TASKLOOM_FIRST_FAILURE="${TASKLOOM_FIRST_FAILURE-}" \
    GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 \
    /usr/bin/python3 -I -S -B -c '
import sys
# The library where Debian puts it (no build-tree pybuilddir.txt or Modules/ moved it).
version = "%d.%d" % sys.version_info[:2]
library = ["/usr/lib/python%s.zip" % version.replace(".", ""), "/usr/lib/python" + version,
           "/usr/lib/python%s/lib-dynload" % version]
if sys.path != library or sys.prefix != "/usr" or sys.exec_prefix != "/usr":
    sys.exit("verifier: refusing to judge: Python looks for its library elsewhere: %s"
             % sys.path)
import os, time, types
started = time.perf_counter()
path = "/tests/test_outputs.py"
# Set when taskloom validates a run meant to earn 0: the checks stop at the first
# failure (the reward is the same: 1 only when every check passes).
first_failure = os.environ.get("TASKLOOM_FIRST_FAILURE") == "1"
name = path.rsplit("/", 1)[1]


def summary(error):  # as traceback words it, whose import costs more than the checks
    kind = type(error).__qualname__
    if type(error).__module__ not in ("builtins", "__main__"):
        kind = "%s.%s" % (type(error).__module__, kind)
    text = str(error).strip()
    return ("%s: %s" % (kind, text.splitlines()[0]) if text else kind)[:300]


def report(error):  # the failing lines of the checks, and the values their names hold
    lines, shown, last, tb = [], "", None, error.__traceback__
    source = code.decode("utf-8", "replace").split("\n")
    while tb is not None:
        frame, line, tb = tb.tb_frame, tb.tb_lineno, tb.tb_next
        if frame.f_code.co_filename == path:
            shown = source[line - 1].strip() if 0 < line <= len(source) else ""
            lines.append("%s:%d: in %s\n    %s" % (name, line, frame.f_code.co_name, shown))
            last = frame
    words = "".join(c if c.isalnum() or c == "_" else " " for c in shown).split()
    lines += ["    %s = %s" % (key, repr(value)[:200])
              for key, value in (last.f_locals.items() if last else ()) if key in words]
    return "\n".join(lines + ["E   " + summary(error)])


module = types.ModuleType(name[:-3])
module.__file__ = path
sys.modules[module.__name__] = module
errors, failures, checks = [], [], []
with open(path, "rb") as source:
    code = source.read()
import hashlib
# What test.sh was shipped with: checks rewritten between their upload and this start (by
# a process the agent left, before the sweep ended it) are not the checks of the task.
if hashlib.sha256(code).hexdigest() != "b1a8f85ecebac00cac8014d229080d63a8b9e87caeef6f2c7e0bec4ab9d4c587":
    sys.exit("verifier: refusing to judge: %s is not the file the task shipped" % name)
try:
    exec(compile(code, path, "exec"), vars(module))
except BaseException as error:
    errors.append((None, error))
for key, value in list(vars(module).items()) if not errors else ():
    if key.startswith("Test") and isinstance(value, type):
        errors.append((key, TypeError("checks are top-level functions: class %s is not run"
                                      % key)))
    elif key.startswith("test") and isinstance(value, types.FunctionType):
        checks.append((key, value))
marks = ""
for key, check in checks:
    if first_failure and (errors or failures):
        break
    if check.__code__.co_argcount or check.__code__.co_kwonlyargcount:
        errors.append((key, TypeError("a check takes no arguments (no pytest fixtures)")))
        marks += "E"
        continue
    try:
        check()
        marks += "."
    except BaseException as error:
        failures.append((key, error))
        marks += "F"
print(marks)
if len(marks) < len(checks):
    print("stopped at the first failure (TASKLOOM_FIRST_FAILURE=1): %d checks not run"
          % (len(checks) - len(marks)))
if errors or failures:
    print(" FAILURES ".center(80, "="))
    for key, error in errors + failures:
        print((" %s " % (key or name)).center(80, "_"))
        print(report(error))
    print(" short test summary info ".center(80, "="))
    for key, error in errors:
        print("ERROR %s%s - %s" % (name, "::" + key if key else "", summary(error)))
    for key, error in failures:
        print("FAILED %s::%s - %s" % (name, key, summary(error)))
counts = [(len(failures), "failed"), (marks.count("."), "passed"),
          (len(errors), "error" if len(errors) == 1 else "errors")]
print(", ".join("%d %s" % count for count in counts if count[0]) or "no checks ran",
      "in %.2fs" % (time.perf_counter() - started))
sys.exit(1 if errors or failures or not checks else 0)
' > /logs/verifier/checks.txt 2>&1; then
  passed=1
fi
sweep  # what a check left running could rewrite the reward: it must leave nothing
if [ -n "$strays" ]; then say "processes were left running during the checks:$strays"
elif [ -n "$passed" ]; then reward=1; fi
[ -f /logs/verifier/checks.txt ] && echo "$(< /logs/verifier/checks.txt)"
[ -n "$home" ] && /usr/bin/rm -rf "$home"

# 5. The reward, last.
# Harbor reads a reward.json first: none but this script's stays (refused, with builtins).
if [ -n "$home" ]; then /usr/bin/rm -rf /logs/verifier/reward.json
elif [ -e /logs/verifier/reward.json ]; then echo '{"reward": 0}' > /logs/verifier/reward.json
fi
echo "$reward" > /logs/verifier/reward.txt
exit 0
}
