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
import pwd
import select
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


def user_kwargs(user):
    """Popen arguments that run as `user` (name or uid), plus its HOME and USER."""
    if user in (None, "", "root", 0, "0"):
        return {}, {}
    entry = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
    return ({"user": entry.pw_uid, "group": entry.pw_gid,
             "extra_groups": os.getgrouplist(entry.pw_name, entry.pw_gid)},
            {"HOME": entry.pw_dir, "USER": entry.pw_name})


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
    """Unpack a tar archive into `directory` (made first), keeping modes and owners."""
    os.makedirs(directory, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        archive.extractall(directory)


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


def _communicate(proc, data, timeout):
    """(stdout, stderr, timed out): feed stdin, read both pipes until the command ends."""
    deadline = time.monotonic() + timeout if timeout else None
    threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True).start()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks = {out_fd: [], err_fd: []}
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
                chunks[fd].append(data)
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
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), timed_out


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
