"""The report's SVG charts: well-formed, and their marks give back exactly the data drawn."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from orchestrator.nightly.charts import bar_chart, histogram, line_chart, pass_grid, stacked_bars

SVG = "{http://www.w3.org/2000/svg}"
DECIMAL = re.compile(r"-?\d+(\.\d+)?")
NASTY = 'a<b & "c">'

SAMPLES = {
    "line": lambda: line_chart("t", {"train": [("d1", 0.5), ("d2", 0.75)]}),
    "bar": lambda: bar_chart("t", [("a", 1.0), ("b", 2.5)]),
    "stacked": lambda: stacked_bars("t", ["x", "y"], {"do": [1, 2], "dont": [3, 0]}),
    "histogram": lambda: histogram("t", [0.1, 0.5, 0.9]),
    "grid": lambda: pass_grid("t", ["task"], ["r1", "r2"], [[0.0, 1.0]]),
}
EMPTY = {
    "line": lambda: line_chart("t", {}),
    "line of gaps": lambda: line_chart("t", {"train": [("d1", None), ("d2", float("nan"))]}),
    "bar": lambda: bar_chart("t", []),
    "stacked": lambda: stacked_bars("t", [], {}),
    "stacked without stacks": lambda: stacked_bars("t", ["x"], {}),
    "histogram": lambda: histogram("t", []),
    "grid": lambda: pass_grid("t", [], [], []),
}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def marks(root: ET.Element) -> list[ET.Element]:
    return [e for e in root.iter() if e.get("class") == "mark"]


def rows(root: ET.Element) -> list[tuple[str, str, str]]:
    return [(m.get("data-series"), m.get("data-x"), m.get("data-y")) for m in marks(root)]


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter(SVG + "text")]


@pytest.mark.parametrize("kind", SAMPLES)
def test_every_chart_is_a_scalable_svg_whose_marks_have_tooltips(kind):
    root = parse(SAMPLES[kind]())
    assert root.tag == SVG + "svg"
    assert re.fullmatch(r"0 0 \d+ \d+", root.get("viewBox"))
    assert root.get("width") == "100%" and "system-ui" in root.get("font-family")
    assert marks(root)
    for m in marks(root):
        assert m.find(SVG + "title").text
        assert m.get("data-y") == "" or DECIMAL.fullmatch(m.get("data-y"))


@pytest.mark.parametrize("kind", EMPTY)
def test_empty_input_draws_a_frame_saying_no_data_yet(kind):
    root = parse(EMPTY[kind]())
    assert "no data yet" in texts(root)
    assert root.get("viewBox") and marks(root) == []


def test_line_marks_give_back_every_point_exactly():
    train = [("d1", 0.625), ("d2", 1 / 3), ("d3", 1e-7), ("d4", 2.0)]
    holdout = [("d2", np.float64(0.5)), ("d5", -12345.5)]
    root = parse(line_chart("scores", {"train": train, "holdout": holdout}))
    got = rows(root)
    assert [(s, x) for s, x, _ in got] == [("train", x) for x, _ in train] + [
        ("holdout", x) for x, _ in holdout
    ]
    assert [float(y) for _, _, y in got] == [v for _, v in train + holdout]
    assert [y for _, _, y in got][::2] == ["0.625", "0.0000001", "0.5"]
    assert {"train", "holdout"} <= set(texts(root))  # the legend


def test_shared_x_labels_keep_their_first_seen_order():
    root = parse(line_chart("t", {"a": [("d2", 1), ("d3", 2)], "b": [("d1", 1), ("d2", 2)]}))
    cx = {(m.get("data-series"), m.get("data-x")): float(m.get("cx")) for m in marks(root)}
    assert cx["a", "d2"] == cx["b", "d2"]
    assert cx["a", "d2"] < cx["a", "d3"] < cx["b", "d1"]


def test_a_none_point_is_a_gap_without_a_mark():
    points = [("d1", 0.2), ("d2", None), ("d3", 0.4), ("d4", 0.5)]
    root = parse(line_chart("t", {"train": points}))
    assert [x for _, x, _ in rows(root)] == ["d1", "d3", "d4"]
    assert len(list(root.iter(SVG + "polyline"))) == 1  # d1 stands alone; d3-d4 is a line


def test_a_single_point_is_a_mark_without_a_line():
    root = parse(line_chart("t", {"train": [("d1", 0.7)]}))
    assert rows(root) == [("train", "d1", "0.7")]
    assert list(root.iter(SVG + "polyline")) == []


def test_percent_ticks_read_zero_to_a_hundred_percent():
    labels = texts(parse(line_chart("t", {"a": [("d1", 0.25), ("d2", 0.5)]}, percent=True)))
    assert "0%" in labels and "100%" in labels
    assert not [s for s in labels if s.endswith("%") and s not in {f"{p}%" for p in range(101)}]


def test_given_y_range_is_the_axis():
    labels = texts(parse(line_chart("t", {"a": [("d1", 3.0), ("d2", 4.0)]}, y_min=0, y_max=10)))
    assert "0" in labels and "10" in labels


def test_bar_marks_give_back_values_and_write_them_above():
    bars = [("mon", 1234.0), ("tue", 0.125), ("wed", 0.0)]
    root = parse(bar_chart("tokens", bars, value_format="{:,.3f}"))
    assert rows(root) == [
        ("tokens", "mon", "1234"),
        ("tokens", "tue", "0.125"),
        ("tokens", "wed", "0"),
    ]
    assert {"1,234.000", "0.125"} <= set(texts(root))


def test_sixty_bars_stay_readable():
    bars = [(f"night {i}", float(i)) for i in range(60)]
    root = parse(bar_chart("t", bars))
    assert [float(y) for _, _, y in rows(root)] == [float(i) for i in range(60)]
    shown = [e for e in root.iter(SVG + "text") if (e.text or "").startswith("night")]
    assert 10 <= len(shown) < 60  # thinned
    assert all("rotate(-45" in e.get("transform") for e in shown)


def test_stacked_segments_are_named_by_stack_and_category():
    root = parse(stacked_bars("lessons", ["tooling", "testing"], {"do": [3, 4], "dont": [1, 0.5]}))
    assert rows(root) == [
        ("do", "tooling", "3"),
        ("do", "testing", "4"),
        ("dont", "tooling", "1"),
        ("dont", "testing", "0.5"),
    ]
    assert "4.5" in texts(root)  # a total


def test_histogram_counts_every_value_in_bins_covering_lo_to_hi():
    values = [0.0, 0.05, 0.3, 0.3, 0.35, 0.99, 1.0, 1.0]
    root = parse(histogram("confidence", values, bins=10))
    got = rows(root)
    assert [x for _, x, _ in got][:4] == ["0–0.1", "0.1–0.2", "0.2–0.3", "0.3–0.4"]
    assert got[0][1].startswith("0–") and got[-1][1].endswith("–1") and len(got) == 10
    counts = dict((x, int(y)) for _, x, y in got)
    assert sum(counts.values()) == len(values)
    assert counts["0.3–0.4"] == 3 and counts["0.9–1"] == 3 and counts["0–0.1"] == 2


def test_histogram_over_another_range_and_its_outliers():
    root = parse(histogram("t", [-5, 10, 20, 30, 40, 99], bins=4, lo=0, hi=40))
    got = rows(root)
    assert [x for _, x, _ in got] == ["0–10", "10–20", "20–30", "30–40"]
    assert sum(int(y) for _, _, y in got) == 4
    assert "2 outside 0–40 not shown" in texts(root)


def test_grid_cells_give_back_values_and_colour_them():
    values = [[0.0, 1.0, None], [0.75]]
    root = parse(pass_grid("passes", ["t1", "t2"], ["r1", "r2", "r3"], values))
    assert rows(root) == [
        ("t1", "r1", "0"),
        ("t1", "r2", "1"),
        ("t1", "r3", ""),
        ("t2", "r1", "0.75"),
        ("t2", "r2", ""),
        ("t2", "r3", ""),
    ]
    fill = [m.get("fill") for m in marks(root)]
    assert len({fill[0], fill[1], fill[2]}) == 3 and fill[2] == fill[4]
    assert {"0.00", "1.00", "0.75", "–"} <= set(texts(root))


def test_labels_with_markup_characters_are_escaped():
    charts = [
        line_chart(NASTY, {NASTY: [(NASTY, 1.0)], "b": [(NASTY, 2.0)]}, y_label=NASTY),
        bar_chart(NASTY, [(NASTY, 1.0)], y_label=NASTY),
        stacked_bars(NASTY, [NASTY], {NASTY: [1.0], "b": [2.0]}),
        histogram(NASTY, [0.5], x_label=NASTY),
        pass_grid(NASTY, [NASTY], [NASTY], [[0.5]]),
    ]
    for svg in charts:
        root = parse(svg)
        assert root.get("aria-label") == NASTY and NASTY in texts(root)
    for svg in charts[:2] + charts[-1:]:
        assert {x for _, x, _ in rows(parse(svg))} == {NASTY}


def test_bad_numbers_do_not_raise():
    parse(line_chart("t", {"a": [("d1", float("inf")), ("d2", 1.0)]}))
    parse(bar_chart("t", [("a", float("nan")), ("b", 2.0)], value_format="{:d}"))
    parse(histogram("t", [0.5], bins=0, lo=1, hi=1))
    parse(pass_grid("t", ["r"], ["c"], [[float("nan")]]))
    parse(bar_chart("t", [("a", 0.0), ("b", 0.0)]))
