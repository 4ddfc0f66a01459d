"""Draw the skill graph, or one scenario's neighbourhood, as a standalone SVG picture.

Whole graph: scenarios on an inner ring, skills on an outer ring grouped (and coloured) by
category, a line wherever a scenario uses a skill. Neighbourhood: the scenario in the
middle, its skills around it, and the other scenarios those skills lead to on the outside,
with arrows for the skill-to-skill transitions inside the scenario. Optional `weights`
(skill id -> count) scale skill dots, so coverage can be drawn on the same picture.
"""

from __future__ import annotations

import math
from html import escape

from taskloom.errors import ConfigError
from taskloom.skill_graph.model import SkillGraph

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295", "#8cd17d", "#499894",
           "#f1ce63", "#a0cbe8")
SCENARIO_COLOR = "#333333"


def category_colors(graph: SkillGraph) -> dict[str, str]:
    """A stable colour per skill category."""
    categories = sorted({s.category for s in graph.skills.values()})
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(categories)}


def _ring(names: list[str], radius: float, center: float, offset: float = 0.0):
    count = max(len(names), 1)
    return {name: (center + radius * math.cos(2 * math.pi * i / count - math.pi / 2 + offset),
                   center + radius * math.sin(2 * math.pi * i / count - math.pi / 2 + offset))
            for i, name in enumerate(names)}


def _label(x: float, y: float, center: float, text: str, size: int, color: str) -> str:
    anchor = "start" if x > center + 1 else "end" if x < center - 1 else "middle"
    dx = 7 if anchor == "start" else -7 if anchor == "end" else 0
    return (f'<text x="{x + dx:.1f}" y="{y + 3:.1f}" font-size="{size}" fill="{color}" '
            f'text-anchor="{anchor}">{escape(text)}</text>')


def _radial_label(x: float, y: float, center: float, text: str, size: int) -> str:
    """A label pointing away from the centre (no overlaps at the top and bottom of a ring)."""
    angle = math.degrees(math.atan2(y - center, x - center))
    left = abs(angle) > 90
    rotation = angle + 180 if left else angle
    anchor = "end" if left else "start"
    dx = -8 if left else 8
    return (f'<text transform="translate({x:.1f},{y:.1f}) rotate({rotation:.1f})" x="{dx}" '
            f'y="3" font-size="{size}" text-anchor="{anchor}" fill="#222">{escape(text)}</text>')


def _dot(x: float, y: float, r: float, color: str, title: str) -> str:
    return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{color}" stroke="white" '
            f'stroke-width="1"><title>{escape(title)}</title></circle>')


def _size(weights: dict[str, float] | None, skill: str) -> float:
    if not weights:
        return 5.0
    top = max(weights.values()) or 1.0
    return 3.0 + 9.0 * math.sqrt(weights.get(skill, 0.0) / top)


def _legend(colors: dict[str, str], x: float, y: float) -> list[str]:
    parts = []
    for index, (category, color) in enumerate(sorted(colors.items())):
        parts.append(f'<circle cx="{x:.0f}" cy="{y + 16 * index:.0f}" r="5" fill="{color}"/>')
        parts.append(f'<text x="{x + 10:.0f}" y="{y + 4 + 16 * index:.0f}" font-size="11">'
                     f"{escape(category)}</text>")
    return parts


def _document(size: int, body: list[str], title: str) -> str:
    margin = 150  # room for labels on the left and right of the rings
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{size + 230 + margin}" '
            f'height="{size + 60}" viewBox="0 0 {size + 230 + margin} {size + 60}" '
            'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
            f'<text x="12" y="22" font-size="15" font-weight="bold">{escape(title)}</text>\n'
            f'<g transform="translate({margin},30)">\n' + "\n".join(body) + "\n</g>\n</svg>\n")


def graph_svg(graph: SkillGraph, *, weights: dict[str, float] | None = None,
              title: str = "taskloom skill graph") -> str:
    """The whole graph as SVG text."""
    size, center = 1100, 550.0
    colors = category_colors(graph)
    skills = sorted(graph.skills, key=lambda s: (graph.skills[s].category, s))
    scenarios = sorted(graph.scenarios)
    skill_at = _ring(skills, 400, center)
    scenario_at = _ring(scenarios, 170, center, offset=0.1)
    body = []
    for scenario in scenarios:
        sx, sy = scenario_at[scenario]
        for skill in graph.skills_of(scenario):
            kx, ky = skill_at[skill]
            color = colors[graph.skills[skill].category]
            body.append(f'<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{kx:.1f}" y2="{ky:.1f}" '
                        f'stroke="{color}" stroke-opacity="0.35" stroke-width="1"/>')
    for skill in skills:
        x, y = skill_at[skill]
        item = graph.skills[skill]
        count = f" ({weights.get(skill, 0):g})" if weights else ""
        body.append(_dot(x, y, _size(weights, skill), colors[item.category],
                         f"{skill}: {item.description}{count}"))
        body.append(_radial_label(x, y, center, skill + count, 10))
    for scenario in scenarios:
        x, y = scenario_at[scenario]
        body.append(f'<rect x="{x - 6:.1f}" y="{y - 6:.1f}" width="12" height="12" '
                    f'fill="{SCENARIO_COLOR}"><title>{escape(graph.scenarios[scenario].title)}'
                    "</title></rect>")
        body.append(_label(x, y, center, scenario, 11, SCENARIO_COLOR))
    body += _legend(colors, size + 20, 60)
    return _document(size, body, title)


def scenario_svg(graph: SkillGraph, scenario_id: str) -> str:
    """One scenario, its skills, their transitions and the neighbouring scenarios.

    Raises:
        ConfigError: No scenario has that id.
    """
    if scenario_id not in graph.scenarios:
        raise ConfigError(f"unknown scenario {scenario_id!r}", field="--scenario",
                          fix=f"use one of: {', '.join(sorted(graph.scenarios))}")
    size, center = 900, 450.0
    colors = category_colors(graph)
    skills = sorted(graph.skills_of(scenario_id),
                    key=lambda s: (graph.skills[s].category, s))
    neighbours = sorted({other for skill in skills for other in graph.scenarios_of(skill)}
                        - {scenario_id})
    skill_at = _ring(skills, 210, center)
    outer_at = _ring(neighbours, 390, center, offset=0.15)
    body = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
            'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
            '<path d="M 0 0 L 10 5 L 0 10 z" fill="#999"/></marker></defs>']
    for first in skills:
        for second in skills:
            if first != second and graph.chains(first, second):
                (x1, y1), (x2, y2) = skill_at[first], skill_at[second]
                length = math.hypot(x2 - x1, y2 - y1) or 1
                x2, y2 = x2 - 8 * (x2 - x1) / length, y2 - 8 * (y2 - y1) / length
                body.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                            'stroke="#999" stroke-opacity="0.5" marker-end="url(#arrow)"/>')
    for skill in skills:
        x, y = skill_at[skill]
        for other in graph.scenarios_of(skill):
            if other in outer_at:
                ox, oy = outer_at[other]
                body.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{ox:.1f}" y2="{oy:.1f}" '
                            'stroke="#ccc" stroke-dasharray="3,3"/>')
    for skill in skills:
        x, y = skill_at[skill]
        item = graph.skills[skill]
        body.append(_dot(x, y, 7, colors[item.category], f"{skill}: {item.description}"))
        body.append(_label(x, y, center, f"{skill}  ({item.consumes} → {item.produces})", 10,
                           "#222"))
    for other in neighbours:
        x, y = outer_at[other]
        body.append(f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" '
                    'fill="#888"/>')
        body.append(_label(x, y, center, other, 10, "#555"))
    scenario = graph.scenarios[scenario_id]
    body.append(f'<rect x="{center - 8}" y="{center - 8}" width="16" height="16" '
                f'fill="{SCENARIO_COLOR}"/>')
    body.append(f'<text x="{center}" y="{center + 26}" font-size="13" text-anchor="middle" '
                f'font-weight="bold">{escape(scenario.title)}</text>')
    body += _legend({c: colors[c] for c in sorted({graph.skills[s].category for s in skills})},
                    size + 20, 60)
    return _document(size, body, f"{scenario.title} ({scenario.domain} domain): "
                                 f"{len(skills)} skills, {len(neighbours)} neighbours")
