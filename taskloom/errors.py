"""Every exception taskloom defines, in one place.

A failed *check* on a task is never an exception: it is a `Verdict`. Errors mean the input
could not be read, a dependency is missing, or the infrastructure failed, and they carry the
fix. The CLI turns any `TaskloomError` into one line and exit code 2.

```
TaskloomError                    raised to the caller; the message says how to fix it
├── InputError                   bad input from the user; names the file, the field and the fix
│   ├── TaskFolderError          a Harbor task folder that cannot be read
│   ├── ConfigError              a config file, --set override or option that is wrong
│   │   └── GraphError           a skill graph file that is malformed or inconsistent
│   ├── StoreError               a run store that cannot be opened or is not a run
│   └── NoMatch                  a request in words that matches no skill
├── MissingExtra                 an optional dependency is not installed (the fix installs it)
├── NoVerifiedTask               `make`: no candidate for a request passed validation
└── InfrastructureError          something outside the task failed; retry once it is fixed
    ├── SandboxUnavailable       no container engine / runtime reachable, or base image missing
    ├── SandboxError             the engine failed while running a sandbox
    ├── BaseImageError           the toolbox image could not be built
    └── ModelUnavailable         the LLM server cannot be reached or refuses the run's settings

Declined                         a normal outcome signalled inside one component and caught
│                                by its caller; never reaches the user as an error
├── NoDraft                      a generator made no usable draft for this blueprint (rejected)
├── NotApplicable                a procedural primitive cannot work on this input (resample)
├── InvalidAnswer                a model's answer is empty, not JSON or off-schema (re-ask)
├── RequestRejected              the model server refused this one request (4xx)
└── Unemulable                   a Dockerfile needs a real build (strict mode instead)
```

Third-party errors (docker, tomllib, pydantic, openai, duckdb, OSError) are translated
where they are caught, at the module that talks to the third party, by type and status,
never by their message text.
"""

from __future__ import annotations

from pathlib import Path


class TaskloomError(Exception):
    """Root of every error taskloom raises on purpose."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.fix = fix
        self.reason = message
        super().__init__(f"{message}\n  fix: {fix}" if fix else message)


class InputError(TaskloomError):
    """Input from the user is wrong; the message names where and how to fix it."""

    def __init__(self, message: str, *, path: Path | str | None = None,
                 field: str | None = None, fix: str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.field = field
        parts = []
        if self.path is not None:
            parts.append(str(self.path))
        if field:
            parts.append(f"[{field}]")
        where = " ".join(parts)
        super().__init__(f"{where}: {message}" if where else message, fix=fix)
        self.reason = message


class TaskFolderError(InputError):
    """A Harbor task folder is missing a file or holds a malformed one."""


class ConfigError(InputError):
    """A configuration file, override or option is malformed or names nothing known."""





class GraphError(ConfigError):
    """A skill graph file is malformed or inconsistent."""


class StoreError(InputError):
    """A run store that cannot be opened or belongs to another run."""


class NoMatch(InputError):
    """The request matches no skill well enough to build a task for it."""


class MissingExtra(TaskloomError):
    """An optional dependency (an extra of the package) is not installed."""



class NoVerifiedTask(TaskloomError):
    """No candidate for an on-demand request passed validation."""


class InfrastructureError(TaskloomError):
    """Something the task does not control failed (engine down, image missing, timeout)."""


class SandboxUnavailable(InfrastructureError):
    """No usable sandbox runtime: engine unreachable or base image missing."""


class SandboxError(InfrastructureError):
    """The sandbox engine failed while creating, running or removing a sandbox."""


class BaseImageError(InfrastructureError):
    """The toolbox base image could not be built."""


class ModelUnavailable(InfrastructureError):
    """The model server failed after retries, or rejects the key or model name."""


class Declined(Exception):
    """A normal outcome one component signals to its caller (not an error of taskloom)."""


class NoDraft(Declined):
    """No usable draft for this blueprint and seed: the item is rejected at its stage."""


class NotApplicable(Declined):
    """This primitive cannot work on this input; the generator resamples."""


class Misplaced(NotApplicable):
    """This primitive never works at this step of a path, whatever the input.

    Raised only on the step's position and the specification level (say, "only as the first
    step"), so the planner may skip every other path with the skill at that position.
    """


class InvalidAnswer(Declined):
    """The model's answer is empty, not JSON, or does not match the schema."""


class RequestRejected(Declined):
    """The server refused this one request (too long for its context, invalid input)."""


class Unemulable(Declined):
    """The Dockerfile needs a real build; the message says which instruction and why."""
