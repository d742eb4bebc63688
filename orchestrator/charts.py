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

import html
import math
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

WIDTH = 720
PLOT_HEIGHT = 240
FONT = "system-ui, -apple-system, Segoe UI, sans-serif"
TEXT, MUTED, GRID, AXIS, MISSING = "#374151", "#6b7280", "#e5e7eb", "#9ca3af", "#e5e7eb"
PALETTE = ["#2563eb", "#16a34a", "#f59e0b", "#dc2626", "#7c3aed", "#0891b2", "#db2777"]
NAMED = {
    "train": "#2563eb",
    "holdout": "#16a34a",
    "failure": "#dc2626",
    "do": "#16a34a",
    "dont": "#dc2626",
}
HEAT = [(0.0, "#f87171"), (0.5, "#fbbf24"), (1.0, "#4ade80")]
SIZE, SMALL = 12, 11  # font sizes of labels and of the values written on marks
CHAR_W, SMALL_W = 6.8, 6.2  # average character widths at those sizes (system-ui)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class _Plot:
    left: float
    top: float
    width: float
    height: float
    lo: float = 0.0
    hi: float = 1.0
    slot: float = 1.0

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def y(self, v: float) -> float:
        v = min(max(v, self.lo), self.hi)
        return self.bottom - (v - self.lo) / (self.hi - self.lo) * self.height


# -- text and numbers ---------------------------------------------------------------------


def _esc(text: object) -> str:
    return html.escape(_ILLEGAL.sub("", str(text)), quote=True)


def _value(v: object) -> float | None:
    """A finite float, or None for a gap (None, NaN, infinity, anything not a number)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _data_num(v: float) -> str:
    """The value as a plain decimal that float() reads back exactly: 0.625, 3, 0.0000001."""
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return format(Decimal(repr(v)), "f")


def _human(v: float, percent: bool = False) -> str:
    if percent:
        return f"{v * 100:.1f}%"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def _decimals(step: float) -> int:
    return next((d for d in range(8) if abs(round(step, d) - step) < 1e-9 * max(1, step)), 8)


def _clip(label: str, limit: int = 18) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _text(
    x: float,
    y: float,
    s: object,
    *,
    size: float = SIZE,
    anchor: str = "start",
    fill: str = TEXT,
    weight: str = "",
    rotate: float | None = None,
    tip: str = "",
) -> str:
    attrs = f'x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}"'
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    if weight:
        attrs += f' font-weight="{weight}"'
    if rotate is not None:
        attrs += f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"'
    title = f"<title>{_esc(tip)}</title>" if tip else ""
    return f"<text {attrs}>{title}{_esc(s)}</text>"


def _mark(tag: str, series: str, x: str, y: str, geometry: str, fill: str, tip: str) -> str:
    return (
        f'<{tag} class="mark" data-series="{_esc(series)}" data-x="{_esc(x)}" '
        f'data-y="{y}" {geometry} fill="{fill}"><title>{_esc(tip)}</title></{tag}>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"/>'


def _box(x: float, y: float, w: float, h: float) -> str:
    return f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'


def _svg(title: str, height: float, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="100%" role="img" aria-label="{_esc(title)}" font-family="{FONT}">'
        + "".join(parts)
        + "</svg>"
    )


def _empty(title: str) -> str:
    box = (
        f'<rect x="16" y="40" width="{WIDTH - 32}" height="{PLOT_HEIGHT}" rx="6" '
        f'fill="#f9fafb" stroke="{GRID}"/>'
    )
    return _svg(
        title,
        PLOT_HEIGHT + 56,
        [
            _text(16, 24, title, size=16, weight="600"),
            box,
            _text(
                WIDTH / 2,
                40 + PLOT_HEIGHT / 2 + 5,
                "no data yet",
                size=14,
                anchor="middle",
                fill=MUTED,
            ),
        ],
    )


# -- colours ------------------------------------------------------------------------------


def _colors(names: Sequence[str]) -> dict[str, str]:
    taken = {NAMED[n.lower()] for n in names if n.lower() in NAMED}
    free = iter([c for c in PALETTE if c not in taken] or PALETTE)
    out = {}
    for n in names:
        out[n] = NAMED.get(n.lower()) or next(free, None) or PALETTE[len(out) % len(PALETTE)]
    return out


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _heat(v: float) -> str:
    v = min(max(v, 0.0), 1.0)
    (a, ca), (b, cb) = (HEAT[0], HEAT[1]) if v <= HEAT[1][0] else (HEAT[1], HEAT[2])
    t = (v - a) / (b - a)
    mixed = (round(p + (q - p) * t) for p, q in zip(_rgb(ca), _rgb(cb), strict=True))
    return "#{:02x}{:02x}{:02x}".format(*mixed)


def _ink(color: str) -> str:
    """Dark or white text, whichever reads better on ``color``."""
    r, g, b = _rgb(color)
    return "#111827" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


# -- scales and frame ---------------------------------------------------------------------


def _scale(
    values: list[float],
    lo: float | None = None,
    hi: float | None = None,
    *,
    zero: bool = False,
    headroom: float = 0.0,
    whole: bool = False,
) -> tuple[float, float, list[float]]:
    """Axis ends and ticks: the given ends, else the data's widened to round numbers."""
    d_lo = lo if lo is not None else min(values + ([0.0] if zero else []))
    d_hi = hi if hi is not None else max(values + ([0.0] if zero else []))
    if hi is None and headroom:
        d_hi += (d_hi - d_lo) * headroom
    if d_hi <= d_lo:
        pad = abs(d_hi) * 0.1 or 1.0
        d_lo -= pad if lo is None and not (zero and d_lo == 0) else 0.0
        d_hi = d_hi + pad if hi is None else d_hi
        d_hi = d_hi if d_hi > d_lo else d_lo + 1.0
    raw = (d_hi - d_lo) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    step = max(step, 1.0) if whole else step
    d_lo = d_lo if lo is not None else math.floor(d_lo / step + 1e-9) * step
    d_hi = d_hi if hi is not None else math.ceil(d_hi / step - 1e-9) * step
    first = math.ceil(d_lo / step - 1e-9)
    count = math.floor(d_hi / step + 1e-9) - first + 1
    return d_lo, d_hi, [round((first + i) * step, 10) + 0.0 for i in range(count)]


def _tick_labels(ticks: list[float], percent: bool) -> list[str]:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if percent:
        return [f"{t * 100:.{_decimals(step * 100)}f}%" if t else "0%" for t in ticks]
    big = max(abs(t) for t in ticks) if ticks else 0.0
    unit, suffix = (1e6, "M") if big >= 1e6 else (1e3, "k") if big >= 1e4 else (1.0, "")
    return [f"{t / unit:,.{_decimals(step / unit)}f}{suffix}" if t else "0" for t in ticks]


def _x_layout(labels: list[str], slot: float, rotate: bool) -> tuple[bool, int, float]:
    """Whether x labels are rotated, every how many'th is shown, and their band's height."""
    widest = max((len(_clip(s)) for s in labels), default=0) * CHAR_W
    if widest <= slot - 6:
        return False, 1, 26.0
    if not rotate:
        return False, math.ceil((widest + 10) / slot), 26.0
    return True, math.ceil(14 / slot), widest * 0.71 + 24


def _x_labels(
    parts: list[str], plot: _Plot, labels: list[str], rotated: bool, step: int, edges: bool = False
) -> None:
    """Append every ``step``'th x label under the plot, at slot centres (or slot edges)."""
    for i, label in enumerate(labels):
        if i % step:
            continue
        x = plot.left + (i + (0 if edges else 0.5)) * plot.slot
        short = _clip(label)
        tip = label if short != label else ""
        parts.append(_line(x, plot.bottom, x, plot.bottom + 4, AXIS))
        if rotated:
            y = plot.bottom + 16
            parts.append(_text(x, y, short, anchor="end", fill=MUTED, rotate=-45, tip=tip))
        else:
            parts.append(_text(x, plot.bottom + 19, short, anchor="middle", fill=MUTED, tip=tip))


def _legend(items: dict[str, str], y: float, line: bool) -> tuple[list[str], float]:
    parts, x, row = [], 16.0, 0
    for name, color in items.items():
        label = _clip(name, 24)
        w = 38 + len(label) * CHAR_W
        if x + w > WIDTH - 16 and x > 16:
            x, row = 16.0, row + 1
        cy = y + row * 18
        if line:
            parts.append(
                f'<line x1="{x:.1f}" y1="{cy - 4:.1f}" x2="{x + 16:.1f}" '
                f'y2="{cy - 4:.1f}" stroke="{color}" stroke-width="2"/>'
                f'<circle cx="{x + 8:.1f}" cy="{cy - 4:.1f}" r="3" fill="{color}"/>'
            )
        else:
            parts.append(
                f'<rect x="{x:.1f}" y="{cy - 9:.1f}" width="11" height="11" rx="2" fill="{color}"/>'
            )
        parts.append(_text(x + 21, cy, label, fill=TEXT, tip=name if label != name else ""))
        x += w
    return parts, (row + 1) * 18.0


def _frame(
    title: str,
    *,
    lo: float,
    hi: float,
    ticks: list[float],
    percent: bool = False,
    y_label: str,
    x_labels: list[str],
    edges: bool = False,
    rotate: bool = True,
    legend: dict[str, str] | None = None,
    legend_line: bool = False,
    x_title: str = "",
) -> tuple[list[str], _Plot, float]:
    """Title, legend, grid, axis labels and titles; returns them, the plot and the height."""
    parts = [_text(16, 24, title, size=16, weight="600")]
    top = 46.0
    if legend:
        legend_parts, legend_h = _legend(legend, 48, legend_line)
        parts += legend_parts
        top = 52 + legend_h
    tick_text = _tick_labels(ticks, percent)
    left = 16 + (20 if y_label else 0) + max((len(s) for s in tick_text), default=1) * CHAR_W + 8
    width = WIDTH - left - 20
    slot = width / max(1, len(x_labels) - 1 if edges else len(x_labels))
    rotated, step, band = _x_layout(x_labels, slot, rotate)
    plot = _Plot(left, top, width, PLOT_HEIGHT, lo, hi, slot)
    for t, s in zip(ticks, tick_text, strict=True):
        y = plot.y(t)
        parts.append(_line(left, y, left + width, y, GRID))
        parts.append(_text(left - 8, y + 4, s, anchor="end", fill=MUTED))
    base = plot.y(0.0 if lo < 0 < hi else lo)
    parts.append(_line(left, base, left + width, base, AXIS))
    if y_label:
        mid = plot.top + plot.height / 2
        parts.append(_text(20, mid, y_label, anchor="middle", rotate=-90))
    _x_labels(parts, plot, x_labels, rotated, step, edges)
    height = plot.bottom + band + 10
    if x_title:
        parts.append(_text(left + width / 2, height + 4, x_title, anchor="middle"))
        height += 18
    return parts, plot, height


# -- charts -------------------------------------------------------------------------------


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[str, float | None]]],
    y_label: str = "",
    y_min: float | None = None,
    y_max: float | None = None,
    percent: bool = False,
) -> str:
    """One line per series over shared categorical x labels; a None value is a gap."""
    clean = {str(n): [(str(x), _value(v)) for x, v in pts] for n, pts in series.items()}
    xs = list(dict.fromkeys(x for pts in clean.values() for x, _ in pts))
    values = [v for pts in clean.values() for _, v in pts if v is not None]
    if not values:
        return _empty(title)
    lo, hi, ticks = _scale(values + ([0.0, 1.0] if percent else []), y_min, y_max)
    colors = _colors(list(clean))
    parts, plot, height = _frame(
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
                tip = f"{name} · {x}: {_human(v, percent)}"
                parts.append(_mark("circle", name, x, _data_num(v), geometry, color, tip))
    return _svg(title, height, parts)


def _headroom(texts: list[str], slot: float) -> float:
    """The share of the plot to keep free above the tallest bar for its value text."""
    widest = max((len(t) for t in texts), default=0) * SMALL_W
    px = (widest + 8 if widest > slot - 2 else 16) if slot >= SMALL + 2 else 6
    return px / max(PLOT_HEIGHT - px, 1)


def _format(value_format: str, v: float) -> str:
    try:
        return value_format.format(v)
    except (ValueError, IndexError, KeyError):
        return _human(v)


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float]],
    y_label: str = "",
    color: str | None = None,
    value_format: str = "{:g}",
) -> str:
    """Vertical bars from zero, each with its value written above it."""
    labels = [str(label) for label, _ in bars]
    values = [_value(v) for _, v in bars]
    finite = [v for v in values if v is not None]
    if not finite:
        return _empty(title)
    texts = [_format(value_format, v) if v is not None else "" for v in values]
    headroom = _headroom(texts, (WIDTH - 90) / len(labels))
    lo, hi, ticks = _scale(finite, zero=True, headroom=headroom)
    parts, plot, height = _frame(title, lo=lo, hi=hi, ticks=ticks, y_label=y_label, x_labels=labels)
    w, color = min(plot.slot * 0.72, 56), color or PALETTE[0]
    vertical = max(len(t) for t in texts) * SMALL_W > plot.slot - 2
    for i, (label, v, text) in enumerate(zip(labels, values, texts, strict=True)):
        if v is None:
            continue
        cx = plot.left + (i + 0.5) * plot.slot
        y0, y1 = sorted((plot.y(v), plot.y(0.0)))
        tip = f"{label}: {text}"
        parts.append(
            _mark("rect", title, label, _data_num(v), _box(cx - w / 2, y0, w, y1 - y0), color, tip)
        )
        if plot.slot < SMALL + 2 or not text:  # too narrow to write on: the tooltip has it
            continue
        if vertical:
            parts.append(_text(cx + 4, y0 - 4, text, size=SMALL, fill=MUTED, rotate=-90))
        else:
            y = y0 - 5 if v >= 0 else y1 + 13
            parts.append(_text(cx, y, text, size=SMALL, anchor="middle", fill=MUTED))
    return _svg(title, height, parts)


def stacked_bars(
    title: str, categories: Sequence[str], stacks: Mapping[str, Sequence[float]], y_label: str = ""
) -> str:
    """One bar per category, split into one segment per stack; the total above each bar."""
    cats = [str(c) for c in categories]
    cells = {str(n): [_value(v) for v in vals][: len(cats)] for n, vals in stacks.items()}
    if not cats or not any(v is not None for vals in cells.values() for v in vals):
        return _empty(title)
    totals = [
        sum(max(vals[i] or 0.0, 0.0) for vals in cells.values() if i < len(vals))
        for i in range(len(cats))
    ]
    texts = [_human(t) for t in totals]
    lo, hi, ticks = _scale(totals, zero=True, headroom=_headroom(texts, (WIDTH - 90) / len(cats)))
    colors = _colors(list(cells))
    parts, plot, height = _frame(
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
            geometry = _box(cx - w / 2, y0, w, y1 - y0)
            tip = f"{name} · {cats[i]}: {_human(v)}"
            parts.append(_mark("rect", name, cats[i], _data_num(v), geometry, colors[name], tip))
            if y1 - y0 >= 15 and w >= len(_human(v)) * SMALL_W + 4:
                parts.append(
                    _text(
                        cx,
                        (y0 + y1) / 2 + 4,
                        _human(v),
                        size=SMALL,
                        anchor="middle",
                        fill=_ink(colors[name]),
                    )
                )
    show = plot.slot >= SMALL + 2 and max(len(t) for t in texts) * SMALL_W <= plot.slot - 2
    for i, t in enumerate(texts):
        if show and totals[i] > 0:
            cx = plot.left + (i + 0.5) * plot.slot
            parts.append(
                _text(cx, plot.y(totals[i]) - 5, t, size=SMALL, anchor="middle", fill=MUTED)
            )
    return _svg(title, height, parts)


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
    finite = [v for v in (_value(v) for v in values) if v is not None]
    if not finite:
        return _empty(title)
    counts = [0] * bins
    inside = [v for v in finite if lo <= v <= hi]
    for v in inside:
        counts[min(bisect_right(edges, v) - 1, bins - 1)] += 1
    edge_text = [f"{e:.6g}" for e in edges]
    bin_labels = [f"{a}–{b}" for a, b in zip(edge_text, edge_text[1:], strict=False)]
    y_lo, y_hi, ticks = _scale([float(c) for c in counts], zero=True, headroom=0.08, whole=True)
    parts, plot, height = _frame(
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
        geometry = _box(x0 + 1, y0, max(plot.slot - 2, 0.5), plot.bottom - y0)
        parts.append(_mark("rect", "count", label, str(n), geometry, PALETTE[0], f"{label}: {n}"))
        if n and plot.slot >= len(str(n)) * SMALL_W + 4:
            parts.append(
                _text(x0 + plot.slot / 2, y0 - 5, n, size=SMALL, anchor="middle", fill=MUTED)
            )
    if len(inside) < len(finite):
        note = f"{len(finite) - len(inside)} outside {edge_text[0]}–{edge_text[-1]} not shown"
        parts.append(_text(WIDTH - 20, 24, note, anchor="end", fill=MUTED))
    return _svg(title, height, parts)


def pass_grid(
    title: str, rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]]
) -> str:
    """A heat grid of shares (0 red, 0.5 amber, 1 green, missing grey), each cell labelled.

    Every cell is a mark; a missing value (None, or a row shorter than ``cols``) has
    ``data-y=""``.
    """
    rows, cols = [str(r) for r in rows], [str(c) for c in cols]
    if not rows or not cols:
        return _empty(title)
    cell_h = 28.0
    left = 16 + max(len(_clip(r, 24)) for r in rows) * CHAR_W + 10
    width = WIDTH - left - 20
    slot = width / len(cols)
    rotated, step, band = _x_layout(cols, slot, rotate=True)
    parts = [_text(16, 24, title, size=16, weight="600")]
    for i, v in enumerate((0.0, 0.25, 0.5, 0.75, 1.0)):  # the colour key, top right
        x = WIDTH - 20 - 5 * 16 + i * 16
        parts.append(f'<rect x="{x}" y="14" width="14" height="12" rx="2" fill="{_heat(v)}"/>')
    parts.append(_text(WIDTH - 20 - 5 * 16 - 6, 24, "0", anchor="end", fill=MUTED))
    parts.append(_text(WIDTH - 14, 24, "1", fill=MUTED))
    top = 44.0
    for r, row in enumerate(rows):
        y = top + r * cell_h
        short = _clip(row, 24)
        tip = row if short != row else ""
        parts.append(_text(left - 8, y + cell_h / 2 + 4, short, anchor="end", tip=tip))
        line = values[r] if r < len(values) else []
        for c, col in enumerate(cols):
            v = _value(line[c]) if c < len(line) else None
            fill = _heat(v) if v is not None else MISSING
            x = left + c * slot
            geometry = _box(x + 1, y + 1, slot - 2, cell_h - 2) + ' rx="3"'
            text = f"{v:.2f}" if v is not None else "–"
            y_attr = _data_num(v) if v is not None else ""
            parts.append(_mark("rect", row, col, y_attr, geometry, fill, f"{row} · {col}: {text}"))
            if slot >= 34:
                ink = _ink(fill) if v is not None else MUTED
                parts.append(
                    _text(
                        x + slot / 2,
                        y + cell_h / 2 + 4,
                        text,
                        size=SMALL,
                        anchor="middle",
                        fill=ink,
                    )
                )
    plot = _Plot(left, top, width, len(rows) * cell_h, slot=slot)
    _x_labels(parts, plot, cols, rotated, step)
    return _svg(title, plot.bottom + band + 10, parts)
