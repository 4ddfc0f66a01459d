"""The one exception hierarchy of taskloom.

A failed *check* on a task is never an exception: it is a `Verdict`. Exceptions mean the
input could not be read or the infrastructure failed, and they carry the fix.

```
TaskloomError
├── InputError                 bad input from the user; names the file, the field and the fix
│   ├── TaskFolderError        a Harbor task folder that cannot be read
│   └── ConfigError            a config file or --set override that is wrong
└── InfrastructureError        something outside the task failed; retry once it is fixed
    ├── SandboxUnavailable     no container engine / runtime reachable, or base image missing
    ├── SandboxError           the engine failed while running a sandbox
    ├── BaseImageError         the toolbox image could not be built
    └── ModelUnavailable       the LLM server cannot be reached or refuses the run's settings
```

Third-party errors (docker, tomllib, pydantic, openai) are translated where they are caught, at
the module that talks to the third party, never matched by their message text.
"""

from __future__ import annotations

from pathlib import Path


class TaskloomError(Exception):
    """Root of every error taskloom raises on purpose."""


class InputError(TaskloomError):
    """Input from the user is wrong; the message names where and how to fix it."""

    def __init__(self, message: str, *, path: Path | str | None = None,
                 field: str | None = None, fix: str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.field = field
        self.fix = fix
        parts = []
        if self.path is not None:
            parts.append(str(self.path))
        if field:
            parts.append(f"[{field}]")
        where = " ".join(parts)
        text = f"{where}: {message}" if where else message
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)
        self.reason = message


class TaskFolderError(InputError):
    """A Harbor task folder is missing a file or holds a malformed one."""


class ConfigError(InputError):
    """A configuration file or override is malformed."""


class InfrastructureError(TaskloomError):
    """Something the task does not control failed (engine down, image missing, timeout)."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.fix = fix
        super().__init__(f"{message}\n  fix: {fix}" if fix else message)


class SandboxUnavailable(InfrastructureError):
    """No usable sandbox runtime: engine unreachable or base image missing."""


class SandboxError(InfrastructureError):
    """The sandbox engine failed while creating, running or removing a sandbox."""


class BaseImageError(InfrastructureError):
    """The toolbox base image could not be built."""


class ModelUnavailable(InfrastructureError):
    """The model server failed after retries, or rejects the key or model name."""
