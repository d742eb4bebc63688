"""Charts for the nightly report, drawn as inline SVG strings.

``report.html`` is one self-contained file (no network, no scripts, no fonts), so every
chart is a pure function that returns one ``<svg>`` element as text.

What this module decides, and why:

* A fixed width of 720 user units, a ``viewBox`` and ``width="100%"``: a chart scales with
  the page and keeps its aspect ratio. Its height follows from its content (grid rows,
  rotated labels, a legend), never from the page.
* Every data mark (point, bar, segment, cell) carries ``class="mark"``, ``data-series``,
  ``data-x`` and ``data-y``, so tests and scripts read the numbers back from the DOM rather
  than trusting pixels. ``data-y`` is a plain decimal that ``float()`` turns back into the
  exact input. A ``<title>`` on each mark is the hover tooltip; no JavaScript.
* All text goes through ``html.escape`` (minus XML-illegal control characters), so any
  label keeps the SVG well-formed.
* Empty input draws the frame with "no data yet" instead of raising: the report of the
  first night must still render.
* Crowded x labels of a sequence (line chart, histogram edges) are thinned; those of
  categories (bars, grid columns) are rotated, and thinned only if still crowded. The
  mark always keeps the full label. A value is written on a bar only where the bar is
  wide enough to hold it; otherwise its tooltip carries it.
* A chart with one series names it after itself: a bar's ``data-series`` is the chart's
  title, a histogram bin's is ``count``.
* A restrained palette; a series named train, holdout, failure, do or dont keeps its
  colour in every chart. Heat cells run red to amber to green, grey when missing.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

from orchestrator.nightly import svg


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[str, float | None]]],
    y_label: str = "",
    y_min: float | None = None,
    y_max: float | None = None,
    percent: bool = False,
) -> str:
    """One line per series over shared categorical x labels; a None value is a gap."""
    clean = {str(n): [(str(x), svg.value(v)) for x, v in pts] for n, pts in series.items()}
    xs = list(dict.fromkeys(x for pts in clean.values() for x, _ in pts))
    values = [v for pts in clean.values() for _, v in pts if v is not None]
    if not values:
        return svg.empty(title)
    lo, hi, ticks = svg.scale(values + ([0.0, 1.0] if percent else []), y_min, y_max)
    colors = svg.colors(list(clean))
    parts, plot, height = svg.frame(
        title,
        lo=lo,
        hi=hi,
        ticks=ticks,
        percent=percent,
        y_label=y_label,
        x_labels=xs,
        rotate=False,
        legend=colors if len(clean) > 1 else None,
        legend_line=True,
    )
    index = {x: i for i, x in enumerate(xs)}
    for name, pts in clean.items():
        color, run = colors[name], []
        xy = [
            (plot.left + (index[x] + 0.5) * plot.slot, plot.y(v)) if v is not None else None
            for x, v in pts
        ]
        for p in [*xy, None]:
            if p is not None:
                run.append(f"{p[0]:.1f},{p[1]:.1f}")
                continue
            if len(run) > 1:
                parts.append(
                    f'<polyline points="{" ".join(run)}" fill="none" stroke="{color}" '
                    f'stroke-width="2" stroke-linejoin="round"/>'
                )
            run = []
        for (x, v), p in zip(pts, xy, strict=True):
            if p is not None and v is not None:
                geometry = f'cx="{p[0]:.1f}" cy="{p[1]:.1f}" r="4" stroke="#fff" stroke-width="1.5"'
                tip = f"{name} · {x}: {svg.human(v, percent)}"
                parts.append(svg.mark("circle", name, x, svg.data_num(v), geometry, color, tip))
    return svg.svg_element(title, height, parts)


def _headroom(texts: list[str], slot: float) -> float:
    """The share of the plot to keep free above the tallest bar for its value text."""
    widest = max((len(t) for t in texts), default=0) * svg.SMALL_W
    px = (widest + 8 if widest > slot - 2 else 16) if slot >= svg.SMALL + 2 else 6
    return px / max(svg.PLOT_HEIGHT - px, 1)


def _format(value_format: str, v: float) -> str:
    try:
        return value_format.format(v)
    except (ValueError, IndexError, KeyError):
        return svg.human(v)


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float]],
    y_label: str = "",
    color: str | None = None,
    value_format: str = "{:g}",
) -> str:
    """Vertical bars from zero, each with its value written above it."""
    labels = [str(label) for label, _ in bars]
    values = [svg.value(v) for _, v in bars]
    finite = [v for v in values if v is not None]
    if not finite:
        return svg.empty(title)
    texts = [_format(value_format, v) if v is not None else "" for v in values]
    headroom = _headroom(texts, (svg.WIDTH - 90) / len(labels))
    lo, hi, ticks = svg.scale(finite, zero=True, headroom=headroom)
    parts, plot, height = svg.frame(
        title, lo=lo, hi=hi, ticks=ticks, y_label=y_label, x_labels=labels
    )
    w, color = min(plot.slot * 0.72, 56), color or svg.PALETTE[0]
    vertical = max(len(t) for t in texts) * svg.SMALL_W > plot.slot - 2
    for i, (label, v, text) in enumerate(zip(labels, values, texts, strict=True)):
        if v is None:
            continue
        cx = plot.left + (i + 0.5) * plot.slot
        y0, y1 = sorted((plot.y(v), plot.y(0.0)))
        tip = f"{label}: {text}"
        parts.append(
            svg.mark(
                "rect",
                title,
                label,
                svg.data_num(v),
                svg.draw_box(cx - w / 2, y0, w, y1 - y0),
                color,
                tip,
            )
        )
        if plot.slot < svg.SMALL + 2 or not text:  # too narrow to write on: the tooltip has it
            continue
        if vertical:
            parts.append(
                svg.draw_text(cx + 4, y0 - 4, text, size=svg.SMALL, fill=svg.MUTED, rotate=-90)
            )
        else:
            y = y0 - 5 if v >= 0 else y1 + 13
            parts.append(
                svg.draw_text(cx, y, text, size=svg.SMALL, anchor="middle", fill=svg.MUTED)
            )
    return svg.svg_element(title, height, parts)


def stacked_bars(
    title: str, categories: Sequence[str], stacks: Mapping[str, Sequence[float]], y_label: str = ""
) -> str:
    """One bar per category, split into one segment per stack; the total above each bar."""
    cats = [str(c) for c in categories]
    cells = {str(n): [svg.value(v) for v in vals][: len(cats)] for n, vals in stacks.items()}
    if not cats or not any(v is not None for vals in cells.values() for v in vals):
        return svg.empty(title)
    totals = [
        sum(max(vals[i] or 0.0, 0.0) for vals in cells.values() if i < len(vals))
        for i in range(len(cats))
    ]
    texts = [svg.human(t) for t in totals]
    lo, hi, ticks = svg.scale(
        totals, zero=True, headroom=_headroom(texts, (svg.WIDTH - 90) / len(cats))
    )
    colors = svg.colors(list(cells))
    parts, plot, height = svg.frame(
        title,
        lo=lo,
        hi=hi,
        ticks=ticks,
        y_label=y_label,
        x_labels=cats,
        legend=colors if len(cells) > 1 else None,
    )
    w, below = min(plot.slot * 0.72, 56), [0.0] * len(cats)
    for name, vals in cells.items():
        for i, v in enumerate(vals):
            if v is None:
                continue
            cx, h = plot.left + (i + 0.5) * plot.slot, max(v, 0.0)
            y0, y1 = plot.y(below[i] + h), plot.y(below[i])
            below[i] += h
            geometry = svg.draw_box(cx - w / 2, y0, w, y1 - y0)
            tip = f"{name} · {cats[i]}: {svg.human(v)}"
            parts.append(
                svg.mark("rect", name, cats[i], svg.data_num(v), geometry, colors[name], tip)
            )
            if y1 - y0 >= 15 and w >= len(svg.human(v)) * svg.SMALL_W + 4:
                parts.append(
                    svg.draw_text(
                        cx,
                        (y0 + y1) / 2 + 4,
                        svg.human(v),
                        size=svg.SMALL,
                        anchor="middle",
                        fill=svg.ink(colors[name]),
                    )
                )
    show = plot.slot >= svg.SMALL + 2 and max(len(t) for t in texts) * svg.SMALL_W <= plot.slot - 2
    for i, t in enumerate(texts):
        if show and totals[i] > 0:
            cx = plot.left + (i + 0.5) * plot.slot
            parts.append(
                svg.draw_text(
                    cx, plot.y(totals[i]) - 5, t, size=svg.SMALL, anchor="middle", fill=svg.MUTED
                )
            )
    return svg.svg_element(title, height, parts)


def histogram(
    title: str,
    values: Sequence[float],
    bins: int = 10,
    lo: float = 0.0,
    hi: float = 1.0,
    x_label: str = "",
) -> str:
    """Counts of values in equal bins over lo..hi; a value at hi counts in the last bin.

    Values outside lo..hi (and NaN) are not counted; a note says how many were left out.
    """
    bins = max(1, int(bins))
    hi = hi if hi > lo else lo + 1.0
    edges = [float(f"{lo + (hi - lo) * i / bins:.12g}") for i in range(bins + 1)]
    finite = [v for v in (svg.value(v) for v in values) if v is not None]
    if not finite:
        return svg.empty(title)
    counts = [0] * bins
    inside = [v for v in finite if lo <= v <= hi]
    for v in inside:
        counts[min(bisect_right(edges, v) - 1, bins - 1)] += 1
    edge_text = [f"{e:.6g}" for e in edges]
    bin_labels = [f"{a}–{b}" for a, b in zip(edge_text, edge_text[1:], strict=False)]
    y_lo, y_hi, ticks = svg.scale([float(c) for c in counts], zero=True, headroom=0.08, whole=True)
    parts, plot, height = svg.frame(
        title,
        lo=y_lo,
        hi=y_hi,
        ticks=ticks,
        y_label="count",
        x_labels=edge_text,
        edges=True,
        rotate=False,
        x_title=x_label,
    )
    for i, (label, n) in enumerate(zip(bin_labels, counts, strict=True)):
        x0 = plot.left + i * plot.slot
        y0 = plot.y(n)
        geometry = svg.draw_box(x0 + 1, y0, max(plot.slot - 2, 0.5), plot.bottom - y0)
        parts.append(
            svg.mark("rect", "count", label, str(n), geometry, svg.PALETTE[0], f"{label}: {n}")
        )
        if n and plot.slot >= len(str(n)) * svg.SMALL_W + 4:
            parts.append(
                svg.draw_text(
                    x0 + plot.slot / 2, y0 - 5, n, size=svg.SMALL, anchor="middle", fill=svg.MUTED
                )
            )
    if len(inside) < len(finite):
        note = f"{len(finite) - len(inside)} outside {edge_text[0]}–{edge_text[-1]} not shown"
        parts.append(svg.draw_text(svg.WIDTH - 20, 24, note, anchor="end", fill=svg.MUTED))
    return svg.svg_element(title, height, parts)


def pass_grid(
    title: str, rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]]
) -> str:
    """A heat grid of shares (0 red, 0.5 amber, 1 green, missing grey), each cell labelled.

    Every cell is a mark; a missing value (None, or a row shorter than ``cols``) has
    ``data-y=""``.
    """
    rows, cols = [str(r) for r in rows], [str(c) for c in cols]
    if not rows or not cols:
        return svg.empty(title)
    cell_h = 28.0
    left = 16 + max(len(svg.clip(r, 24)) for r in rows) * svg.CHAR_W + 10
    width = svg.WIDTH - left - 20
    slot = width / len(cols)
    rotated, step, band = svg.x_layout(cols, slot, rotate=True)
    parts = [svg.draw_text(16, 24, title, size=16, weight="600")]
    for i, v in enumerate((0.0, 0.25, 0.5, 0.75, 1.0)):  # the colour key, top right
        x = svg.WIDTH - 20 - 5 * 16 + i * 16
        parts.append(f'<rect x="{x}" y="14" width="14" height="12" rx="2" fill="{svg.heat(v)}"/>')
    parts.append(svg.draw_text(svg.WIDTH - 20 - 5 * 16 - 6, 24, "0", anchor="end", fill=svg.MUTED))
    parts.append(svg.draw_text(svg.WIDTH - 14, 24, "1", fill=svg.MUTED))
    top = 44.0
    for r, row in enumerate(rows):
        y = top + r * cell_h
        short = svg.clip(row, 24)
        tip = row if short != row else ""
        parts.append(svg.draw_text(left - 8, y + cell_h / 2 + 4, short, anchor="end", tip=tip))
        line = values[r] if r < len(values) else []
        for c, col in enumerate(cols):
            v = svg.value(line[c]) if c < len(line) else None
            fill = svg.heat(v) if v is not None else svg.MISSING
            x = left + c * slot
            geometry = svg.draw_box(x + 1, y + 1, slot - 2, cell_h - 2) + ' rx="3"'
            text = f"{v:.2f}" if v is not None else "–"
            y_attr = svg.data_num(v) if v is not None else ""
            parts.append(
                svg.mark("rect", row, col, y_attr, geometry, fill, f"{row} · {col}: {text}")
            )
            if slot >= 34:
                ink = svg.ink(fill) if v is not None else svg.MUTED
                parts.append(
                    svg.draw_text(
                        x + slot / 2,
                        y + cell_h / 2 + 4,
                        text,
                        size=svg.SMALL,
                        anchor="middle",
                        fill=ink,
                    )
                )
    plot = svg.Plot(left, top, width, len(rows) * cell_h, slot=slot)
    svg.draw_x_labels(parts, plot, cols, rotated, step)
    return svg.svg_element(title, plot.bottom + band + 10, parts)
