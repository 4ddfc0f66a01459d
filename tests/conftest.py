"""Shared fixtures: the real sandbox runtimes (tests need the engine and the base image).

`validate` runs every test that uses it on both runtimes: Docker, and bubblewrap over the
base image's exported root filesystem (exported here first when it is missing).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The Ctrl-C tests send SIGINT to taskloom processes they start. A suite launched in the
# background without job control (`nohup ... &`, some CI shells) inherits SIGINT ignored,
# and children would inherit that too: give the suite (so its children) the default.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def docker_client_ready():
    """A client of the local engine; fails loudly when the engine or the image is absent."""
    from taskloom.sandbox import base_image
    from taskloom.sandbox.docker_runtime import docker_client

    client = docker_client()
    usable, status = base_image.base_image_status(client)
    if not usable:
        pytest.fail(f"{status}: run `taskloom base-image build` (the README's setup does)")
    return client


@pytest.fixture()
def docker_runtime(docker_client_ready):
    """A DockerRuntime for one test (a test may close it: validate_all closes its runtime)."""
    from taskloom.sandbox.docker_runtime import DockerRuntime

    runtime = DockerRuntime(docker_client_ready)
    yield runtime
    runtime.close()


def pytest_configure(config):
    config.addinivalue_line("markers", "bwrap: needs root, bubblewrap, overlayfs and cgroup v1 "
                                       "(runs the bwrap runtime)")


def pytest_collection_modifyitems(config, items):
    """The Python 3.12 run's test goes last: it waits for a run that started with the session."""
    from py312_suite import TEST_NAME

    items.sort(key=lambda item: item.name == TEST_NAME)  # stable: the rest keep their order


def pytest_collection_finish(session):
    """Start the no-sandbox suite on Python 3.12 behind the others when its test is selected."""
    from py312_suite import SUITE_312, TEST_NAME, SuiteOn312

    if any(item.name == TEST_NAME for item in session.items) and \
            not session.config.option.collectonly:
        session.config.stash[SUITE_312] = SuiteOn312().start()


def pytest_unconfigure(config):
    from py312_suite import SUITE_312

    suite = config.stash.get(SUITE_312, None)
    if suite:
        suite.stop()  # an interrupted session leaves no run behind


@pytest.fixture(scope="session")
def bwrap_rootfs():
    """The base image's exported root filesystem; exported first if it is missing."""
    from taskloom.sandbox import rootfs
    from taskloom.sandbox.docker_runtime import docker_client

    return rootfs.find() or rootfs.export_from_docker(docker_client())


@pytest.fixture()
def bwrap_runtime(bwrap_rootfs):
    """A BwrapRuntime for one test (a test may close it: validate_all closes its runtime)."""
    from taskloom.sandbox.bwrap_runtime import BwrapRuntime

    runtime = BwrapRuntime()
    yield runtime
    runtime.close()


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker),
                        pytest.param("bwrap", marks=pytest.mark.bwrap)])
def runtime_name(request):
    """Which runtime a test runs on; tests using `validate` run once on each."""
    return request.param


@pytest.fixture()
def validate(runtime_name, request):
    """Validate one task folder with a real runtime: validate(path, **config) -> report."""
    from taskloom.config import ValidationConfig
    from taskloom.validators.engine import validate_folder

    runtime = request.getfixturevalue(f"{runtime_name}_runtime")

    def run(path: Path, **options):
        return validate_folder(path, runtime, ValidationConfig(**options))

    return run


@pytest.fixture()
def scripted():
    """scripted(*replies) -> a started `ScriptedServer` answering those replies, closed after."""
    from llmservers import ScriptedServer

    servers = []

    def start(*replies):
        server = ScriptedServer(list(replies))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
