"""The nightly report: what the records under a home say, as report.html and report.md.

Everything is read back from files, never from memory of the run, so
``cadillac report`` can rebuild every report after an upgrade and a report
written half-way through a night is as true as one written at its end:

* each night's ``nightly.json`` and its improve records (``improve/``): the
  matrix score at the start of the night (train and holdout), the proposals
  with their weakness, delta, p-value, builds by stage, decision and diff, tokens and
  cost;
* tonight's per-task pass grid (tasks × repeats of the night's first matrix);
* ``phase_budgets.jsonl``: each phase's p90 of rounds as the history stood at
  the end of each night;
* ``memory.jsonl``: lessons by type and polarity, the confidence spread, the
  most used.

``report.html`` is one self-contained file: inline CSS, charts as inline SVG
(:mod:`orchestrator.nightly.charts`), no script, font or request to the network.
``report.md`` carries the same facts as tables. ``runs/index.html`` links
every night's report, newest first.
"""

from __future__ import annotations

import functools
import json
import time
import warnings
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from memory import LESSON_TYPES, MemoryStore, PhaseBudgets
from orchestrator.home import Home
from orchestrator.nightly import charts
from orchestrator.nightly.records import NightlyRecord, stale_running_becomes_interrupted
from orchestrator.sandbox.files import replace_file
from phases import DEFAULT_ROUNDS, PHASES

TEMPLATES = Path(__file__).with_name("templates")


def _fmt(x: float | None, sign: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def _money(x: float | None) -> str:
    return "unknown" if x is None else f"${x:.2f}"


def _builds(by_stage: dict[str, int] | None) -> str:
    """``10 + 48 + 60`` builds by stage (screen, full, confirm), or a dash."""
    return " + ".join(str(n) for n in (by_stage or {}).values()) or "–"


@functools.cache
def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        num=_fmt,
        signed=lambda x: _fmt(x, sign=True),
        money=_money,
        pvalue=lambda p: "–" if p is None else f"{p:.4f}",
        builds=_builds,
        rounds=lambda x: "–" if x is None else f"{x:g}",
        cell=lambda text: str(text).replace("|", "/"),
    )
    return env


def _render(name: str, **context: Any) -> str:
    return _templates().get_template(name).render(**context)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class NightRecordWarning(UserWarning):
    """A night's nightly.json cannot be read: the night is shown with status unknown."""


_warned: set[tuple[str, int, int]] = set()


def night_record(folder: Path) -> dict[str, Any]:
    """What a night's ``nightly.json`` says, as written (a valid NightlyRecord).

    One that cannot be read (not JSON, not UTF-8, not a night's record) is warned about
    once, naming the file, and stands as a record with only a reason: the night shows
    as status unknown, and its report says why."""
    path = folder / "nightly.json"
    try:
        raw = json.loads(path.read_bytes())
        record = NightlyRecord.model_validate(raw)
        return {**raw, **record.model_dump(include=set(raw))}  # as read, types made sure
    except OSError as exc:
        why = exc.strerror or str(exc)
    except ValueError as exc:  # JSON, UTF-8 and pydantic's ValidationError
        errors = getattr(exc, "errors", None)
        if callable(errors):
            error = errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            why = f"{where}: {error['msg']}" if where else error["msg"]
        else:
            why = str(exc)
    try:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
    except OSError:
        key = (str(path), -1, -1)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(
            f"{path} cannot be read ({why}): its night is shown as status unknown",
            NightRecordWarning,
            stacklevel=2,
        )
    return {"reason": f"nightly.json cannot be read: {why}"}


def night_folders(home: Home) -> list[Path]:
    """Nightly run folders, oldest first."""
    if not home.runs_dir.is_dir():
        return []
    found = [p for p in home.runs_dir.glob("nightly-*") if (p / "nightly.json").is_file()]
    return sorted(found, key=lambda p: night_record(p).get("started", 0))


def _matrix_files(improve: Path) -> list[Path]:
    """Every round of builds a cycle ran (earlier versions: the baseline and candidates)."""
    files = sorted(improve.glob("rounds/*.json")) + sorted(improve.glob("iter-*/rounds/*.json"))
    if not files:
        files = [improve / "baseline.json", *sorted(improve.glob("iter-*/candidate.json"))]
    return [f for f in files if f.is_file()]


def night_facts(folder: Path) -> dict[str, Any]:
    """What one night's records say."""
    record = night_record(folder)
    improve = folder / "improve"
    summary = _json(improve / "summary.json") or {}
    baseline = _json(improve / "baseline.json") or {}
    tokens, cost, builds = 0, None, 0
    for path in _matrix_files(improve):
        for run in (_json(path) or {}).get("runs", []):
            builds += 1
            tokens += run.get("tokens", 0)
            if run.get("cost_usd") is not None:
                cost = (cost or 0.0) + run["cost_usd"]
    iterations = []
    for it in summary.get("iterations", []):
        diff = improve / f"iter-{it['iteration']}" / "patch.diff"
        iterations.append(
            {**it, "diff": diff.read_text(encoding="utf-8") if diff.is_file() else ""}
        )
    label = record.get("date") or folder.name.removeprefix("nightly-")
    if folder.name.count("-") > 3:  # a second run on the same date: nightly-2026-11-29-2
        label = folder.name.removeprefix("nightly-")
    return {
        "folder": folder,
        "label": label,
        "record": record,
        "status": record.get("status", "unknown"),
        "train": baseline.get("train_score"),
        "holdout": baseline.get("holdout_score"),
        "baseline": baseline,
        "flagged": [
            run for run in baseline.get("runs", []) if run.get("verdict") in ("tampered", "broken")
        ],
        "iterations": iterations,
        "tokens": tokens,
        "cost": cost,
        "builds": builds,
        "stopped_because": summary.get("stopped_because", ""),
        "ended": record.get("ended"),
        "lifetime": _lifetime(summary),
    }


def _lifetime(summary: dict) -> dict[str, Any] | None:
    """The repository's lifetime error budget as the night left it (None: not kept, or
    a record of an earlier version)."""
    from orchestrator.improve.lifetime import Lifetime

    try:
        figure = Lifetime.model_validate(summary.get("lifetime"))
    except ValueError:  # absent, or not a figure: the night shows none
        return None
    return {**figure.model_dump(), "sentence": figure.sentence()}


def budget_history(home: Home, ends: list[tuple[str, float]]) -> dict[str, list]:
    """Each phase's p90 of rounds over the history as it stood at each night's end."""
    rows = [r for r in PhaseBudgets(home.budgets_path, DEFAULT_ROUNDS).rows() if r.phase in PHASES]
    out: dict[str, list] = {phase: [] for phase in PHASES}
    for label, end in ends:
        for phase in PHASES:
            rounds = [r.rounds for r in rows if r.phase == phase and r.ts <= end]
            out[phase].append((label, float(np.percentile(rounds, 90)) if rounds else None))
    return out


def lesson_facts(home: Home) -> dict[str, Any]:
    lessons = MemoryStore(home.memory_path).all() if home.memory_path.exists() else []
    by = Counter((x.type, x.polarity) for x in lessons)
    return {
        "count": len(lessons),
        "types": list(LESSON_TYPES),
        "do": [by[(t, "do")] for t in LESSON_TYPES],
        "dont": [by[(t, "dont")] for t in LESSON_TYPES],
        "confidence": [x.confidence for x in lessons],
        "top": sorted(lessons, key=lambda x: (-x.used, -x.confidence))[:10],
    }


def gather(home: Home, folder: Path) -> dict[str, Any]:
    folders = night_folders(home)
    if folder not in folders:
        folders.append(folder)
    upto = [night_facts(f) for f in folders[: folders.index(folder) + 1]]
    tonight = upto[-1]
    ends = [(n["label"], n["ended"] or time.time()) for n in upto]
    return {
        "tonight": tonight,
        "nights": upto,
        "budgets": budget_history(home, ends),
        "lessons": lesson_facts(home),
        "generated": datetime.now().strftime("%Y-%m-%d %H:%M"),
    }


def _grid(baseline: dict) -> tuple[list[str], list[str], list[list[float | None]]]:
    runs = baseline.get("runs", [])
    tasks = sorted({r["task_id"] for r in runs})
    repeats = max([r["repeat"] for r in runs], default=-1) + 1
    values: list[list[float | None]] = [[None] * repeats for _ in tasks]
    for r in runs:
        values[tasks.index(r["task_id"])][r["repeat"]] = r["score"]
    return tasks, [f"#{i + 1}" for i in range(repeats)], values


def render_html(data: dict[str, Any]) -> str:
    t, nights, lessons = data["tonight"], data["nights"], data["lessons"]
    accepted = sum(1 for it in t["iterations"] if it["status"] == "accepted")
    cards = [
        (_fmt(t["train"]), "train score at start"),
        (_fmt(t["holdout"]), "holdout score at start"),
        (f"{accepted} / {len(t['iterations'])}", "patches accepted / tried"),
        (f"{t['tokens']:,}", "tokens"),
        (_money(t["cost"]), "cost"),
        (str(lessons["count"]), "lessons in memory"),
    ]
    if t["lifetime"] is not None:
        cards.append((f"≤ {t['lifetime']['spent']:.2%}", "chance any patch kept so far is noise"))
    tasks, cols, values = _grid(t["baseline"])
    drawn = {
        "score": charts.line_chart(
            "Matrix score at the start of each night",
            {
                "train": [(n["label"], n["train"]) for n in nights],
                "holdout": [(n["label"], n["holdout"]) for n in nights],
            },
            y_label="score",
            y_min=0.0,
            y_max=1.0,
            percent=True,
        ),
        "grid": charts.pass_grid(
            "Share of hidden checks passed (start of night)", tasks, cols, values
        ),
        "budgets": charts.line_chart(
            "p90 rounds per phase, history as of each night", data["budgets"], y_label="rounds"
        ),
        "lesson_types": charts.stacked_bars(
            "Lessons by type",
            lessons["types"],
            {"do": lessons["do"], "dont": lessons["dont"]},
            y_label="lessons",
        ),
        "confidence": charts.histogram(
            "Confidence of lessons",
            lessons["confidence"],
            bins=10,
            lo=0.0,
            hi=1.0,
            x_label="confidence",
        ),
        "tokens": charts.bar_chart(
            "Tokens per night",
            [(n["label"], float(n["tokens"])) for n in nights],
            y_label="tokens",
            value_format="{:,.0f}",
        ),
        "lifetime": charts.line_chart(
            "Lifetime error budget spent by the end of each night",
            {
                "spent": [(n["label"], (n["lifetime"] or {}).get("spent")) for n in nights],
                "budget": [(n["label"], (n["lifetime"] or {}).get("budget")) for n in nights],
            },
            y_label="alpha",
            y_min=0.0,
        ),
        "cost": charts.bar_chart(
            "Cost per night (USD)",
            [(n["label"], float(n["cost"] or 0.0)) for n in nights],
            y_label="USD",
            value_format="{:.2f}",
        ),
    }
    return _render(
        "report.html",
        t=t,
        cards=cards,
        lessons=lessons,
        generated=data["generated"],
        charts={name: Markup(svg) for name, svg in drawn.items()},
    )


def render_md(data: dict[str, Any]) -> str:
    t, nights, lessons = data["tonight"], data["nights"], data["lessons"]
    tasks, cols, values = _grid(t["baseline"])
    budget_rows = [
        (n["label"], [data["budgets"][phase][i][1] for phase in PHASES])
        for i, n in enumerate(nights)
    ]
    conf = lessons["confidence"]
    return _render(
        "report.md",
        t=t,
        nights=nights,
        lessons=lessons,
        grid={"columns": cols, "rows": list(zip(tasks, values, strict=True))},
        phases=PHASES,
        budget_rows=budget_rows,
        confidence_mean=float(np.mean(conf)) if conf else 0.0,
        confidence_median=float(np.median(conf)) if conf else 0.0,
    )


def night_summary(folder: Path) -> dict[str, Any]:
    """One night as ``cadillac report --json`` lists it."""
    facts = night_facts(folder)
    record = facts["record"]
    return {
        "folder": str(folder),
        "label": facts["label"],
        "status": facts["status"],
        "reason": record.get("reason") or facts["stopped_because"],
        "started": record.get("started"),
        "ended": facts["ended"],
        "model": record.get("model"),
        "improver_model": record.get("improver_model"),
        "improve_id": record.get("improve_id"),
        "train": facts["train"],
        "holdout": facts["holdout"],
        "tried": len(facts["iterations"]),
        "accepted": sum(1 for it in facts["iterations"] if it.get("status") == "accepted"),
        "builds": facts["builds"],
        "tokens": facts["tokens"],
        "cost_usd": facts["cost"],
        "lifetime": facts["lifetime"],
        "report_html": str(folder / "report.html"),
        "report_md": str(folder / "report.md"),
    }


def write_reports(home: Home, folder: Path) -> None:
    """report.html and report.md of one night, then the index."""
    data = gather(home, folder)
    replace_file(folder / "report.html", render_html(data), durable=False)
    replace_file(folder / "report.md", render_md(data), durable=False)
    write_index(home)


def write_index(home: Home) -> Path:
    nights = []
    for folder in reversed(night_folders(home)):
        facts = night_facts(folder)
        facts["accepted"] = sum(1 for it in facts["iterations"] if it["status"] == "accepted")
        nights.append(facts)
    home.runs_dir.mkdir(parents=True, exist_ok=True)
    path = home.runs_dir / "index.html"
    replace_file(path, _render("index.html", nights=nights), durable=False)
    return path


def rebuild_all(home: Home) -> list[Path]:
    """Every night's report and the index, from the records (after an upgrade, say)."""
    stale_running_becomes_interrupted(home)
    folders = night_folders(home)
    for folder in folders:
        write_reports(home, folder)
    write_index(home)
    return folders
