"""Shared fixtures: the real Docker runtime (tests need the engine and the base image)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def docker_runtime():
    """A DockerRuntime on the local engine; fails loudly when the engine or image is absent."""
    from taskloom.sandbox import base_image
    from taskloom.sandbox.docker_runtime import DockerRuntime, docker_client

    client = docker_client()
    usable, status = base_image.base_image_status(client)
    if not usable:
        pytest.fail(f"{status}: run `taskloom base-image build` (the README's setup does)")
    runtime = DockerRuntime(client)
    yield runtime
    runtime.close()


@pytest.fixture()
def validate(docker_runtime):
    """Validate one task folder with the real runtime: validate(path, **config) -> report."""
    from taskloom.config import ValidationConfig
    from taskloom.validators.engine import validate_folder

    def run(path: Path, **options):
        return validate_folder(path, docker_runtime, ValidationConfig(**options))

    return run
