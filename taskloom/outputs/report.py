"""The HTML report of a run: one self-contained page (inline SVG and CSS, no scripts).

Sections, each with the plot a person would rather look at than read:

- the funnel (`#funnel`): items in and out of every stage;
- cost per verified task (`#cost`): machine seconds per stage, tokens and dollars;
- skill coverage drawn on the skill graph (`#skill-coverage`): dot size = tasks using it;
- scenario (`#scenarios`) and difficulty (`#difficulty`) distributions;
- rejections (`#rejections`): failed checks by reason code, what was left out of the
  dataset, and one example log per reason;
- what the tests are held to (`#requirements`): the checks that cite the instruction words
  demanding them, the other correct solutions and the rule mutants shipped, and the
  requirement map of the first tasks;
- calibration (`#calibration`, when the run calibrated): the pass rates of the calibration
  model, their spread, and the mean pass rate per difficulty level (`#pass-by-level`) and
  per skill (`#pass-by-skill`) over every calibrated task, kept or not;
- corpus diversity: the metrics of `taskloom.metrics`, commands per solution
  (`#complexity`) and the programs solutions run (`#tools`).
"""

from __future__ import annotations

import tomllib
from collections import Counter, defaultdict
from html import escape
from pathlib import Path

from taskloom.generators.protocols import DIMENSIONS
from taskloom.metrics.corpus import CorpusMetrics
from taskloom.metrics.shell import action_complexity
from taskloom.models import ALTERNATIVES, MUTANTS
from taskloom.outputs.charts import bar_chart, funnel_chart, histogram, level_chart
from taskloom.outputs.run import RunData, load_graph_of, load_run, run_metrics, task_records
from taskloom.skill_graph.render import graph_svg

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
       color: #222; background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { margin: 0 0 4px; font-size: 26px; } h2 { margin: 36px 0 10px; font-size: 20px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #555; margin: 0 0 18px; }
section { background: white; border: 1px solid #e2e5ea; border-radius: 8px;
          padding: 8px 20px 18px; margin-top: 18px; }
.kpis { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr));
        gap: 10px; }
.kpi { background: white; border: 1px solid #e2e5ea; border-radius: 8px; padding: 10px 14px; }
.kpi b { display: block; font-size: 22px; } .kpi span { color: #555; font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 14px; }
th, td { text-align: left; padding: 4px 12px 4px 0; border-bottom: 1px solid #eee;
         vertical-align: top; }
td.n, th.n { text-align: right; }
figure { margin: 0; overflow-x: auto; } figure svg.graph { width: 100%; height: auto; }
pre { background: #1e1e1e; color: #eee; padding: 10px; border-radius: 6px; overflow-x: auto;
      font-size: 12px; max-height: 320px; white-space: pre-wrap; word-break: break-all; }
details { margin: 6px 0; } summary { cursor: pointer; }
.note { color: #555; font-size: 13px; }
"""


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the report of the run in `run_dir` (default `<run_dir>/report.html`)."""
    data = load_run(run_dir)
    out = out or Path(run_dir) / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report_html(data), encoding="utf-8")
    return out


def report_html(data: RunData) -> str:
    """The whole report page."""
    graph = load_graph_of(data.run)
    metrics = run_metrics(data, graph)
    run = data.run
    sections = [_kpis(data, metrics), _funnel(data), _cost(data),
                _coverage(data, metrics, graph), _distributions(data), _rejections(data),
                _requirements(data), _calibration(data), _diversity(data, metrics)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>taskloom run {escape(run.id)}</title><style>{CSS}</style></head>"
            f"<body><main><h1>taskloom run {escape(run.id)}</h1>"
            f"<p class=\"sub\">{escape(run.status)} · seed {run.seed} · {escape(run.backend)} "
            f"backend · target {run.target} tasks · started {escape(run.created_iso)} · "
            f"taskloom {escape(run.taskloom_version)} · {escape(str(data.root))}</p>"
            + "".join(sections) + "</main></body></html>\n")


def _verified_line(data: RunData):
    return next((row for row in data.funnel if row.stage == "verified"), None)


def _kpis(data: RunData, metrics: CorpusMetrics) -> str:
    verified = _verified_line(data)
    tried = data.items or 1
    tiles = [(str(len(data.tasks)), "verified tasks exported"),
             (str(data.items), "items tried"),
             (f"{len(data.tasks) / tried:.0%}", "yield (exported / tried)"),
             (f"{verified.median_seconds:.2f} s" if verified and verified.median_seconds
              else "-", "wall time per verified task"),
             (f"${verified.cost_usd:.4f}" if verified else "-", "model cost per verified task"),
             (f"{metrics.skill_coverage:.0%}", "skill coverage"),
             (f"{metrics.near_duplicate_rate:.1%}", "near-duplicate rate")]
    return '<div class="kpis" id="kpis">' + "".join(
        f'<div class="kpi"><b>{escape(value)}</b><span>{escape(name)}</span></div>'
        for value, name in tiles) + "</div>"


def _funnel(data: RunData) -> str:
    stages = [(r.stage, r.n_in, r.n_out) for r in data.funnel if r.stage != "verified"]
    if not stages:
        body = '<p class="note">No funnel yet: the run has not finished (resume it).</p>'
    else:
        body = funnel_chart("funnel", stages, label="items in and out of each stage")
    return ("<section><h2>Funnel</h2><p class=\"note\">Light bar: items that entered the "
            "stage; dark bar: items that left it with a result the next stage could use. "
            "Refine counts items that needed a repair and the repairs that were accepted."
            f"</p><figure>{body}</figure></section>")


def _cost(data: RunData) -> str:
    verified = max(len(data.tasks), 1)
    rows = [(c.stage, c.seconds / verified) for c in data.stage_costs]
    line = _verified_line(data)
    table = ["<table><tr><th>stage</th><th class=n>results</th><th class=n>machine s</th>"
             "<th class=n>s per verified task</th><th class=n>tokens</th>"
             "<th class=n>$</th></tr>"]
    table += [f"<tr><td>{escape(c.stage)}</td><td class=n>{c.results}</td>"
              f"<td class=n>{c.seconds:.1f}</td><td class=n>{c.seconds / verified:.2f}</td>"
              f"<td class=n>{c.tokens}</td><td class=n>{c.cost_usd:.4f}</td></tr>"
              for c in data.stage_costs]
    total_s = sum(c.seconds for c in data.stage_costs)
    total_tokens = sum(c.tokens for c in data.stage_costs)
    total_cost = sum(c.cost_usd for c in data.stage_costs)
    table.append(f"<tr><th>per verified task</th><td></td><td></td>"
                 f"<th class=n>{total_s / verified:.2f}</th>"
                 f"<th class=n>{total_tokens // verified}</th>"
                 f"<th class=n>{total_cost / verified:.4f}</th></tr></table>")
    wall = (f"{line.median_seconds:.2f} s of wall-clock time per verified task"
            if line and line.median_seconds else "wall-clock time not recorded yet")
    return ("<section><h2>Cost per verified task</h2>"
            f"<p class=\"note\">{escape(wall)}; machine seconds below add up the work of every "
            "stage result (workers run in parallel), including items that were rejected.</p>"
            + bar_chart("cost", rows, label="machine seconds per verified task by stage",
                        unit=" s", fmt="{:.2f}", label_width=120)
            + "".join(table) + "</section>")


def _coverage(data: RunData, metrics: CorpusMetrics, graph) -> str:
    counts = Counter(s for t in data.tasks for s in t.skills)
    weights = {skill: float(counts.get(skill, 0)) for skill in graph.skills}
    svg = graph_svg(graph, weights=weights if any(weights.values()) else None,
                    title=f"skill coverage: {metrics.skills_used} of {metrics.skills_total} "
                          "skills used (dot size = tasks using the skill)")
    svg = svg.replace("<svg ", '<svg class="graph" ', 1)
    unused = sorted(set(graph.skills) - set(counts))
    return ("<section><h2>Skill coverage</h2>"
            f"<p class=\"note\">{metrics.skills_used} of {metrics.skills_total} skills "
            f"({metrics.skill_coverage:.0%}) and {metrics.transitions_used} of "
            f"{metrics.transitions_total} typed skill-to-skill transitions "
            f"({metrics.transition_coverage:.0%}) are used. Skills sit on the outer ring by "
            "category, scenarios on the inner ring; the smallest dots are unused skills.</p>"
            f'<figure id="skill-coverage">{svg}</figure>'
            + (f"<details><summary>{len(unused)} unused skills</summary><p>"
               + ", ".join(f"<code>{escape(s)}</code>" for s in unused) + "</p></details>"
               if unused else "") + "</section>")


def _distributions(data: RunData) -> str:
    scenarios = Counter(t.scenario for t in data.tasks).most_common()
    levels = [(dimension, [sum(1 for t in data.tasks if t.difficulty.get(dimension) == level)
                           for level in (1, 2, 3)]) for dimension in DIMENSIONS]
    return ("<section><h2>Scenarios</h2>"
            + bar_chart("scenarios", scenarios, label="tasks per scenario")
            + "<h2>Difficulty</h2><p class=\"note\">Tasks at each level of the seven "
              "difficulty dimensions (1 easy, 3 hard).</p>"
            + level_chart("difficulty", levels, label="tasks per difficulty level")
            + "</section>")


def _calibration(data: RunData) -> str:
    measured = data.calibrations
    if not measured:
        return ""
    models, k, passes = data.calibration_spread
    by_level: dict[str, list[float]] = defaultdict(list)
    by_skill: dict[str, list[float]] = defaultdict(list)
    for row in measured:
        rate = row.calibration.pass_rate
        for dimension in DIMENSIONS:
            if dimension in row.difficulty:
                by_level[f"{dimension} {row.difficulty[dimension]}"].append(rate)
        for skill in set(row.skills):
            by_skill[skill].append(rate)
    levels = [(f"{name} (n={len(rates)})", sum(rates) / len(rates))
              for dimension in DIMENSIONS for level in (1, 2, 3)
              if (rates := by_level.get(name := f"{dimension} {level}"))]
    skills = sorted(((f"{skill} (n={len(rates)})", sum(rates) / len(rates))
                     for skill, rates in by_skill.items()), key=lambda row: (row[1], row[0]))
    band = data.run.config.get("calibration", {}).get("band", [0, 1])
    kept = sum(row.kept for row in measured)
    return ("<section id=\"calibration\"><h2>Calibration</h2>"
            f"<p class=\"note\">{len(measured)} accepted tasks attempted {k} times each by "
            f"<code>{escape(models)}</code>; {kept} had a pass rate in the band "
            f"[{band[0]:g}, {band[1]:g}]. Pass rates below are over every "
            "calibrated task, kept or not.</p>"
            + histogram("pass-rates", [(f"{n}/{k}", count) for n, count in passes.items()],
                        label="tasks by attempts passed", x_label="attempts passed of k")
            + "<h3>Mean pass rate per difficulty level</h3>"
            + bar_chart("pass-by-level", levels, label="mean pass rate per difficulty level",
                        fmt="{:.0%}")
            + "<h3>Mean pass rate per skill (hardest first)</h3>"
            + bar_chart("pass-by-skill", skills, label="mean pass rate per skill",
                        fmt="{:.0%}")
            + "</section>")


def _rejections(data: RunData) -> str:
    by_reason: dict[str, list] = defaultdict(list)
    for check in data.failed_checks:
        by_reason[check.verdict.reason or "unknown"].append(check)
    rows = sorted(((reason, len(checks)) for reason, checks in by_reason.items()),
                  key=lambda r: (-r[1], r[0]))
    parts = ["<section><h2>Rejections</h2><p class=\"note\">Failed checks over every "
             "validation round (a draft that was repaired and then accepted counts here "
             "too).</p>",
             bar_chart("rejections", rows, label="failed checks by reason code",
                       color="#e15759", label_width=140)]
    parts.append("<h3>Left out of the dataset</h3>")
    if data.left_out:
        parts.append("<table><tr><th>status</th><th>reason</th><th class=n>items</th>"
                     "<th>examples (item)</th></tr>")
        parts += [f"<tr><td>{escape(g.status)}</td><td>{escape(g.reason or '-')}</td>"
                  f"<td class=n>{g.count}</td>"
                  f"<td>{escape(', '.join(str(i) for i in g.items[:5]))}</td></tr>"
                  for g in data.left_out]
        parts.append("</table>")
    else:
        parts.append('<p class="note">Nothing: every item the run tried is in the dataset.'
                     "</p>")
    if by_reason:
        parts.append("<h3>Example logs</h3>")
        for index, (reason, _) in enumerate(rows):
            example = by_reason[reason][0]
            verdict = example.verdict
            opened = " open" if index == 0 else ""  # the first one shows in print too
            parts.append(
                f'<details class="example" data-reason="{escape(reason)}"{opened}><summary><b>'
                f"{escape(reason)}</b>: {escape(example.task_id)} (item {example.item}, round "
                f"{example.round}, check {escape(verdict.check)})</summary>"
                f"<p>{escape(verdict.details)}</p><pre>{escape(verdict.log or '(no log)')}"
                "</pre></details>")
    return "".join(parts) + "</section>"


def _requirements(data: RunData, shown: int = 5) -> str:
    """Counts over the exported tasks, and the requirement maps of the first `shown`."""
    maps, alternatives, mutants = [], 0, 0
    for task in data.tasks:
        config = tomllib.loads((task.folder / "task.toml").read_text(encoding="utf-8"))
        maps.append((task.task_id, config.get("metadata", {}).get("requirements", [])))
        alternatives += len(list((task.folder / "solution" / ALTERNATIVES).glob("*.sh")))
        mutants += len(list((task.folder / "solution" / MUTANTS).glob("*.sh")))
    cited = sum(len(entry.get("tests", [])) for _, found in maps for entry in found)
    parts = ["<section><h2>What the tests are held to</h2>",
             '<table id="requirements"><tr><th>tasks with a requirement map</th>'
             f"<td class=n>{sum(bool(found) for _, found in maps)} of {len(maps)}</td></tr>"
             "<tr><th>checks citing the instruction words that demand them</th>"
             f"<td class=n>{cited}</td></tr>"
             "<tr><th>other correct solutions shipped (each earned reward 1)</th>"
             f"<td class=n>{alternatives}</td></tr>"
             "<tr><th>rule mutants shipped (each ignores one stated rule and earned 0)</th>"
             f"<td class=n>{mutants}</td></tr></table>"]
    for task_id, found in [m for m in maps if m[1]][:shown]:
        rows = "".join(f"<tr><td>{'<br>'.join(escape(w) for w in entry.get('demands', []))}"
                       f"</td><td>{'<br>'.join(escape(t) for t in entry.get('tests', []))}"
                       "</td></tr>" for entry in found)
        parts.append(f'<details class="requirement-map"><summary>{escape(task_id)}</summary>'
                     "<table><tr><th>the instruction demands</th><th>checked by</th></tr>"
                     f"{rows}</table></details>")
    return "".join(parts) + "</section>"


def _diversity(data: RunData, metrics: CorpusMetrics) -> str:
    complexity = [action_complexity(r.solution) for r in task_records(data)]
    commands = Counter(c.commands for c in complexity)
    top = max(commands, default=0)
    bins = [(str(n), commands.get(n, 0)) for n in range(1, top + 1)] if top <= 30 else [
        (f"{lo}-{lo + 4}", sum(v for k, v in commands.items() if lo <= k < lo + 5))
        for lo in range(1, top + 1, 5)]
    tools = Counter(t for c in complexity for t in c.tools).most_common(25)
    table = [("tasks", str(metrics.tasks)),
             ("skill coverage", f"{metrics.skill_coverage:.1%} ({metrics.skills_used} of "
                                f"{metrics.skills_total})"),
             ("transition coverage", f"{metrics.transition_coverage:.1%} "
                                     f"({metrics.transitions_used} of "
                                     f"{metrics.transitions_total})"),
             ("scenario entropy (normalized)", f"{metrics.scenario_entropy:.3f}"),
             ("skill-category entropy (normalized)", f"{metrics.category_entropy:.3f}"),
             ("commands in all solutions", f"{metrics.commands_total} "
                                           f"({metrics.commands_mean:.1f} per task)"),
             ("distinct programs solutions run", str(len(metrics.tools))),
             ("near-duplicates dropped", f"{metrics.near_duplicates} "
                                         f"({metrics.near_duplicate_rate:.1%})")]
    return ("<section><h2>Corpus diversity</h2><table id=\"metrics\">"
            + "".join(f"<tr><td>{escape(k)}</td><td class=n>{escape(v)}</td></tr>"
                      for k, v in table) + "</table>"
            + "<h3>Commands per reference solution</h3>"
            + histogram("complexity", bins, label="tasks by commands in solve.sh",
                        x_label="commands in solve.sh")
            + "<h3>Programs the solutions run</h3>"
            + bar_chart("tools", tools, label="tasks whose solution runs each program",
                        label_width=120) + "</section>")
