"""The world model's table of the base image's accounts is the image's own: checks hold
accounts to those ids, so a table out of date would reject every correct solution."""

from __future__ import annotations

import pytest

from taskloom.generators.procedural.world import BASE_GROUPS, BASE_USERS, World
from taskloom.sandbox.base_image import BASE_IMAGE


def ids(text: str) -> dict[str, int]:
    return {fields[0]: int(fields[2]) for fields in
            (line.split(":") for line in text.splitlines() if line)}


@pytest.mark.docker
def test_the_base_accounts_are_the_base_images(docker_client_ready):
    def read(path: str) -> str:
        return docker_client_ready.containers.run(BASE_IMAGE, ["cat", path], remove=True,
                                                  network_mode="none").decode()

    assert ids(read("/etc/passwd")) == BASE_USERS
    assert ids(read("/etc/group")) == BASE_GROUPS


def test_the_worlds_accounts_get_ids_no_base_account_has():
    world = World()
    world.add_user("ops-jobs", "adm", "ops-team")
    world.add_user("www-data", "ops-team")
    users, groups = world.image_accounts()
    assert users["ops-jobs"] == groups["ops-jobs"] not in BASE_USERS.values()
    assert groups["ops-team"] not in BASE_GROUPS.values()
    assert users["www-data"] == BASE_USERS["www-data"]
    script = world.setup_script()
    assert f"groupadd -g {groups['ops-team']} ops-team" in script
    assert f"useradd -u {users['ops-jobs']} -U -m -s /bin/bash -G adm,ops-team ops-jobs" in script
    assert "usermod -a -G ops-team www-data" in script
