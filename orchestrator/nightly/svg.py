"""SVG drawing for the report's charts: scales, ticks, text, marks, legends, frames.

The pieces every chart in :mod:`orchestrator.nightly.charts` is made of, kept apart from the
charts themselves so each file has one job. Everything returns SVG text; all text is
escaped (and stripped of XML-illegal characters) so any label keeps the file well-formed,
and every data mark carries ``class="mark"`` with ``data-series``, ``data-x`` and
``data-y`` (see :func:`mark`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
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
ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Plot:
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


def esc(text: object) -> str:
    return html.escape(ILLEGAL.sub("", str(text)), quote=True)


def value(v: object) -> float | None:
    """A finite float, or None for a gap (None, NaN, infinity, anything not a number)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def data_num(v: float) -> str:
    """The value as a plain decimal that float() reads back exactly: 0.625, 3, 0.0000001."""
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return format(Decimal(repr(v)), "f")


def human(v: float, percent: bool = False) -> str:
    if percent:
        return f"{v * 100:.1f}%"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def decimals(step: float) -> int:
    return next((d for d in range(8) if abs(round(step, d) - step) < 1e-9 * max(1, step)), 8)


def clip(label: str, limit: int = 18) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def draw_text(
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
    title = f"<title>{esc(tip)}</title>" if tip else ""
    return f"<text {attrs}>{title}{esc(s)}</text>"


def mark(tag: str, series: str, x: str, y: str, geometry: str, fill: str, tip: str) -> str:
    return (
        f'<{tag} class="mark" data-series="{esc(series)}" data-x="{esc(x)}" '
        f'data-y="{y}" {geometry} fill="{fill}"><title>{esc(tip)}</title></{tag}>'
    )


def draw_line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"/>'


def draw_box(x: float, y: float, w: float, h: float) -> str:
    return f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'


def svg_element(title: str, height: float, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="100%" role="img" aria-label="{esc(title)}" font-family="{FONT}">'
        + "".join(parts)
        + "</svg>"
    )


def empty(title: str) -> str:
    box = (
        f'<rect x="16" y="40" width="{WIDTH - 32}" height="{PLOT_HEIGHT}" rx="6" '
        f'fill="#f9fafb" stroke="{GRID}"/>'
    )
    return svg_element(
        title,
        PLOT_HEIGHT + 56,
        [
            draw_text(16, 24, title, size=16, weight="600"),
            box,
            draw_text(
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


def colors(names: Sequence[str]) -> dict[str, str]:
    taken = {NAMED[n.lower()] for n in names if n.lower() in NAMED}
    free = iter([c for c in PALETTE if c not in taken] or PALETTE)
    out = {}
    for n in names:
        out[n] = NAMED.get(n.lower()) or next(free, None) or PALETTE[len(out) % len(PALETTE)]
    return out


def rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def heat(v: float) -> str:
    v = min(max(v, 0.0), 1.0)
    (a, ca), (b, cb) = (HEAT[0], HEAT[1]) if v <= HEAT[1][0] else (HEAT[1], HEAT[2])
    t = (v - a) / (b - a)
    mixed = (round(p + (q - p) * t) for p, q in zip(rgb(ca), rgb(cb), strict=True))
    return "#{:02x}{:02x}{:02x}".format(*mixed)


def ink(color: str) -> str:
    """Dark or white text, whichever reads better on ``color``."""
    r, g, b = rgb(color)
    return "#111827" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


# -- scales and frame ---------------------------------------------------------------------


def scale(
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


def tick_labels(ticks: list[float], percent: bool) -> list[str]:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    if percent:
        return [f"{t * 100:.{decimals(step * 100)}f}%" if t else "0%" for t in ticks]
    big = max(abs(t) for t in ticks) if ticks else 0.0
    unit, suffix = (1e6, "M") if big >= 1e6 else (1e3, "k") if big >= 1e4 else (1.0, "")
    return [f"{t / unit:,.{decimals(step / unit)}f}{suffix}" if t else "0" for t in ticks]


def x_layout(labels: list[str], slot: float, rotate: bool) -> tuple[bool, int, float]:
    """Whether x labels are rotated, every how many'th is shown, and their band's height."""
    widest = max((len(clip(s)) for s in labels), default=0) * CHAR_W
    if widest <= slot - 6:
        return False, 1, 26.0
    if not rotate:
        return False, math.ceil((widest + 10) / slot), 26.0
    return True, math.ceil(14 / slot), widest * 0.71 + 24


def draw_x_labels(
    parts: list[str], plot: Plot, labels: list[str], rotated: bool, step: int, edges: bool = False
) -> None:
    """Append every ``step``'th x label under the plot, at slot centres (or slot edges)."""
    for i, label in enumerate(labels):
        if i % step:
            continue
        x = plot.left + (i + (0 if edges else 0.5)) * plot.slot
        short = clip(label)
        tip = label if short != label else ""
        parts.append(draw_line(x, plot.bottom, x, plot.bottom + 4, AXIS))
        if rotated:
            y = plot.bottom + 16
            parts.append(draw_text(x, y, short, anchor="end", fill=MUTED, rotate=-45, tip=tip))
        else:
            parts.append(
                draw_text(x, plot.bottom + 19, short, anchor="middle", fill=MUTED, tip=tip)
            )


def draw_legend(items: dict[str, str], y: float, line: bool) -> tuple[list[str], float]:
    parts, x, row = [], 16.0, 0
    for name, color in items.items():
        label = clip(name, 24)
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
        parts.append(draw_text(x + 21, cy, label, fill=TEXT, tip=name if label != name else ""))
        x += w
    return parts, (row + 1) * 18.0


def frame(
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
) -> tuple[list[str], Plot, float]:
    """Title, legend, grid, axis labels and titles; returns them, the plot and the height."""
    parts = [draw_text(16, 24, title, size=16, weight="600")]
    top = 46.0
    if legend:
        legend_parts, legend_h = draw_legend(legend, 48, legend_line)
        parts += legend_parts
        top = 52 + legend_h
    tick_text = tick_labels(ticks, percent)
    left = 16 + (20 if y_label else 0) + max((len(s) for s in tick_text), default=1) * CHAR_W + 8
    width = WIDTH - left - 20
    slot = width / max(1, len(x_labels) - 1 if edges else len(x_labels))
    rotated, step, band = x_layout(x_labels, slot, rotate)
    plot = Plot(left, top, width, PLOT_HEIGHT, lo, hi, slot)
    for t, s in zip(ticks, tick_text, strict=True):
        y = plot.y(t)
        parts.append(draw_line(left, y, left + width, y, GRID))
        parts.append(draw_text(left - 8, y + 4, s, anchor="end", fill=MUTED))
    base = plot.y(0.0 if lo < 0 < hi else lo)
    parts.append(draw_line(left, base, left + width, base, AXIS))
    if y_label:
        mid = plot.top + plot.height / 2
        parts.append(draw_text(20, mid, y_label, anchor="middle", rotate=-90))
    draw_x_labels(parts, plot, x_labels, rotated, step, edges)
    height = plot.bottom + band + 10
    if x_title:
        parts.append(draw_text(left + width / 2, height + 4, x_title, anchor="middle"))
        height += 18
    return parts, plot, height


# -- charts -------------------------------------------------------------------------------
