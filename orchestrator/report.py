"""The nightly report: what the records under a home say, as report.html and report.md.

Everything is read back from files, never from memory of the run, so
``cadillac report`` can rebuild every report after an upgrade and a report
written half-way through a night is as true as one written at its end:

* each night's ``nightly.json`` and its improve records (``improve/``): the
  matrix score at the start of the night (train and holdout), the proposals
  with their weakness, delta, interval, decision and diff, tokens and cost;
* tonight's per-task pass grid (tasks × repeats of the night's first matrix);
* ``phase_budgets.jsonl``: each phase's p90 of rounds as the history stood at
  the end of each night;
* ``memory.jsonl``: lessons by type and polarity, the confidence spread, the
  most used.

``report.html`` is one self-contained file: inline CSS, charts as inline SVG
(:mod:`orchestrator.charts`), no script, font or request to the network.
``report.md`` carries the same facts as tables. ``runs/index.html`` links
every night's report, newest first.
"""

from __future__ import annotations

import html
import json
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory import LESSON_TYPES, MemoryStore, PhaseBudgets
from orchestrator import charts
from orchestrator.home import Home
from phases import PHASES

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2937;margin:0;
background:#f9fafb;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:1.6rem;margin:0 0 4px}h2{font-size:1.2rem;margin:32px 0 8px;border-bottom:1px solid
#e5e7eb;padding-bottom:4px}.sub{color:#6b7280;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}.card{background:#fff;border:1px solid
#e5e7eb;border-radius:8px;padding:12px 16px;min-width:150px}.card b{display:block;font-size:1.4rem}
.card span{color:#6b7280;font-size:.85rem}
.grid2{display:grid;grid-template-columns:1fr;gap:16px}
.panel{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.9rem}th,td{border-bottom:1px
solid #e5e7eb;padding:6px 8px;text-align:left;vertical-align:top}th{background:#f3f4f6}
.accepted{color:#15803d;font-weight:600}.rejected{color:#b91c1c;font-weight:600}
.no_proposal{color:#6b7280}.status-running{color:#b45309}.status-interrupted{color:#b91c1c}
.status-finished{color:#15803d}details{margin:6px 0}pre{background:#0f172a;color:#e2e8f0;
padding:10px;border-radius:6px;overflow-x:auto;font-size:.8rem}.add{color:#86efac}.del{color:#fca5a5}
@media (min-width:1600px){.grid2{grid-template-columns:1fr 1fr}}
"""


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def night_folders(home: Home) -> list[Path]:
    """Nightly run folders, oldest first."""
    if not home.runs_dir.is_dir():
        return []
    found = [p for p in home.runs_dir.glob("nightly-*") if (p / "nightly.json").is_file()]
    return sorted(found, key=lambda p: (_json(p / "nightly.json") or {}).get("started", 0))


def _matrix_files(improve: Path) -> list[Path]:
    files = [improve / "baseline.json"]
    files += sorted(improve.glob("iter-*/candidate.json"))
    return [f for f in files if f.is_file()]


def night_facts(folder: Path) -> dict[str, Any]:
    """What one night's records say."""
    record = _json(folder / "nightly.json") or {}
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
        "iterations": iterations,
        "tokens": tokens,
        "cost": cost,
        "builds": builds,
        "stopped_because": summary.get("stopped_because", ""),
        "ended": record.get("ended"),
    }


def budget_history(home: Home, ends: list[tuple[str, float]]) -> dict[str, list]:
    """Each phase's p90 of rounds over the history as it stood at each night's end."""
    rows = [r for r in PhaseBudgets(home.budgets_path).rows() if r.phase in PHASES]
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


def _money(x: float | None) -> str:
    return "unknown" if x is None else f"${x:.2f}"


def _fmt(x: float | None, sign: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def _grid(baseline: dict) -> tuple[list[str], list[str], list[list[float | None]]]:
    runs = baseline.get("runs", [])
    tasks = sorted({r["task_id"] for r in runs})
    repeats = max([r["repeat"] for r in runs], default=-1) + 1
    values: list[list[float | None]] = [[None] * repeats for _ in tasks]
    for r in runs:
        values[tasks.index(r["task_id"])][r["repeat"]] = r["score"]
    return tasks, [f"#{i + 1}" for i in range(repeats)], values


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        text = html.escape(line)
        lines.append(f'<span class="{cls}">{text}</span>' if cls else text)
    return "<pre>" + "\n".join(lines) + "</pre>"


def render_html(data: dict[str, Any]) -> str:
    t, nights, lessons = data["tonight"], data["nights"], data["lessons"]
    rec = t["record"]
    status = t["status"]
    accepted = sum(1 for it in t["iterations"] if it["status"] == "accepted")
    cards = [
        (_fmt(t["train"]), "train score at start"),
        (_fmt(t["holdout"]), "holdout score at start"),
        (f"{accepted} / {len(t['iterations'])}", "patches accepted / tried"),
        (f"{t['tokens']:,}", "tokens"),
        (_money(t["cost"]), "cost"),
        (str(lessons["count"]), "lessons in memory"),
    ]
    h = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width,initial-scale=1'>",
        f"<title>cadillac nightly {html.escape(t['label'])}</title><style>{STYLE}</style></head>",
        "<body><main>",
        f"<h1>cadillac nightly — {html.escape(t['label'])}</h1>",
        f"<p class=sub>status <b class='status-{html.escape(status)}'>{html.escape(status)}</b>"
        f" · {html.escape(rec.get('reason') or t['stopped_because'] or '')}"
        f" · model {html.escape(rec.get('model', '?'))}, improver "
        f"{html.escape(rec.get('improver_model', '?'))} · generated {data['generated']}</p>",
        "<div class=cards>"
        + "".join(
            f"<div class=card><b>{html.escape(v)}</b><span>{k}</span></div>" for v, k in cards
        )
        + "</div>",
        "<h2>Matrix score, night by night</h2><div class=panel>",
        charts.line_chart(
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
        "</div>",
    ]
    tasks, cols, values = _grid(t["baseline"])
    h += [
        "<h2>Tonight's builds, task by task</h2><div class=panel>",
        charts.pass_grid("Share of hidden checks passed (start of night)", tasks, cols, values),
        "</div>",
    ]
    h.append("<h2>Proposals tonight</h2>")
    if not t["iterations"]:
        h.append("<p>No iteration finished yet.</p>")
    else:
        h.append(
            "<table><tr><th>iter</th><th>weakness</th><th>decision</th><th>train Δ</th>"
            "<th>95% interval</th><th>holdout Δ</th><th>reason</th></tr>"
        )
        for it in t["iterations"]:
            iv = it.get("interval")
            interval = "–" if not iv else f"{iv[0]:+.3f} .. {iv[1]:+.3f}"
            h.append(
                f"<tr><td>{it['iteration']}</td><td>{html.escape(it.get('weakness') or '–')}</td>"
                f"<td class={it['status']}>{it['status']}</td>"
                f"<td>{_fmt(it.get('train_delta'), True)}</td><td>{interval}</td>"
                f"<td>{_fmt(it.get('holdout_delta'), True)}</td>"
                f"<td>{html.escape(it.get('reason', ''))}</td></tr>"
            )
        h.append("</table>")
        for it in t["iterations"]:
            if it["diff"]:
                h.append(
                    f"<details><summary>iteration {it['iteration']}: the patch</summary>"
                    f"{_diff_html(it['diff'])}</details>"
                )
    h += [
        "<h2>Phase budgets (p90 of rounds) over time</h2><div class=panel>",
        charts.line_chart(
            "p90 rounds per phase, history as of each night", data["budgets"], y_label="rounds"
        ),
        "</div><h2>Lessons</h2><div class=grid2><div class=panel>",
        charts.stacked_bars(
            "Lessons by type",
            lessons["types"],
            {"do": lessons["do"], "dont": lessons["dont"]},
            y_label="lessons",
        ),
        "</div><div class=panel>",
        charts.histogram(
            "Confidence of lessons",
            lessons["confidence"],
            bins=10,
            lo=0.0,
            hi=1.0,
            x_label="confidence",
        ),
        "</div></div>",
        "<table><tr><th>most used</th><th>type</th><th>used</th><th>confidence</th></tr>",
    ]
    for x in lessons["top"]:
        mark = "NEVER: " if x.polarity == "dont" else ""
        h.append(
            f"<tr><td>{html.escape(mark + x.trigger[:140])}</td><td>{x.type}</td>"
            f"<td>{x.used}</td><td>{x.confidence:.2f}</td></tr>"
        )
    h += [
        "</table><h2>Tokens and cost per night</h2><div class=grid2><div class=panel>",
        charts.bar_chart(
            "Tokens per night",
            [(n["label"], float(n["tokens"])) for n in nights],
            y_label="tokens",
            value_format="{:,.0f}",
        ),
        "</div><div class=panel>",
        charts.bar_chart(
            "Cost per night (USD)",
            [(n["label"], float(n["cost"] or 0.0)) for n in nights],
            y_label="USD",
            value_format="{:.2f}",
        ),
        "</div></div></main></body></html>",
    ]
    return "\n".join(h)


def render_md(data: dict[str, Any]) -> str:
    t, nights, lessons = data["tonight"], data["nights"], data["lessons"]
    rec = t["record"]
    out = [
        f"# cadillac nightly — {t['label']}",
        "",
        f"Status: **{t['status']}** — {rec.get('reason') or t['stopped_because'] or ''}",
        f"Model {rec.get('model', '?')}, improver {rec.get('improver_model', '?')}; "
        f"{t['builds']} builds, {t['tokens']:,} tokens, cost {_money(t['cost'])}.",
        "",
        "## Matrix score, night by night",
        "",
        "| night | status | train | holdout |",
        "| --- | --- | --- | --- |",
    ]
    out += [
        f"| {n['label']} | {n['status']} | {_fmt(n['train'])} | {_fmt(n['holdout'])} |"
        for n in nights
    ]
    tasks, cols, values = _grid(t["baseline"])
    out += [
        "",
        "## Tonight's builds, task by task",
        "",
        "| task | " + " | ".join(cols) + " |",
        "| --- |" + " --- |" * len(cols),
    ]
    out += [
        f"| {task} | " + " | ".join(_fmt(v) for v in row) + " |"
        for task, row in zip(tasks, values, strict=True)
    ]
    out += ["", "## Proposals tonight", ""]
    if not t["iterations"]:
        out.append("No iteration finished yet.")
    else:
        out += [
            "| iter | weakness | decision | train Δ | 95% interval | holdout Δ | reason |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for it in t["iterations"]:
            iv = it.get("interval")
            interval = "–" if not iv else f"{iv[0]:+.3f} .. {iv[1]:+.3f}"
            reason = (it.get("reason") or "").replace("|", "/")
            out.append(
                f"| {it['iteration']} | {it.get('weakness') or '–'} | {it['status']} | "
                f"{_fmt(it.get('train_delta'), True)} | {interval} | "
                f"{_fmt(it.get('holdout_delta'), True)} | {reason} |"
            )
        for it in t["iterations"]:
            if it["diff"]:
                out += [
                    "",
                    f"### Iteration {it['iteration']}: the patch",
                    "",
                    "```diff",
                    it["diff"].rstrip(),
                    "```",
                ]
    out += [
        "",
        "## Phase budgets (p90 of rounds)",
        "",
        "| night | " + " | ".join(PHASES) + " |",
        "| --- |" + " --- |" * len(PHASES),
    ]
    for i, n in enumerate(nights):
        cells = [data["budgets"][p][i][1] for p in PHASES]
        out.append(
            f"| {n['label']} | " + " | ".join("–" if c is None else f"{c:g}" for c in cells) + " |"
        )
    out += [
        "",
        "## Lessons",
        "",
        f"{lessons['count']} lessons.",
        "",
        "| type | do | dont |",
        "| --- | --- | --- |",
    ]
    out += [
        f"| {ty} | {d} | {n} |"
        for ty, d, n in zip(lessons["types"], lessons["do"], lessons["dont"], strict=True)
    ]
    conf = lessons["confidence"]
    if conf:
        out.append(f"\nConfidence: mean {np.mean(conf):.2f}, median {np.median(conf):.2f}.")
    out += ["", "| most used | used | confidence |", "| --- | --- | --- |"]
    out += [
        f"| {x.trigger[:100].replace('|', '/')} | {x.used} | {x.confidence:.2f} |"
        for x in lessons["top"]
    ]
    out += [
        "",
        "## Tokens and cost per night",
        "",
        "| night | builds | tokens | cost |",
        "| --- | --- | --- | --- |",
    ]
    out += [
        f"| {n['label']} | {n['builds']} | {n['tokens']:,} | {_money(n['cost'])} |" for n in nights
    ]
    return "\n".join(out) + "\n"


def write_reports(home: Home, folder: Path) -> None:
    """report.html and report.md of one night, then the index."""
    data = gather(home, folder)
    (folder / "report.html").write_text(render_html(data), encoding="utf-8")
    (folder / "report.md").write_text(render_md(data), encoding="utf-8")
    write_index(home)


def write_index(home: Home) -> Path:
    rows = []
    for folder in reversed(night_folders(home)):
        facts = night_facts(folder)
        rows.append(
            f"<tr><td><a href='{folder.name}/report.html'>{html.escape(facts['label'])}</a></td>"
            f"<td class='status-{facts['status']}'>{facts['status']}</td>"
            f"<td>{_fmt(facts['train'])}</td><td>{_fmt(facts['holdout'])}</td>"
            f"<td>{sum(1 for it in facts['iterations'] if it['status'] == 'accepted')}</td></tr>"
        )
    page = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>cadillac nightly runs"
        f"</title><style>{STYLE}</style></head><body><main><h1>cadillac nightly runs</h1>"
        "<table><tr><th>night</th><th>status</th><th>train</th><th>holdout</th>"
        "<th>accepted</th></tr>" + "".join(rows) + "</table></main></body></html>"
    )
    home.runs_dir.mkdir(parents=True, exist_ok=True)
    path = home.runs_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def rebuild_all(home: Home) -> list[Path]:
    """Every night's report and the index, from the records (after an upgrade, say)."""
    from orchestrator.nightly import stale_running_becomes_interrupted

    stale_running_becomes_interrupted(home)
    folders = night_folders(home)
    for folder in folders:
        write_reports(home, folder)
    write_index(home)
    return folders
