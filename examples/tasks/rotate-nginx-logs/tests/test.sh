#!/bin/bash
# The task's verifier (written by taskloom): reward 1 only when every check passes, with
# nothing the agent left behind taken into account (see the comments below).
{  # bash reads all of this block before it runs any: rewriting this file meanwhile is moot
export PATH=/usr/sbin:/usr/bin:/sbin:/bin  # no /usr/local: tools there may be shadows
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
clean= starts=0
for round in $(seq 100); do  # a killed process may take a moment to go (a busy host)
  sweep
  [ -z "$strays$dying" ] && clean=1 && break
  if [ -n "$strays" ]; then starts=$((starts + 1)); [ "$starts" -ge 5 ] && break
  else sleep 0.01; fi
done

mkdir -p /logs/verifier
chmod go-w /logs/verifier  # the agent's programs the checks run (as nobody) cannot write
chmod -R go-rwx /tests  # ...nor read the expected values out of the checks
rm -rf /logs/verifier/reward.json /logs/verifier/reward.txt
reward=0 passed=
home=$(mktemp -d)  # HOME for the checks: no ~/.gitconfig, ~/.sqliterc or other rc file

# 2. /tests must hold exactly what the task shipped, as regular files.
shipped=$(printf '%s\n' pytest.ini test.sh test_outputs.py | sort)
found=$(cd /tests && find . -mindepth 1 -printf '%P\n' | sort)
strange=$(cd /tests && find . -mindepth 1 ! -type f -printf '%P\n')
if [ -z "$clean" ]; then
  say "refusing to judge: processes keep starting outside this verifier:$strays"
elif [ "$found" != "$shipped" ] || [ -n "$strange" ]; then
  say "refusing /tests: it holds files the task did not ship:" \
    $(comm -13 <(echo "$shipped") <(echo "$found")) $strange
# Files Python reads at start-up whatever its flags (a stdlib zip first on sys.path, a
# venv or ._pth file beside the interpreter) and the loader's preload list: none in Debian.
elif startup=$(ls -d /usr/lib/python3*.zip /usr/bin/pyvenv.cfg /usr/pyvenv.cfg \
      /usr/bin/python3*._pth /etc/ld.so.preload 2>/dev/null || :); [ -n "$startup" ]; then
  say "refusing to judge: start-up files planted for the interpreter:" $startup
# Files of Python (interpreter, stdlib, Debian's dist-packages with pytest), of the shared
# libraries (libc, libcrypto that hashlib loads, and what they load in turn: OpenSSL's
# providers and engines, NSS modules, glibc's charset converters, through which Python
# decodes its arguments), of the locales and of the loader's and NSS's configuration
# created or changed since the container started: a module planted where an import looks first
# (tarfile.py, an argparse/ package, an `org` package copy.py tries), a file rewritten in
# place, a poisoned __pycache__ .pyc (Python loads one `-B` or not), a cache preferring a
# planted library. A change time cannot be set back; the image's files predate PID 1.
elif { read -r -d '' first < /proc/1/stat; } 2>/dev/null; set -- ${first##*) }
    while read -r key value; do [ "$key" = btime ] && booted=$value; done < /proc/stat
    # Ticks are USER_HZ, 100 on Linux: no getconf or sed (tools the agent may have replaced
    # to move the start into the future and blind the guard); a start after now is refused.
    started=$(( booted + ${20} / 100 ))
    changed=$( (( started <= EPOCHSECONDS )) || echo "(the container started in the future)"
      find /usr/bin/python3* /usr/lib/python3* /usr/lib/*-linux-gnu /usr/lib/locale \
      /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d /etc/nsswitch.conf \
      -xdev ! -type d -newerct "@$started" -print 2>/dev/null | head -5); [ -n "$changed" ]
then
  say "refusing to judge: files of Python, glibc or the loader changed after the start:" \
    $changed
# 3. The checks, isolated from everything the agent could have changed: no site hooks,
#    no PYTHON*/PYTEST*/GIT* variables, no system or user git config, no rc files, no
#    OpenSSL configuration (libcrypto reads /etc/ssl/openssl.cnf, which may load a module).
elif cd /tests && env -i HOME="$home" LANG=C.UTF-8 PATH="$PATH" GIT_CONFIG_NOSYSTEM=1 \
    OPENSSL_CONF=/dev/null \
    GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \
    /usr/bin/python3 -I -S -B -c '
import sys
# The library where Debian puts it (no build-tree pybuilddir.txt or Modules/ moved it),
# then Debian pytest (nothing of /usr/local), and pytest found there.
version = "%d.%d" % sys.version_info[:2]
library = ["/usr/lib/python%s.zip" % version.replace(".", ""), "/usr/lib/python" + version,
           "/usr/lib/python%s/lib-dynload" % version]
if sys.path != library or sys.prefix != "/usr" or sys.exec_prefix != "/usr":
    sys.exit("verifier: refusing to judge: Python looks for its library elsewhere: %s"
             % sys.path)
sys.path.append("/usr/lib/python3/dist-packages")
import pytest
if not pytest.__file__.startswith("/usr/lib/python3/dist-packages/"):
    sys.exit("verifier: refusing to judge: pytest is not Debian pytest: " + pytest.__file__)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--noconftest", "-c",
                      "/tests/pytest.ini", "--rootdir", "/tests", "-o",
                      "console_output_style=classic", "/tests/test_outputs.py"]))
' > /logs/verifier/pytest.txt 2>&1; then
  passed=1
fi
sweep  # what a check left running could rewrite the reward: it must leave nothing
if [ -n "$strays" ]; then say "processes were left running during the checks:$strays"
elif [ -n "$passed" ]; then reward=1; fi
[ -f /logs/verifier/pytest.txt ] && cat /logs/verifier/pytest.txt
rm -rf "$home"

# 4. The reward, last (and only reward.txt: Harbor would read a reward.json first).
rm -rf /logs/verifier/reward.json
echo "$reward" > /logs/verifier/reward.txt
exit 0
}
