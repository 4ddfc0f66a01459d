"""The statistics family: exact expected values, the stated methods, rules its data exercises,
and tasks (alone and at the end of chains) that validate in a real sandbox."""

from __future__ import annotations

import random
import statistics
from collections import Counter
from fractions import Fraction

import pytest
from drafts import draft

from taskloom.config import ValidationConfig
from taskloom.generators.procedural.primitives.statistics import (
    _exclusive,
    _fit,
    _fold,
    _percentile,
    _safe,
    _summary,
    _text,
    parse,
    parse_loose,
)
from taskloom.validators.engine import validate_all, validate_task

SKILLS = ("stats.describe_column", "stats.fit_line", "stats.flag_outliers")
CHAINS = (("csv.filter_rows", "stats.describe_column"),
          ("logs.access_to_csv", "stats.flag_outliers"),
          ("json.to_csv", "stats.fit_line"))


def test_a_cell_is_a_number_only_in_the_stated_syntax():
    assert parse("12") == 12 and parse("-3.5") == Fraction(-7, 2)
    for cell in ("", "n/a", "NA", "-", "err", "nan", "1e3", " 4", "4."):
        assert parse(cell) is None, cell


def test_the_percentiles_are_the_stated_methods():
    rng = random.Random(4)
    for _ in range(200):
        values = sorted(Fraction(rng.randint(-500, 500), 10)
                        for _ in range(rng.randint(2, 40)))
        floats = [float(v) for v in values]
        for p in (10, 25, 75, 90, 95):
            linear = statistics.quantiles(floats, n=100, method="inclusive")[p - 1]
            assert float(_percentile(values, p, "linear")) == pytest.approx(linear)
            exclusive = statistics.quantiles(floats, n=100)[p - 1]
            assert float(_exclusive(values, p)) == pytest.approx(exclusive)
            rank = -(-p * len(values) // 100)  # nearest rank: ceil(p*N/100), 1-based
            assert _percentile(values, p, "nearest") == values[max(rank, 1) - 1]


def test_the_summary_and_the_fit_agree_with_pythons_statistics_module():
    rng = random.Random(9)
    for _ in range(50):
        xs = [Fraction(rng.randint(0, 9_999), 100) for _ in range(rng.randint(3, 60))]
        ys = [3 * x + Fraction(rng.randint(-900, 900), 10) for x in xs]
        count, mean, median, stdev, low, high, _ = _summary(ys, 90, method="linear")
        floats = [float(y) for y in ys]
        assert count == len(ys) and (low, high) == (min(ys), max(ys))
        assert float(mean) == pytest.approx(statistics.mean(floats))
        assert float(median) == pytest.approx(statistics.median(floats))
        assert float(stdev) == pytest.approx(statistics.stdev(floats))
        slope, intercept, r2 = _fit(list(zip(xs, ys, strict=True)))
        fit = statistics.linear_regression([float(x) for x in xs], floats)
        assert float(slope) == pytest.approx(fit.slope)
        assert float(intercept) == pytest.approx(fit.intercept, abs=1e-6)
        assert float(r2) == pytest.approx(
            statistics.correlation([float(x) for x in xs], floats) ** 2)


def test_rounding_refuses_ties_and_near_zero_values():
    assert _text(Fraction(1, 3), 3) == "0.333" and _text(Fraction(-2, 3), 2) == "-0.67"
    assert not _safe(Fraction(120625, 10_000), 3)  # 12.0625: printf rounds half to even
    assert _safe(Fraction(120625, 10_000), 2) and _safe(Fraction(1, 3), 3)
    assert not _safe(Fraction(-1, 10_000), 3)  # -0.000 or 0.000
    assert _safe(Fraction(0), 3)


@pytest.mark.parametrize("skill", SKILLS)
def test_the_stated_rules_are_exercised_by_the_data(skill):
    """At step 1 the data has missing cells, and each rule's mistake changes the answer."""
    seen = Counter()
    for seed in range(12):
        task = draft((skill,), seed).task
        seen.update(m.path.split("/")[-1].removeprefix("step-1-").removesuffix(".sh")
                    for m in task.mutants)
        assert "a missing value" in task.instruction
    expected = {"stats.describe_column": {"skip-missing", "sample-stdev", "rounding"},
                "stats.fit_line": {"skip-missing", "direction", "r-squared", "rounding"},
                "stats.flag_outliers": {"skip-missing", "sample-stdev", "both-sides"}}[skill]
    assert expected <= set(seen), seen
    assert min(seen[rule] for rule in expected) >= 3, seen


def test_the_traps_occur_across_seeds():
    """Cells float() reads but the stated syntax rejects, and a group name whose byte order
    is not its case-insensitive order, each caught by a mutant (float(), `sort -f`)."""
    seen = Counter()
    for skill in SKILLS:
        for seed in range(12):
            task = draft((skill,), seed).task
            (data,) = [f for f in task.environment if f.path.endswith(".csv")]
            cells = [cell for line in data.content.decode().splitlines()[1:]
                     for cell in line.split(",")[-2:]]
            loose = [c for c in cells if parse(c) is None and parse_loose(c) is not None]
            names = {m.path.split("/")[-1] for m in task.mutants}
            seen[skill, "loose-cells"] += bool(loose)
            seen[skill, "number-syntax"] += "step-1-number-syntax.sh" in names
            seen[skill, "byte-order"] += "step-1-byte-order.sh" in names
    for skill in SKILLS:
        assert seen[skill, "loose-cells"] == 12, seen
        assert seen[skill, "number-syntax"] >= 10, seen
    assert seen["stats.describe_column", "byte-order"] >= 2, seen
    assert parse_loose("1e3") == 1000 and parse_loose(" 12") == 12
    assert parse_loose("1_000.5") == Fraction(2001, 2) and parse_loose("nan") is None
    assert parse_loose("+5") == 5 and parse_loose(".5") == parse_loose("0.5")
    assert [_fold(k) for k in ("West", "east", "a_b")] == ["WEST", "EAST", "A_B"]


def test_the_step_one_table_has_measurements_with_gaps():
    task = draft(("stats.describe_column",), 0).task
    (data,) = [f for f in task.environment if f.path.endswith(".csv")]
    header, *rows = [line.split(",") for line in data.content.decode().splitlines()]
    assert header[-2:] == ["ad_spend", "sales"]
    cells = [row[-1] for row in rows]
    assert any(parse(cell) is None for cell in cells)
    assert sum(parse(cell) is not None for cell in cells) >= 5


def test_the_fit_is_a_last_step_report_and_chains_make_tasks():
    for path in CHAINS:
        assert draft(path, 3).task.mutants is not None


@pytest.mark.parametrize(("text", "skill"), [
    ("compute the mean, median and standard deviation of the response times",
     "stats.describe_column"),
    ("fit a least squares line of sales against ad spend", "stats.fit_line"),
    ("flag the sensor readings more than 3 standard deviations from the mean",
     "stats.flag_outliers")])
def test_requests_reach_the_family(text, skill):
    from taskloom.embedding import load_embedder
    from taskloom.generators.backends import skill_graph
    from taskloom.generators.request import understand

    understood = understand(text, skill_graph(()), load_embedder())
    assert understood.skills[-1].id == skill, understood.skills


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("runtime_name", [pytest.param("bwrap", marks=pytest.mark.bwrap),
                                          pytest.param("docker", marks=pytest.mark.docker)])
def test_tasks_validate_in_the_sandbox(runtime_name, request):
    """Each skill alone at three difficulties and at the end of a chain: nop, oracle,
    alternative, rule mutants and tamper probes."""
    runtime = request.getfixturevalue(f"{runtime_name}_runtime")
    drafts = [draft((skill,), seed) for skill in SKILLS for seed in range(3)]
    drafts += [draft(path, seed) for path in CHAINS for seed in (1, 2)]
    jobs = [lambda d=d: validate_task(d.task, runtime, ValidationConfig(),
                                      expected_values=d.expected_values) for d in drafts]
    rejected = [r for r in validate_all(jobs, runtime, workers=2) if not r.accepted]
    assert not rejected, [(r.task, [(v.check, v.details) for v in r.verdicts if not v.passed])
                          for r in rejected]
