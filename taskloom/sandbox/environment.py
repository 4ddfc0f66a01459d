"""Turn a task's environment (Dockerfile or docker_image) into an `EnvironmentSpec`."""

from __future__ import annotations

import os
from typing import Literal

from taskloom.config import ValidationConfig
from taskloom.errors import Unemulable
from taskloom.models import Task
from taskloom.sandbox import base_image, dockerfile
from taskloom.sandbox.trial import EnvironmentSpec


def environment_spec(task: Task, config: ValidationConfig) -> tuple[EnvironmentSpec, str]:
    """How to set up `task`'s environment, and a sentence saying which mode and why.

    Fast mode applies when the Dockerfile builds FROM the taskloom base image with only
    instructions the sandbox emulates exactly; everything else gets a real build. A task
    that names a `docker_image` runs that image, as under Harbor, Dockerfile or not.
    """
    settings = task.config.environment
    limits = {
        "build_timeout_sec": min(settings.build_timeout_sec, config.timeout_cap_sec * 4),
        "cpus": float(min(settings.cpus or 1, os.cpu_count() or 1)),
        "memory_mb": min(settings.memory_mb or config.default_memory_mb, config.memory_cap_mb),
    }
    text = task.dockerfile
    if settings.docker_image or text is None:
        # As Harbor runs it: a named image wins over a Dockerfile beside it.
        image = settings.docker_image or ""
        return (EnvironmentSpec(image=image, build=True, workdir=settings.workdir,
                                env=dict(settings.env), **limits),
                f"prebuilt image {image}" + (" (named in task.toml: Harbor runs it, not "
                                             "the Dockerfile)" if text else ""))
    context = task.environment
    mode: Literal["fast", "strict"] = "strict"
    why = "strict mode requested"
    if config.mode == "auto":
        try:
            emulation = dockerfile.emulate(text, context)
        except Unemulable as exc:
            why = f"real build: {exc}"
        else:
            if base_image.is_base_image(emulation.image):
                mode = "fast"
                why = f"fast: emulated on {emulation.image}"
            else:
                why = f"real build: FROM {emulation.image} is not the taskloom base image"
    if mode == "fast":
        return (EnvironmentSpec(image=emulation.image, steps=emulation.steps, context=context,
                                workdir=settings.workdir or emulation.workdir,
                                env={**emulation.env, **settings.env}, user=emulation.user,
                                **limits), why)
    return (EnvironmentSpec(image=_from_or_empty(text), build=True, context=context,
                            workdir=settings.workdir, env=dict(settings.env), **limits), why)


def _from_or_empty(text: str) -> str:
    try:
        return dockerfile.from_image(text)
    except Unemulable:
        return ""
