"""On-demand tasks: request understanding with the real embedding model, `make` end to end
in the real sandbox, the no-match answer, and `check` against a live container."""

from __future__ import annotations

import subprocess
import sys

import pytest

import taskloom
from taskloom.embedding import load_embedder
from taskloom.errors import InputError, NoMatch
from taskloom.generators.backends import skill_graph
from taskloom.generators.request import difficulty_from_option, understand

TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


@pytest.mark.parametrize(("request_text", "skill"), [
    ("a task where the agent must rotate nginx logs and keep 5", "logs.rotate_keep"),
    ("find the 3 busiest client IPs in the web server access log", "logs.top_clients"),
    ("convert the JSON sensor readings to CSV with jq", "json.to_csv"),
    ("revert the commit that broke the build", "git.revert_commit"),
    ("create accounts for the new hires listed in a CSV", "users.create_from_csv"),
    ("schedule the cleanup script to run every night with cron", "cron.schedule_script"),
])
def test_requests_match_the_right_skill(embedder, request_text, skill):
    understood = understand(request_text, skill_graph(()), embedder)
    assert understood.skills[0].id == skill, understood.nearest
    assert understood.scenario.id in skill_graph(()).scenarios_of(skill)


def test_rules_read_difficulty_paths_and_numbers(embedder):
    understood = understand("a hard, messy task: sum sales per region from /srv/sales/"
                            "orders.csv and keep the top five", skill_graph(()), embedder)
    assert understood.difficulty["noise"] == 3
    assert understood.difficulty["strictness"] == 3
    assert "/srv/sales/orders.csv" in understood.paths
    assert "orders.csv" in understood.file_names
    assert 5 in understood.numbers


def test_unrelated_request_gets_the_nearest_skills_not_a_task(embedder):
    with pytest.raises(NoMatch) as caught:
        understand("bake a chocolate cake for the party", skill_graph(()), embedder)
    assert "nearest skills" in str(caught.value)
    assert caught.value.fix


def test_difficulty_option():
    assert difficulty_from_option("hard")["noise"] == 3
    assert difficulty_from_option("noise=2,steps=3") == {"noise": 2, "steps": 3}
    with pytest.raises(InputError, match="--difficulty"):
        difficulty_from_option("loud=3")


@pytest.mark.docker
def test_python_api_makes_a_verified_task_honouring_numbers(tmp_path):
    task = taskloom.make("find the 3 busiest client IPs in the access log", out=tmp_path)
    assert task.config.metadata["skills"][0] == "logs.top_clients"
    assert "3 client IPs" in task.instruction or "top 3" in task.instruction
    assert (tmp_path / task.name / "task.toml").is_file()


@pytest.mark.docker
def test_cli_make_prints_what_it_understood(tmp_path):
    done = subprocess.run([*TASKLOOM, "make", "rotate the service logs and keep 3",
                           "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "logs.rotate_keep" in done.stdout and "verified" in done.stdout
    assert "3 (used)" in done.stdout
    no_match = subprocess.run([*TASKLOOM, "make", "bake a chocolate cake"],
                              capture_output=True, text=True, timeout=300)
    assert no_match.returncode == 2
    assert "nearest skills" in no_match.stderr


@pytest.mark.docker
def test_check_a_live_environment_before_and_after_an_attempt(tmp_path):
    from taskloom.harbor import read_task_folder
    from taskloom.sandbox import live

    task = taskloom.make("find the 3 busiest client IPs in the access log", out=tmp_path)
    folder = tmp_path / task.name
    name = live.start(read_task_folder(folder))
    try:
        before = subprocess.run([*TASKLOOM, "check", str(folder), "--container", name],
                                capture_output=True, text=True, timeout=300)
        assert before.returncode == 1
        assert "reward 0" in before.stdout and "failing checks" in before.stdout
        solve = task.file("solution", "solve.sh").content.decode()
        attempt = subprocess.run(["docker", "exec", "-i", name, "bash"], input=solve,
                                 capture_output=True, text=True, timeout=120)
        assert attempt.returncode == 0, attempt.stderr
        after = subprocess.run([*TASKLOOM, "check", str(folder), "--container", name],
                               capture_output=True, text=True, timeout=300)
        assert after.returncode == 0, after.stdout + after.stderr
        assert "reward 1" in after.stdout
    finally:
        live.stop(name)
    leftover = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"],
                              capture_output=True, text=True).stdout.strip()
    assert leftover == ""
