"""Docker runtime: runs a `TrialPlan` in locked-down containers.

Two ways to run a trial, chosen by the plan's environment:
- **driver** (fast mode, environment emulated on the base image): one container runs
  `driver.py`, which sets up the environment and runs every phase, resetting state in
  place between phases. When a phase leaves state it cannot undo, the remaining phases go
  to a new container.
- **exec** (strict mode, a real `docker build` or a prebuilt image): every phase gets a
  fresh container; the host copies files in and execs solve.sh / test.sh, as Harbor does.

Every container gets the sandbox policy (`taskloom.sandbox.policy`): no network, memory =
memory+swap limit, CPU quota, pids limit, all capabilities dropped but the few
file-ownership ones tasks need, no-new-privileges, capped logs, and a label so a later run
removes it if this process dies before it could; plus a wall-clock deadline after which it
is killed. The container's PID 1 is our own process (the driver, or `sleep`): the kernel
does not let processes inside the container kill it, so a solution that runs `kill -9 -1`
or `pkill python3` cannot take the trial down with it.

The engine client and the container factory are in `taskloom.sandbox.containers`, shared
with live environments; `docker_client` and `prune_stale` are importable from here too.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import IO

from taskloom.errors import SandboxError
from taskloom.sandbox.containers import (
    add_tar_member,
    create_container,
    docker_client,
    engine_errors,
    prune_stale,
    read_reward,
    tar_files,
)
from taskloom.sandbox.driver import MAIN_KILLED, REWARD_FILES, Capture, lowest
from taskloom.sandbox.driver_plan import ARTIFACTS_DIR, DriverReport, driver_plan, read_report
from taskloom.sandbox.fast_mode import run_in_place
from taskloom.sandbox.policy import DRIVER_SOURCE, OUTPUT_LIMIT, sandbox_labels
from taskloom.sandbox.trial import (
    CommandResult,
    Leak,
    Phase,
    PhaseResult,
    SetupResult,
    TrialPlan,
    TrialResult,
)

# PID 1 as Harbor's compose file has it: a shell whose `sleep` child is the container's main
# command (whatever kills that child stops the container, as under Harbor).
_SLEEP_FOREVER = ["sh", "-c", "sleep 2147483647"]


def _write_driver_archive(driver: bytes, document: dict, archive: IO[bytes]) -> None:
    """Write the trial driver and its plan as a tar into `archive` (a file), then rewind it.

    The plan carries every task file base64-encoded. Built in memory, a worker held it four
    times at once for a task of several MB (JSON text, its bytes, the tar, the request
    body), and two workers doing so together set the peak memory of a long batch run.
    Spooled through files, only the plan document itself is in memory.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8") as plan_json, \
            tarfile.open(fileobj=archive, mode="w") as tar:
        json.dump(document, plan_json)
        plan_json.flush()
        size = plan_json.buffer.tell()
        plan_json.buffer.seek(0)
        add_tar_member(tar, ".taskloom/driver.py", io.BytesIO(driver), len(driver), 0o600)
        add_tar_member(tar, ".taskloom/plan.json", plan_json.buffer, size, 0o600)
    archive.seek(0)


class DockerRuntime:
    """Runs trials in Docker containers; `close()` removes everything it created."""

    name = "docker"

    def __init__(self, client=None, *, keep_images: bool = False) -> None:
        self.client = client or docker_client()
        self.keep_images = keep_images
        self._driver = DRIVER_SOURCE.read_bytes()  # copied into every container
        self._live: set[str] = set()
        self._images: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False
        prune_stale(self.client)

    # -- public -------------------------------------------------------------------------

    def run(self, plan: TrialPlan) -> TrialResult:
        """Run every phase of `plan` and report what happened.

        Raises:
            SandboxError: The engine failed (not the task).
        """
        if plan.environment.build:
            return self._run_strict(plan)
        return self._run_fast(plan)

    def close(self) -> None:
        """Force-remove every container and image this runtime created that still exists."""
        import docker.errors

        with self._lock:
            self._closed = True
            live, self._live = list(self._live), set()
            images, self._images = list(self._images), set()
        for container_id in live:
            with contextlib.suppress(docker.errors.DockerException):
                self.client.api.remove_container(container_id, force=True, v=True)
        for image in images:
            with contextlib.suppress(docker.errors.DockerException):
                self.client.api.remove_image(image, force=True)

    def __enter__(self) -> DockerRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- containers -----------------------------------------------------------------------

    def create(self, image: str, command: list[str], plan: TrialPlan, *,
               stdin_open: bool = False, user: str | None = None,
               name: str | None = None, entrypoint: list[str] | None = None) -> str:
        """A locked-down container of this runtime (removed by `remove` or `close`).

        Raises:
            SandboxError: The runtime is closed, or the engine refused.
            SandboxUnavailable: The image is not available locally.
        """
        spec = plan.environment
        if self._closed:
            raise SandboxError("the runtime was closed (interrupted); no new sandboxes")
        container_id = create_container(self.client, image, command, memory_mb=spec.memory_mb,
                                        cpus=spec.cpus, network=plan.network,
                                        labels=sandbox_labels(), stdin_open=stdin_open,
                                        user=user, name=name, entrypoint=entrypoint)
        with self._lock:
            self._live.add(container_id)
            closed = self._closed
        if closed:  # close() ran while we were creating: do not leave this one behind
            self.remove(container_id)
            raise SandboxError("the runtime was closed (interrupted); no new sandboxes")
        return container_id

    def remove(self, container_id: str) -> None:
        """Force-remove a container this runtime created (gone already is fine)."""
        import docker.errors

        with contextlib.suppress(docker.errors.NotFound):
            self.client.api.remove_container(container_id, force=True, v=True)
        with self._lock:
            self._live.discard(container_id)

    # -- fast mode: one driver container, in-place resets -------------------------------

    def _run_fast(self, plan: TrialPlan) -> TrialResult:
        return run_in_place(plan, lambda phases, first: self._drive(plan, phases,
                                                                    scan_leaks=first),
                            sandbox_noun="container")

    def _drive(self, plan: TrialPlan, phases: list[Phase], *,
               scan_leaks: bool) -> DriverReport:
        """Run the driver once in a new container and parse what it reports."""
        spec = plan.environment
        deadline = (spec.build_timeout_sec + 30.0 + len(phases) *
                    (plan.solution_timeout + plan.tests_timeout + 5.0))
        container_id = self.create(spec.image, ["python3", "/.taskloom/driver.py"], plan)
        try:
            with tempfile.TemporaryFile() as payload:
                _write_driver_archive(self._driver, driver_plan(
                    plan, phases, scan_leaks=scan_leaks, fresh_since="/.dockerenv"), payload)
                self.client.api.put_archive(container_id, "/", payload)
            self.client.api.start(container_id)
            exit_code, timed_out = self._wait(container_id, deadline)
            logs = self._logs(container_id)
            state = self.client.api.inspect_container(container_id)["State"]
        except engine_errors() as exc:
            raise SandboxError(f"the Docker engine failed while running a trial: {exc}") from exc
        finally:
            self.remove(container_id)
        report = read_report(logs, timed_out=timed_out,
                             out_of_memory=bool(state.get("OOMKilled")))
        if report is None:
            raise SandboxError(f"the trial driver in {spec.image} exited with code "
                               f"{exit_code} without a result:\n{logs[-2000:]}",
                               fix="fast mode needs python3 >= 3.9 in the image (the "
                                   "taskloom base image has it); use --mode strict otherwise")
        return report

    def _wait(self, container_id: str, deadline: float) -> tuple[int, bool]:
        import requests

        try:
            status = self.client.api.wait(container_id, timeout=deadline)
            return int(status.get("StatusCode", -1)), False
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout):
            self.client.api.kill(container_id)
            self.client.api.wait(container_id, timeout=60)
            return -9, True

    def _logs(self, container_id: str) -> str:
        raw = self.client.api.logs(container_id, stdout=True, stderr=True, tail=2000)
        return raw[-OUTPUT_LIMIT:].decode("utf-8", errors="replace")

    # -- strict mode: real build, fresh container per phase -----------------------------

    def _run_strict(self, plan: TrialPlan) -> TrialResult:
        spec = plan.environment
        started = time.monotonic()
        if spec.context:
            image, setup = self.build(plan)
            if image is None:
                return TrialResult(setup=setup, sandboxes=0)
        else:
            image = spec.image
            setup = SetupResult(ok=True, seconds=0.0)
        try:
            leaks = self._exec_leak_scan(image, plan) if plan.leak_fingerprints else ()
            results = [self._exec_phase(image, plan, phase) for phase in plan.phases]
        finally:
            if spec.context and not self.keep_images:
                self.drop_image(image)
        setup = setup.model_copy(update={"seconds": setup.seconds or
                                         time.monotonic() - started})
        return TrialResult(setup=setup, phases=tuple(results), leaks=leaks,
                           sandboxes=len(results) + (1 if plan.leak_fingerprints else 0))

    def build(self, plan: TrialPlan) -> tuple[str | None, SetupResult]:
        """Docker build the context; (image, result) or (None, failed result).

        The image is removed by `drop_image` or `close`.

        Raises:
            SandboxError: The runtime is closed.
        """
        import docker.errors
        import requests

        if self._closed:
            raise SandboxError("the runtime was closed (interrupted); no new sandboxes")
        spec = plan.environment
        tag = f"taskloom-build:{uuid.uuid4().hex[:16]}"
        context = tar_files(spec.context)
        started = time.monotonic()
        lines: list[str] = []
        with self._lock:
            self._images.add(tag)
        try:
            stream = self.client.api.build(
                fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True,
                forcerm=True, decode=True, network_mode="bridge" if plan.network else "none",
                labels=sandbox_labels(), timeout=spec.build_timeout_sec,
                container_limits={"memory": spec.memory_mb * 1024 * 1024,
                                  "memswap": spec.memory_mb * 1024 * 1024})
            for chunk in stream:
                lines.append(str(chunk.get("stream") or chunk.get("status") or ""))
                if "error" in chunk:
                    return None, _build_failure(started, lines, chunk["error"], False)
                if time.monotonic() - started > spec.build_timeout_sec:
                    return None, _build_failure(started, lines, "build timed out", True)
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout):
            return None, _build_failure(started, lines, "build timed out", True)
        except docker.errors.APIError as exc:
            return None, _build_failure(started, lines, str(exc.explanation or exc), False)
        return tag, SetupResult(ok=True, seconds=time.monotonic() - started,
                                log="".join(lines)[-4000:])

    def drop_image(self, image: str) -> None:
        """Remove an image `build` made."""
        import docker.errors

        with contextlib.suppress(docker.errors.DockerException):
            self.client.api.remove_image(image, force=True)
        with self._lock:
            self._images.discard(image)

    def _exec_phase(self, image: str, plan: TrialPlan, phase: Phase) -> PhaseResult:
        container_id = self.create(image, _SLEEP_FOREVER, plan)
        owned = [container_id]  # a separate verifier's container joins it
        try:
            self.client.api.start(container_id)
            self._exec(container_id, ["sh", "-c", _CLEAR_LOGS], timeout=30, plan=plan)
            solution = None
            if phase.solution is not None:
                files = plan.solutions[phase.solution]
                self.client.api.put_archive(container_id, "/", tar_files(
                    _executable(files, "solve.sh"), "solution/"))
                solution = self._exec(container_id, _shell("/solution/solve.sh"),
                                      timeout=plan.solution_timeout, plan=plan,
                                      env={**plan.environment.env, **plan.solution_env},
                                      user=plan.agent_user)
                if solution.timed_out:
                    return PhaseResult(name=phase.name, solution=solution)
            if plan.separate_verifier:  # the tests run in a fresh container: artifacts only
                collected = self._collect(container_id, [*plan.artifacts, ARTIFACTS_DIR])
                container_id = self.create(image, _SLEEP_FOREVER, plan)
                owned.append(container_id)
                self.client.api.start(container_id)
                self._exec(container_id, ["sh", "-c", _CLEAR_LOGS], timeout=30, plan=plan)
                self._restore(container_id, collected, plan)
            self._exec(container_id, ["sh", "-c", _REMOVE_REWARDS], timeout=30, plan=plan)
            self.client.api.put_archive(container_id, "/", tar_files(
                _executable(plan.tests, "test.sh"), "tests/"))
            tests = self._exec(container_id, _shell("/tests/test.sh"),
                               timeout=min(phase.tests_timeout or plan.tests_timeout,
                                           plan.tests_timeout), plan=plan,
                               env={**plan.environment.env, **plan.verifier_env},
                               user=plan.verifier_user)
            if not self._running(container_id):
                return PhaseResult(name=phase.name, solution=solution, tests=tests,
                                   reward_error=MAIN_KILLED)
            rewards, error = ((None, None) if tests.timed_out
                              else read_reward(self.client, container_id))
            return PhaseResult(name=phase.name, solution=solution, tests=tests,
                               reward=lowest(rewards), rewards=rewards, reward_error=error)
        except engine_errors() as exc:
            raise SandboxError(f"the Docker engine failed during {phase.name}: {exc}") from exc
        finally:
            for owned_id in owned:
                self.remove(owned_id)

    def _running(self, container_id: str) -> bool:
        """False when the container stopped (its main process was killed)."""
        return bool(self.client.api.inspect_container(container_id)["State"]["Running"])

    def _collect(self, container_id: str, paths: list[str]) -> list[tuple[str, bytes]]:
        """(path, tar) of each artifact path there is, as Harbor's transfer cleans it."""
        import docker.errors

        found = []
        for path in paths:
            try:
                stream, _ = self.client.api.get_archive(container_id, path)
            except docker.errors.NotFound:
                continue
            found.append((path, _artifact_tar(b"".join(stream), path)))
        return found

    def _restore(self, container_id: str, collected: list[tuple[str, bytes]],
                 plan: TrialPlan) -> None:
        """Put collected artifacts at their paths; a directory artifact is emptied first."""
        for path, archive in collected:
            parent = str(Path(path).parent)
            self._exec(container_id, ["sh", "-c", 'mkdir -p "$1" && if [ -d "$0" ] && '
                                      '[ ! -L "$0" ]; then find "$0" -mindepth 1 -delete; fi',
                                      path, parent], timeout=60, plan=plan)
            self.client.api.put_archive(container_id, parent, archive)

    def _exec(self, container_id: str, argv: list[str], *, timeout: float, plan: TrialPlan,
              env: dict[str, str] | None = None, user: str | None = None) -> CommandResult:
        """Exec with a host-side deadline; on expiry the container is killed."""
        import docker.errors

        started = time.monotonic()
        try:
            exec_id = self.client.api.exec_create(
                container_id, argv, environment=env or None, user=str(user or ""),
                workdir=plan.environment.workdir)["Id"]
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: the container is no longer running
                raise
            return CommandResult(exit_code=-1, timed_out=False, seconds=0.0,
                                 log=f"[taskloom: not run: {MAIN_KILLED}]")
        capture = Capture(plan.log_limit)

        def pump() -> None:
            with contextlib.suppress(Exception):
                for chunk in self.client.api.exec_start(exec_id, stream=True):
                    capture.feed(chunk)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        reader.join(timeout)
        timed_out = reader.is_alive()
        if timed_out:
            with contextlib.suppress(Exception):
                self.client.api.kill(container_id)
            reader.join(10)
            capture.feed(f"\n[taskloom: killed after {timeout:.0f} s wall-clock timeout]\n"
                         .encode())
        try:
            code = self.client.api.exec_inspect(exec_id).get("ExitCode")
        except docker.errors.NotFound:  # the container stopped, and its execs went with it
            code = None
            capture.feed(f"\n[taskloom: {MAIN_KILLED}]\n".encode())
        return CommandResult(exit_code=-9 if code is None else int(code), timed_out=timed_out,
                             seconds=round(time.monotonic() - started, 4), log=capture.text())

    def _exec_leak_scan(self, image: str, plan: TrialPlan) -> tuple[Leak, ...]:
        sizes = sorted({f.size for f in plan.leak_fingerprints})
        script = ("for s in " + " ".join(str(s) for s in sizes) + "; do find / -xdev "
                  "\\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f "
                  "-size \"${s}c\" -print 2>/dev/null; done | while read -r f; do "
                  "sha256sum \"$f\" 2>/dev/null; done; "
                  "for d in /tests /solution; do [ -e $d ] && echo \"present $d\"; done; true")
        container_id = self.create(image, _SLEEP_FOREVER, plan)
        try:
            self.client.api.start(container_id)
            result = self._exec(container_id, ["sh", "-c", script], timeout=120, plan=plan)
        finally:
            self.remove(container_id)
        by_digest = {f.sha256: f.origin for f in plan.leak_fingerprints}
        leaks = []
        for line in result.log.splitlines():
            digest, _, path = line.partition("  ")
            if digest in by_digest:
                leaks.append(Leak(path=path, origin=by_digest[digest]))
            elif line.startswith("present "):
                leaks.append(Leak(path=line.split()[1],
                                  origin=f"the environment already has {line.split()[1]}"))
        return tuple(leaks)


_CLEAR_LOGS = ("rm -rf /logs/agent /logs/verifier /logs/artifacts && "
               "mkdir -p /logs/agent /logs/verifier /logs/artifacts && chmod 777 /logs/*")
# Harbor discards stale rewards before the tests run: what the agent wrote does not count.
_REMOVE_REWARDS = "rm -f" + "".join(f" /logs/verifier/{name}" for name in REWARD_FILES)


def _shell(script: str) -> list[str]:
    """Run a script as Harbor does: by path from bash -c, so its #! line decides."""
    return ["sh", "-c", 'if command -v bash >/dev/null 2>&1; then exec bash -c \'"$0"\' "$0"; '
            'else exec sh -c \'"$0"\' "$0"; fi', script]


def _artifact_tar(archive: bytes, path: str) -> bytes:
    """A docker archive of an artifact as Harbor hands it on.

    Regular files, directories and links that stay inside it, owned by root, with setuid
    and setgid bits cleared.
    """
    root = PurePosixPath(Path(path).name)
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive)) as source, \
            tarfile.open(fileobj=out, mode="w") as target:
        members = source.getmembers()
        links = {m.name for m in members if m.issym()}
        for member in members:
            if member.issym():
                if not _link_stays_inside(member.name, member.linkname, root, links):
                    continue
            elif not (member.isfile() or member.isdir()):
                continue
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            member.mode &= ~0o6000
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def _link_stays_inside(name: str, target: str, root: PurePosixPath, links: set[str]) -> bool:
    """True when a link's target resolves inside the artifact.

    Relative, never climbing out, and never climbing (`..`) after passing through another
    link: `d -> .` makes `d/d/..` climb further than it reads.
    """
    if target.startswith("/"):
        return False
    walked: list[str] = []
    through_link = False
    for part in (*PurePosixPath(name).parent.parts, *PurePosixPath(target).parts):
        if part == "..":
            if through_link or not walked:
                return False
            walked.pop()
        elif part != ".":
            walked.append(part)
            through_link = through_link or "/".join(walked) in links
    return bool(walked) and walked[0] == root.name


def _executable(files, script: str) -> tuple:
    """The files with `script` made executable, as Harbor chmods it before running it."""
    return tuple(f.model_copy(update={"mode": f.mode | 0o111}) if f.path == script else f
                 for f in files)


def _build_failure(started: float, lines: list[str], error: str,
                   timed_out: bool) -> SetupResult:
    log = ("".join(lines) + "\n" + error)[-8000:]
    return SetupResult(ok=False, seconds=time.monotonic() - started, log=log,
                       command=CommandResult(exit_code=1, timed_out=timed_out,
                                             seconds=time.monotonic() - started, log=log))
