"""The LLM client and agents without a model: failure modes against a scripted server on
127.0.0.1 (invalid JSON, empty answers, timeouts, status codes), schema negotiation, the
replaying session, rendering, config, stage keys, the hybrid refiner and the judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llmservers import Reply, free_port

from taskloom.config import LLMConfig, load_run_config, with_llm_environment
from taskloom.errors import (
    ConfigError,
    InfrastructureError,
    InvalidAnswer,
    ModelUnavailable,
    NoDraft,
    RequestRejected,
)
from taskloom.generators.llm.answers import DraftAnswer, JudgeAnswer, PlanAnswer
from taskloom.generators.llm.client import OpenAIChat, Session, ask, grammar_schema
from taskloom.generators.llm.exchange import ChatRequest, Exchange
from taskloom.generators.llm.prompts import prompt
from taskloom.generators.llm.render import answer_of_task, render_task
from taskloom.generators.procedural.assemble import GENERATOR_VERSION
from taskloom.models import ReasonCode, Verdict
from taskloom.pipeline import stages
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore

PLAN = json.dumps({"title": "Rotate logs", "details": ["/srv/ops/logs holds 12 files"]})


def llm_config(base_url: str, **values) -> LLMConfig:
    settings = {"retries": 1, "backoff_sec": 0.05, "timeout_sec": 5.0, **values}
    return LLMConfig(base_url=base_url, model="smollm2", **settings)


def plan_request(attempt: int = 0) -> ChatRequest:
    return prompt("planner").request(
        PlanAnswer, seed=1, attempt=attempt, scenario_title="t", scenario_description="d",
        org="o", role="r", root="/srv", skills="1. x", difficulty="steps=1")


# -- failure modes of the model and the server --------------------------------------------

def test_invalid_json_and_empty_answers_are_invalid_answers_not_crashes(scripted):
    server = scripted(Reply(content="Sure! {\"title\": \"unterminated"), Reply(content=""),
                      Reply(content="[1, 2]"), Reply(content='{"title": ""}'))
    chat = OpenAIChat(llm_config(server.base_url, structured_output="json_object"))
    with pytest.raises(InvalidAnswer, match="not valid JSON"):
        ask(chat, plan_request(0), PlanAnswer)
    with pytest.raises(InvalidAnswer, match="empty answer"):
        ask(chat, plan_request(1), PlanAnswer)
    with pytest.raises(InvalidAnswer, match="no JSON object"):
        ask(chat, plan_request(2), PlanAnswer)
    with pytest.raises(InvalidAnswer, match="title"):
        ask(chat, plan_request(3), PlanAnswer)
    assert len(server.requests) == 4  # none retried: a bad answer is not a transport error


def test_prose_around_the_json_object_is_tolerated(scripted):
    server = scripted(Reply(content=f"Here you go:\n```json\n{PLAN}\n```\nDone."))
    chat = OpenAIChat(llm_config(server.base_url, structured_output="json_object"))
    answer = ask(chat, plan_request(), PlanAnswer)
    assert answer.title == "Rotate logs"


def test_timeouts_are_retried_then_reported_as_infrastructure(scripted):
    server = scripted(Reply(content=PLAN, delay=3.0))
    chat = OpenAIChat(llm_config(server.base_url, timeout_sec=0.5, retries=2,
                                 structured_output="json_object"))
    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match="timed out after 3 attempts") as raised:
        chat.complete(plan_request())
    assert len(server.requests) == 3
    assert time.monotonic() - started < 10
    assert "llm.timeout_sec" in raised.value.fix


def test_only_transport_errors_are_retried(scripted):
    unavailable = scripted(Reply(status=503, body={"error": {"message": "busy"}}))
    chat = OpenAIChat(llm_config(unavailable.base_url, retries=2,
                                 structured_output="json_object"))
    with pytest.raises(ModelUnavailable):
        chat.complete(plan_request())
    assert len(unavailable.requests) == 3

    bad = scripted(Reply(status=400, body={"error": {"message": "context length exceeded"}}))
    chat = OpenAIChat(llm_config(bad.base_url, retries=2, structured_output="json_object"))
    with pytest.raises(RequestRejected, match="HTTP 400"):
        chat.complete(plan_request())
    assert len(bad.requests) == 1

    denied = scripted(Reply(status=401, body={"error": {"message": "no key"}}))
    chat = OpenAIChat(llm_config(denied.base_url, retries=2, structured_output="json_object"))
    with pytest.raises(ModelUnavailable) as raised:
        chat.complete(plan_request())
    assert len(denied.requests) == 1
    assert "OPENAI_API_KEY" in raised.value.fix


def test_connection_refused_is_model_unavailable():
    chat = OpenAIChat(llm_config(f"http://127.0.0.1:{free_port()}/v1", retries=1))
    with pytest.raises(ModelUnavailable, match="unreachable after 2 attempts"):
        chat.complete(plan_request())


def test_auto_mode_falls_back_from_json_schema_to_json_object_and_keeps_it(scripted):
    server = scripted(Reply(status=500, body={"detail": "json_schema unsupported"}),
                      Reply(content=PLAN))
    chat = OpenAIChat(llm_config(server.base_url))
    ask(chat, plan_request(0), PlanAnswer)
    ask(chat, plan_request(1), PlanAnswer)
    first, second, third = server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"]["type"] == "json_object"
    schema = second["response_format"]["schema"]
    assert schema["properties"]["title"]["pattern"].startswith("^(")  # JSON-safe strings
    assert third["response_format"]["type"] == "json_object"  # negotiated once
    assert chat.mode == "json_object"


def test_tools_mode_reads_the_tool_call(scripted):
    server = scripted(Reply(tool_arguments=PLAN))
    chat = OpenAIChat(llm_config(server.base_url, structured_output="tools"))
    answer = ask(chat, plan_request(), PlanAnswer)
    assert answer.details == ["/srv/ops/logs holds 12 files"]
    assert server.requests[0]["tool_choice"]["function"]["name"] == "PlanAnswer"


def test_concurrency_is_bounded_per_process(scripted):
    from concurrent.futures import ThreadPoolExecutor

    server = scripted(Reply(content=PLAN, delay=0.3))
    chat = OpenAIChat(llm_config(server.base_url, structured_output="json_object",
                                 max_concurrency=2))
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda n: chat.complete(plan_request(n)), range(6)))
    assert len(server.requests) == 6 and server.most_in_flight == 2


def test_usage_and_cost_are_recorded(scripted):
    server = scripted(Reply(content=PLAN))
    chat = OpenAIChat(llm_config(server.base_url, structured_output="json_object",
                                 price_in_per_mtok=2.0, price_out_per_mtok=10.0))
    exchange = chat.complete(plan_request())
    assert (exchange.tokens_in, exchange.tokens_out) == (100, 20)
    assert exchange.cost_usd == pytest.approx((100 * 2.0 + 20 * 10.0) / 1e6)


# -- the session: replay, record, usage -------------------------------------------------------

class Counting:
    """A transport stub that counts calls (unit test of the session's logic)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls = 0

    def complete(self, request: ChatRequest) -> Exchange:
        self.calls += 1
        return Exchange(key=request.key(SETTINGS), purpose=request.purpose, model="m",
                        messages=request.messages, answer_name=request.answer_name,
                        answer=self.answer, tokens_in=10, tokens_out=5, cost_usd=0.5)


SETTINGS = LLMConfig(model="m").output_settings()


def test_session_replays_before_sending_and_counts_usage_once():
    transport = Counting(PLAN)
    first = Session(transport, SETTINGS)
    ask(first, plan_request(), PlanAnswer)
    ask(first, plan_request(), PlanAnswer)  # same request in one stage: asked once
    assert transport.calls == 1 and len(first.exchanges) == 1
    replay = {e.key: e for e in first.exchanges}

    second = Session(transport, SETTINGS, replay)
    ask(second, plan_request(), PlanAnswer)
    assert transport.calls == 1  # answered from the replay map
    assert second.usage.tokens_in == 10 and second.usage.requests == 0
    ask(second, plan_request(attempt=1), PlanAnswer)  # a deliberate re-ask is a new request
    assert transport.calls == 2 and second.usage.requests == 1
    assert second.usage.cost_usd == pytest.approx(1.0)


def test_cache_key_covers_prompt_fingerprint_and_model_settings():
    request = plan_request()
    edited = request.model_copy(update={"prompt_fingerprint": "0" * 64})
    assert request.key(SETTINGS) != edited.key(SETTINGS)
    warmer = LLMConfig(model="m", temperature=0.9).output_settings()
    assert request.key(SETTINGS) != request.key(warmer)
    moved = LLMConfig(model="m", base_url="http://elsewhere/v1", timeout_sec=1)
    assert request.key(SETTINGS) == request.key(moved.output_settings())


@pytest.mark.parametrize("backend", ["procedural", "llm"])
def test_stage_failures_travel_as_data(monkeypatch, backend):
    """Procedural and LLM stages alike: no draft is a rejection, a dead server an error."""
    from taskloom.generators.backends import Backend
    from taskloom.pipeline.records import Stage
    from taskloom.pipeline.stages import Outcome

    class Failing:
        def __init__(self, error):
            self.error = error

        def plan(self, index, coverage=None):
            raise self.error

    config = load_run_config(None, [f"backend={backend}", "llm.model=mock"])
    for error, status in ((NoDraft("planner: bad JSON"), Outcome.REJECTED),
                          (InfrastructureError("server gone", fix="start it"), Outcome.ERROR)):
        monkeypatch.setattr(stages, "backend_for",
                            lambda config, chat=None, e=error: Backend(Failing(e), None, None))
        outcome = stages.plan(config, 0)
        assert (outcome.stage, outcome.status, outcome.value) == (Stage.PLAN, status, None)
        assert outcome.reason in ("planner: bad JSON", "server gone")
        assert outcome.fix == (None if status is Outcome.REJECTED else "start it")


# -- schemas, rendering ---------------------------------------------------------------------

def test_grammar_schema_inlines_refs_and_bounds_strings_and_lists():
    schema = grammar_schema(DraftAnswer.model_json_schema(), max_items=8)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    step = schema["properties"]["steps"]["items"]
    assert set(step["properties"]) == {"title", "commands"}  # a property named title stays
    assert step["properties"]["title"]["pattern"].endswith("{1,200}$")
    assert schema["properties"]["tests"]["maxItems"] == 8
    verdict = grammar_schema(JudgeAnswer.model_json_schema())["properties"]["verdict"]
    assert "pattern" not in verdict and verdict["enum"] == ["ok", "underspecified", "leak"]


def draft_answer(**changes) -> DraftAnswer:
    data = {
        "instruction": ["Count the ERROR lines of `/srv/ops/app.log`.",
                        "Write the number to `/srv/ops/output/errors.txt`."],
        "workdir": "/srv/ops",
        "files": [{"path": "/srv/ops/app.log", "lines": ["ERROR a", "INFO b", "ERROR \"c\""]},
                  {"path": "output/.keep", "lines": []}],
        "setup": [],
        "steps": [{"title": "count", "commands": [
            "grep -c ERROR app.log > output/errors.txt"]}],
        "alternative": ["awk '/ERROR/ { n++ } END { print n }' app.log > output/errors.txt"],
        "tests": ["from pathlib import Path", "", "def test_count():",
                  "    assert Path('/srv/ops/output/errors.txt').read_text() == '2\\n'"],
        "requirements": [{"demands": "Write the number to `/srv/ops/output/errors.txt`.",
                          "tests": ["test_count"]}],
        "mutants": [{"ignores": "the ERROR lines",
                     "commands": ["wc -l < app.log > output/errors.txt"]}],
        "expected_values": ["2"],
    }
    data.update(changes)
    return DraftAnswer.model_validate(data)


@pytest.fixture(scope="module")
def blueprint_and_graph():
    config = load_run_config(None, ["seed=4"])
    from taskloom.generators.backends import backend_for, skill_graph

    planner, _, _ = backend_for(config)
    return planner.plan(0), skill_graph(())


def test_render_and_read_back_a_draft(blueprint_and_graph):
    blueprint, graph = blueprint_and_graph
    task = render_task(draft_answer(), blueprint, graph, generator="llm/1", model="m",
                       attempt=0)
    assert task.dockerfile.splitlines() == ["FROM taskloom/base:2", "COPY files/ /",
                                            "WORKDIR /srv/ops"]
    assert task.file("environment", "files/srv/ops/output/.keep") is not None  # relative
    solve = task.file("solution", "solve.sh").content.decode()
    assert "# taskloom:step 1 count\n" in solve
    assert b"/logs/verifier/reward.txt" in task.file("tests", "test.sh").content
    assert task.config.metadata["fingerprint"]
    (alternative,) = task.alternatives
    assert alternative.path == "alternatives/model.sh" and alternative.mode == 0o755
    assert alternative.content.decode().endswith("\nset -eu\nawk '/ERROR/ { n++ } END { "
                                                  "print n }' app.log > output/errors.txt\n")
    back = answer_of_task(task, ("2",))
    assert back.steps == draft_answer().steps and back.tests == draft_answer().tests
    assert back.alternative == draft_answer().alternative
    assert back.workdir == "/srv/ops"
    silent = render_task(draft_answer(alternative=[" "], mutants=[]), blueprint, graph,
                         generator="llm/1", model="m", attempt=0)
    assert silent.alternatives == () and silent.mutants == ()  # a blank alternative is none


CHECKS = ["from pathlib import Path", "", "", "def helper():", "    return 2",
          "", "", "def test_count():", "    assert helper() == 2", "", "",
          "@pytest.mark.parametrize('n', [1])", "def test_format(n):", "    assert n", "", "",
          "class TestExtra:", "    def test_more(self):", "        assert True", "", "",
          "def test_uncited():", "    assert Path('/srv/ops/secret.txt').exists()", "", "",
          "def test_uncited():  # defined twice: both go", "    assert Path('/srv/ops/key')"]


def render(answer: DraftAnswer, blueprint_and_graph):
    blueprint, graph = blueprint_and_graph
    return render_task(answer, blueprint, graph, generator="llm/1", model="m", attempt=0)


def test_checks_without_a_cited_sentence_are_dropped(blueprint_and_graph):
    answer = draft_answer(tests=CHECKS, requirements=[
        # whitespace and line breaks may differ from the instruction's; the test names may
        # come with a file or parentheses
        {"demands": "Count the ERROR lines\n of `/srv/ops/app.log`.",
         "tests": ["test_outputs.py::test_count", "test_missing"]},
        {"demands": "Write  the number to", "tests": ["test_count()"]},
        {"demands": "Write the result as JSON.", "tests": ["test_format"]},  # fabricated
        {"demands": "number", "tests": ["test_format"]},  # one word cites nothing
    ])
    task = render(answer, blueprint_and_graph)
    pytest_file = task.file("tests", "test_outputs.py").content.decode()
    assert "def test_count():" in pytest_file and "def helper():" in pytest_file
    for dropped in ("test_format", "parametrize", "TestExtra", "test_uncited", "secret.txt",
                    "/key"):
        assert dropped not in pytest_file
    compile(pytest_file, "test_outputs.py", "exec")
    metadata = task.config.metadata
    assert metadata["requirements"] == [  # the procedural format, the instruction's words
        {"demands": ["Count the ERROR lines of `/srv/ops/app.log`."], "tests": ["test_count"]},
        {"demands": ["Write the number to"], "tests": ["test_count"]}]
    assert metadata["dropped_tests"] == ["test_format", "TestExtra", "test_uncited"]
    back = answer_of_task(task, ())
    assert [(r.demands, r.tests) for r in back.requirements] == [
        ("Count the ERROR lines of `/srv/ops/app.log`.", ["test_count"]),
        ("Write the number to", ["test_count"])]
    assert render(back, blueprint_and_graph).tests == task.tests  # nothing more to drop


@pytest.mark.parametrize(("lines", "cited", "problem"), [
    (["import pytest", "def test_count():", "    assert 1"], "test_count",
     "line 1: imports pytest"),
    (["def test_count(tmp_path):", "    assert tmp_path"], "test_count",
     "`test_count` takes arguments"),
    (["class TestCount:", "    def test_count(self):", "        assert 1"], "TestCount",
     "class TestCount; checks are top-level"),
])
def test_a_kept_check_the_runner_cannot_run_is_refused(blueprint_and_graph, lines, cited,
                                                       problem):
    """The verifier runs checks without pytest: a fixture, class or pytest import kept
    after dropping the uncited checks is refused with the fix, before any sandbox runs."""
    answer = draft_answer(tests=lines, requirements=[
        {"demands": "Count the ERROR lines of `/srv/ops/app.log`.", "tests": [cited]}])
    with pytest.raises(InvalidAnswer, match=problem):
        render(answer, blueprint_and_graph)


@pytest.mark.parametrize(("requirements", "problem"), [
    ([{"demands": "Count the WARNING lines of the log", "tests": ["test_count"]}],
     "not words of the instruction"),
    ([{"demands": "Count the ERROR lines", "tests": ["test_counted"]}],
     "names functions the pytest file lacks"),
])
def test_no_cited_check_is_an_invalid_answer(blueprint_and_graph, requirements, problem):
    with pytest.raises(InvalidAnswer, match="requirements: no test function is cited") as raised:
        render(draft_answer(requirements=requirements), blueprint_and_graph)
    assert problem in str(raised.value) and "test_count" in str(raised.value)


def test_an_unparsable_pytest_file_is_an_invalid_answer(blueprint_and_graph):
    with pytest.raises(InvalidAnswer, match=r"tests: line 1: .*valid Python"):
        render(draft_answer(tests=["def test_count(:"]), blueprint_and_graph)
    with pytest.raises(InvalidAnswer, match="no top-level `def test_"):
        render(draft_answer(tests=["x = 1"]), blueprint_and_graph)


def test_mutants_are_rendered_and_read_back(blueprint_and_graph):
    mutants = [{"ignores": "the ERROR lines.", "commands": ["wc -l < app.log > out.txt"]},
               {"ignores": "blank", "commands": [" "]},  # a blank mutant is none
               {"ignores": "lines with `#` are\ncomments", "commands": ["grep -c . app.log"]}]
    task = render(draft_answer(mutants=mutants), blueprint_and_graph)
    first, second = task.mutants
    assert (first.path, second.path) == ("mutants/1-the-error-lines.sh",
                                         "mutants/2-lines-with-are-comments.sh")
    assert first.mode == 0o755 and first.content.decode() == (
        "#!/bin/bash\n# Wrong on purpose (a taskloom mutant): ignores the ERROR lines. "
        "Validation requires reward 0.\nset -eu\nwc -l < app.log > out.txt\n")
    back = answer_of_task(task, ())
    assert [(m.ignores, m.commands) for m in back.mutants] == [
        ("the ERROR lines", ["wc -l < app.log > out.txt"]),
        ("lines with `#` are comments", ["grep -c . app.log"])]
    assert render(back, blueprint_and_graph).solution == task.solution
    many = [{"ignores": f"rule {n}", "commands": ["true"]} for n in range(13)]
    with pytest.raises(InvalidAnswer, match="mutants: 13; at most 12"):
        render(draft_answer(mutants=many), blueprint_and_graph)


def test_a_procedural_task_reads_back_with_its_map_and_mutants():
    config = load_run_config(None, ["seed=4"])
    from taskloom.generators.backends import backend_for

    planner, generator, _ = backend_for(config)
    draft = generator.generate(planner.plan(0))
    assert draft.task.mutants  # procedural tasks ship rule mutants
    back = answer_of_task(draft.task, draft.expected_values)
    quotes = [quote for entry in draft.task.config.metadata["requirements"]
              for quote in entry["demands"]]
    assert [r.demands for r in back.requirements] == quotes
    assert all(r.demands in draft.task.instruction for r in back.requirements)
    header = draft.task.mutants[0].content.decode().splitlines()[1]
    assert header.endswith(f"ignores {back.mutants[0].ignores}. Validation requires reward 0.")
    assert back.mutants[0].commands and not back.mutants[0].commands[0].startswith("#!")


def test_a_repair_replaces_the_map_and_the_mutants():
    from taskloom.generators.llm.answers import RefineAnswer
    from taskloom.generators.llm.render import apply_repair

    answer = draft_answer()
    kept = apply_repair(answer, RefineAnswer.model_validate(
        {"diagnosis": "d", **dict.fromkeys(RefineAnswer.model_fields.keys() - {"diagnosis"})}))
    assert kept == answer
    mutant = {"ignores": "ERROR", "commands": ["echo 3 > output/errors.txt"]}
    cited = {"demands": "Count the ERROR lines", "tests": ["test_count"]}
    repaired = apply_repair(answer, RefineAnswer.model_validate(
        {"diagnosis": "d", **dict.fromkeys(RefineAnswer.model_fields.keys() - {"diagnosis"}),
         "mutants": [mutant], "requirements": [cited]}))
    assert [m.model_dump() for m in repaired.mutants] == [mutant]
    assert [r.model_dump() for r in repaired.requirements] == [cited]


@pytest.mark.parametrize("path", ["/srv/../../etc/x/../..", "/tests/test_x.py",
                                  "/solution/solve.sh", "//srv/x", "/"])
def test_unsafe_paths_are_rejected(blueprint_and_graph, path):
    blueprint, graph = blueprint_and_graph
    answer = draft_answer(files=[{"path": path, "lines": ["x"]}])
    with pytest.raises(InvalidAnswer):
        render_task(answer, blueprint, graph, generator="llm/1", model="m", attempt=0)


# -- config, stage keys ----------------------------------------------------------------------

def test_llm_config_from_environment_and_set():
    config = load_run_config(None, ["backend=llm", "llm.temperature=0.7",
                                    "llm.structured_output=tools"])
    resolved = with_llm_environment(config, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                             "TASKLOOM_LLM_MODEL": "qwen"})
    assert (resolved.llm.base_url, resolved.llm.model) == ("http://127.0.0.1:9/v1", "qwen")
    assert resolved.llm.temperature == 0.7
    with pytest.raises(ConfigError, match=r"llm\.model"):
        with_llm_environment(config, {})
    with pytest.raises(ConfigError, match="structured_output"):
        load_run_config(None, ["llm.structured_output=xml"])
    assert not stages.run_asks_model(load_run_config(None, []))  # so no model is needed


def test_stage_keys_follow_prompts_and_model_settings(monkeypatch):
    from taskloom.generators.llm import prompts

    config = load_run_config(None, ["backend=llm", "llm.model=a"])
    keys = stages.StageKeys(config)
    plan_key, version = keys.plan(0), stages.generator_version(config)
    assert stages.StageKeys(config.model_copy(update={"llm": config.llm.model_copy(
        update={"model": "b"})})).plan(0) != plan_key
    original = prompts.prompt

    def edited(name):
        found = original(name)
        return found if name != "generator" else type(found)(
            found.name, found.system + " Be brief.", found.user, "f" * 64)

    monkeypatch.setattr(prompts, "prompt", edited)
    assert stages.generator_version(config) != version  # generate and refine re-run
    assert keys.plan(0) == plan_key  # the planner prompt did not change
    procedural = load_run_config(None, [])
    assert stages.generator_version(procedural) == GENERATOR_VERSION
    assert not stages.run_asks_model(procedural)


def test_prompt_files_parse_and_fill():
    for name in ("planner", "generator", "refiner", "rewriter", "judge"):
        found = prompt(name)
        assert found.system and found.user and len(found.fingerprint) == 64
    request = prompt("judge").request(JudgeAnswer, instruction="Do {x} with `a`.",
                                      tests="def test(): assert '{{' in '{{'")
    assert "Do {x} with `a`." in request.messages[1].content
    assert request.answer_schema["required"] == ["verdict", "explanation"]


# -- agents: hybrid refiner and judge (stub chat) ---------------------------------------------

class Scripted:
    """A ChatModel stub answering from a list (unit tests of agent logic)."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Exchange:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        return Exchange(key=request.key(SETTINGS), purpose=request.purpose, model="m",
                        messages=request.messages, answer_name=request.answer_name,
                        answer=answer)


def hybrid(chat):
    from taskloom.generators.backends import backend_for

    config = load_run_config(None, ["seed=4", "backend=hybrid", "llm.model=m"])
    return backend_for(config, chat)


def faithful(instruction: str) -> str:
    return json.dumps({"instruction": ["Hi, quick one:", *instruction.splitlines()],
                       "requirements": []})


def test_hybrid_rewrite_keeps_requirements_or_retries_with_feedback():
    probe = Scripted('{"instruction": ["Please tidy the files."], "requirements": []}')
    planner, generator, _ = hybrid(probe)
    blueprint = planner.plan(0)
    with pytest.raises(NoDraft, match="left out"):
        generator.generate(blueprint)
    assert len(probe.requests) == 2  # one retry, told what was left out
    assert "left out" in probe.requests[1].messages[1].content

    original = generator.procedural.generate(blueprint).task.instruction
    chat = Scripted(faithful(original))
    _, generator, _ = hybrid(chat)
    draft = generator.generate(blueprint)
    assert draft.task.instruction.startswith("Hi, quick one:")
    assert draft.generator == "hybrid/1"
    assert draft.task.config.metadata["fingerprint"] != \
        generator.procedural.generate(blueprint).task.config.metadata["fingerprint"]


class Echo(Scripted):
    """Rewrites by copying the original instruction under a greeting."""

    def complete(self, request: ChatRequest) -> Exchange:
        text = request.messages[1].content.split("Original instruction:\n", 1)[1]
        original = text.split("\n\nThe tests, each with", 1)[0]
        self.answers = [faithful(original.strip())]
        return super().complete(request)


def test_hybrid_refiner_rewrites_for_instruction_failures_and_regenerates_otherwise():
    chat = Echo()
    planner, generator, refiner = hybrid(chat)
    draft = generator.generate(planner.plan(0))
    judged = Verdict(check="judge", passed=False, reason=ReasonCode.UNDERSPECIFIED,
                     details="the output format is not stated")
    again = refiner.refine(draft, (judged,))
    assert again.attempt == draft.attempt  # same procedural task, new wording
    assert "the output format is not stated" in chat.requests[-1].messages[1].content
    broken = Verdict(check="oracle", passed=False, reason=ReasonCode.ORACLE_FAILS,
                     details="reward 0")
    regenerated = refiner.refine(draft, (broken,))
    assert regenerated.attempt > draft.attempt  # a new procedural task
    assert regenerated.task.instruction != draft.task.instruction


def test_judge_verdicts():
    from taskloom.validators.judge import LLMJudge

    planner, generator, _ = hybrid(Scripted("{}"))
    task = generator.procedural.generate(planner.plan(0)).task
    verdict = LLMJudge(Scripted('{"verdict": "underspecified", "explanation": "no path"}')
                       ).judge(task)
    assert (verdict.check, verdict.passed, verdict.reason) == \
        ("judge", False, ReasonCode.UNDERSPECIFIED)
    assert LLMJudge(Scripted('{"verdict": "leak", "explanation": "says 42"}')).judge(
        task).reason == ReasonCode.LEAK
    assert LLMJudge(Scripted('{"verdict": "ok", "explanation": "fine"}')).judge(task).passed
    garbage = Scripted("no idea")
    unusable = LLMJudge(garbage).judge(task)
    assert unusable.reason == ReasonCode.VERIFIER and len(garbage.requests) == 2


# -- the runner with a model that answers badly or is not there -------------------------------

def test_run_with_invalid_answers_rejects_items_and_caches_exchanges(scripted, tmp_path):
    server = scripted(Reply(content="I cannot help with that."), Reply(content=""))
    config = load_run_config(None, [
        "count=1", "max_items=3", "backend=llm", "llm.model=smollm2",
        f"llm.base_url={server.base_url}", "llm.structured_output=json_object",
        "llm.price_in_per_mtok=1", "llm.price_out_per_mtok=1"])
    summary = Runner(config, tmp_path / "run").run()
    assert summary.exported == 0 and summary.status == "finished"
    plan = next(row for row in summary.funnel if row.stage == "plan")
    assert (plan.n_in, plan.n_out) == (3, 0)
    assert plan.tokens == 3 * 120 and plan.cost_usd == pytest.approx(3 * 120 / 1e6)
    with RunStore(tmp_path / "run" / "run.duckdb", read_only=True) as store:
        reasons = [r for (r,) in store.query("SELECT reason FROM items ORDER BY item")]
        cached = store.query("SELECT count(*), sum(tokens_in) FROM llm_cache")[0]
    assert all("planner" in r and ("no JSON object" in r or "empty answer" in r)
               for r in reasons)
    assert cached == (3, 300)

    requests = len(server.requests)
    with RunStore(tmp_path / "run" / "run.duckdb") as store:
        store.db.execute("DELETE FROM results")  # forget the stage results, keep the cache
    Runner(config, tmp_path / "run", resume=True).run()
    assert len(server.requests) == requests  # replayed, not asked again


def test_run_stops_after_repeated_model_outages_with_the_fix(tmp_path):
    config = load_run_config(None, [
        "count=2", "max_items=8", "backend=llm", "llm.model=smollm2", "llm.retries=0",
        f"llm.base_url=http://127.0.0.1:{free_port()}/v1"])
    with pytest.raises(InfrastructureError, match="infrastructure failures") as raised:
        Runner(config, tmp_path / "run").run()
    assert "llm.base_url" in raised.value.fix
    with RunStore(tmp_path / "run" / "run.duckdb", read_only=True) as store:
        status = store.query("SELECT status FROM run")[0][0]
        errors = store.query("SELECT count(*) FROM items WHERE status = 'error'")[0][0]
    assert status == "failed" and errors >= 5


def test_cli_names_the_fix_when_no_model_is_configured(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "TASKLOOM_LLM_MODEL"}
    done = subprocess.run([sys.executable, "-m", "taskloom.cli", "generate", "--backend",
                           "llm", "--count", "1", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 2
    assert "--model" in done.stderr and "TASKLOOM_LLM_MODEL" in done.stderr
    assert not Path(tmp_path / "run" / "run.duckdb").exists()


def test_exchanges_travel_back_from_ray_workers(scripted, tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'taskloom[ray]'")
    server = scripted(Reply(content="not JSON at all"))
    config = load_run_config(None, [
        "count=1", "max_items=2", "backend=llm", "llm.model=smollm2", "executor=ray",
        f"llm.base_url={server.base_url}", "llm.structured_output=json_object"])
    summary = Runner(config, tmp_path / "run").run()
    assert summary.status == "finished"
    with RunStore(tmp_path / "run" / "run.duckdb", read_only=True) as store:
        cached = store.query("SELECT item, stage, purpose FROM llm_cache ORDER BY item")
        reasons = [r for (r,) in store.query("SELECT reason FROM items ORDER BY item")]
    assert cached == [(0, "plan", "planner"), (1, "plan", "planner")]
    assert all("no JSON object" in r for r in reasons)


def test_hybrid_rewrite_cites_its_own_words_for_every_test():
    planner, generator, _ = hybrid(Scripted("{}"))
    blueprint = planner.plan(0)
    original = generator.procedural.generate(blueprint).task
    entry = original.config.metadata["requirements"][0]
    reworded = original.instruction
    for quote in entry["demands"]:  # every quote of the first tests, reworded
        first, rest = quote.split(" ", 1)
        reworded = reworded.replace(quote, f"{first} kindly {rest}")
    new_words = f"{entry['demands'][0].split(' ', 1)[0]} kindly"
    quoting = {"demands": new_words + " " + entry["demands"][0].split(" ", 2)[1],
               "tests": entry["tests"]}
    silent = json.dumps({"instruction": reworded.splitlines(), "requirements": []})
    chat = Scripted(silent, silent)
    _, generator, _ = hybrid(chat)
    with pytest.raises(NoDraft, match="without words that demand it"):
        generator.generate(blueprint)
    assert entry["tests"][0] in chat.requests[1].messages[1].content  # told which test
    assert entry["tests"][0] in chat.requests[0].messages[1].content  # and shown it first

    chat = Scripted(json.dumps({"instruction": reworded.splitlines(),
                                "requirements": [quoting]}))
    _, generator, _ = hybrid(chat)
    task = generator.generate(blueprint).task
    requirements = task.config.metadata["requirements"]
    assert {"demands": [quoting["demands"]], "tests": entry["tests"]} in requirements
    assert all(quote in task.instruction for e in requirements for quote in e["demands"])
    tests = task.file("tests", "test_outputs.py").content.decode()
    assert f"# The instruction demands: {quoting['demands']}" in tests
    assert f"# The instruction demands: {entry['demands'][0].splitlines()[0]}" not in tests
    compile(tests, "test_outputs.py", "exec")
