"""In-sandbox command server of a long-lived bubblewrap session (`bwrap_session`).

Like `driver.py`, this file runs *inside* the sandbox with the root filesystem's own
python3 (3.9+) and imports only the standard library. It is the sandbox's PID 1, as a
container's main process is: commands it runs keep the processes they leave in the
background until the session closes, as in `docker exec`.

Requests arrive on stdin and answers leave on stdout, one JSON object per line:

    {"id": "<hex>", "argv": [...], "cwd": "/app", "env": {...}, "user": "root",
     "timeout": 60.0, "stdin": "<base64>"}
    {"id": "<hex>", "exit_code": 0, "timed_out": false, "stdout": "<base64>",
     "stderr": "<base64>"}

Files move by two more requests, carried out by this process itself with the tarfile
module it loaded before anything else ran, never by the sandbox's own `tar` (which an
agent, root inside, may have replaced: Harbor's docker environment copies files with the
engine, from outside the container, and so must this):

    {"id": "<hex>", "op": "put", "dir": "/tests", "tar": "<base64>"}   unpack into dir
    {"id": "<hex>", "op": "get", "path": "/logs/verifier"}             a tar of path (a
        folder's entries at the archive's top, a file under its own name) in "stdout"

Each request runs in its own thread. The process is made non-dumpable first, so the
sandbox's processes (root, but without CAP_SYS_PTRACE) cannot open its pipes or memory
through /proc/1: they cannot read the requests or forge the answers. When stdin closes,
the server kills every process and exits, and the sandbox ends with it.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time

PR_SET_DUMPABLE = 4
# After the command exits, how long output still held open by its background children is
# read before the pipes are closed (they get EPIPE, as after `docker exec` returns).
LINGER_SEC = 0.5
# Output kept per stream of a command: its head and its tail, half each. A command that
# writes more must not take the memory of the sandbox (this process lives in it) and with
# it the session.
OUTPUT_LIMIT = 16 << 20

_write_lock = threading.Lock()
_running: set[int] = set()
_running_lock = threading.Lock()


def answer(message):
    """Write one answer line (whole lines, one at a time)."""
    data = (json.dumps(message) + "\n").encode("utf-8")
    with _write_lock:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]


def _entries(path):
    """The colon-separated lines of an account file, read as plain data."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [line.rstrip("\n").split(":") for line in handle
                    if line.strip() and not line.startswith("#")]
    except OSError:
        return []


def user_kwargs(user):
    """Popen arguments that run as `user` (name or uid), plus its HOME and USER.

    /etc/passwd and /etc/group are read as text, as a container engine reads them: never
    through glibc's NSS, whose modules and nsswitch.conf the sandbox's root may replace to
    run code in this process (which then could forge every answer).

    Raises:
        KeyError: No such user.
    """
    if user in (None, "", "root", 0, "0"):
        return {}, {}
    field = 2 if str(user).isdigit() else 0
    entry = next((e for e in _entries("/etc/passwd")
                  if len(e) >= 7 and e[field] == str(user) and e[2].isdigit()
                  and e[3].isdigit()), None)
    if entry is None:
        raise KeyError(user)
    name, uid, gid = entry[0], int(entry[2]), int(entry[3])
    groups = sorted({gid} | {int(e[2]) for e in _entries("/etc/group") if len(e) >= 4
                             and e[2].isdigit() and name in e[3].split(",")})
    return ({"user": uid, "group": gid, "extra_groups": groups},
            {"HOME": entry[5] or "/", "USER": name})


def serve(request):
    """The answer to one request."""
    reply = {"id": request["id"], "exit_code": 0, "timed_out": False, "stdout": "",
             "stderr": ""}
    op = request.get("op", "run")
    try:
        if op == "put":
            put(request["dir"], base64.b64decode(request["tar"]))
            return reply
        if op == "get":
            return dict(reply, stdout=base64.b64encode(get(request["path"])).decode())
    except (OSError, tarfile.TarError) as exc:
        return dict(reply, exit_code=1, stderr=base64.b64encode(
            f"{op} failed: {exc}\n".encode()).decode())
    return run(request, reply)


def put(directory, data):
    """Unpack a tar archive into `directory` (made first), keeping modes and numeric owners.

    Whatever is in the way of a file (a link, a FIFO, a file where a folder goes) is
    replaced, never written through or opened, as a container engine's copy replaces it.
    """
    os.makedirs(directory, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        for member in archive.getmembers():
            target = os.path.join(directory, member.name)
            keep = member.isdir() and os.path.isdir(target) and not os.path.islink(target)
            if os.path.lexists(target) and not keep:
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                else:
                    os.unlink(target)
            archive.extract(member, directory, numeric_owner=True)


def get(path):
    """A tar archive of `path`: a folder's entries, or the file, at the top."""
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:") as archive:
        if os.path.isdir(path) and not os.path.islink(path):
            for name in sorted(os.listdir(path)):
                archive.add(os.path.join(path, name), arcname=name)
        else:
            archive.add(path, arcname=os.path.basename(path))
    return buffer.getvalue()


def run(request, reply):
    """Run one request's command to its end or its deadline; its answer."""
    try:
        kwargs, identity = user_kwargs(request.get("user"))
    except KeyError:
        return dict(reply, exit_code=126, stderr=base64.b64encode(
            f"user {request.get('user')!r} does not exist in the environment\n".encode()
        ).decode())
    env = dict(os.environ)
    env.update(request.get("env") or {})
    env.update(identity)
    cwd = request.get("cwd") or "/"
    with _running_lock:  # the reaper must not take this command's exit status
        try:
            proc = subprocess.Popen(request["argv"], cwd=cwd if os.path.isdir(cwd) else "/",
                                    env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, **kwargs)
        except OSError as exc:
            return dict(reply, exit_code=127, stderr=base64.b64encode(
                f"could not start {request['argv'][0]}: {exc}\n".encode()).decode())
        _running.add(proc.pid)
    try:
        out, err, timed_out = _communicate(proc, base64.b64decode(request.get("stdin") or ""),
                                           request.get("timeout"))
        code = proc.wait()
    finally:
        with _running_lock:
            _running.discard(proc.pid)
    return dict(reply, exit_code=code, timed_out=timed_out,
                stdout=base64.b64encode(out).decode(), stderr=base64.b64encode(err).decode())


class Kept:
    """The head and the tail of a stream, with how much was left out between them."""

    def __init__(self, limit=OUTPUT_LIMIT):
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data):
        """Take the next bytes of the stream."""
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.half:
            self.dropped += len(self.tail) - self.half
            del self.tail[:len(self.tail) - self.half]

    def value(self):
        """The kept bytes, with a marker where bytes were left out."""
        gap = b"\n[taskloom: %d bytes left out]\n" % self.dropped if self.dropped else b""
        return bytes(self.head) + gap + bytes(self.tail)


def _communicate(proc, data, timeout):
    """(stdout, stderr, timed out): feed stdin, read both pipes until the command ends."""
    deadline = time.monotonic() + timeout if timeout else None
    threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True).start()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks = {out_fd: Kept(), err_fd: Kept()}
    open_fds = {out_fd, err_fd}
    exited_at = None
    timed_out = False
    while open_fds:
        now = time.monotonic()
        if deadline is not None and now >= deadline and proc.poll() is None:
            timed_out = True
            break
        if proc.poll() is not None:
            exited_at = exited_at or now
            if now - exited_at > LINGER_SEC:
                break
        wait = 0.05 if deadline is None else max(0.0, min(0.05, deadline - now))
        ready, _, _ = select.select(list(open_fds), [], [], wait)
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if data:
                chunks[fd].feed(data)
            else:
                open_fds.discard(fd)
    if not open_fds and not timed_out:
        # The output closes as the command exits, a moment before its status shows.
        try:
            proc.wait(timeout=None if deadline is None
                      else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.stdout.close()
    proc.stderr.close()
    return chunks[out_fd].value(), chunks[err_fd].value(), timed_out


def _feed(pipe, data):
    """Write `data` to a command's stdin and close it (EPIPE if it never reads it)."""
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def reap():
    """Reap orphans that became ours (PID 1), never a command a thread waits for."""
    while True:
        time.sleep(0.2)
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            with _running_lock:
                if pid in _running:
                    continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == b"Z" and fields[1] == b"1":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)


def _ignore(signum, frame):
    """A handler, not SIG_IGN: handlers reset to default in children, SIG_IGN is inherited."""


def main():
    """Serve requests from stdin until it closes."""
    # tarfile looks owners up by name through NSS unless it has no pwd and grp modules:
    # this process must never run the sandbox's NSS code (see user_kwargs).
    tarfile.pwd = tarfile.grp = None
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, _ignore)
    try:
        protected = ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        protected = False
    with contextlib.suppress(OSError):
        os.unlink(sys.argv[0])  # the sandbox does not keep the server's code
    threading.Thread(target=reap, daemon=True).start()
    answer({"id": "ready", "protected": protected})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        threading.Thread(target=lambda r=request: answer(serve(r)), daemon=True).start()
    os.kill(-1, signal.SIGKILL)  # stdin closed: the session is over


if __name__ == "__main__":
    main()
