"""Dockerfile emulation rules, reward parsing and step mutations."""

from __future__ import annotations

import pytest

from taskloom.errors import Unemulable
from taskloom.models import TaskFile
from taskloom.sandbox.dockerfile import emulate, parse
from taskloom.sandbox.driver import Capture, lowest, parse_reward
from taskloom.validators.mutations import solution_steps, without_step

CONTEXT = (TaskFile(path="Dockerfile", content=b"FROM x\n"),
           TaskFile(path="data/a.csv", content=b"a\n"),
           TaskFile(path="data/b.csv", content=b"b\n"),
           TaskFile(path="run.sh", content=b"echo\n", mode=0o755))


def test_parse_joins_continuations_and_drops_comments():
    text = "# comment\nFROM base:1\nRUN echo a \\\n  # inline comment\n  && echo b\nenv A=1\n"
    items = parse(text)
    assert [(i.keyword, i.line) for i in items] == [("FROM", 2), ("RUN", 3), ("ENV", 6)]
    assert items[1].arguments == "echo a  && echo b"


def test_emulate_tracks_workdir_env_user_and_copies():
    text = ("FROM taskloom/base:1\nWORKDIR /app\nENV A=1 B=\"two words\"\nCOPY data/ ./in/\n"
            "COPY run.sh /usr/local/bin/\nUSER nobody\nRUN [\"/bin/echo\", \"hi\"]\n"
            "WORKDIR sub\nCMD [\"bash\"]\n")
    emulation = emulate(text, CONTEXT)
    assert emulation.image == "taskloom/base:1"
    assert emulation.workdir == "/app/sub"
    assert emulation.env == {"A": "1", "B": "two words"}
    assert emulation.user == "nobody"
    ops = [step.op for step in emulation.steps]
    assert ops == ["workdir", "copy", "copy", "run", "workdir"]
    copy_dir = emulation.steps[1]
    assert copy_dir.dest == "/app/in/"
    assert copy_dir.sources[0].is_dir
    assert [f.path for f in copy_dir.sources[0].files] == ["a.csv", "b.csv"]
    assert emulation.steps[2].sources[0].files[0].mode == 0o755
    assert emulation.steps[3].argv == ("/bin/echo", "hi")
    assert emulation.steps[3].user == "nobody"


def test_emulate_glob_sources():
    emulation = emulate("FROM b\nCOPY data/*.csv /in/\n", CONTEXT)
    assert [s.name for s in emulation.steps[0].sources] == ["a.csv", "b.csv"]


@pytest.mark.parametrize(("text", "why"), [
    ("FROM a AS b\n", "multi-stage"),
    ("FROM b\nARG X=1\n", "ARG"),
    ("FROM b\nCOPY --from=x /a /b\n", "--from"),
    ("FROM b\nADD https://example.com/x /x\n", "remote"),
    ("FROM b\nADD data.tar.gz /x\n", "archive"),
    ("FROM b\nENV P=$PATH:/x\n", "substitution"),
    ("FROM b\nSHELL [\"/bin/bash\", \"-c\"]\n", "SHELL"),
    ("FROM b\nCOPY missing.txt /x\n", "not in the build context"),
    ("RUN true\n", "FROM"),
])
def test_unemulable_dockerfiles_say_why(text, why):
    with pytest.raises(Unemulable, match=why):
        emulate(text, CONTEXT)


def test_parse_reward_reads_named_rewards_as_harbor_does():
    assert parse_reward({"reward.txt": b" 1\n"}) == ({"reward": 1.0}, None)
    # reward.json first, as Harbor 0.26 reads them
    assert parse_reward({"reward.txt": b"0.5", "reward.json": b'{"reward": 1}'}) == (
        {"reward": 1.0}, None)
    assert parse_reward({"reward.json": b'{"accuracy": 0.25}'}) == ({"accuracy": 0.25}, None)
    named = {"correctness": 1.0, "performance": 0.5}
    assert parse_reward({"reward.json": b'{"correctness": 1, "performance": 0.5}'}) == (
        named, None)
    assert lowest(named) == 0.5 and lowest(None) is None
    assert parse_reward({"reward.txt": b"yes"})[1] == "reward.txt holds 'yes', not a number"
    assert parse_reward({"reward.txt": b"nan"})[1] == "reward.txt holds 'nan', not a finite number"
    # Harbor refuses a bare number, a string and an empty object in reward.json
    assert "not an object of named rewards" in parse_reward({"reward.json": b"1"})[1]
    assert parse_reward({"reward.json": b'{"a": "1"}'})[1] == \
        "reward.json: 'a' is \"1\", not a number"
    assert parse_reward({"reward.json": b"{}"})[1] == "reward.json names no reward"
    assert "wrote no" in parse_reward({})[1]


def test_capture_keeps_head_and_tail():
    capture = Capture(100)
    for _ in range(1000):
        capture.feed(b"0123456789")
    text = capture.text()
    assert text.startswith("0123456789" * 5)
    assert text.endswith("0123456789" * 5)
    assert "9900 bytes dropped" in text


def test_step_mutations():
    script = ("#!/bin/bash\nset -e\n# taskloom:step 1 copy\ncp a b\n"
              "# taskloom:step 2 sort\nsort b > c\n")
    assert solution_steps(script) == [(2, 4), (4, 6)]
    assert without_step(script, 0) == ("#!/bin/bash\nset -e\n: # step 1 removed by taskloom\n"
                                       "# taskloom:step 2 sort\nsort b > c\n")
    assert solution_steps("echo no steps\n") == []
