"""The mock model (`--model mock`): schema-true, deterministic answers for every agent, no
server and no `openai` package; and real runs of the CLI with it, validated in Docker,
with the judge on, and resumed from the cache without asking the mock again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from taskloom.config import LLMConfig, load_run_config, with_llm_environment
from taskloom.generators.llm.answers import (
    DraftAnswer,
    JudgeAnswer,
    PlanAnswer,
    RefineAnswer,
    RewriteAnswer,
)
from taskloom.generators.llm.client import Session, transport_for
from taskloom.generators.llm.exchange import ChatRequest, Exchange
from taskloom.generators.llm.mock import MockChat, schema_instance, tokens
from taskloom.generators.llm.prompts import prompt
from taskloom.leaks import instruction_leaks
from taskloom.models import ReasonCode, Verdict
from taskloom.sandbox.base_image import BASE_IMAGE
from taskloom.validators.leakage import context_leaks

TASKLOOM = [sys.executable, "-m", "taskloom.cli"]
ANSWERS = {model.__name__: model for model in
           (PlanAnswer, DraftAnswer, RefineAnswer, RewriteAnswer, JudgeAnswer)}
SETTINGS = LLMConfig(model="mock").output_settings()


class Recording:
    """A MockChat that keeps every request it answered."""

    def __init__(self) -> None:
        self.mock = MockChat()
        self.seen: list[tuple[ChatRequest, Exchange]] = []

    def complete(self, request: ChatRequest) -> Exchange:
        exchange = self.mock.complete(request)
        self.seen.append((request, exchange))
        return exchange


def agents(backend: str, chat, seed: int = 0):
    from taskloom.generators.backends import backend_for

    config = load_run_config(None, [f"seed={seed}", f"backend={backend}", "llm.model=mock"])
    return backend_for(config, chat)


def oracle_failure() -> Verdict:
    return Verdict(check="oracle", passed=False, reason=ReasonCode.ORACLE_FAILS,
                   details="reference solution gives reward 0 (needs 1)", log="E assert")


# -- answers: valid for their schema, deterministic ----------------------------------------

def test_every_agent_gets_a_valid_deterministic_answer():
    from taskloom.validators.judge import LLMJudge

    chat = Recording()
    planner, generator, refiner = agents("llm", chat)
    for index in range(4):
        draft = generator.generate(planner.plan(index))
        refiner.refine(draft, (oracle_failure(),))
        assert LLMJudge(chat).judge(draft.task).passed
    _, hybrid, _ = agents("hybrid", chat)
    hybrid.generate(planner.plan(0))
    asked = {request.answer_name for request, _ in chat.seen}
    assert asked == set(ANSWERS)
    again = MockChat()
    for request, exchange in chat.seen:
        ANSWERS[request.answer_name].model_validate_json(exchange.answer)
        assert exchange.key == request.key(SETTINGS)  # what a session looks up
        assert exchange.model == "mock" and exchange.cost_usd == 0
        assert again.complete(request) == exchange  # same request, same exchange
    assert again.calls == len(chat.seen)


def test_planner_details_are_drawn_from_the_request():
    chat = Recording()
    planner, _, _ = agents("llm", chat, seed=3)
    blueprint = planner.plan(0)
    from taskloom.generators.backends import skill_graph

    graph = skill_graph(())
    scenario = graph.scenarios[blueprint.scenario]
    title, *details = blueprint.details.splitlines()
    assert title.startswith(scenario.title)
    assert 3 <= len(details) <= 6
    assert any(graph.skills[blueprint.path[0]].name in line for line in details)


def test_drafts_vary_with_the_blueprint_and_keep_answers_out_of_the_instruction():
    chat = Recording()
    planner, generator, _ = agents("llm", chat, seed=1)
    fingerprints = set()
    for index in range(8):
        blueprint = planner.plan(index)
        draft = generator.generate(blueprint)
        task = draft.task
        fingerprints.add(task.config.metadata["fingerprint"])
        assert task.dockerfile.splitlines()[0] == f"FROM {BASE_IMAGE}"
        solve = task.file("solution", "solve.sh").content.decode()
        assert solve.count("# taskloom:step") == min(len(blueprint.path), 8)
        assert not instruction_leaks(task, draft.expected_values)
        assert not context_leaks(task)
        planned = re.search(r"Input: (\S+?\.csv)", blueprint.details).group(1)
        assert [f.path for f in task.environment if f.path.startswith("files/")] == \
            [f"files{planned}"]  # the input file the planner named
    assert len(fingerprints) == 8


def test_refiner_diagnoses_and_keeps_the_draft():
    chat = Recording()
    planner, generator, refiner = agents("llm", chat)
    draft = generator.generate(planner.plan(0))
    repaired = refiner.refine(draft, (oracle_failure(),))
    _, exchange = chat.seen[-1]
    answer = RefineAnswer.model_validate_json(exchange.answer)
    assert "oracle" in answer.diagnosis
    assert answer.model_dump(exclude={"diagnosis"}) == dict.fromkeys(
        ("instruction", "files", "setup", "steps", "alternative", "tests", "requirements",
         "mutants", "expected_values"))
    assert repaired.attempt == 1 and repaired.task.instruction == draft.task.instruction
    assert repaired.task.tests == draft.task.tests
    # the alternative, the mutants and the requirement map survive the round trip through
    # the refiner's view of the task
    assert repaired.task.alternatives == draft.task.alternatives
    assert draft.task.alternatives[0].path == "alternatives/model.sh"
    assert repaired.task.mutants == draft.task.mutants and draft.task.mutants
    assert repaired.task.config.metadata["requirements"] == \
        draft.task.config.metadata["requirements"]


def test_drafts_cite_every_test_and_ship_a_mutant_per_exercised_rule():
    chat = Recording()
    planner, generator, _ = agents("llm", chat, seed=5)
    for index in range(8):
        task = generator.generate(planner.plan(index)).task
        metadata = task.config.metadata
        pytest_file = task.file("tests", "test_outputs.py").content.decode()
        tests = re.findall(r"^def (test_\w+)", pytest_file, re.MULTILINE)
        assert "dropped_tests" not in metadata  # every check cites its sentence
        assert {t for entry in metadata["requirements"] for t in entry["tests"]} == set(tests)
        assert all(quote in task.instruction for entry in metadata["requirements"]
                   for quote in entry["demands"])
        solve = task.file("solution", "solve.sh").content.decode()
        reference = [line for line in solve.splitlines()[3:] if not line.startswith("#")]
        assert task.mutants, "every mock draft states a filter"
        for mutant in task.mutants:
            header, body = mutant.content.decode().split("\nset -eu\n", 1)
            ignored = re.search(r"ignores (.+)\. Validation requires reward 0\.$", header)
            assert ignored and ignored.group(1) in task.instruction
            changed = [a != b for a, b in zip(body.splitlines(), reference, strict=True)]
            assert sum(changed) == 1  # one step's line differs: the rule it ignores
        # the data exercises the rules: rows of other categories, rows out of id order
        rows = [line.split(",") for line in task.file(
            "environment", next(f.path for f in task.environment
                                if f.path.endswith(".csv"))).content.decode().splitlines()[1:]]
        records = [r for r in rows if not r[0].startswith("#")]
        assert len({r[2] for r in records}) > 1
        assert [r[0] for r in records] != sorted(r[0] for r in records)
        if any(r[0].startswith("#") for r in rows):  # a commented-out record to skip
            assert any(len(r) == 4 for r in rows if r[0].startswith("#"))


def test_rewriter_keeps_the_original_lines_with_and_without_feedback():
    chat = Recording()
    planner, hybrid, _ = agents("hybrid", chat, seed=2)
    original = hybrid.procedural.generate(planner.plan(0))
    assert hybrid.rewrite(original).task.instruction == original.task.instruction
    told = hybrid.rewrite(original, feedback="- judge (underspecified): say the path\n"
                                             "  log (end):\n    Note: indented")
    assert told.task.instruction == original.task.instruction
    assert "Note: - judge" in chat.seen[-1][0].messages[1].content


class Inner(BaseModel):
    name: str = Field(min_length=6)
    kind: Literal["a", "b"]


class Odd(BaseModel):
    """An answer schema no agent uses: refs, unions, bounds."""

    count: int = Field(ge=3)
    ratio: float = Field(gt=0.5)
    flag: bool
    inner: Inner
    items: list[Inner] = Field(min_length=2)
    maybe: Inner | None
    tags: list[str]


def test_any_other_schema_gets_a_minimal_instance():
    Odd.model_validate(schema_instance(Odd.model_json_schema()))
    request = ChatRequest(purpose="other", answer_name="Odd",
                          answer_schema=Odd.model_json_schema(), prompt_fingerprint="0" * 64,
                          messages=({"role": "user", "content": "anything"},))
    answer = json.loads(MockChat().complete(request).answer)
    assert Odd.model_validate(answer).count == 3


def test_usage_counts_characters_and_costs_nothing():
    chat = MockChat(LLMConfig(model="mock", price_in_per_mtok=5, price_out_per_mtok=5))
    request = prompt("judge").request(JudgeAnswer, instruction="Count `x`.", tests="def t(): 1")
    exchange = chat.complete(request)
    characters = sum(len(m.content) for m in request.messages)
    assert exchange.tokens_in == -(-characters // 4) == tokens(characters)
    assert exchange.tokens_out == tokens(len(exchange.answer)) > 0
    assert exchange.cost_usd == 0 and exchange.finish_reason == "stop"


# -- a model name like any other: no server, no key, no openai ---------------------------------

def test_transport_for_mock_needs_no_server_key_or_openai(tmp_path):
    script = """
import sys
sys.modules["openai"] = None  # importing it now fails
from taskloom.config import LLMConfig, load_run_config, with_llm_environment
from taskloom.generators.backends import backend_for
from taskloom.generators.llm.client import transport_for
from taskloom.generators.llm.mock import MockChat
config = with_llm_environment(load_run_config(None, ["backend=llm", "llm.model=mock"]), {})
assert isinstance(transport_for(config.llm), MockChat)
planner, generator, _ = backend_for(config)
print(generator.generate(planner.plan(0)).task.name)
"""
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OPENAI", "TASKLOOM_LLM"))}
    environment["PYTHONPATH"] = str(Path(__file__).parent.parent)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_llm_environment_accepts_the_mock_without_a_server():
    config = load_run_config(None, ["backend=hybrid", "llm.model=mock"])
    resolved = with_llm_environment(config, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (resolved.llm.model, resolved.llm.base_url) == ("mock", None)
    named = with_llm_environment(load_run_config(None, ['validation.checks=["+judge"]']),
                                 {"TASKLOOM_LLM_MODEL": "mock"})
    assert (named.llm.model, named.llm.base_url) == ("mock", None)
    assert isinstance(transport_for(named.llm), MockChat)


def test_session_replays_mock_exchanges_without_asking_again():
    mock = MockChat()
    request = prompt("judge").request(JudgeAnswer, instruction="Sort `a`.", tests="def t(): 1")
    first = Session(mock, SETTINGS)
    first.complete(request)
    second = Session(mock, SETTINGS, {e.key: e for e in first.exchanges})
    assert second.complete(request) == first.exchanges[0]
    assert mock.calls == 1 and second.usage.requests == 0
    assert second.usage.tokens_in == first.usage.tokens_in > 0


# -- real runs with the mock (Docker) ---------------------------------------------------------

def exported_tasks(out: Path) -> list[Path]:
    return sorted(p for p in (out / "tasks").iterdir() if (p / "task.toml").exists())


def passed_checks(out: Path) -> dict[int, set[str]]:
    """The checks every exported task passed, by item (from its validated round)."""
    from taskloom.pipeline.store import RunStore

    with RunStore(out / "run.duckdb", read_only=True) as store:
        rows = store.query('SELECT t.item, v."check", v.passed FROM tasks t JOIN verdicts v '
                           "ON v.item = t.item AND v.round = t.round")
    checks: dict[int, set[str]] = {}
    for item, check, passed in rows:
        assert passed, f"item {item}: {check} failed"
        checks.setdefault(item, set()).add(check)
    return checks


def generate(out: Path, *options: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OPENAI", "TASKLOOM_LLM"))}
    return subprocess.run([*TASKLOOM, "generate", "--seed", "0", "--model", "mock", "--out",
                           str(out), *options], capture_output=True, text=True, timeout=600,
                          env=environment)


@pytest.mark.docker
@pytest.mark.parametrize("backend", ["hybrid", "llm"])
def test_cli_generates_verified_tasks_with_the_mock(tmp_path, backend):
    out = tmp_path / "run"
    done = generate(out, "--count", "2", "--backend", backend)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = exported_tasks(out)
    assert len(tasks) == 2
    for folder in tasks:
        toml = (folder / "task.toml").read_text()
        assert 'model = "mock"' in toml and f'generator = "{backend}/1"' in toml
    checks = passed_checks(out)
    assert len(checks) == 2
    # every draft ships another correct solution, and it passed (the hybrid's is procedural)
    assert all({"structure", "build", "nop", "oracle", "alternatives", "tamper", "leakage"}
               <= c for c in checks.values())
    if backend == "llm":  # the mock's drafts ship rule mutants: mutations ran on each
        assert all("mutations" in c for c in checks.values())
        for folder in tasks:
            assert list((folder / "solution" / "mutants").glob("*.sh"))
            assert "requirements" in (folder / "task.toml").read_text()


@pytest.mark.docker
def test_cli_judge_with_the_mock_stores_its_verdict(tmp_path):
    from taskloom.pipeline.store import RunStore

    out = tmp_path / "run"
    done = generate(out, "--count", "1", "--set", 'validation.checks=["+judge"]')
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(exported_tasks(out)) == 1
    assert all("judge" in c for c in passed_checks(out).values())
    with RunStore(out / "run.duckdb", read_only=True) as store:
        judged = store.query("SELECT passed, details FROM verdicts WHERE \"check\" = 'judge'")
        cached = store.query("SELECT DISTINCT purpose, model FROM llm_cache")
    assert judged and all(passed and "complete" in details for passed, details in judged)
    assert cached == [("judge", "mock")]


@pytest.mark.docker
def test_resumed_run_replays_the_mock_from_the_cache(tmp_path):
    from taskloom.pipeline.runner import Runner
    from taskloom.pipeline.store import RunStore

    out = tmp_path / "run"
    config = load_run_config(None, ["count=1", "max_items=2", "workers=1", "seed=7",
                                    "backend=llm", "llm.model=mock",
                                    'validation.checks=["+judge"]'])
    mock = transport_for(config.llm)  # the process's transport, shared by the stages
    before = mock.calls
    first = Runner(config, out).run()
    asked = mock.calls - before
    assert first.exported == 1 and asked > 0
    with RunStore(out / "run.duckdb", read_only=True) as store:
        cached = store.query("SELECT count(*) FROM llm_cache")[0][0]
    assert cached == asked
    with RunStore(out / "run.duckdb") as store:
        store.db.execute("DELETE FROM results")  # forget the stage results, keep the cache
    again = Runner(config, out, resume=True).run()
    assert again.exported == 1
    assert mock.calls - before == asked  # every request answered from llm_cache
    with RunStore(out / "run.duckdb", read_only=True) as store:
        assert store.query("SELECT count(*) FROM llm_cache")[0][0] == cached
