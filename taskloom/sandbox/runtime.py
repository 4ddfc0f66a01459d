"""The Runtime protocol: what validation needs from a sandbox engine, and how to get one."""

from __future__ import annotations

from typing import Literal, Protocol

from taskloom.errors import InputError
from taskloom.sandbox.trial import TrialPlan, TrialResult

RuntimeName = Literal["docker", "bwrap"]
RUNTIME_NAMES: tuple[RuntimeName, ...] = ("docker", "bwrap")


class Runtime(Protocol):
    """Runs a trial (environment setup, then phases from fresh state) in sandboxes.

    A failed command inside the sandbox is a normal result; an engine that cannot run
    sandboxes at all raises `SandboxUnavailable` / `SandboxError`.

    Example:
        >>> with open_runtime("docker") as runtime:
        ...     result = runtime.run(plan)
        ...     result.phases[0].reward
        0.0
    """

    name: str

    def run(self, plan: TrialPlan) -> TrialResult:
        """Set up the environment and run every phase of `plan`."""
        ...

    def close(self) -> None:
        """Remove every sandbox and image of its own that is still there."""
        ...

    def __enter__(self) -> Runtime: ...

    def __exit__(self, *exc: object) -> None: ...


def open_runtime(name: RuntimeName = "docker", *, keep_images: bool = False) -> Runtime:
    """Connect to the named sandbox runtime.

    `docker` runs containers on the Docker engine; `bwrap` runs bubblewrap sandboxes over
    an exported root filesystem (root, no daemon; `keep_images` does not apply).

    Raises:
        SandboxUnavailable: The runtime cannot run here; the message says how to fix it.
    """
    if name not in RUNTIME_NAMES:
        raise InputError(f"unknown sandbox runtime {name!r}",
                         fix=f"use one of: {', '.join(RUNTIME_NAMES)}")
    if name == "bwrap":
        from taskloom.sandbox.bwrap_runtime import BwrapRuntime

        return BwrapRuntime()
    from taskloom.sandbox.docker_runtime import DockerRuntime

    return DockerRuntime(keep_images=keep_images)
