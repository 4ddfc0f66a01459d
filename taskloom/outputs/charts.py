"""Small inline SVG charts for the HTML report (no scripts, no external assets).

Each function returns one `<svg>` element with the given id; every drawn value is a
`<rect class="bar">` carrying `data-label` and `data-value`, with a `<title>` tooltip, so
the picture can be checked from the DOM as well as looked at.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

BLUE, LIGHT, GREY = "#4e79a7", "#c6d4e6", "#555"
LEVEL_COLORS = ("#9bd39a", "#f2c45a", "#e15759")  # difficulty 1, 2, 3


def _svg(chart_id: str, width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg id="{escape(chart_id)}" class="chart" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            'font-family="system-ui, sans-serif" font-size="12">'
            + "".join(body) + "</svg>")


def _bar(x: float, y: float, width: float, height: float, color: str, label: str,
         value: float, title: str) -> str:
    return (f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{max(width, 0.0):.1f}" '
            f'height="{height:.1f}" fill="{color}" data-label="{escape(label)}" '
            f'data-value="{value:g}"><title>{escape(title)}</title></rect>')


def _text(x: float, y: float, text: str, *, anchor: str = "start", color: str = "#222",
          weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{color}" '
            f'font-weight="{weight}">{escape(text)}</text>')


def bar_chart(chart_id: str, rows: Sequence[tuple[str, float]], *, label: str,
              unit: str = "", color: str = BLUE, label_width: int = 230,
              width: int = 760, fmt: str = "{:g}") -> str:
    """Horizontal bars, one per (label, value), longest first as given."""
    row_height, top = 22, 6
    top_value = max((value for _, value in rows), default=0) or 1
    plot = width - label_width - 70
    body = []
    for index, (name, value) in enumerate(rows):
        y = top + index * row_height
        length = plot * value / top_value
        shown = fmt.format(value) + unit
        body.append(_text(label_width - 8, y + 15, name, anchor="end"))
        body.append(_bar(label_width, y + 3, length, row_height - 6, color, name, value,
                         f"{name}: {shown}"))
        body.append(_text(label_width + length + 6, y + 15, shown, color=GREY))
    if not rows:
        body.append(_text(8, 20, "nothing to show", color=GREY))
    return _svg(chart_id, width, top * 2 + max(len(rows), 1) * row_height, body, label)


def funnel_chart(chart_id: str, rows: Sequence[tuple[str, int, int]], *,
                 label: str, width: int = 760) -> str:
    """Per stage, items in (light bar) and out (dark bar over it) with the yield."""
    row_height, top, label_width = 30, 6, 120
    top_value = max((n for _, n_in, n_out in rows for n in (n_in, n_out)), default=0) or 1
    plot = width - label_width - 150
    body = []
    for index, (stage, n_in, n_out) in enumerate(rows):
        y = top + index * row_height
        body.append(_text(label_width - 8, y + 19, stage, anchor="end", weight="bold"))
        body.append(_bar(label_width, y + 4, plot * n_in / top_value, row_height - 8, LIGHT,
                         f"{stage} in", n_in, f"{stage}: {n_in} in"))
        body.append(_bar(label_width, y + 4, plot * n_out / top_value, row_height - 8, BLUE,
                         f"{stage} out", n_out, f"{stage}: {n_out} out"))
        share = f"{n_out / n_in:.0%}" if n_in else "-"
        body.append(_text(label_width + plot * max(n_in, n_out) / top_value + 8, y + 19,
                          f"{n_out} of {n_in} ({share})", color=GREY))
    return _svg(chart_id, width, top * 2 + max(len(rows), 1) * row_height, body, label)


def level_chart(chart_id: str, rows: Sequence[tuple[str, Sequence[int]]], *, label: str,
                width: int = 760) -> str:
    """One 100%-stacked bar per row of counts at levels 1, 2, 3, with a legend."""
    row_height, top, label_width = 26, 28, 130
    plot = width - label_width - 20
    body = []
    for level, color in enumerate(LEVEL_COLORS, start=1):
        x = label_width + (level - 1) * 110
        body.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{color}"/>')
        body.append(_text(x + 18, 16, f"level {level}", color=GREY))
    for index, (name, counts) in enumerate(rows):
        y = top + index * row_height
        total = sum(counts) or 1
        body.append(_text(label_width - 8, y + 17, name, anchor="end"))
        x = float(label_width)
        for level, (count, color) in enumerate(zip(counts, LEVEL_COLORS, strict=True),
                                               start=1):
            length = plot * count / total
            body.append(_bar(x, y + 3, length, row_height - 6, color, f"{name} {level}",
                             count, f"{name} level {level}: {count} tasks"))
            if length > 22:
                body.append(_text(x + length / 2, y + 17, str(count), anchor="middle"))
            x += length
    return _svg(chart_id, width, top + max(len(rows), 1) * row_height + 6, body, label)


def histogram(chart_id: str, counts: Sequence[tuple[str, int]], *, label: str,
              x_label: str, width: int = 760, height: int = 200) -> str:
    """Vertical bars: how many items fall in each (bin label, count)."""
    left, bottom, top = 40, 36, 12
    plot_w, plot_h = width - left - 10, height - bottom - top
    top_value = max((n for _, n in counts), default=0) or 1
    step = plot_w / max(len(counts), 1)
    body = [f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" '
            'stroke="#999"/>']
    for index, (name, count) in enumerate(counts):
        bar_h = plot_h * count / top_value
        x = left + index * step
        body.append(_bar(x + 2, top + plot_h - bar_h, step - 4, bar_h, BLUE, name, count,
                         f"{name}: {count}"))
        if count:
            body.append(_text(x + step / 2, top + plot_h - bar_h - 3, str(count),
                              anchor="middle", color=GREY))
        body.append(_text(x + step / 2, top + plot_h + 14, name, anchor="middle"))
    body.append(_text(left + plot_w / 2, height - 4, x_label, anchor="middle", color=GREY))
    return _svg(chart_id, width, height, body, label)
