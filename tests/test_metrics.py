"""Corpus diversity metrics (taskloom.metrics) on the shipped skill graph."""

from __future__ import annotations

import math

import pytest

from taskloom.metrics.corpus import (
    TaskRecord,
    category_entropy,
    corpus_metrics,
    near_duplicate_rate,
    normalized_entropy,
    scenario_entropy,
    skill_coverage,
    transition_coverage,
)
from taskloom.metrics.shell import action_complexity
from taskloom.skill_graph.model import load_graph


@pytest.fixture(scope="module")
def graph():
    return load_graph()


def record(skills, scenario="s", solution="", task_id="t"):
    return TaskRecord(task_id=task_id, scenario=scenario, skills=tuple(skills),
                      solution=solution)


def test_normalized_entropy():
    assert normalized_entropy([]) == 0.0
    assert normalized_entropy(["a", "a", "a"]) == 0.0
    assert normalized_entropy(["a", "b", "a", "b"]) == pytest.approx(1.0)
    # uniform over 2 of 4 possible labels: log 2 / log 4
    assert normalized_entropy(["a", "b"], support=4) == pytest.approx(0.5)
    skewed = normalized_entropy(["a"] * 9 + ["b"])
    expected = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1)) / math.log(2)
    assert skewed == pytest.approx(expected)


def test_skill_and_transition_coverage(graph):
    first, second = sorted(graph.transitions())[0]
    chained = record([first, second])
    assert skill_coverage([chained], graph) == pytest.approx(2 / len(graph.skills))
    assert transition_coverage([chained], graph) == pytest.approx(1 / len(graph.transitions()))
    # the same skills the other way round use no typed transition (unless both chain)
    backwards = record([second, first])
    expected = 1 if (second, first) in graph.transitions() else 0
    assert transition_coverage([backwards], graph) == pytest.approx(
        expected / len(graph.transitions()))
    # unknown skills neither count nor crash
    assert skill_coverage([record(["no.such_skill"])], graph) == 0.0
    everything = [record([skill]) for skill in graph.skills]
    assert skill_coverage(everything, graph) == 1.0


def test_scenario_and_category_entropy(graph):
    scenarios = sorted(graph.scenarios)
    one = [record([], scenario=scenarios[0]) for _ in range(5)]
    assert scenario_entropy(one, graph) == 0.0
    spread = [record([], scenario=s) for s in scenarios]
    assert scenario_entropy(spread, graph) == pytest.approx(1.0)
    by_category: dict[str, list[str]] = {}
    for skill_id, skill in sorted(graph.skills.items()):
        by_category.setdefault(skill.category, []).append(skill_id)
    same = next(skills for skills in by_category.values() if len(skills) >= 2)
    assert category_entropy([record(same)], graph) == 0.0
    one_each = [record([skills[0]]) for skills in by_category.values()]
    assert category_entropy(one_each, graph) == pytest.approx(1.0)


def test_near_duplicate_rate():
    assert near_duplicate_rate([]) == 0.0
    assert near_duplicate_rate(["accepted", "duplicate", "accepted", "accepted"]) == 0.25


SCRIPT = r"""#!/bin/bash
# Reference solution: comments are not commands; neither is a here-document body.
set -eu
cd /srv/data
for f in *.log; do
  gzip -c "$f" > "$f.1.gz"
done
count=$(grep -c ERROR app.log)
echo "$((count + 1))" > total.txt
find . -type f -name '*.tmp' -exec rm -f {} +
find . -name '*.csv' -print0 | xargs -0 -r sha256sum > SUMS
if [[ -f total.txt && -s SUMS ]]; then LC_ALL=C sort -u SUMS | awk '{print $2}' > names.txt; fi
mkdir -p "out/$(date +%Y)"
sqlite3 db.sqlite <<'SQL'
CREATE TABLE t (x TEXT);
SELECT count(*) FROM t;
SQL
python3 - <<'PY'
import os
print(os.getcwd())
PY
jq -r '.items[]
  | .name' data.json > names-json.txt
"""


def test_action_complexity_counts_commands_and_programs():
    result = action_complexity(SCRIPT)
    # set, cd, gzip, grep, echo, find, find, xargs, [[ ]] is not one, sort, awk, mkdir,
    # date, sqlite3, python3, jq
    assert result.commands == 15
    assert result.tools == ("awk", "date", "find", "grep", "gzip", "jq", "mkdir", "python3",
                            "rm", "sha256sum", "sort", "sqlite3", "xargs")
    assert action_complexity("").commands == 0
    assert action_complexity("# only a comment\n\n").tools == ()


def test_corpus_metrics_adds_everything_up(graph):
    first, second = sorted(graph.transitions())[0]
    records = [record([first, second], scenario=sorted(graph.scenarios)[0],
                      solution="sort a | uniq -c\n", task_id="a"),
               record([first], scenario=sorted(graph.scenarios)[1],
                      solution="tar -czf x.tgz dir\nrm -rf dir\n", task_id="b")]
    metrics = corpus_metrics(records, graph, ["accepted", "accepted", "duplicate"])
    assert metrics.tasks == 2
    assert metrics.skills_used == 2 and metrics.skills_total == len(graph.skills)
    assert metrics.transitions_used == 1
    assert metrics.commands_total == 4 and metrics.commands_mean == 2.0
    assert metrics.tools == ("rm", "sort", "tar", "uniq")
    assert metrics.near_duplicates == 1
    assert metrics.near_duplicate_rate == pytest.approx(1 / 3)
    assert metrics.scenario_entropy == pytest.approx(math.log(2) / math.log(len(graph.scenarios)))
