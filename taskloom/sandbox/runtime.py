"""The Runtime protocol: what validation needs from a sandbox engine, and how to get one."""

from __future__ import annotations

from typing import Literal, Protocol

from taskloom.sandbox.trial import TrialPlan, TrialResult

RuntimeName = Literal["docker"]


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

    Raises:
        SandboxUnavailable: The runtime cannot run here; the message says how to fix it.
    """
    from taskloom.sandbox.docker_runtime import DockerRuntime

    return DockerRuntime(keep_images=keep_images)
