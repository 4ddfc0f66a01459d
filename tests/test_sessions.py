"""Live sessions on both runtimes (what the Harbor plugin, `make --shell` and `check` work
in), against the real sandboxes: state and background processes last between commands,
limits and isolation hold, files move without the sandbox's own tools, and closing leaves
nothing behind."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import docker.errors
import pytest

from taskloom.errors import SandboxError
from taskloom.harbor import read_task_folder
from taskloom.models import TaskFile
from taskloom.sandbox import cgroups, live
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.sandbox.bwrap_session import BwrapSession
from taskloom.sandbox.docker_session import DockerSession
from taskloom.sandbox.session import Session
from taskloom.sandbox.trial import EnvironmentSpec


def spec_of(dockerfile: str, **files: str) -> EnvironmentSpec:
    context = [TaskFile(path="Dockerfile", content=dockerfile.encode())]
    context += [TaskFile(path=name, content=text.encode()) for name, text in files.items()]
    return EnvironmentSpec(image="", build=True, context=tuple(context), memory_mb=256)


DOCKERFILE = (f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY data.txt /app/data.txt\n"
              "ENV GREETING=hello\nRUN useradd --create-home worker\n")


SESSIONS = {"docker": DockerSession, "bwrap": BwrapSession}


def new_session(runtime_name: str, request, spec: EnvironmentSpec) -> Session:
    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    return SESSIONS[runtime_name](runtime, spec)


@pytest.fixture()
def session(runtime_name, request):
    opened = new_session(runtime_name, request, spec_of(DOCKERFILE, **{"data.txt": "hi\n"}))
    opened.start()
    yield opened
    opened.close()


def bash(session: Session, script: str, **options) -> tuple[int, str, str]:
    done = session.run(["bash", "-c", script], **options)
    return done.exit_code, done.stdout.decode(), done.stderr.decode()


def test_commands_share_the_environment_and_what_they_leave_running(session):
    assert bash(session, "pwd; cat data.txt; echo $GREETING; echo oops >&2") == \
        (0, "/app\nhi\nhello\n", "oops\n")
    assert bash(session, "echo written > /app/new.txt; (sleep 300 &); exit 3")[0] == 3
    code, out, _ = bash(session, "cat /app/new.txt; pgrep -x sleep >/dev/null && echo alive")
    assert (code, out) == (0, "written\nalive\n")


@pytest.mark.bwrap
def test_a_session_outlives_the_thread_that_started_it(bwrap_runtime):
    """bubblewrap's parent-death signal follows the thread that forked it: Harbor's plugin
    starts a session in one short-lived thread and runs commands from others."""
    session = BwrapSession(bwrap_runtime, spec_of(DOCKERFILE, **{"data.txt": "hi\n"}))
    starter = threading.Thread(target=session.start)
    starter.start()
    starter.join()
    time.sleep(0.5)
    try:
        assert bash(session, "cat data.txt") == (0, "hi\n", "")
    finally:
        session.close()


def test_users_input_and_timeouts(session):
    assert bash(session, "id -un; echo $HOME", user="worker")[1] == "worker\n/home/worker\n"
    assert bash(session, "id -un", user="nobody-here")[0] == 126
    payload = bytes(range(256)) * 4096  # 1 MiB through stdin, larger than a pipe
    done = session.run(["bash", "-c", "cat > /app/blob && sha256sum < /app/blob"],
                       stdin=payload)
    assert done.exit_code == 0
    assert session.run(["cat", "/app/blob"]).stdout == payload
    timed = session.run(["bash", "-c", "sleep 30"], timeout=1.0)
    assert timed.timed_out and timed.exit_code == -9


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            entry = tarfile.TarInfo(name)
            entry.size, entry.mode = len(data), 0o755
            archive.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


def test_files_move_by_the_server_not_by_a_tar_the_sandbox_may_have_replaced(session):
    """Root inside may replace tar (an agent forging the reward the verifier leaves); the
    transfers never run it, as Docker's copies never run the container's."""
    forged = "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n"
    assert bash(session, f"for t in /usr/bin/tar /bin/tar; do printf '{forged}' > $t; done; "
                         "mkdir -p /logs/verifier; echo 0 > /logs/verifier/reward.txt")[0] == 0
    assert session.put("/tests", tar_of({"test.sh": b"#!/bin/bash\necho real\n"})).exit_code == 0
    assert bash(session, "ls -l /tests/test.sh | cut -c1-10; bash /tests/test.sh")[1] == \
        "-rwxr-xr-x\nreal\n"
    got = session.get("/logs/verifier")
    with tarfile.open(fileobj=io.BytesIO(got.stdout)) as archive:
        assert archive.extractfile("reward.txt").read() == b"0\n"
    missing = session.get("/no/such/path")
    assert missing.exit_code == 1 and b"no such file" in missing.stderr


def server_maps(session: Session) -> str:
    """/proc/PID/maps of the session's server (PID 1 inside), read from the host."""
    if isinstance(session, DockerSession):
        state = session.runtime.client.api.inspect_container(session.container)["State"]
        return Path(f"/proc/{state['Pid']}/maps").read_text()
    bubblewrap = session._sandbox.process.pid
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == bubblewrap and "session.py" in \
                    (stat.parent / "cmdline").read_bytes().decode(errors="replace"):
                return (stat.parent / "maps").read_text()
    raise AssertionError("no session server found")


def test_the_server_never_runs_the_sandboxs_nss_code(session):
    """Root inside may point nsswitch.conf at a module of its own (a red team's forged the
    reward from inside PID 1 that way): users and owners are read as plain data."""
    assert bash(session, "sed -i 's/^passwd:.*/passwd: compat/; s/^group:.*/group: "
                         "compat/' /etc/nsswitch.conf; getent passwd worker >/dev/null")[0] == 0
    assert bash(session, "id -un; id -G | wc -w", user="worker")[1] == "worker\n1\n"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as writer:
        entry = tarfile.TarInfo("owned.txt")
        entry.uname, entry.gname, entry.uid, entry.gid, entry.size = "worker", "worker", 0, 0, 2
        writer.addfile(entry, io.BytesIO(b"x\n"))
    assert session.put("/app", archive.getvalue()).exit_code == 0
    assert session.get("/app").exit_code == 0
    assert bash(session, "stat -c %u /app/owned.txt")[1] == "0\n"  # numeric owners
    assert "libnss_compat" not in server_maps(session)


def test_a_transfer_replaces_what_is_in_its_way(session):
    assert bash(session, "mkdir -p /tests && mkfifo /tests/test.sh && "
                         "ln -s /etc /tests/data")[0] == 0
    files = tar_of({"test.sh": b"#!/bin/bash\necho ok\n"})
    folder = io.BytesIO()
    with tarfile.open(fileobj=folder, mode="w") as writer:
        directory = tarfile.TarInfo("data")
        directory.type, directory.mode = tarfile.DIRTYPE, 0o755
        writer.addfile(directory)
        entry = tarfile.TarInfo("data/passwd")
        entry.size = 3
        writer.addfile(entry, io.BytesIO(b"hi\n"))
    assert session.put("/tests", files).exit_code == 0
    assert session.put("/tests", folder.getvalue()).exit_code == 0
    assert bash(session, "bash /tests/test.sh; stat -c %F /tests/data; cat /tests/data/passwd; "
                         "grep -c root /etc/passwd")[1] == "ok\ndirectory\nhi\n1\n"


def test_output_beyond_the_limit_keeps_its_head_and_tail_and_the_session(session):
    done = session.run(["bash", "-c", "printf start; head -c 40000000 /dev/zero; printf end"])
    assert done.exit_code == 0 and len(done.stdout) < 17 << 20
    assert done.stdout.startswith(b"start") and done.stdout.endswith(b"end")
    assert b"bytes left out]" in done.stdout
    assert bash(session, "echo alive")[1] == "alive\n"


def test_the_sandbox_cannot_reach_the_session_channel_or_a_network(session):
    code, out, err = bash(session, "ls -l /proc/1/fd/ 2>&1; cat /proc/1/environ 2>&1 | head -c 40")
    assert "Permission denied" in out + err
    if isinstance(session, BwrapSession):
        assert not (session.runtime.rootfs.path / ".taskloom").exists()
    code, out, _ = bash(session, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert out.split() == ["lo"]
    code, _, _ = bash(session, "python3 -c \"import socket; socket.create_connection(("
                               "'10.0.0.1', 80), timeout=2)\"")
    assert code != 0


@pytest.mark.bwrap
def test_close_kills_everything_and_removes_the_mounts_and_cgroups(bwrap_runtime):
    session = BwrapSession(bwrap_runtime, spec_of(DOCKERFILE, **{"data.txt": "hi\n"}))
    session.start()
    bash(session, "(sleep 300 &)")
    directory = session.directory
    cgroup_dirs = f"*/taskloom/{bwrap_runtime.owner}/{directory.name}-*"
    assert directory.is_dir() and list(cgroups.CGROUP_ROOT.glob(cgroup_dirs))
    assert str(directory) in Path("/proc/mounts").read_text()
    session.close()
    bwrap_runtime._cleaner.submit(lambda: None).result()  # the background removal is done
    assert not directory.exists()
    assert str(directory) not in Path("/proc/mounts").read_text()
    assert not list(cgroups.CGROUP_ROOT.glob(cgroup_dirs))
    with pytest.raises(SandboxError, match="closed"):
        session.run(["true"])


@pytest.mark.docker
def test_close_removes_the_container_and_the_image_built_for_it(docker_runtime):
    session = DockerSession(docker_runtime, spec_of(DOCKERFILE, **{"data.txt": "hi\n"}))
    session.start()
    bash(session, "(sleep 300 &)")
    container, image = session.container, session._image
    api = docker_runtime.client.api
    assert api.inspect_container(container)["State"]["Running"] and api.inspect_image(image)
    session.close()
    with pytest.raises(docker.errors.NotFound):
        api.inspect_container(container)
    with pytest.raises(docker.errors.NotFound):
        api.inspect_image(image)
    with pytest.raises(SandboxError, match="closed"):
        session.run(["true"])
    session.close()  # twice is fine


@pytest.mark.docker
def test_a_prebuilt_image_runs_with_its_own_workdir_env_and_user(docker_runtime):
    """A task that names a docker_image (as `export --images` writes) gets what `docker
    exec` would give: the image's WORKDIR, ENV and USER."""
    builder = DockerSession(docker_runtime, spec_of(DOCKERFILE + "USER worker:worker\n",
                                                    **{"data.txt": "hi\n"}))
    with builder:
        image = builder._image
        docker_runtime.client.api.tag(image, "taskloom-session-test", "prebuilt")
    try:
        prebuilt = EnvironmentSpec(image="taskloom-session-test:prebuilt", build=True,
                                   memory_mb=256)
        with DockerSession(docker_runtime, prebuilt) as session:
            assert bash(session, "pwd; echo $GREETING; id -un") == \
                (0, "/app\nhello\nworker\n", "")
    finally:
        docker_runtime.client.api.remove_image("taskloom-session-test:prebuilt", force=True)


@pytest.mark.docker
def test_the_server_is_pid_1_whatever_the_images_entrypoint(docker_runtime):
    """An ENTRYPOINT left in front of the server would hold the channel, dumpable."""
    spec = spec_of(DOCKERFILE + 'ENTRYPOINT ["/bin/sh", "-c", "echo banner; exec sleep 600"]\n',
                   **{"data.txt": "hi\n"})
    with DockerSession(docker_runtime, spec) as session:
        code, out, _ = bash(session, "tr '\\0' ' ' < /proc/1/cmdline")
        assert code == 0 and "session.py" in out and "sleep" not in out


@pytest.mark.docker
def test_a_dockerfile_that_fails_is_reported_with_its_log(docker_runtime):
    broken = DockerSession(docker_runtime, spec_of(f"FROM {BASE_IMAGE}\nRUN echo bad; exit 7\n"))
    with pytest.raises(SandboxError, match="does not build"):
        broken.start()
    assert broken.container is None


@pytest.mark.bwrap
def test_environments_it_cannot_make_are_refused_with_the_reason(bwrap_runtime):
    with pytest.raises(SandboxError, match=r"FROM python:3\.12"):
        BwrapSession(bwrap_runtime, spec_of("FROM python:3.12\n"))
    broken = BwrapSession(bwrap_runtime, spec_of(f"FROM {BASE_IMAGE}\nRUN exit 7\n"))
    with pytest.raises(SandboxError, match="setup failed"):
        broken.start()
    broken.close()


# -- live checks: `taskloom check` and `make --shell` work in a session -----------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples/tasks/rotate-nginx-logs"


def test_a_live_check_reads_the_state_an_attempt_left(runtime_name, request):
    request.getfixturevalue(f"{runtime_name}_runtime")  # the engine and image, or the rootfs
    task = read_task_folder(EXAMPLE)
    with live.session(task, runtime_name) as opened:
        untouched = live.check_in(opened, task)
        assert untouched.reward == 0 and untouched.failed, untouched.log
        solve = task.file("solution", "solve.sh").content
        assert opened.run(["bash"], stdin=solve).exit_code == 0
        solved = live.check_in(opened, task)
        assert (solved.reward, solved.failed) == (1, ()), solved.log
        assert opened.run(["test", "-e", "/tests"], user="root").exit_code == 1


@pytest.mark.bwrap
def test_check_sets_up_a_fresh_environment_without_docker(bwrap_rootfs):
    fresh = subprocess.run([sys.executable, "-m", "taskloom.cli", "check", str(EXAMPLE),
                            "--runtime", "bwrap"], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 1, fresh.stderr
    assert "reward 0" in fresh.stdout and "failing checks" in fresh.stdout
    mixed = subprocess.run([sys.executable, "-m", "taskloom.cli", "check", str(EXAMPLE),
                            "--runtime", "bwrap", "--container", "x"], capture_output=True,
                           text=True, timeout=60)
    assert mixed.returncode == 2 and "--container names a Docker container" in mixed.stderr
