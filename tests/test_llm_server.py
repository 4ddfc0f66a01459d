"""The LLM backends against a real OpenAI-compatible server: llama.cpp (llama-cpp-python)
serving SmolLM2-135M-Instruct, through the real pipeline and the real Docker sandbox.

The model is weak: most drafts fail, most of them before validation (a pytest file that is
not Python, or tests no requirement cites: a check without a sentence never reaches
validation). What must hold is the plumbing: no crash, drafts that reach validation are
refined, the refiner's request and answer go through a real server, the funnel says where
drafts died, every exchange is cached and replayed, and a server killed mid-run leaves
errors that a resume finishes without paying twice.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from llmservers import MODEL_ALIAS, LlamaServer, free_port

from taskloom.config import LLMConfig, load_run_config
from taskloom.errors import InvalidAnswer, NoDraft
from taskloom.generators.llm.answers import JudgeAnswer, PlanAnswer
from taskloom.generators.llm.client import OpenAIChat, ask, parse_json_object
from taskloom.generators.llm.exchange import Exchange
from taskloom.generators.llm.prompts import prompt
from taskloom.pipeline.runner import Runner
from taskloom.pipeline.store import RunStore

pytestmark = pytest.mark.llama
FINAL = ("accepted", "rejected", "failed", "duplicate")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    server = LlamaServer(tmp_path_factory.mktemp("llama") / "server.log")
    yield server
    server.kill()


def options(base_url: str, *extra: str) -> list[str]:
    return ["backend=llm", f"llm.model={MODEL_ALIAS}", f"llm.base_url={base_url}",
            "llm.max_tokens=1024", "llm.grammar_max_items=8", "llm.retries=1",
            "llm.backoff_sec=0.2", "llm.timeout_sec=300", "llm.price_in_per_mtok=0.5",
            "llm.price_out_per_mtok=1.5", "workers=2", *extra]


def query(out, sql: str) -> list[tuple]:
    with RunStore(out / "run.duckdb", read_only=True) as store:
        return store.query(sql)


def drafts(out) -> list[dict]:
    """The generate stage's successful drafts (over 4 KB they are in the payload file)."""
    with RunStore(out / "run.duckdb", read_only=True) as store:
        keys = store.query("SELECT key FROM results WHERE stage = 'generate' AND "
                           "status = 'ok'")
        return [store.result(key).payload for (key,) in keys]


def test_real_server_takes_json_object_with_a_schema(llama):
    chat = OpenAIChat(LLMConfig(base_url=llama.base_url, model=MODEL_ALIAS, max_tokens=256,
                                grammar_max_items=6))
    request = prompt("planner").request(
        PlanAnswer, seed=3, scenario_title="Nightly backup rotation",
        scenario_description="Backups pile up on the backup host.", org="Granite Ops",
        role="the infrastructure engineer", root="/srv/ops",
        skills="1. Find files by age: find old backups (tools: find)",
        difficulty="steps=1, specification=1")
    # The grammar built from the schema makes even a 135M model's answer parse and validate.
    answer = ask(chat, request, PlanAnswer)
    assert answer.title.strip() and answer.details
    assert chat.mode == "json_object"  # llama-cpp-python answers 500 to json_schema


@pytest.mark.docker
def test_llm_backend_end_to_end_with_refine_rounds_and_replay(llama, tmp_path, docker_client_ready):
    out = tmp_path / "run"
    config = load_run_config(None, options(llama.base_url, "count=1", "max_items=2",
                                           "refine_rounds=1", "seed=0"))
    summary = Runner(config, out).run()
    assert summary.status == "finished"
    funnel = {row.stage: row for row in summary.funnel}
    assert funnel["plan"].n_in == 2
    assert funnel["generate"].n_in == funnel["plan"].n_out
    assert funnel["validate"].n_in == funnel["generate"].n_out
    assert funnel["plan"].tokens > 0 and funnel["generate"].tokens > 0
    assert funnel["verified"].cost_usd > 0

    items = query(out, "SELECT item, status, reason FROM items ORDER BY item")
    assert len(items) == 2 and all(status in FINAL for _, status, _ in items)
    assert all(reason for _, status, reason in items if status != "accepted")
    # A draft dies before validation only for a reason its agent names.
    unrendered = funnel["generate"].n_in - funnel["generate"].n_out
    assert sum(reason.startswith("generator: ") for _, _, reason in items) == unrendered
    purposes = {p for (p,) in query(out, "SELECT DISTINCT purpose FROM llm_cache")}
    assert {"planner", "generator"} <= purposes
    if funnel["validate"].n_in:  # every validated draft failed (the model is weak): refined
        assert funnel["refine"].n_in >= 1 and funnel["refine"].tokens > 0
        revalidated = query(out, "SELECT count(DISTINCT item) FROM verdicts "
                                 "WHERE round = 1")[0][0]
        assert revalidated + query(out, "SELECT count(*) FROM items WHERE reason LIKE "
                                        "'%refiner: %'")[0][0] >= 1
        assert "refiner" in purposes
    # Every answered request is in the cache once and in exactly one stage result.
    cached = query(out, "SELECT count(*), sum(tokens_in), sum(tokens_out) FROM llm_cache")[0]
    stored = query(out, "SELECT sum(tokens_in), sum(tokens_out) FROM results")[0]
    assert cached[1:] == stored
    exchange = json.loads(query(out, "SELECT exchange FROM llm_cache LIMIT 1")[0][0])
    assert exchange["messages"][0]["role"] == "system" and exchange["model"]

    # Forget every model stage's result, keep the cache, and resume against a server
    # that does not exist: everything must be replayed, nothing asked again.
    before = {row[0]: row[1:] for row in query(out, "SELECT item, status, reason FROM items")}
    answered = llama.completions()
    with RunStore(out / "run.duckdb") as store:
        store.db.execute("DELETE FROM results WHERE stage IN ('plan', 'generate', 'refine')")
    dead = load_run_config(None, options(f"http://127.0.0.1:{free_port()}/v1", "count=1",
                                         "max_items=2", "refine_rounds=1", "seed=0"))
    again = Runner(dead, out, resume=True).run()
    assert again.status == "finished"
    after = {row[0]: row[1:] for row in query(out, "SELECT item, status, reason FROM items")}
    assert after == before
    assert query(out, "SELECT count(*) FROM llm_cache")[0][0] == cached[0]
    assert llama.completions() == answered
    assert all(draft["usage"]["requests"] == 0 for draft in drafts(out))


def test_refiner_of_a_real_server_keeps_checks_cited(llama):
    from taskloom.generators.backends import backend_for, skill_graph
    from taskloom.generators.llm.agents import LLMRefiner
    from taskloom.generators.llm.answers import DraftAnswer
    from taskloom.generators.llm.render import render_task
    from taskloom.generators.protocols import Draft
    from taskloom.models import ReasonCode, Verdict

    planner, _, _ = backend_for(load_run_config(None, ["seed=4"]))
    blueprint, graph = planner.plan(0), skill_graph(())
    answer = DraftAnswer.model_validate({
        "instruction": ["Count the ERROR lines of `/srv/ops/app.log`.",
                        "Write the number to `/srv/ops/output/errors.txt`."],
        "workdir": "/srv/ops", "setup": [],
        "files": [{"path": "/srv/ops/app.log", "lines": ["ERROR a", "INFO b", "ERROR c"]}],
        "steps": [{"title": "count", "commands": ["grep ERROR app.log > output/errors.txt"]}],
        "alternative": [],
        "tests": ["from pathlib import Path", "", "def test_count():",
                  "    assert Path('/srv/ops/output/errors.txt').read_text() == '2\\n'"],
        "requirements": [{"demands": "Write the number to", "tests": ["test_count"]}],
        "mutants": [{"ignores": "the ERROR lines",
                     "commands": ["wc -l < app.log > output/errors.txt"]}],
        "expected_values": ["2"]})
    task = render_task(answer, blueprint, graph, generator="llm/1", model=MODEL_ALIAS,
                       attempt=0)
    draft = Draft(blueprint=blueprint, task=task, generator="llm/1", expected_values=("2",))
    failure = Verdict(check="oracle", passed=False, reason=ReasonCode.ORACLE_FAILS,
                      details="reference solution gives reward 0 (needs 1)",
                      log="E AssertionError: assert 'ERROR a\\nERROR c\\n' == '2\\n'")
    chat = OpenAIChat(LLMConfig(base_url=llama.base_url, model=MODEL_ALIAS, max_tokens=1024,
                                grammar_max_items=8, timeout_sec=300))
    before = llama.completions()
    try:  # the repair, or (a weak model) an answer refused as data: never a crash
        repaired = LLMRefiner(graph, chat, MODEL_ALIAS).refine(draft, (failure,))
    except NoDraft as exc:
        assert str(exc).startswith("refiner: ")
    else:
        assert repaired.attempt == 1
        pytest_file = repaired.task.file("tests", "test_outputs.py").content.decode()
        cited = {t for entry in repaired.task.config.metadata["requirements"]
                 for t in entry["tests"]}
        assert cited and all(f"def {name}" in pytest_file or f"class {name}" in pytest_file
                             for name in cited)
    assert llama.completions() > before  # the longer prompt fit the server's context


@pytest.mark.docker
def test_hybrid_backend_rewrites_through_a_real_server(llama, tmp_path, docker_client_ready):
    # One short one-step item (543 characters): the rewrite is the only model work. The
    # judge's real-server run is the next test; the hybrid's judged, exported run is the
    # mock's (test_mock_model.py).
    out = tmp_path / "run"
    config = load_run_config(None, options(llama.base_url, "backend=hybrid", "count=1",
                                           "max_items=1", "refine_rounds=0", "seed=9",
                                           "difficulty.steps=1"))
    summary = Runner(config, out).run()
    assert summary.status == "finished"
    funnel = {row.stage: row for row in summary.funnel}
    assert funnel["plan"].n_in == 1 and funnel["plan"].tokens == 0  # a procedural plan
    assert funnel["generate"].n_in == 1 and funnel["generate"].tokens > 0
    [(item, status, reason)] = query(out, "SELECT item, status, reason FROM items")
    assert status in FINAL
    rewrites = query(out, "SELECT count(*) FROM llm_cache WHERE purpose = 'rewriter'")[0][0]
    validated = query(out, f"SELECT count(*) FROM verdicts WHERE item = {item}")[0][0]
    if status == "failed":  # a 135M model drops a requirement or runs out of tokens twice
        assert reason.startswith("rewrite"), reason
        assert rewrites == 2 and validated == 0 and not drafts(out)
    else:  # the rewrite kept every requirement: a hybrid draft, validated in Docker
        [draft] = drafts(out)
        assert draft["generator"] == "hybrid/1"
        assert draft["task"]["config"]["metadata"]["persona"]
        assert 1 <= rewrites <= 2 and validated > 0


@pytest.mark.docker
def test_judge_runs_last_on_a_procedural_task(llama, tmp_path, docker_client_ready):
    out = tmp_path / "run"
    config = load_run_config(None, options(llama.base_url, "backend=procedural", "count=1",
                                           "max_items=1", "refine_rounds=0", "seed=2",
                                           'validation.checks=["+judge"]', "difficulty.steps=1"))
    summary = Runner(config, out).run()
    assert summary.status == "finished"
    checks = [row[0] for row in query(out, 'SELECT "check" FROM verdicts WHERE round = 0 '
                                           "ORDER BY rowid")]
    assert checks[-1] == "judge", checks
    passed, reason = query(out, "SELECT passed, reason FROM verdicts WHERE "
                                "\"check\" = 'judge'")[0]
    answers = [Exchange.model_validate_json(text).answer for (text,) in query(
        out, "SELECT exchange FROM llm_cache WHERE purpose = 'judge' ORDER BY rowid")]
    try:  # the verdict is what the model answered, or `verifier` when it never answered
        said = JudgeAnswer.model_validate(parse_json_object(answers[-1] if answers else ""
                                                            )).verdict
    except (InvalidAnswer, ValueError):
        said = None
    expected = {"ok": None, "underspecified": "underspecified", "leak": "leak",
                None: "verifier"}[said]
    assert (passed, reason) == (expected is None, expected)
    tokens = query(out, "SELECT tokens_in FROM results WHERE stage = 'validate'")[0][0]
    assert tokens > 0
    assert {p for (p,) in query(out, "SELECT purpose FROM llm_cache")} == {"judge"}


@pytest.mark.docker
def test_server_killed_mid_run_then_resume_pays_nothing_twice(tmp_path, docker_client_ready):
    port = free_port()
    first = LlamaServer(tmp_path / "first.log", port=port)
    out = tmp_path / "run"
    config = load_run_config(None, options(first.base_url, "count=1", "max_items=2",
                                           "refine_rounds=0", "seed=5"))
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["summary"] = Runner(config, out).run()
        except Exception as exc:  # the assertion below shows it
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    try:
        thread.start()
        deadline = time.monotonic() + 300
        while first.completions() < 2 and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.2)
        assert first.completions() >= 2, "the run should have been answered before the kill"
        first.kill()
        thread.join(timeout=600)
    finally:
        first.kill()
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    errors = query(out, "SELECT item, reason FROM items WHERE status = 'error'")
    assert errors, "the killed server should have left items in error"
    assert all("model server" in reason for _, reason in errors)
    cached = query(out, "SELECT count(*) FROM llm_cache")[0][0]
    assert cached >= 2

    second = LlamaServer(tmp_path / "second.log", port=port)
    try:
        summary = Runner(config, out, resume=True).run()
    finally:
        second.kill()
    assert summary.status == "finished"
    assert query(out, "SELECT count(*) FROM items WHERE status = 'error'")[0][0] == 0
    statuses = [s for (s,) in query(out, "SELECT status FROM items")]
    assert len(statuses) == 2 and all(s in FINAL for s in statuses)
    new_rows = query(out, "SELECT count(*) FROM llm_cache")[0][0] - cached
    assert second.completions() == new_rows  # every request after the restart was new
