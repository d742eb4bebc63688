"""``cadillac enhance`` on real projects, as a user would run it, with a scripted change.

Each project's source distribution is fetched by pip when the benchmark runs (nothing of
it is committed), unpacked, made a git repository (one commit, tagged with its version,
as a clone of it would be), and enhanced by a scripted model that makes a small, correct
change: a function appended to one of its modules and a test file for it, with the
project's own test command as the plan's. ``--mode breaking`` makes a change that breaks
one of the project's tests instead; the build must be refused.

For each project it prints whether the build passed, the wall time and where it went
(cadillac's install, the first run of the suite, each phase), what the suite's first run
found (the runner's report, tests run and failing), and the input tokens of each phase's
requests (litellm's ``token_counter`` for ``--model``, its bundled tokenizer). ``--json``
writes the figures as one JSON object.

    .venv/bin/python benchmarks/enhance_real.py [--projects slugify,more-itertools,...]
        [--mode honest|breaking] [--keep DIR] [--json OUT]

Django's whole suite takes most of an hour on two cores, and enhance runs it three times
(first, after build, at validate); the benchmark gives it a part of its suite with
``--test-cmd`` (``DJANGO_TESTS``), as a user of a large project would.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list

DJANGO_TESTS = "python tests/runtests.py --parallel 2 utils_tests"


@dataclass
class Change:
    """A small change to one project: a function appended to ``module`` and a test file."""

    module: str
    function: str
    test_file: str
    test: str
    breaking: tuple[str, str, str]
    """(file, old, new): an edit that breaks one of the project's own tests."""
    story: tuple[str, str] = ("print('ok')", "ok")
    """A user story the plan fixes: Python code run with ``python -c``, and what it prints."""
    test_command: str | None = None
    """Given as --test-cmd (None: cadillac finds the project's own)."""


PROJECTS: dict[str, tuple[str, Change]] = {
    "python-slugify": (
        "python-slugify==9.2.0",
        Change(
            module="slugify/slugify.py",
            function='''

def slugify_words(text: str) -> list[str]:
    """The words of ``text``'s slug."""
    return [word for word in slugify(text).split("-") if word]
''',
            test_file="tests/test_slugify_words.py",
            test="""from slugify.slugify import slugify_words


def test_words():
    assert slugify_words("Hello, World!") == ["hello", "world"]
""",
            story=(
                "from slugify.slugify import slugify_words; print(slugify_words('A b'))",
                "['a', 'b']",
            ),
            breaking=(
                "slugify/slugify.py",
                "    return _modern_slugify(",
                "    return 'x' or _modern_slugify(",
            ),
        ),
    ),
    "more-itertools": (
        "more-itertools==11.2.1",
        Change(
            module="more_itertools/recipes.py",
            function='''

def _pairs_sum(iterable):
    """The sums of each pair of neighbours."""
    return [a + b for a, b in pairwise(iterable)]
''',
            test_file="tests/test_pairs_sum.py",
            test="""from unittest import TestCase

from more_itertools.recipes import _pairs_sum


class PairsSumTests(TestCase):
    def test_sums(self):
        self.assertEqual(_pairs_sum([1, 2, 3]), [3, 5])
""",
            story=(
                "from more_itertools.recipes import _pairs_sum; print(_pairs_sum([1, 2, 3]))",
                "[3, 5]",
            ),
            breaking=(
                "more_itertools/recipes.py",
                "def take(n, iterable):\n",
                "def take(n, iterable):\n    n = n + 1\n",
            ),
        ),
    ),
    "humanize": (
        "humanize==4.17.0",
        Change(
            module="src/humanize/number.py",
            function='''

def double(value: float) -> float:
    """Twice ``value``."""
    return 2 * value
''',
            test_file="tests/test_double.py",
            test="""from humanize.number import double


def test_double():
    assert double(2.5) == 5
""",
            story=("from humanize.number import double; print(double(2))", "4"),
            breaking=(
                "src/humanize/number.py",
                "    digit = 0 if value % 100 in (11, 12, 13) else value % 10",
                "    digit = value % 10",
            ),
        ),
    ),
    "tomlkit": (
        "tomlkit==0.15.3",
        Change(
            module="tomlkit/api.py",
            function='''

def keys_of(text: str) -> list[str]:
    """The top-level keys of a TOML document."""
    return list(parse(text).keys())
''',
            test_file="tests/test_keys_of.py",
            test="""from tomlkit.api import keys_of


def test_keys_of():
    assert keys_of('a = 1\\n[b]\\nc = 2\\n') == ["a", "b"]
""",
            story=("from tomlkit.api import keys_of; print(keys_of('a = 1'))", "['a']"),
            breaking=(
                "tomlkit/api.py",
                "            return data.as_string()\n\n",
                "            return data.as_string().strip()\n\n",
            ),
        ),
    ),
    "django": (
        "Django==5.2.19",
        Change(
            module="django/utils/text.py",
            function='''

def word_count(value):
    """The number of words in ``value``."""
    return len(str(value).split())
''',
            test_file="tests/utils_tests/test_word_count.py",
            test="""from django.test import SimpleTestCase
from django.utils.text import word_count


class WordCountTests(SimpleTestCase):
    def test_words(self):
        self.assertEqual(word_count("a few  words"), 3)
""",
            story=("from django.utils.text import word_count; print(word_count('a b'))", "2"),
            breaking=(
                "django/utils/text.py",
                '    return re_newlines.sub("\\n", str(text))',
                "    return str(text)",
            ),
            test_command=DJANGO_TESTS,
        ),
    ),
}
ALIASES = {"slugify": "python-slugify", "more_itertools": "more-itertools"}
TASK = "Add the small helper described in the plan, with a test"


def fetch(spec: str, cache: Path) -> Path:
    """The source distribution of ``spec``, downloaded by pip into ``cache`` (once)."""
    name, version = spec.split("==")
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for found in cache.glob("*.tar.gz"):
        if found.name.lower().startswith(f"{stem}-{version}"):
            return found
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--dest",
            str(cache),
            spec,
        ],
        check=True,
    )
    return next(f for f in cache.glob("*.tar.gz") if f.name.lower().startswith(f"{stem}-{version}"))


def repository(archive: Path, where: Path, version: str) -> Path:
    """The archive unpacked into ``where`` as a git repository tagged ``v<version>``."""
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    repo = next(p for p in where.iterdir() if p.is_dir())
    (repo / ".gitignore").write_text(".venv/\nnode_modules/\n__pycache__/\n*.egg-info/\n.tox/\n")
    run = dict(cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)
    subprocess.run(["git", "add", "-A"], **run)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@example.com",
            "commit",
            "-q",
            "-m",
            "sdist",
        ],
        **run,
    )
    subprocess.run(["git", "tag", f"v{version}"], **run)
    return repo


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def policy_for(repo: Path, change: Change, mode: str):
    """The scripted model: plan, then the change at build (the others only finish)."""
    from tests.fakes.real_shapes import playing

    text = (repo / change.module).read_text()
    tail = text[-min(len(text), 120) :]
    command = change.test_command
    plan = {
        "summary": "a small helper and its test",
        "stack": ["python"],
        "files": [change.module, change.test_file],
        "dependencies": [],
        "test_command": command or "PROJECT",
        "run_command": "true",
    }
    code, printed = change.story
    stories = {
        "stories": [
            {
                "kind": "cli",
                "name": "the-helper",
                "argv": ["python", "-c", code],
                "stdout": {"equals": printed + "\n"},
            }
        ]
    }
    finish = [call("finish_phase", summary="done", applied_lessons=[])]
    build = [call("edit_file", path=change.module, old=tail, new=tail + change.function)]
    if mode == "breaking":
        path, old, new = change.breaking
        build.append(call("edit_file", path=path, old=old, new=new))
    turns = {
        "plan": [
            [
                call("write_file", path="PLAN.md", content="# the change\n\nA helper, tested.\n"),
                call("write_file", path="stories.json", content=json.dumps(stories)),
            ],
            finish,
        ],
        "deps": [finish],
        "scaffold": [[call("write_file", path=change.test_file, content=change.test)], finish],
        "build": [build, finish],
        "integrate": [finish],
        "validate": [finish],
    }
    plays = playing(turns)

    def policy(messages, tools):
        answer = plays(messages, tools)
        system = messages[0]["content"] if messages else ""
        if isinstance(answer, dict) and "# Phase: plan" in system and len(messages) <= 2:
            said = "\n".join(str(m.get("content", "")) for m in messages)
            project = re.search(r"The project's own test command: (.*?); its tests", said)
            wanted = dict(plan)
            if wanted["test_command"] == "PROJECT":
                wanted["test_command"] = project.group(1) if project else "python -m pytest -q"
            answer["tool_calls"].append(
                call("write_file", path="plan.json", content=json.dumps(wanted))
            )
        return answer

    return policy


def tokens_by_phase(run: Path, model: str) -> dict[str, dict[str, int]]:
    """Each phase's requests: how many, and their input tokens (litellm's counter)."""
    import litellm

    from orchestrator.llm.client import logged_requests

    out: dict[str, dict[str, int]] = {}
    if not (run / "llm.jsonl").exists():
        return out
    for _, messages in logged_requests(run / "llm.jsonl"):
        system = messages[0].get("content", "") if messages else ""
        found = re.search(r"^# Phase: (\w+)", str(system), re.M)
        phase = found.group(1) if found else "other"
        row = out.setdefault(phase, {"requests": 0, "input_tokens": 0, "largest": 0})
        tokens = litellm.token_counter(model=model, messages=messages)
        row["requests"] += 1
        row["input_tokens"] += tokens
        row["largest"] = max(row["largest"], tokens)
    return out


def one(
    name: str, spec: str, change: Change, mode: str, cache: Path, work: Path, model: str
) -> dict:
    from orchestrator.cli import main
    from orchestrator.llm.backends import register_script

    version = spec.split("==")[1]
    repo = repository(fetch(spec, cache), work / name, version)
    home = work / f"{name}-home"
    script = f"bench-{name}-{mode}"
    register_script(script, policy_for(repo, change, mode))
    argv = [
        "enhance",
        str(repo),
        TASK,
        "--model",
        f"scripted:{script}",
        "--quiet",
        "--home",
        str(home),
    ]
    if change.test_command:
        argv += ["--test-cmd", change.test_command]
    started = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - started
    if code == 130:  # Ctrl-C or SIGTERM stopped the build: stop the benchmark too
        raise KeyboardInterrupt
    runs = sorted((home / "runs").glob("*/summary.json"))
    summary = json.loads(runs[-1].read_text()) if runs else {}
    run = runs[-1].parent if runs else None
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()] if run else []
    installed = next((e["data"] for e in events if e["kind"] == "baseline_deps"), {})
    first = next((e["data"] for e in events if e["kind"] == "baseline_tests"), {})
    task = json.loads((run / "task.json").read_text()) if run else {}
    return {
        "project": name,
        "spec": spec,
        "mode": mode,
        "exit": code,
        "status": summary.get("status", "no run"),
        "reason": summary.get("reason", ""),
        "wall_s": round(wall, 1),
        "test_command": (task.get("baseline") or {}).get("test_command"),
        "install_s": installed.get("seconds"),
        "install": installed.get("summary", ""),
        "first_run": {k: first.get(k) for k in ("report", "ran", "passed", "seconds")}
        | {"failed": len(first.get("failed") or [])},
        "phases": {
            p["phase"]: {"outcome": p["outcome"], "rounds": p["rounds"], "seconds": p["seconds"]}
            for p in summary.get("phases", [])
        },
        "changed": summary.get("changed", []),
        "left_out": summary.get("left_out", []),
        "tokens": tokens_by_phase(run, model) if run else {},
    }


def show(row: dict) -> None:
    head = f"{row['project']} ({row['spec']}, {row['mode']})"
    print(f"\n== {head}: {row['status']} in {row['wall_s']} s")
    print(f"   test command: {row['test_command']}")
    print(f"   install before the first phase: {row['install_s']} s: {row['install'][:200]}")
    print(f"   first run: {row['first_run']}")
    for phase, p in row["phases"].items():
        t = row["tokens"].get(phase, {})
        print(
            f"   {phase:<9} {p['outcome']:<17} {p['rounds']:>3} rounds {p['seconds']:>8.1f} s"
            f"   {t.get('requests', 0):>3} requests, {t.get('input_tokens', 0):>8,} input tokens"
            f" (largest {t.get('largest', 0):,})"
        )
    print(f"   changed: {row['changed']}; left out: {row['left_out'][:6]}")
    if row["status"] != "passed":
        print(f"   reason: {row['reason'][:300]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", default=",".join(PROJECTS))
    parser.add_argument("--mode", choices=("honest", "breaking"), default="honest")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp folder)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "sdists")
    parser.add_argument("--model", default="gpt-4o", help="whose tokenizer counts the tokens")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    names = [ALIASES.get(n.strip(), n.strip()) for n in args.projects.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        print(
            f"enhance_real: unknown project(s) {unknown}; known: {', '.join(PROJECTS)}",
            file=sys.stderr,
        )
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="cadillac-enhance-real-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        spec, change = PROJECTS[name]
        row = one(name, spec, change, args.mode, args.cache, work, args.model)
        show(row)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(f"\nwork folder: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
