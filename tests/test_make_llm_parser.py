"""The LLM parser of `make` (`--parser llm`): a model's reading of a request, checked against
the skill graph, cached on disk, and the offline parser when the answer cannot be used.

Servers are real and on 127.0.0.1 only: a scripted OpenAI-compatible server for exact
answers (a correct one, invalid ones), and llama.cpp serving SmolLM2-135M for the
plumbing against a real model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from llmservers import MODEL_ALIAS, LlamaServer, Reply, free_port

from taskloom.config import LLMConfig
from taskloom.errors import ConfigError, NoMatch
from taskloom.generators.backends import skill_graph
from taskloom.generators.intent import chained, parse_intent
from taskloom.generators.llm.exchange import Exchange, ExchangeFile
from taskloom.generators.llm.intent import (
    CACHE_FILE,
    intent_model,
    parse_with_model,
)
from taskloom.generators.procedural.primitives import PRIMITIVES
from taskloom.generators.request import understand
from taskloom.minilm import load_fast_embedder

TWO_ACTIONS = "tidy up the orders CSV, then hand it over as JSON"


@pytest.fixture(scope="module")
def graph():
    return skill_graph(())


@pytest.fixture(scope="module")
def embedder():
    return load_fast_embedder()


@pytest.fixture(scope="module")
def allowed(graph):
    return set(PRIMITIVES) & set(graph.skills)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKLOOM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / CACHE_FILE


def model_at(base_url: str) -> LLMConfig:
    return intent_model(LLMConfig(base_url=base_url, model=MODEL_ALIAS, retries=0,
                                  timeout_sec=10.0))


def answer(*actions: tuple[str, str | None], constraints=(), refusal=None) -> str:
    return json.dumps({"actions": [{"words": words, "skill": skill, "source": None,
                                    "target": None} for words, skill in actions],
                       "constraints": list(constraints), "refusal": refusal})


# -- a correct answer, then the same request from the cache ---------------------------------

def test_a_correct_answer_becomes_the_path_and_the_second_parse_is_replayed(
        scripted, graph, embedder, allowed, cache):
    server = scripted(Reply(content=answer(("tidy up the orders CSV", "csv.dedupe_rows"),
                                           ("hand it over as JSON", "csv.to_json"),
                                           constraints=["orders", "...", "keep 5"])))
    llm = model_at(server.base_url)
    first = parse_with_model(TWO_ACTIONS, graph, embedder, llm, allowed=allowed)
    assert (first.parser, first.note, first.sent) == ("llm", "", 1)
    assert first.intent.path == ("csv.dedupe_rows", "csv.to_json")
    actions = [a for a in first.intent.atoms if a.kind == "action"]
    assert [(a.text, a.covered_by) for a in actions] == [
        ("tidy up the orders CSV", "csv.dedupe_rows"), ("hand it over as JSON", "csv.to_json")]
    assert all(a.why == "" and 0 < a.score <= 1 for a in actions)
    assert first.intent.scores == tuple(a.score for a in actions)
    assert [a.text for a in first.intent.atoms if a.kind == "constraint"] == ["orders"]
    assert len(first.intent.nearest) == 5
    # What was asked: the request, and only the offered skills, their ids an enum.
    sent = server.requests[0]
    assert TWO_ACTIONS in sent["messages"][1]["content"]
    assert "csv.dedupe_rows [csv_table -> csv_table]" in sent["messages"][1]["content"]
    assert sent["max_tokens"] == 1024
    schema = json.dumps(sent.get("response_format") or sent.get("tools"))
    assert '"enum": ["archive.create_tar"' in schema

    # A fresh parse (a new `make`) reads the exchange back from disk: no request is sent.
    assert len(cache.read_text().splitlines()) == 1
    again = parse_with_model(TWO_ACTIONS, graph, embedder, llm, allowed=allowed)
    assert len(server.requests) == 1 and again.sent == 0
    assert again.intent == first.intent
    # understand (what make calls) gives the same path, and says whose reading it is.
    understood = understand(TWO_ACTIONS, graph, embedder, allowed=allowed, llm=llm)
    assert [m.id for m in understood.skills] == ["csv.dedupe_rows", "csv.to_json"]
    assert (understood.parser, understood.note) == ("llm", "")
    assert len(server.requests) == 1
    # Other settings are another question: asked again.
    parse_with_model(TWO_ACTIONS, graph, embedder,
                     llm.model_copy(update={"temperature": 0.0}), allowed=allowed)
    assert len(server.requests) == 2


# -- answers that cannot be used: the offline parser, and why --------------------------------

@pytest.mark.parametrize(("reply", "reason"), [
    ("Sure! Here is the JSON you asked for.", "no JSON object in the answer"),
    ('{"actions": [{"words": "tidy", "skill": "csv.dedupe_rows"', "not valid JSON"),
    ('{"actions": "tidy it", "constraints": [], "refusal": null}', "actions"),
    (answer(("tidy up the orders CSV", "csv.frobnicate")),
     "unknown skill id 'csv.frobnicate'"),
    (answer(("hand it over as JSON", "csv.to_json"), ("tidy up the orders CSV",
                                                       "csv.sort_rows")),
     "the skills do not chain: csv.to_json writes json_doc, and csv.sort_rows reads "
     "csv_table"),
    (answer(), "it names no action"),
    (answer(("csv_table", "csv.dedupe_rows")),
     "the action 'csv_table' is not in the request's words ('csv_table' is not)"),
])
def test_an_unusable_answer_falls_back_to_the_offline_parser_with_the_reason(
        scripted, graph, embedder, allowed, reply, reason):
    server = scripted(Reply(content=reply))
    reading = parse_with_model(TWO_ACTIONS, graph, embedder, model_at(server.base_url),
                               allowed=allowed)
    assert reading.parser == "offline" and reading.sent == 1
    assert reading.note.startswith(f"llm parser: the answer of {MODEL_ALIAS} cannot be used")
    assert reason in reading.note
    assert reading.note.endswith("; used the offline parser")
    offline = parse_intent(TWO_ACTIONS, graph, embedder, allowed=allowed)
    assert reading.intent == offline


def test_a_skill_not_offered_is_refused_even_when_the_graph_has_it(scripted, graph,
                                                                     embedder):
    server = scripted(Reply(content=answer(("tidy up the orders CSV", "csv.dedupe_rows"),
                                           ("hand it over as JSON", "csv.to_json"))))
    only = {"csv.sort_rows", "csv.to_json"}
    reading = parse_with_model(TWO_ACTIONS, graph, embedder, model_at(server.base_url),
                               allowed=only)
    assert reading.parser == "offline"
    assert "skill 'csv.dedupe_rows' (for 'tidy up the orders CSV') cannot be generated" \
        in reading.note
    assert set(reading.intent.path) <= only


def test_an_unreachable_server_falls_back_and_understand_carries_the_note(graph, embedder,
                                                                         allowed, cache):
    llm = model_at(f"http://127.0.0.1:{free_port()}/v1")
    understood = understand(TWO_ACTIONS, graph, embedder, allowed=allowed, llm=llm)
    assert understood.parser == "offline"
    assert understood.note.startswith(f"llm parser: {MODEL_ALIAS} is unavailable: the model "
                                      "server at http://127.0.0.1:")
    assert understood.note.endswith("; used the offline parser")
    assert understood.skills  # the offline reading
    assert not cache.exists()  # nothing was answered, so nothing is kept


# -- refusals --------------------------------------------------------------------------------

def test_a_refused_request_never_reaches_the_model(scripted, graph, embedder, allowed,
                                                   cache):
    server = scripted(Reply(content=answer(("scan the office network", "files.find_by_"
                                                                       "extension"))))
    with pytest.raises(NoMatch, match=r"will not make .*reaches outside the sandbox"):
        parse_with_model("scan the office network for open ports", graph, embedder,
                         model_at(server.base_url), allowed=allowed)
    with pytest.raises(NoMatch, match="will not make"):
        understand("scan the office network for open ports", graph, embedder,
                   allowed=allowed, llm=model_at(server.base_url))
    assert server.requests == [] and not cache.exists()


def test_a_model_can_refuse_more_but_never_less(scripted, graph, embedder, allowed):
    server = scripted(Reply(content=answer(("tidy up the orders CSV", "csv.dedupe_rows"),
                                           refusal="it touches customer data")))
    with pytest.raises(NoMatch, match=f"the model {MODEL_ALIAS} refuses it: it touches "
                                      "customer data"):
        parse_with_model(TWO_ACTIONS, graph, embedder, model_at(server.base_url),
                         allowed=allowed)
    assert len(server.requests) == 1


# -- the mock model, the exchange file and the model's configuration ------------------------

def test_the_mock_model_reads_a_request_as_the_offline_parser_does(graph, embedder,
                                                                   allowed):
    reading = parse_with_model(TWO_ACTIONS, graph, embedder,
                               intent_model(LLMConfig(model="mock")), allowed=allowed)
    offline = parse_intent(TWO_ACTIONS, graph, embedder, allowed=allowed)
    assert reading.parser == "llm" and reading.note == ""
    assert reading.intent.path == offline.path and chained(graph, reading.intent.path)
    assert [a.text for a in reading.intent.atoms] == [a.text for a in offline.atoms]


def test_the_exchange_file_skips_a_torn_line_and_keeps_appending(tmp_path):
    path = tmp_path / "exchanges.jsonl"
    kept = Exchange(key="a" * 64, purpose="intent", model="m", messages=(),
                    answer_name="IntentAnswer", answer="{}")
    path.write_text(kept.model_dump_json() + "\n" + kept.model_dump_json()[:40])  # a crash
    store = ExchangeFile(path)
    assert list(store.load()) == ["a" * 64]
    later = kept.model_copy(update={"key": "b" * 64})
    store.add([kept, later])
    assert sorted(ExchangeFile(path).load()) == ["a" * 64, "b" * 64]
    assert len(path.read_text().splitlines()) == 3  # the torn line stays apart


def test_no_model_named_is_a_config_error_naming_the_variables():
    with pytest.raises(ConfigError) as caught:
        intent_model(LLMConfig(), environ={})
    assert "TASKLOOM_LLM_MODEL" in str(caught.value)
    assert "OPENAI_BASE_URL" in str(caught.value)
    named = intent_model(LLMConfig(), environ={"TASKLOOM_LLM_MODEL": "m",
                                                "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (named.model, named.base_url, named.max_tokens, named.grammar_max_items) == \
        ("m", "http://127.0.0.1:9/v1", 1024, 8)


def test_cli_parser_llm_without_a_model_exits_2_naming_the_variables(tmp_path):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("TASKLOOM_LLM_MODEL", "OPENAI_BASE_URL")}
    done = subprocess.run([sys.executable, "-m", "taskloom.cli", "make", TWO_ACTIONS,
                           "--parser", "llm", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**environ, "COLUMNS": "200"})
    assert done.returncode == 2, done.stderr
    assert "--parser llm needs a model" in done.stderr
    assert "TASKLOOM_LLM_MODEL" in done.stderr and "OPENAI_BASE_URL" in done.stderr
    assert list(tmp_path.iterdir()) == []
    wrong = subprocess.run([sys.executable, "-m", "taskloom.cli", "make", TWO_ACTIONS,
                            "--parser", "gpt"], capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "offline" in wrong.stderr


# -- a real model -------------------------------------------------------------------------------

@pytest.mark.slow  # about a minute on two threads
@pytest.mark.llama
def test_a_real_model_is_asked_and_its_answer_used_or_set_aside(tmp_path, graph, embedder,
                                                                allowed, cache):
    # The CSV and JSON skills only: a short prompt, so a 135M model on two threads answers
    # in seconds (all 74 skills take minutes).
    offered = {s for s in allowed if s.startswith(("csv.", "json."))}
    server = LlamaServer(tmp_path / "server.log")
    try:
        llm = intent_model(LLMConfig(base_url=server.base_url, model=MODEL_ALIAS,
                                     max_tokens=384, retries=0, timeout_sec=300.0))
        started = time.monotonic()
        try:
            reading = parse_with_model(TWO_ACTIONS, graph, embedder, llm, allowed=offered)
        except NoMatch as exc:  # a weak model may refuse: then it said why
            assert f"the model {MODEL_ALIAS} refuses it: " in str(exc)
            reading = None
        seconds = time.monotonic() - started
        assert server.completions() >= 1, server.log.read_text()[-2000:]
    finally:
        server.kill()
    if reading is not None:
        assert reading.sent == 1
        if reading.parser == "llm":
            assert reading.note == "" and chained(graph, reading.intent.path)
            assert set(reading.intent.path) <= offered
        else:
            assert reading.note.startswith(f"llm parser: the answer of {MODEL_ALIAS} "
                                           "cannot be used: ")
            assert reading.intent == parse_intent(TWO_ACTIONS, graph, embedder,
                                                  allowed=offered)
    outcome = f"{reading.parser}: {reading.note or reading.intent.path}" if reading else \
        "refused"
    print(f"SmolLM2 answered in {seconds:.1f} s ({outcome})")
