"""A live session in a Docker container (see `session` for what a session does).

The container is the Docker runtime's (`DockerRuntime.create`: the sandbox policy's limits,
no network, the same capabilities, labels that a later run prunes if this process dies).
Its image is a real `docker build` of the environment's Dockerfile (the network off), or the
task's prebuilt image. The session server is copied in before the container starts and runs
as its main process; the session talks to it through `docker start --attach --interactive`,
so closing that pipe ends the server, and with it the container.
"""

from __future__ import annotations

import io
import subprocess
import tarfile

from taskloom.errors import SandboxError
from taskloom.sandbox.containers import add_tar_member, engine_errors
from taskloom.sandbox.docker_runtime import DockerRuntime
from taskloom.sandbox.session import SERVER_COMMAND, SERVER_PATH, SERVER_SOURCE, Session
from taskloom.sandbox.trial import EnvironmentSpec, TrialPlan


class DockerSession(Session):
    """One container, set up once, that runs commands until `close()`."""

    runtime_name = "docker"

    def __init__(self, runtime: DockerRuntime, spec: EnvironmentSpec, *,
                 name: str | None = None) -> None:
        """Prepare (nothing runs until `start`); `name` names the container."""
        super().__init__(spec)
        self.runtime = runtime
        self.name = name
        self.container: str | None = None
        self._image: str | None = None

    def _prepare(self) -> None:
        """Build the image (or take the prebuilt one), then create the container."""
        plan = TrialPlan(environment=self.spec, tests=(), phases=(), solution_timeout=1.0,
                         tests_timeout=1.0)
        image = self.spec.image
        if any(file.path == "Dockerfile" for file in self.spec.context):
            built, setup = self.runtime.build(plan)
            if built is None:
                raise SandboxError(f"the environment does not build:\n{setup.log[-3000:]}",
                                   fix="fix the Dockerfile; `taskloom validate TASK` shows "
                                       "the same build")
            self._image = image = built
        elif not image:
            raise SandboxError("the environment names neither a Dockerfile nor an image",
                               fix="add environment/Dockerfile or [environment] docker_image")
        self.spec = self._with_image_defaults(image)
        # The server is PID 1 and root whatever the image's ENTRYPOINT and USER (an entry
        # point left in front of it would hold the channel, dumpable, and could answer for
        # it); commands run as the environment's USER.
        self.container = self.runtime.create(image, [], plan, stdin_open=True, user="0:0",
                                             name=self.name, entrypoint=SERVER_COMMAND)
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as writer:
            folder = tarfile.TarInfo(SERVER_PATH.rsplit("/", 1)[0].lstrip("/"))
            folder.type, folder.mode = tarfile.DIRTYPE, 0o700
            writer.addfile(folder)
            source = SERVER_SOURCE.read_bytes()
            add_tar_member(writer, SERVER_PATH.lstrip("/"), io.BytesIO(source), len(source),
                           0o600)
        try:
            self.runtime.client.api.put_archive(self.container, "/", archive.getvalue())
        except engine_errors() as exc:
            raise SandboxError(f"could not copy the session server in: {exc}") from exc

    def _with_image_defaults(self, image: str) -> EnvironmentSpec:
        """The spec, with the image's WORKDIR, ENV and USER where the task sets none.

        As `docker exec` would run a command in it.
        """
        try:
            config = self.runtime.client.api.inspect_image(image).get("Config") or {}
        except engine_errors() as exc:
            raise SandboxError(f"cannot read image {image}: {exc}",
                               fix="build or load it first (`docker images` lists them)") from exc
        env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
        user = (config.get("User") or "").split(":", 1)[0]  # USER name:group -> name
        return self.spec.model_copy(update={
            "workdir": self.spec.workdir or config.get("WorkingDir") or None,
            "env": {**env, **self.spec.env},
            "user": self.spec.user or user or None})

    def _launch(self) -> subprocess.Popen:
        try:
            return subprocess.Popen(["docker", "start", "--attach", "--interactive",
                                     self.container], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise SandboxError(f"cannot run the docker CLI: {exc}",
                               fix="install docker.io (scripts/setup.sh does)") from exc

    def _teardown(self) -> None:
        """Remove the container and the image built for it."""
        container, self.container = self.container, None
        if container is not None:
            self.runtime.remove(container)
        image, self._image = self._image, None
        if image is not None:
            self.runtime.drop_image(image)
