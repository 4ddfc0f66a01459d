"""Agent rollouts (`taskloom solve`) against real sandboxes and real HTTP servers: a scripted
OpenAI-compatible server that plays each task's reference solution one step per turn must
earn reward 1; a model server that fails mid-attempt gives errors, never failures, and a
resume finishes without paying twice; the real llama.cpp server runs end to end."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llmservers import MODEL_ALIAS, LlamaServer, Reply, ScriptedServer, solution_replayer
from llmservers import solution_steps as steps_of
from taskfactory import TWO_STEPS, make_multi_step_task

from taskloom.config import AgentLimits, LLMConfig, RunConfig
from taskloom.generators.backends import backend_for
from taskloom.generators.procedural.backend import blueprint_for
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.harbor import read_task_folder
from taskloom.models import Task
from taskloom.rollouts.solve import AttemptRecord, pass_at_k, solve
from taskloom.sandbox.bwrap_host import STATE_ROOT

EXAMPLE = Path(__file__).resolve().parents[1] / "examples/tasks/rotate-nginx-logs"
TASKLOOM = [sys.executable, "-m", "taskloom.cli"]


def procedural(*paths: tuple[str, ...]) -> list[Task]:
    generator = backend_for(RunConfig(seed=0)).generator
    return [generator.generate(blueprint_for(generator.graph, skills, seed=0, index=i)).task
            for i, skills in enumerate(paths)]


def replaying(tasks: list[Task]) -> ScriptedServer:
    return ScriptedServer([], respond=solution_replayer(
        {t.instruction: t.file("solution", "solve.sh").content.decode() for t in tasks}))


def scripted_llm(server: ScriptedServer) -> LLMConfig:
    return LLMConfig(model="scripted", base_url=server.base_url, retries=0, timeout_sec=30)


def attempts(out: Path) -> list[AttemptRecord]:
    return [AttemptRecord.model_validate_json(line)
            for line in (out / "attempts.jsonl").read_text().splitlines()]


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(8, 1, 1) == pytest.approx(0.125)
    assert pass_at_k(8, 1, 4) == pytest.approx(0.5)  # 1 - C(7,4)/C(8,4)
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 5, 4) == 1.0
    assert pass_at_k(3, 1, 8) == pytest.approx(1.0)  # k capped at the 3 scored
    assert pass_at_k(0, 0, 8) is None


def test_a_solution_is_cut_into_one_script_per_step():
    steps = steps_of((EXAMPLE / "solution" / "solve.sh").read_text())
    assert len(steps) == 2
    assert all(s.startswith("set -euo pipefail\ncd /var/log/nginx\n# taskloom:step")
               for s in steps)


def test_the_reference_solution_turn_by_turn_earns_1_and_a_rerun_pays_nothing(
        runtime_name, request, tmp_path):
    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    tasks = [read_task_folder(EXAMPLE),
             *procedural(("csv.dedupe_rows",), ("csv.dedupe_rows", "csv.to_json"))]
    server = replaying(tasks)
    try:
        report = solve(tasks, scripted_llm(server), runtime, tmp_path / "run", k=2,
                       workers=2)
        failed = [(r.task, r.reward, r.error, r.trajectory) for r in attempts(tmp_path / "run")
                  if not r.passed]
        assert not failed
        assert [(t.scored, t.passes, t.errors, t.pass_at_1, t.pass_at_k)
                for t in report.tasks] == [(2, 2, 0, 1.0, 1.0)] * 3
        steps = [len(steps_of(t.file("solution", "solve.sh").content.decode())) for t in tasks]
        assert [t.mean_turns for t in report.tasks] == [n + 1.0 for n in steps]  # and done
        sent = len(server.requests)
        assert sent == 2 * sum(n + 1 for n in steps)
        again = solve(tasks, scripted_llm(server), runtime, tmp_path / "run", k=2)
        assert len(server.requests) == sent and again.tasks == report.tasks
        edited = tasks[0].model_copy(update={"tests": tuple(
            f.model_copy(update={"content": f.content + b"# edited\n"})
            if f.path == "test.sh" else f for f in tasks[0].tests)})
        kept = len(attempts(tmp_path / "run"))
        solve([edited, *tasks[1:]], scripted_llm(server), runtime, tmp_path / "run", k=2)
        redone = attempts(tmp_path / "run")[kept:]  # only the edited task is attempted again
        assert sorted((r.task, r.index, r.passed) for r in redone) == \
            [(edited.name, 0, True), (edited.name, 1, True)]
        assert len(server.requests) == sent  # its answers were paid for: replayed
    finally:
        server.close()


@pytest.mark.slow
def test_every_primitive_is_solved_by_its_reference_steps(runtime_name, request, tmp_path):
    """Every primitive on bwrap; in Docker, the first of each family (the agent's commands
    take the same path through the runtime for every task): 21 tasks in 24 s, where all 88
    took 81 s of CI."""
    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    skills = sorted(PRIMITIVES)
    if runtime_name == "docker":
        skills = sorted({skill.split(".")[0]: skill for skill in reversed(skills)}.values())
    tasks = procedural(*[(skill,) for skill in skills])
    server = replaying(tasks)
    try:
        report = solve(tasks, scripted_llm(server), runtime, tmp_path / "run", k=1,
                       workers=2)
    finally:
        server.close()
    failed = {r.task: (r.reward, r.error, r.trajectory.turns[-2:] if r.trajectory else None)
              for r in attempts(tmp_path / "run") if not r.passed}
    assert not failed
    assert len(report.tasks) == len(skills)


def test_a_model_server_failing_mid_attempt_is_an_error_and_a_resume_finishes(
        bwrap_runtime, tmp_path):
    task = read_task_folder(EXAMPLE)
    replay = solution_replayer({task.instruction: task.file("solution", "solve.sh")
                                .content.decode()})
    state = {"up": False}

    def respond(body: dict) -> Reply:
        if "Turn 1 of" in body["messages"][-1]["content"] or state["up"]:
            return replay(body)
        return Reply(status=503, body={"error": {"message": "overloaded"}})

    server = ScriptedServer([], respond=respond)
    out = tmp_path / "run"
    try:
        first = solve([task], scripted_llm(server), bwrap_runtime, out, k=1, retries=1)
        (record,) = attempts(out)
        assert record.reward is None and record.tries == 2 and "ModelUnavailable" in record.error
        assert (first.tasks[0].errors, first.tasks[0].scored, first.tasks[0].pass_at_1) == \
            (1, 0, None)
        state["up"] = True  # the server is back
        second = solve([task], scripted_llm(server), bwrap_runtime, out, k=1)
        assert (second.tasks[0].passes, second.tasks[0].errors) == (1, 0)
        first_turns = [r for r in server.requests
                       if "Turn 1 of" in r["messages"][-1]["content"]]
        assert len(first_turns) == 1  # paid once: the retry and the resume replayed it
    finally:
        server.close()


def test_a_model_server_killed_mid_run_leaves_errors_that_a_resume_finishes(bwrap_runtime,
                                                                             tmp_path):
    task = read_task_folder(EXAMPLE)
    solutions = {task.instruction: task.file("solution", "solve.sh").content.decode()}
    replay = solution_replayer(solutions)

    def respond(body: dict) -> Reply:
        if "Turn 2 of" in body["messages"][-1]["content"]:  # stop listening, answer, die
            server.close()  # (a request thread, not the serving one: no deadlock)
        return replay(body)

    server = ScriptedServer([], respond=respond)
    out = tmp_path / "run"
    first = solve([task], scripted_llm(server), bwrap_runtime, out, k=2, workers=1)
    assert (first.tasks[0].errors, first.tasks[0].scored) == (2, 0)
    assert all("ModelUnavailable" in r.error and "unreachable" in r.error
               for r in attempts(out))
    paid = len(server.requests)
    restarted = replaying([task])  # on another port: the cache keys do not name the server
    try:
        second = solve([task], scripted_llm(restarted), bwrap_runtime, out, k=2)
    finally:
        restarted.close()
    assert (second.tasks[0].passes, second.tasks[0].errors) == (2, 0)
    assert paid == 2  # attempt 0's turns 1 and 2; everything after met a dead port
    turns = len(steps_of(solutions[task.instruction])) + 1  # the steps, then done
    assert len(restarted.requests) == 2 * turns - paid  # the 2 paid turns were replayed


def test_ctrl_c_stops_solve_at_once_and_leaves_no_sandbox(bwrap_rootfs, tmp_path):
    server = ScriptedServer([Reply(content=json.dumps(
        {"thought": "wait", "commands": ["sleep 60"], "done": False}))])
    try:
        running = subprocess.Popen(
            [*TASKLOOM, "solve", str(EXAMPLE), "--model", "slow", "--base-url",
             server.base_url, "-k", "4", "--runtime", "bwrap", "--out", str(tmp_path / "run")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # both workers are inside `sleep 60`
        assert len(server.requests) >= 2
        running.send_signal(signal.SIGINT)
        _, err = running.communicate(timeout=30)
    finally:
        server.close()
    assert running.returncode == 130 and "interrupted: sandboxes removed" in err
    assert not list(STATE_ROOT.glob(f"{running.pid}-*"))  # its runtime's folders are gone
    assert all(r.reward is None for r in attempts(tmp_path / "run"))  # errors, not failures


def test_a_request_the_server_refuses_ends_the_attempt_as_a_failure(bwrap_runtime, tmp_path):
    """A 4xx (a context too long, a content filter) is the model's limit: scored, not an
    error to retry forever."""
    task = read_task_folder(EXAMPLE)
    replay = solution_replayer({task.instruction: task.file("solution", "solve.sh")
                                .content.decode()})

    def respond(body: dict) -> Reply:
        if "Turn 2 of" in body["messages"][-1]["content"]:
            return Reply(status=400, body={"error": {"message": "context too long"}})
        return replay(body)

    server = ScriptedServer([], respond=respond)
    try:
        report = solve([task], scripted_llm(server), bwrap_runtime, tmp_path / "run", k=1)
    finally:
        server.close()
    (record,) = attempts(tmp_path / "run")
    assert (record.reward, record.error, record.stopped, record.tries) == \
        (0.0, None, "rejected", 1)
    assert (report.tasks[0].scored, report.tasks[0].errors) == (1, 0)


def test_solve_on_the_command_line_with_the_offline_mock(bwrap_rootfs, tmp_path):
    done = subprocess.run([*TASKLOOM, "solve", str(EXAMPLE), "--model", "mock", "-k", "2",
                           "--runtime", "bwrap", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "0 attempts in errors" in done.stdout
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["tasks"][0]["scored"] == 2 and report["tasks"][0]["passes"] == 0
    other = subprocess.run([*TASKLOOM, "solve", str(EXAMPLE), "--model", "other", "-k", "1",
                            "--runtime", "bwrap", "--out", str(tmp_path / "run")],
                           capture_output=True, text=True, timeout=300)
    assert other.returncode == 2 and "holds attempts of model 'mock'" in other.stderr


def test_successful_trajectories_export_as_chat_rows_for_sft(bwrap_runtime, tmp_path):
    tasks = [read_task_folder(EXAMPLE)]
    server = replaying(tasks)
    try:
        solve(tasks, scripted_llm(server), bwrap_runtime, tmp_path / "run", k=2)
    finally:
        server.close()
    for fmt in ("jsonl", "hf"):
        done = subprocess.run([*TASKLOOM, "export", str(tmp_path / "run"), "--trajectories",
                               "-f", fmt, "--out", str(tmp_path / fmt)], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0 and "exported 2 successful trajectories" in done.stdout, \
            done.stderr
    rows = [json.loads(line) for line in (tmp_path / "jsonl" / "trajectories.jsonl")
            .read_text().splitlines()]
    assert sorted(r["attempt"] for r in rows) == [0, 1]
    roles = [m["role"] for m in rows[0]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert rows[0]["messages"][1]["content"].startswith("Task:\nThe nginx access log")
    assert json.loads(rows[0]["messages"][-1]["content"])["done"] is True
    assert rows[0]["messages"][3]["content"].startswith("[exit 0]")
    import datasets

    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert len(loaded) == 2 and loaded[0]["messages"] == rows[0]["messages"]
    assert loaded[0]["task_id"] == "rotate-nginx-logs" and loaded[0]["reward"] == 1.0


EXISTS_ONLY = """from pathlib import Path


def test_output_exists():
    assert Path("/app/out.txt").exists()
"""


def test_the_adversarial_run_reports_a_task_a_forger_passes_as_hackable(bwrap_runtime,
                                                                         tmp_path):
    from taskfactory import make_task

    sound = read_task_folder(make_task(tmp_path, "sound"))
    naive = read_task_folder(make_task(tmp_path, "naive", test_py=EXISTS_ONLY))

    def forge(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        assert user.startswith("Task (do not do it")
        first = "Turn 1 of" in user
        return Reply(content=json.dumps({"thought": "an empty output file may do",
                                         "commands": ["touch /app/out.txt"] if first else [],
                                         "done": not first}))

    server = ScriptedServer([], respond=forge)
    try:
        report = solve([sound, naive], scripted_llm(server), bwrap_runtime, tmp_path / "run",
                       k=1, role="forger")
    finally:
        server.close()
    assert report.hackable == (naive.name,)
    forged = next(r for r in attempts(tmp_path / "run") if r.task == naive.name)
    assert forged.trajectory.turns[0].commands == ("touch /app/out.txt",)
    refused = subprocess.run([*TASKLOOM, "export", str(tmp_path / "run"), "--trajectories",
                              "-f", "jsonl", "--out", str(tmp_path / "sft")],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "forgeries, not demonstrations" in refused.stderr


@pytest.mark.slow
@pytest.mark.llama
def test_the_real_llama_server_runs_solve_end_to_end(bwrap_runtime, tmp_path):
    """SmolLM2-135M cannot solve the task; the run must still end, scored, without a crash."""
    server = LlamaServer(tmp_path / "server.log")
    try:
        llm = LLMConfig(model=MODEL_ALIAS, base_url=server.base_url, max_tokens=256,
                        retries=0, timeout_sec=300)
        report = solve([read_task_folder(EXAMPLE)], llm, bwrap_runtime, tmp_path / "run",
                       k=1, limits=AgentLimits(max_turns=3, command_timeout_sec=10))
    finally:
        server.kill()
    (record,) = attempts(tmp_path / "run")
    assert record.error is None and record.reward is not None, record
    assert 1 <= record.turns <= 3 and report.tasks[0].scored == 1


def test_a_multi_step_task_is_attempted_step_by_step_as_harbor_runs_it(bwrap_runtime,
                                                                      tmp_path):
    """Each step: its workdir and setup.sh, the agent on its instruction, its own tests; the
    rewards combined by the task's strategy; a step that misses min_reward ends the attempt."""
    def server_for(solved: set[str]) -> ScriptedServer:
        return ScriptedServer([], respond=solution_replayer({
            parts["instruction"]: parts["solve"] if name in solved else "#!/bin/bash\ntrue\n"
            for name, parts in TWO_STEPS.items()}))

    cases = [("both", {"write", "join"}, "", 1.0, 2),
             ("first-only", {"write"}, "", 0.5, 2),  # mean of 1 and 0
             ("gated", set(), 'min_reward = 1.0', 0.0, 1)]  # the join step never runs
    for name, solved, gate, reward, steps_run in cases:
        task = read_task_folder(make_multi_step_task(tmp_path / "tasks", name,
                                                     settings={"write": gate}))
        server = server_for(solved)
        try:
            report = solve([task], scripted_llm(server), bwrap_runtime, tmp_path / name, k=1)
        finally:
            server.close()
        (record,) = attempts(tmp_path / name)
        assert (record.reward, report.errors) == (reward, 0), (name, record)
        assert record.trajectory.instructions == tuple(
            parts["instruction"] for parts in TWO_STEPS.values())[:steps_run]
        assert {turn.step for turn in record.trajectory.turns} == set(range(steps_run))
    done = subprocess.run([*TASKLOOM, "export", str(tmp_path / "both"), "--trajectories", "-f",
                           "jsonl", "--out", str(tmp_path / "sft")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in
              (tmp_path / "sft" / "trajectories.jsonl").read_text().splitlines()]
    asked = [m["content"] for m in row["messages"] if m["content"].startswith("Task:")]
    assert asked == [f"Task:\n{parts['instruction'].strip()}" for parts in TWO_STEPS.values()]
