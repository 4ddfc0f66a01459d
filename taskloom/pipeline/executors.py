"""Executors: where stage functions run. Local threads by default; Ray beyond one machine.

Both return `concurrent.futures.Future`s, so the runner does not care which one runs.
Validation jobs ask Ray for one unit of the custom `sandbox` resource, so each node runs
as many validations at once as it declares sandbox slots (`ray start --resources
'{"sandbox": 8}'`); a local Ray instance gets `workers` slots.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from taskloom.errors import MissingExtra


class Executor(Protocol):
    """Runs stage functions somewhere and hands back futures."""

    def submit(self, stage: str, function: Callable, *args: object) -> Future:
        """Run `function(*args)`; `stage` lets an executor pick resources."""
        ...

    def shutdown(self, *, cancel: bool) -> None:
        """Stop; with `cancel`, drop queued work and remove every sandbox."""
        ...


class LocalExecutor:
    """A thread pool in this process (sandbox work happens in the engine, not here)."""

    def __init__(self, workers: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stage")

    def submit(self, stage: str, function: Callable, *args: object) -> Future:
        """Queue a stage function on the pool."""
        return self.pool.submit(function, *args)

    def shutdown(self, *, cancel: bool) -> None:
        """Close this process's sandboxes (unblocking running jobs), then stop the pool."""
        from taskloom.pipeline.stages import close_runtimes

        if cancel:
            close_runtimes()
        self.pool.shutdown(wait=True, cancel_futures=cancel)
        close_runtimes()


class RayExecutor:
    """Stage functions as Ray tasks; validation needs one `sandbox` resource unit."""

    def __init__(self, workers: int, address: str | None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise MissingExtra("Ray is not installed",
                                      fix="pip install 'taskloom[ray]'") from exc
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            if address in (None, "local"):
                # Reached on loopback only: Ray announces a local instance on the machine's
                # address and turns 127.0.0.1 into it, but not 127.0.0.2 (loopback too).
                ray.init(address="local", _node_ip_address="127.0.0.2", num_cpus=max(workers, 2),
                         resources={"sandbox": workers}, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False)
        self.remote = ray.remote(_call)
        self.pending: list = []

    def submit(self, stage: str, function: Callable, *args: object) -> Future:
        """Launch a Ray task (validation asks for a sandbox slot)."""
        options = {"resources": {"sandbox": 1}, "num_cpus": 0.5} if stage == "validate" \
            else {"num_cpus": 0.25}
        ref = self.remote.options(**options).remote(function, *args)
        self.pending.append(ref)
        return ref.future()

    def shutdown(self, *, cancel: bool) -> None:
        """Cancel outstanding tasks when asked; workers' sandboxes are pruned by label."""
        if cancel:
            for ref in self.pending:
                with contextlib.suppress(Exception):  # already finished or gone
                    self.ray.cancel(ref, force=True)
        self.pending.clear()
        if self.started:  # a local instance we started ends with the run
            self.ray.shutdown()


def _call(function: Callable, *args: object):
    """Run a stage function inside a Ray worker."""
    return function(*args)


def make_executor(kind: str, workers: int, address: str | None = None) -> Executor:
    """The executor a run asked for."""
    if kind == "ray":
        return RayExecutor(workers, address)
    return LocalExecutor(workers)
