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


def test_modes_other_than_644_and_755_are_set_by_the_setup_script():
    world = World()
    world.add("/srv/a.txt", "a", mode=0o666, owner="www-data")
    world.add("/srv/b.sh", "b", mode=0o755)
    world.add("/srv/c.txt", "c")
    lines = world.setup_script().splitlines()
    assert lines.index("chmod 666 /srv/a.txt") > lines.index("chown www-data:root /srv/a.txt")
    assert not [line for line in lines if "b.sh" in line or "c.txt" in line]


@pytest.mark.docker
def test_a_task_survives_a_git_round_trip(tmp_path):
    """Datasets travel as git repositories, which keep only 644 and 755: a world-writable
    input that lived only in its file's mode made even the reference solution fail."""
    import subprocess
    import sys

    from taskloom.generators.procedural.backend import ProceduralGenerator, blueprint_for
    from taskloom.generators.protocols import Difficulty
    from taskloom.harbor import write_task_folder
    from taskloom.skill_graph.model import load_graph

    graph = load_graph()
    difficulty = Difficulty(steps=1, tool_breadth=1, data_volume=1, noise=1,
                            specification=1, edge_cases=1, strictness=1)
    task = ProceduralGenerator(graph).generate(blueprint_for(
        graph, ("perms.find_world_writable",), seed=0, difficulty=difficulty)).task
    written = tmp_path / "repo" / "task"
    write_task_folder(task, written)
    assert any(path.stat().st_mode & 0o002 for path in written.rglob("*") if path.is_file())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tasks"]):
        subprocess.run([*git, "-C", str(tmp_path / "repo"), *command], check=True)
    subprocess.run([*git, "clone", "-q", str(tmp_path / "repo"), str(tmp_path / "clone")],
                   check=True)
    cloned = tmp_path / "clone" / "task"
    assert not any(path.stat().st_mode & 0o002 for path in cloned.rglob("*"))
    done = subprocess.run([sys.executable, "-m", "taskloom.cli", "validate", str(cloned),
                           "--runtime", "docker", "--checks", "structure,build,nop,oracle"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.docker
def test_tmp_stays_sticky_and_world_writable_when_the_world_stages_files_there(
        tmp_path, docker_client_ready):
    """COPY of the build context's tmp/ folder made /tmp 0755: a job run as its own user
    could not mktemp there (found by a blind solver of a debugging task)."""
    from taskloom.config import RunConfig
    from taskloom.generators.backends import backend_for
    from taskloom.generators.procedural.backend import blueprint_for
    from taskloom.harbor import write_task_folder

    generator = backend_for(RunConfig(seed=0)).generator
    draft = generator.generate(blueprint_for(generator.graph, ("git.author_stats",), seed=0))
    assert any(f.path.startswith("files/tmp/") for f in draft.task.environment)
    folder = write_task_folder(draft.task, tmp_path / "task")
    image, _ = docker_client_ready.images.build(path=str(folder / "environment"), rm=True)
    try:
        mode = docker_client_ready.containers.run(image.id, ["stat", "-c", "%a", "/tmp"],
                                                  remove=True)
        assert mode.decode().strip() == "1777"
    finally:
        docker_client_ready.images.remove(image.id, force=True)
