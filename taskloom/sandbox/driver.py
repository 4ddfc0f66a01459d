"""In-sandbox trial driver: setup, then every phase of a trial, in one container.

This file runs *inside* the task's container with the container's own python3 (3.9+), so
it imports only the standard library and never taskloom. The runtime copies it to
`/.taskloom/driver.py` next to `plan.json` and starts it as the container's command. That
is why it is one module of ~700 lines: it travels into every sandbox as a single file.

One phase = fresh state → (optional) solution → tests → reward. "Fresh state" is made in
place, which is ~4x cheaper than a new container: after setup the driver records every
path outside /usr and the package databases (plus /usr/local) with its metadata, and
keeps the bytes of what setup created and of the account files. Between phases it kills
every stray process, deletes what the phase created and restores what it changed. A
change it cannot undo (another base-image file rewritten, an entry added to a system
directory under /usr or to a package database) makes the state *dirty*: the driver stops
and reports the phases it did not run, and the runtime runs them in a fresh container.

Tests and solutions arrive in plan.json, which is deleted before anything runs; they are
written to /tests and /solution only for the step that uses them, as Harbor does.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import math
import os
import pwd
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import time

PLAN_PATH = "/.taskloom/plan.json"
RESULT_MARKER = "===TASKLOOM-RESULT==="
# Never walked: kernel filesystems, our own folder, and mount points of the engine.
SKIP_ROOTS = frozenset({"/proc", "/sys", "/dev", "/.taskloom"})
# /usr is walked only below /usr/local; these directories are stat'ed to notice a phase
# that adds, removes or renames system files (sed -i, cp into /usr/bin, pip install...).
USR_WATCH = ("/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib/x86_64-linux-gnu",
             "/usr/lib/python3/dist-packages", "/usr/share", "/usr/include", "/usr/libexec",
             "/usr/lib/aarch64-linux-gnu")
# The programs a verifier runs without checking them (test.sh trusts find and bash, and
# names the rest by full paths here): a phase that rewrites one in place changes no
# directory, so their change times are compared too, and such a phase is dirty.
TRUSTED_PROGRAMS = ("/usr/bin", "/usr/sbin")
# Package databases: ~1,100 entries (of ~1,450 a reset would otherwise stat) that change
# only when packages are installed, which changes /usr too. Not walked unless setup wrote
# into them; like /usr, a phase that adds, removes or renames an entry there is dirty.
PACKAGE_TREES = ("/var/lib/dpkg", "/etc/ssl/certs")
# Where a reset keeps files a phase moved until they are renamed back (never walked).
HOLD_DIR = "/.taskloom/moved"
HARBOR_DIRS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")
# Filesystems under /dev that a phase can write (POSIX shared memory and semaphores, message
# queues): a new container's are empty, and an image never holds what its build wrote there.
IPC_DIRS = ("/dev/shm", "/dev/mqueue")
REWARD_FILES = ("reward.json", "reward.txt")
# Set for the verifier of a phase meant to earn 0 (nop, mutants, probes): taskloom's check
# runner then stops at the first failing check. The reward is the same (1 only when every
# check passes); what is saved is the rest of the checks (a scan of the whole system).
FIRST_FAILURE_ENV = "TASKLOOM_FIRST_FAILURE"
ARTIFACT_BYTES_LIMIT = 256 << 20
# Harbor uploads /tests, then starts test.sh, then copies /logs/verifier out: each step a
# round trip to the engine, while whatever the agent left running goes on. (The read waits
# longer: a writer left behind may be slow to wake on a busy host, and only tasks whose
# tests leave it running pay for that.)
UPLOAD_GAP_SEC = 0.05
READ_GAP_SEC = 0.2
MAIN_KILLED = ("the container's main process was killed (by the solution or the tests): "
               "under Harbor the container stops and the trial fails")
# Wait after a snapshot or reset so that later changes get a new ctime (see Snapshot).
CTIME_TICK_SEC = 0.012
SNAPSHOT_BYTES_LIMIT = 256 * 1024 * 1024
# Image files a phase commonly edits: the account database, which useradd, groupadd and
# chpasswd rewrite (with their `-` backups). Their bytes are kept too, so such a phase is
# undone in place instead of forcing a new sandbox for every later phase; keeping all of
# /etc (~250 files) cost more per task than the rare sandbox it saves.
KEEP_IMAGE_BYTES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/subuid",
                    "/etc/subgid")


class Capture:
    """Keeps the head and the tail of a stream, so a chatty process cannot fill memory."""

    def __init__(self, limit):
        self.limit = max(limit, 64)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data):
        """Add bytes; keep the first and last limit/2 of everything fed."""
        self.total += len(data)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - self.limit // 2
            if excess > 0:
                del self.tail[:excess]

    def text(self):
        """Head and tail as text, with a note of how much was dropped."""
        dropped = self.total - len(self.head) - len(self.tail)
        middle = b"\n[... %d bytes dropped ...]\n" % dropped if dropped > 0 else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", "replace")


def run_command(argv, *, timeout, cwd, env, user, log_limit, stdin_data=None):
    """Run argv in its own session with a wall-clock timeout that kills the whole group.

    `cpu_seconds` is the CPU (user and system) of the command and of what it started that
    ended and was reaped by the time it was collected; a process it left running is
    counted where it is reaped (at the next command or reset).
    """
    started, cpu = time.monotonic(), children_cpu()
    capture = Capture(log_limit)
    try:
        kwargs = user_kwargs(user)
    except KeyError:
        return {"exit_code": 126, "timed_out": False, "seconds": 0.0,
                "log": f"user {user!r} does not exist in the environment"}
    if kwargs:
        env = dict(env, HOME=kwargs.pop("home"), USER=kwargs.pop("name"))
    try:
        proc = subprocess.Popen(argv, cwd=cwd if os.path.isdir(cwd) else "/", env=env,
                                stdin=subprocess.PIPE if stdin_data is not None else
                                subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, **kwargs)
    except OSError as exc:
        return {"exit_code": 127, "timed_out": False, "seconds": 0.0,
                "log": f"could not start {argv[0]}: {exc}"}
    if stdin_data is not None:
        try:
            proc.stdin.write(stdin_data)
            proc.stdin.close()
        except OSError:
            pass
    fd = proc.stdout.fileno()
    deadline = started + timeout
    timed_out = ended = False
    exited_at = None
    reaped = started
    while True:
        now = time.monotonic()
        if now >= deadline:
            timed_out = proc.poll() is None
            break
        ready, _, _ = select.select([fd], [], [], min(0.05, deadline - now))
        if now >= reaped + 0.05:  # a fork-and-exit loop leaves ~50 zombies; the limit is 512
            reap_orphans((proc.pid, Keeper.pid()))
            reaped = now
        if ready:
            data = os.read(fd, 65536)
            if not data:
                ended = True
                break
            capture.feed(data)
        if proc.poll() is not None:
            exited_at = exited_at or time.monotonic()
            # A background child may keep the pipe open; the reset kills it later.
            if time.monotonic() - exited_at > 0.5:
                break
    if ended:  # the output closes as the command exits, a moment before its status shows:
        try:  # a kill now would take down what it started in the background (a server)
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if proc.poll() is None:
        kill_group(proc.pid)
    # A process left running that still holds the output gets EPIPE at its next write, as
    # under Docker, whose exec closes its output soon after the command exits.
    proc.stdout.close()
    code = proc.wait()
    if timed_out:
        capture.feed(b"\n[taskloom: killed after %.0f s wall-clock timeout]\n" % timeout)
    reap_orphans((Keeper.pid(),))
    return {"exit_code": code, "timed_out": timed_out,
            "seconds": round(time.monotonic() - started, 4),
            "cpu_seconds": round(children_cpu() - cpu, 4), "log": capture.text()}


def children_cpu():
    """CPU seconds (user and system) of this process's ended and reaped descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def user_kwargs(user):
    """Popen arguments that run as `user` (name or uid); {} for root. KeyError if unknown."""
    if user in (None, "", "root", 0, "0"):
        return {}
    entry = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
    return {"user": entry.pw_uid, "group": entry.pw_gid,
            "extra_groups": os.getgrouplist(entry.pw_name, entry.pw_gid),
            "home": entry.pw_dir, "name": entry.pw_name}


def kill_group(pid):
    """SIGKILL a whole process group (a command started in its own session)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


class Keeper:
    """The container's main command, as Harbor runs it.

    Under Harbor PID 1 is `sh -c "sleep infinity"`, whose `sleep` child is a process of PID
    1's session; whatever kills that child stops the container (and the trial). Here it is
    this process, watched.
    """

    process = None

    @classmethod
    def start(cls):
        """Start it (again, after a phase killed it)."""
        cls.process = subprocess.Popen(["sleep", "2147483647"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @classmethod
    def renew(cls):
        """A new one for the next phase.

        A phase may have ptraced this one into something else (its pid and liveness
        unchanged).
        """
        if cls.process is not None:
            with contextlib.suppress(OSError):
                cls.process.kill()
            cls.process.wait()
        cls.start()

    @classmethod
    def pid(cls):
        """Its pid, or None before it started."""
        return cls.process.pid if cls.process is not None else None

    @classmethod
    def alive(cls):
        """False when something killed it."""
        return cls.process is not None and cls.process.poll() is None


def processes():
    """(pid, state, parent pid) of every process in /proc, read from its stat line."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            yield int(name), fields[0], int(fields[1])
        except (OSError, IndexError, ValueError):
            continue


def strays():
    """Pids of the live processes but PID 1, this driver and the keeper."""
    skip = (1, os.getpid(), Keeper.pid())
    return [pid for pid, state, _ in processes() if pid not in skip and state != b"Z"]


def kill_strays():
    """SIGKILL every process but PID 1, this driver and the keeper; False if some come back.

    A pid-hopper's children outrun a kill by pid, but not a stop of all at once: a stopped
    process cannot fork.
    """
    for _ in range(50):
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGSTOP)  # everything but PID 1 and this driver
        alive = strays()
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if Keeper.pid() is not None:
            with contextlib.suppress(OSError):
                os.kill(Keeper.pid(), signal.SIGCONT)
        reap()
        if not alive:
            return True
        time.sleep(0.005)  # a killed process may take a moment to go on a busy host
    return False


def reap_orphans(keep):
    """Collect exited children but `keep` (whose status their Popen reads), as an init does.

    What a phase leaves running is re-parented here (PID 1) when its parent exits; a
    process that forks and exits in a loop would otherwise fill the pids limit with
    zombies until test.sh could not start.
    """
    me = os.getpid()
    for pid, state, parent in processes():
        if state == b"Z" and parent == me and pid not in keep:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def linger(seconds):
    """Let what a phase left running run on for `seconds`, reaping its orphans."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reap_orphans((Keeper.pid(),))
        time.sleep(0.01)


def reap():
    """Collect every exited child so no zombie holds a pid."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def walk(root_dev, skip=()):
    """Yield (path, lstat) for every path the reset manages, parents before children.

    The trees in `skip` are yielded (their roots) but not entered.
    """
    stack = ["/"]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            path = entry.path
            if path in SKIP_ROOTS:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != root_dev:
                continue  # a mount point the engine owns (/etc/hosts, volumes)
            yield path, info
            if stat.S_ISDIR(info.st_mode) and path != "/usr" and path not in skip:
                stack.append(path)
        if directory == "/" and os.path.isdir("/usr/local"):
            stack.append("/usr/local")


def meta(info):
    """The metadata a reset compares: type, mode, owner, size, mtime."""
    return (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid,
            info.st_gid, info.st_size, info.st_mtime_ns)


class Snapshot:
    """The state after setup: metadata of every managed path, bytes of what setup made.

    Change detection uses ctime and the inode number: any write, chmod, chown, rename or
    link updates the ctime, and a file moved onto a path brings its own inode.
    """

    def __init__(self, since_ns, tick=CTIME_TICK_SEC, *, resettable=True):
        # since_ns: ctime of a file written before setup (None: unknown, walk everything);
        # resettable False: record metadata only (a leak scan), keep no bytes for a reset.
        self.tick = tick
        self.root_dev = os.lstat("/").st_dev
        self.entries = {}
        self.saved = {}
        self.complete = True
        self.usr_stamps = dir_stamps(USR_WATCH)
        self.programs = file_stamps(TRUSTED_PROGRAMS)
        # A package tree setup wrote into (a COPY, an install) is walked like the rest.
        self.unwalked = {root: stamps for root, stamps in
                         ((root, tree_stamps(root)) for root in PACKAGE_TREES)
                         if since_ns is not None and stamps and
                         all(mtime < since_ns for _, mtime in stamps)}
        if not resettable:
            since_ns = None
        budget = SNAPSHOT_BYTES_LIMIT
        for path, info in walk(self.root_dev, self.unwalked):
            self.entries[path] = (meta(info), info.st_ctime_ns, info.st_ino)
            if stat.S_ISLNK(info.st_mode):
                self.saved[path] = os.readlink(path)
            elif since_ns is None or (info.st_ctime_ns < since_ns
                                      and not path.startswith(KEEP_IMAGE_BYTES)):
                continue  # from the image: restorable only if left untouched
            elif stat.S_ISREG(info.st_mode):
                budget -= info.st_size
                if budget < 0:
                    self.complete = False
                    continue
                try:
                    with open(path, "rb") as handle:
                        self.saved[path] = handle.read()
                except OSError:
                    self.complete = False
            else:
                self.saved[path] = None
        # File timestamps come from a coarse clock (one tick is up to 10 ms): let a tick
        # pass so that any later change gets a ctime different from the recorded one.
        if since_ns is not None:
            time.sleep(self.tick)

    def reset(self):
        """Bring the filesystem back to this snapshot; return a reason when impossible."""
        if not kill_strays():
            return "processes the phase left keep starting again"
        Keeper.renew()
        left = clear_ipc()
        if left:
            return left
        if dir_stamps(USR_WATCH) != self.usr_stamps:
            return "a system directory under /usr changed"
        if file_stamps(TRUSTED_PROGRAMS) != self.programs:
            return "a program in /usr/bin or /usr/sbin was rewritten"
        for root, stamps in self.unwalked.items():
            # An added, removed or renamed entry changes its directory's mtime.
            if dir_stamps(directory for directory, _ in stamps) != stamps:
                return f"the package database {root} changed"
        seen = set()
        changed = []
        created_dirs = []  # removed after the walk: files moved into them may come back
        movable = {entry[2]: entry[0] for path, entry in self.entries.items()
                   if entry[0][0] == stat.S_IFREG and isinstance(self.saved.get(path), bytes)}
        for path, info in walk(self.root_dev, self.unwalked):
            known = self.entries.get(path)
            if known is None or stat.S_IFMT(info.st_mode) != known[0][0]:
                if stat.S_ISDIR(info.st_mode):
                    created_dirs.append((path, info))
                elif not hold(path, info, movable.get(info.st_ino)):
                    remove(path, info)
                continue
            seen.add(path)
            if (info.st_ctime_ns, info.st_ino) != known[1:]:
                changed.append(path)
        for path, info in created_dirs:
            remove(path, info)
        missing = [p for p in self.entries if p not in seen]
        restored = sorted(set(missing) | set(changed))
        for path in restored:
            problem = self.restore(path)
            if problem:
                return problem
        shutil.rmtree(HOLD_DIR, ignore_errors=True)  # moved files no recorded path took back
        # Restoring children moved their parents' mtimes again; set them last, deepest first.
        for path in reversed(restored):
            recorded = self.entries[path][0]
            if recorded[0] == stat.S_IFDIR:
                os.utime(path, ns=(recorded[5], recorded[5]))
                self.remember(path, recorded)
        if restored:
            time.sleep(self.tick)  # as in __init__: the next change must get a new ctime
        return None

    def remember(self, path, recorded):
        """Record the ctime and inode a restored path now has."""
        info = os.lstat(path)
        self.entries[path] = (recorded, info.st_ctime_ns, info.st_ino)

    def restore(self, path):
        """Put one recorded path back as it was; a reason string when impossible."""
        recorded, _, inode = self.entries[path]
        kind, mode, uid, gid, size, mtime_ns = recorded
        try:
            current = os.lstat(path)
        except FileNotFoundError:
            current = None
        if path in self.saved:
            data = self.saved[path]
            if kind == stat.S_IFREG:
                kept = same_bytes(current, inode, size, mtime_ns) and holds(path, data)
                if not (kept or take_back(path, inode)):
                    write_file(path, data, mode)
            elif kind == stat.S_IFLNK:
                if current is not None:
                    os.unlink(path)
                os.symlink(data, path)
            elif kind == stat.S_IFDIR and current is None:
                os.mkdir(path, mode)
            elif current is None:
                return f"cannot recreate special file {path}"
        elif current is None:
            return f"{path} from the image was deleted"
        elif kind == stat.S_IFREG and (current.st_ino != inode or
                                       (current.st_size, current.st_mtime_ns) != (size,
                                                                                  mtime_ns)):
            return f"{path} from the image was modified"
        if kind != stat.S_IFLNK:
            os.chown(path, uid, gid)
            os.chmod(path, mode)
            os.utime(path, ns=(mtime_ns, mtime_ns))
        else:
            os.chown(path, uid, gid, follow_symlinks=False)
        self.remember(path, recorded)
        return None


def fine_ctime():
    """True when a change right after a stat gets a new ctime (multigrain timestamps).

    Linux 6.13+ gives ext4, xfs, btrfs and tmpfs inodes whose ctime was just read a
    fine-grained ctime at their next change, so the snapshot needs no tick to pass. A
    coarse clock shows up as an unchanged ctime (a 1-10 ms tick against microseconds here).
    """
    probe = "/.taskloom/ctime-probe"
    try:
        for _ in range(3):
            with open(probe, "wb"):
                pass
            before = os.lstat(probe).st_ctime_ns
            os.chmod(probe, 0o600)
            if os.lstat(probe).st_ctime_ns == before:
                return False
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)


def tree_stamps(root):
    """(directory, mtime) of `root` and every directory below it; [] when absent."""
    directories = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                stack += [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        directories.append(directory)
    return dir_stamps(sorted(directories))


def file_stamps(directories):
    """{path: (ctime, inode)} of the entries directly in these directories.

    A write in place, a chmod or a chown changes the ctime; the directories' own stamps
    see entries added, removed or renamed.
    """
    stamps = {}
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            stamps[entry.path] = (info.st_ctime_ns, info.st_ino)
    return stamps


def dir_stamps(directories):
    """(directory, mtime or None when gone) of each directory.

    The mtime, not the ctime: adding, removing or renaming an entry changes the mtime,
    while on an overlay root (Docker's overlay2, the bwrap runtime) the first write below
    /usr (`install ... /usr/local/bin/x`) copies /usr up and gives it a new ctime, which
    would force a new sandbox for every phase after it.
    """
    stamps = []
    for directory in directories:
        try:
            stamps.append((directory, os.lstat(directory).st_mtime_ns))
        except OSError:
            stamps.append((directory, None))
    return stamps


def same_bytes(current, inode, size, mtime_ns):
    """True when a file kept its inode, size and mtime: only its metadata changed.

    Then (a chmod, a chown) its bytes need no rewriting, as for files of the image.
    """
    return (current is not None and stat.S_ISREG(current.st_mode) and current.st_ino == inode
            and (current.st_size, current.st_mtime_ns) == (size, mtime_ns))


def holds(path, data):
    """True when the file holds these bytes (its mtime may have been set back by hand)."""
    try:
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def hold(path, info, recorded):
    """Set aside a file a phase moved; False when `path` is not one.

    `mv a b` leaves b with a's inode, size and mtime: the reset renames it back instead of
    rewriting a's bytes.
    """
    if recorded is None or not stat.S_ISREG(info.st_mode) or \
            (info.st_size, info.st_mtime_ns) != (recorded[4], recorded[5]):
        return False
    try:
        os.makedirs(HOLD_DIR, exist_ok=True)
        os.rename(path, os.path.join(HOLD_DIR, str(info.st_ino)))
    except OSError:
        return False
    return True


def take_back(path, inode):
    """Rename a file set aside by `hold` to its recorded path; False when there is none."""
    held = os.path.join(HOLD_DIR, str(inode))
    if not os.path.lexists(held):
        return False
    make_room(path)
    os.rename(held, path)
    return True


def remove(path, info):
    """Delete a path a phase created (a directory with everything below it)."""
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def clear_ipc():
    """Empty IPC_DIRS, as a new container's are; a reason when something stays."""
    for directory in IPC_DIRS:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # not mounted in this sandbox
        for entry in entries:
            try:
                remove(entry.path, entry.stat(follow_symlinks=False))
            except OSError as error:
                return f"cannot empty {directory}: {error}"
    return None


def make_room(path):
    """Create `path`'s parent folders and delete whatever is at `path`."""
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def write_file(path, data, mode):
    """Replace whatever is at `path` with a regular file of `data`."""
    make_room(path)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def put_files(root, files):
    """Write plan files (base64 data) below `root`."""
    for entry in files:
        write_file(os.path.join(root, entry["path"]), binascii.a2b_base64(entry["data"]),
                   entry["mode"])


def chown_tree(path, owner):
    """COPY --chown: give `path` and everything below it to user[:group]."""
    user, _, group = owner.partition(":")
    uid = int(user) if user.isdigit() else pwd.getpwnam(user).pw_uid
    if group:
        import grp
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    else:
        gid = pwd.getpwuid(uid).pw_gid if not user.isdigit() else uid
    os.chown(path, uid, gid, follow_symlinks=False)
    if os.path.isdir(path) and not os.path.islink(path):
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def copy_step(step):
    """Emulate one COPY/ADD with Docker's rules.

    A directory source copies its contents; a file goes into dest when dest ends with '/',
    names an existing directory, or there are several sources.
    """
    dest = step["dest"]
    sources = step["sources"]
    into_dir = dest.endswith("/") or len(sources) > 1 or os.path.isdir(dest)
    written = []
    for source in sources:
        if source["dir"]:
            target = dest
            os.makedirs(target, exist_ok=True)
            written.append(target)
        else:
            target = os.path.join(dest, source["name"]) if into_dir else dest
            written.append(target)
        base = target if source["dir"] else os.path.dirname(target) or "/"
        for entry in source["files"]:
            path = os.path.join(target, entry["path"]) if source["dir"] else target
            write_file(path, binascii.a2b_base64(entry["data"]), entry["mode"])
        os.makedirs(base, exist_ok=True)
        if source["dir"]:
            for dirname in source.get("dirs", []):
                os.makedirs(os.path.join(target, dirname), exist_ok=True)
    if step.get("chown"):
        for target in written:
            chown_tree(target, step["chown"])


def run_setup(plan, env):
    """Emulate the Dockerfile steps in order; stop at the first failure."""
    started = time.monotonic()
    deadline = started + plan["setup_timeout"]
    log = []
    for index, step in enumerate(plan["setup"]):
        if step["op"] == "workdir":
            os.makedirs(step["path"], exist_ok=True)
            continue
        if step["op"] == "copy":
            try:
                copy_step(step)
            except (OSError, KeyError) as exc:
                return {"ok": False, "step": index, "exit_code": 1, "timed_out": False,
                        "seconds": time.monotonic() - started,
                        "log": "COPY into {} failed: {}".format(step["dest"], exc)}
            continue
        step_env = dict(env)
        step_env.update(step["env"])
        result = run_command(step["argv"], timeout=max(deadline - time.monotonic(), 0.01),
                             cwd=step["workdir"], env=step_env, user=step["user"],
                             log_limit=plan["log_limit"])
        log.append(result["log"])
        if result["exit_code"] != 0 or result["timed_out"]:
            result.update(ok=False, step=index, log="\n".join(log),
                          seconds=round(time.monotonic() - started, 4))
            return result
    # Nothing setup started runs on, nor stays in /dev/shm: neither is part of an image.
    problem = None if kill_strays() else \
        "the processes setup started keep starting again after being killed"
    problem = problem or clear_ipc()
    if problem:
        log.append(problem)
        return {"ok": False, "step": None, "exit_code": 1, "timed_out": False,
                "seconds": round(time.monotonic() - started, 4), "log": "\n".join(log)}
    return {"ok": True, "step": None, "exit_code": 0, "timed_out": False,
            "seconds": round(time.monotonic() - started, 4), "log": "\n".join(log)}


def scan_leaks(snapshot, fingerprints):
    """Paths in the environment whose bytes equal a test or solution file."""
    by_size = {}
    for item in fingerprints:
        by_size.setdefault(item["size"], []).append(item)
    same_size = [(path, by_size[recorded[4]])
                 for path, (recorded, _, _) in snapshot.entries.items()
                 if recorded[0] == stat.S_IFREG and recorded[4] in by_size]
    leaks = []
    if same_size:
        import hashlib  # only here: loading OpenSSL costs ~4 ms, most tasks never hash
    for path, candidates in same_size:
        try:
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            continue
        leaks += [{"path": path, "origin": item["origin"]}
                  for item in candidates if item["sha256"] == digest]
    for path in ("/tests", "/solution"):
        if os.path.lexists(path):
            leaks.append({"path": path, "origin": f"the environment already has {path}"})
    return leaks


def clear_harbor_dirs(paths=HARBOR_DIRS):
    """Harbor mounts empty /logs/{agent,verifier,artifacts}; start every phase the same."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
        os.makedirs(path)
        os.chmod(path, 0o777)


def remove_rewards():
    """Harbor discards stale reward files before the tests run; what the agent wrote goes."""
    for name in REWARD_FILES:
        path = "/logs/verifier/" + name
        if os.path.lexists(path) and not os.path.isdir(path):
            os.unlink(path)


def read_reward():
    """Reward written by test.sh into /logs/verifier."""
    files = {}
    for name in REWARD_FILES:
        path = "/logs/verifier/" + name
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                files[name] = handle.read(65536)
    return parse_reward(files)


def parse_reward(files):
    """({name: reward}, None) or (None, why) from the files of /logs/verifier.

    As Harbor (0.26) reads them: reward.json when there is one, an object of named
    rewards, every value a finite number; else reward.txt, one number, named `reward`.
    """
    if "reward.json" in files:
        try:
            data = json.loads(files["reward.json"])
        except ValueError as exc:
            return None, f"reward.json is not valid JSON: {exc}"
        if not isinstance(data, dict):
            return None, (f"reward.json holds {json.dumps(data)[:80]}, not an object of named "
                          'rewards such as {"reward": 1}')
        if not data:
            return None, "reward.json names no reward"
        for name, value in data.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                return None, f"reward.json: {name!r} is {json.dumps(value)[:80]}, not a number"
        return {name: float(value) for name, value in data.items()}, None
    if "reward.txt" in files:
        raw = files["reward.txt"].decode("utf-8", "replace").strip()
        try:
            value = float(raw)
        except ValueError:
            return None, f"reward.txt holds {raw[:80]!r}, not a number"
        if not math.isfinite(value):
            return None, f"reward.txt holds {raw[:80]!r}, not a finite number"
        return {"reward": value}, None
    return None, "tests/test.sh wrote no /logs/verifier/reward.txt or reward.json"


def lowest(rewards):
    """The reward a phase is judged by: the lowest named one, None when none was read.

    Every named reward must reach the maximum for a task to count as solved.
    """
    return min(rewards.values()) if rewards else None


def shell_for(script):
    """Run a script as Harbor does: made executable, then run by path from bash -c.

    Its own #! line picks the interpreter (a script without one runs in bash); sh stands
    in where the image has no bash.
    """
    os.chmod(script, stat.S_IMODE(os.stat(script).st_mode) | 0o111)
    return [("bash" if shutil.which("bash") else "sh"), "-c", '"$0"', script]


def collect_artifacts(paths):
    """What a separate verifier receives from the artifact paths, as Harbor's tar carries it.

    Regular files, directories, and links that stay inside the artifact.
    """
    entries, budget = [], ARTIFACT_BYTES_LIMIT
    for root in paths:
        if not os.path.lexists(root) or os.path.islink(root):
            continue
        walked = [(root, os.lstat(root))]
        if os.path.isdir(root):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                for name in sorted(dirnames) + sorted(filenames):
                    path = os.path.join(dirpath, name)
                    walked.append((path, os.lstat(path)))
        for path, info in walked:
            entry = {"path": path, "artifact": root, "mtime": info.st_mtime,
                     "mode": stat.S_IMODE(info.st_mode) & ~0o6000, "data": ""}
            if stat.S_ISDIR(info.st_mode):
                entry["kind"] = "dir"
            elif stat.S_ISLNK(info.st_mode):
                target = os.readlink(path)
                inside = os.path.normpath(os.path.join(os.path.dirname(path), target))
                real = os.path.realpath(path)  # `d -> .` makes `d/d/..` climb for real
                if not ((inside + "/").startswith(root.rstrip("/") + "/") and
                        (real + "/").startswith(os.path.realpath(root) + "/")):
                    continue  # a link that leaves the artifact is not carried
                entry["kind"] = "link"
                entry["data"] = binascii.b2a_base64(target.encode(), newline=False).decode()
            elif stat.S_ISREG(info.st_mode):
                budget -= info.st_size
                if budget < 0:
                    raise OSError(f"the artifacts hold more than {ARTIFACT_BYTES_LIMIT >> 20} "
                                  "MiB")
                with open(path, "rb") as handle:
                    entry["kind"] = "file"
                    entry["data"] = binascii.b2a_base64(handle.read(), newline=False).decode()
            else:
                continue  # devices, sockets, fifos: not carried
            entries.append(entry)
    return entries


def restore_artifacts(entries):
    """Put carried artifacts at their paths in this (fresh) environment, as Harbor does.

    A directory artifact is emptied first, parents are created, owners are root.
    """
    for root in dict.fromkeys(e["artifact"] for e in entries):
        if os.path.isdir(root) and not os.path.islink(root):
            for name in os.listdir(root):
                remove(os.path.join(root, name), os.lstat(os.path.join(root, name)))
    for entry in entries:
        path = entry["path"]
        if entry["kind"] == "dir":
            if not os.path.isdir(path) or os.path.islink(path):
                make_room(path)
                os.makedirs(path)
            os.chmod(path, entry["mode"])
        elif entry["kind"] == "link":
            make_room(path)
            os.symlink(binascii.a2b_base64(entry["data"]).decode(), path)
            continue
        else:
            write_file(path, binascii.a2b_base64(entry["data"]), entry["mode"])
        os.lchown(path, 0, 0)
        os.utime(path, (entry["mtime"], entry["mtime"]), follow_symlinks=False)
    for entry in reversed(entries):  # writing below a directory changed its mtime again
        if entry["kind"] == "dir":
            os.utime(entry["path"], (entry["mtime"], entry["mtime"]))


def reset_for_verifier(snapshot):
    """Why the state after an agent phase cannot be made fresh here (None: it was)."""
    if snapshot is None:
        return "no record of the fresh state in this sandbox"
    if not snapshot.complete:
        return "setup state too large to snapshot"
    return snapshot.reset()


def run_phase(plan, phase, env, snapshot=None):
    """One phase: Harbor log dirs, optional solution, tests, reward.

    With a separate verifier, the tests run on fresh state that holds only the artifacts
    the solution left: collected, the environment reset in place, then restored. When the
    reset cannot make it fresh, the result carries the artifacts and no tests: they run in
    a new sandbox (`phase["carried"]`).
    """
    clear_harbor_dirs()
    if plan.get("steps"):
        return run_steps(plan, phase, env)
    result = {"name": phase["name"], "solution": None, "tests": None, "reward": None,
              "rewards": None, "reward_error": None, "carried": None}
    carried = phase.get("carried")
    solution = plan["solutions"].get(phase["solution"]) if phase["solution"] else None
    if carried is None and solution is not None:
        put_files("/solution", solution)
        solution_env = dict(env)
        solution_env.update(plan["solution_env"])
        result["solution"] = run_command(shell_for("/solution/solve.sh"),
                                         timeout=plan["solution_timeout"],
                                         cwd=plan["workdir"], env=solution_env,
                                         user=plan["agent_user"],
                                         log_limit=plan["log_limit"])
        if result["solution"]["timed_out"]:
            return result
    if plan.get("separate"):
        if carried is None:
            try:
                carried = collect_artifacts(plan["artifacts"])
            except OSError as exc:
                result["reward_error"] = f"the artifacts could not be collected: {exc}"
                return result
            problem = reset_for_verifier(snapshot)
            if problem:
                result["carried"], result["dirty"] = carried, problem
                return result
        clear_harbor_dirs()  # the verifier's own, empty /logs
        restore_artifacts(carried)
    limit = min(phase.get("tests_timeout") or plan["tests_timeout"], plan["tests_timeout"])
    result["tests"], result["rewards"], result["reward_error"] = run_tests(
        plan, plan["tests"], env, verifier_env(phase, plan["verifier_env"]),
        user=plan["verifier_user"], limit=limit)
    result["reward"] = lowest(result["rewards"])
    return result


def verifier_env(phase, variables):
    """The verifier's variables for a phase (FIRST_FAILURE_ENV when it is meant to earn 0)."""
    return {**variables, FIRST_FAILURE_ENV: "1"} if phase.get("first_failure") else variables


def run_tests(plan, tests, env, variables, *, user, limit):
    """Harbor's verifier: stale rewards gone, /tests uploaded, test.sh run, rewards read.

    Returns (test.sh outcome, {name: reward} or None, why there is none or None); a
    test.sh that timed out leaves no reward and no error (its outcome says why).
    """
    remove_rewards()
    put_files("/tests", tests)
    if strays():
        linger(UPLOAD_GAP_SEC)  # what the agent left sees the tests before they start
    tests_env = dict(env)
    tests_env.update(variables)
    outcome = run_command(shell_for("/tests/test.sh"), timeout=limit, cwd=plan["workdir"],
                          env=tests_env, user=user, log_limit=plan["log_limit"])
    if not Keeper.alive():
        Keeper.start()
        return outcome, None, MAIN_KILLED
    if outcome["timed_out"]:
        return outcome, None, None
    if strays():
        linger(READ_GAP_SEC)  # ...and the reward files before they are read
    return (outcome, *read_reward())


def run_steps(plan, phase, env):
    """A multi-step phase, as Harbor's multi-step trial runs one in a single environment.

    Each step: its workdir/ copied into the working directory and its setup.sh run, the
    solution (the step's own `KEY@step`, else `KEY`), then its tests on a /tests and
    /logs/verifier the previous step's verifier no longer holds. A step that leaves no
    reward, or whose rewards miss its min_reward, ends the phase. The phase's rewards are
    the steps' combined by the plan's strategy.
    """
    result = {"name": phase["name"], "solution": None, "tests": None, "reward": None,
              "rewards": None, "reward_error": None, "carried": None, "steps": []}
    key, solutions, workdir = phase["solution"], plan["solutions"], plan["workdir"]
    for index, step in enumerate(plan["steps"]):
        done = {"name": step["name"], "setup": None, "solution": None, "tests": None,
                "rewards": None, "reward_error": None}
        result["steps"].append(done)
        if index:  # the previous step's verifier leaves nothing behind
            if os.path.lexists("/tests"):
                remove("/tests", os.lstat("/tests"))
            clear_harbor_dirs(("/logs/verifier",))
        command = {"cwd": workdir, "user": step["agent_user"], "log_limit": plan["log_limit"]}
        put_files(workdir, step["workdir"])
        if any(f["path"] == "setup.sh" for f in step["workdir"]):
            done["setup"] = run_command(["bash", os.path.join(workdir, "setup.sh")],
                                        timeout=step["solution_timeout"], env=env, **command)
            if done["setup"]["exit_code"] != 0:
                done["reward_error"] = (f"steps/{step['name']}/workdir/setup.sh exited "
                                        f"{done['setup']['exit_code']}")
                break
        solution = solutions.get(f"{key}@{step['name']}", solutions.get(key)) if key else None
        if solution is not None:
            put_files("/solution", solution)
            solution_env = dict(env)
            solution_env.update(plan["solution_env"])
            done["solution"] = run_command(shell_for("/solution/solve.sh"),
                                           timeout=step["solution_timeout"], env=solution_env,
                                           **command)
            if done["solution"]["timed_out"]:
                break
        done["tests"], done["rewards"], done["reward_error"] = run_tests(
            plan, step["tests"], env, verifier_env(phase, step["verifier_env"]),
            user=step["verifier_user"],
            limit=min(phase.get("tests_timeout") or step["tests_timeout"],
                      step["tests_timeout"]))
        if done["rewards"] is None or below(done["rewards"], step["thresholds"]):
            break
    left = [s["rewards"] for s in result["steps"] if s["rewards"] is not None]
    if plan["reward_strategy"] == "final":
        result["rewards"] = result["steps"][-1]["rewards"]
    elif left:
        names = sorted({name for rewards in left for name in rewards})
        result["rewards"] = {name: sum(r.get(name, 0.0) for r in left) / len(left)
                             for name in names}
    result["reward"] = lowest(result["rewards"])
    if result["rewards"] is None:
        failed = result["steps"][-1]
        result["reward_error"] = f"step {failed['name']}: {failed['reward_error'] or 'timed out'}"
    return result


def below(rewards, thresholds):
    """True when `rewards` miss one of min_reward's thresholds (a missing name: -inf)."""
    return any((rewards or {}).get(name, -math.inf) < value
               for name, value in thresholds.items())


def _ignore(signum, frame):
    """A handler, not SIG_IGN: handlers reset to default in children, SIG_IGN is inherited."""


def main():
    """Read the plan, set up, snapshot, run the phases, print the result as JSON."""
    # As PID 1 of the container, only signals with a handler reach us; make those no-ops
    # so a phase cannot stop the driver (Ctrl-C semantics belong to the host).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, _ignore)
    with open(PLAN_PATH, "rb") as handle:
        plan = json.load(handle)
    os.unlink(PLAN_PATH)  # tests and solutions now live only in this process
    # No reference file (one sandbox per phase, as the bwrap runtime runs): nothing to reset.
    since_ns = os.lstat(plan["fresh_since"]).st_ctime_ns if plan.get("fresh_since") else None
    env = dict(os.environ)
    env.update(plan["env"])
    Keeper.start()
    output = {"setup": run_setup(plan, env), "leaks": [], "phases": [], "not_run": [],
              "dirty": None}
    phases = plan["phases"]
    if output["setup"]["ok"]:
        for path in HARBOR_DIRS:
            if os.path.isdir(path):
                shutil.rmtree(path)
        snapshot = None  # a single phase runs on the state setup left: no reset needed
        separate = bool(plan.get("separate")) and any(p["solution"] for p in phases)
        if len(phases) > 1 or plan["leak_fingerprints"] or separate:
            tick = 0.0 if plan.get("probe_ctime") and fine_ctime() else CTIME_TICK_SEC
            snapshot = Snapshot(since_ns, tick, resettable=len(phases) > 1 or separate)
        if plan["leak_fingerprints"]:
            output["leaks"] = scan_leaks(snapshot, plan["leak_fingerprints"])
        for index, phase in enumerate(phases):
            if index:
                problem = None if snapshot.complete else "setup state too large to snapshot"
                problem = problem or snapshot.reset()
                if problem:
                    output["dirty"] = problem
                    output["not_run"] = [p["name"] for p in phases[index:]]
                    break
            result = run_phase(plan, phase, env, snapshot)
            problem = result.pop("dirty", None)
            output["phases"].append(result)
            if result["carried"] is not None:  # its tests run in a new sandbox, then the rest
                output["dirty"] = problem
                output["not_run"] = [p["name"] for p in phases[index + 1:]]
                break
    sys.stdout.write("\n" + RESULT_MARKER + "\n" + json.dumps(output) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
