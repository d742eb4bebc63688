"""A minimist-shaped Node package for enhance tests, and a scripted model that changes it.

What made minimist's change hold an 8,583-line ``package-lock.json``, ``.nyc_output/``
and ``coverage/``: the package has no lock file and ignores none of them, cadillac's own
``npm install`` writes the lock, and its test script writes coverage after the tests (as
``nyc`` does). ``honest`` adds ``clamp`` with a test; its change must be those two files.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.real_shapes import call, finish, git, playing

TASK = "add clamp(x, lo, hi) to index.js, with a test"
COVER = """const fs = require("node:fs");
fs.mkdirSync("coverage", { recursive: true });
fs.writeFileSync("coverage/lcov.info", "TN:\\nSF:index.js\\nend_of_record\\n");
fs.mkdirSync(".nyc_output", { recursive: true });
fs.writeFileSync(".nyc_output/out.json", "{}\\n");
"""
FILES = {
    "package.json": json.dumps(
        {
            "name": "mini",
            "version": "1.2.8",
            "main": "index.js",
            "scripts": {"test": "node --test test/ && node scripts/cover.js"},
            "license": "MIT",
        },
        indent=2,
    )
    + "\n",
    "index.js": """module.exports = { parse };

function parse(args) {
  const out = { _: [] };
  for (const arg of args) {
    const m = /^--([^=]+)=(.*)$/.exec(arg);
    if (m) out[m[1]] = m[2];
    else out._.push(arg);
  }
  return out;
}
""",
    "test/parse.test.js": """const test = require("node:test");
const assert = require("node:assert");
const { parse } = require("../index.js");

test("flags", () => {
  assert.deepStrictEqual(parse(["--a=1", "x"]), { _: ["x"], a: "1" });
});

test("nothing", () => {
  assert.deepStrictEqual(parse([]), { _: [] });
});
""",
    "scripts/cover.js": COVER,
    "README.md": "# mini\n\nParse arguments.\n",
}


def make_mini(path: Path) -> Path:
    for name, text in FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "-m", "mini")
    return path


PLAN = {
    "summary": "clamp(x, lo, hi) in index.js, tested",
    "stack": ["node", "javascript"],
    "files": ["index.js", "test/clamp.test.js"],
    "dependencies": [],
    "test_command": "npm test",
    "run_command": "node -e \"process.exit(require('./index.js').clamp(5, 0, 3) === 3 ? 0 : 1)\"",
}
STORIES = {
    "stories": [
        {
            "kind": "cli",
            "name": "clamp",
            "argv": ["node", "-e", "console.log(require('./index.js').clamp(5, 0, 3))"],
            "stdout": {"equals": "3\n"},
        }
    ]
}
EXPORTS = "module.exports = { parse };\n"
CLAMP = "\nfunction clamp(x, lo, hi) {\n  return Math.min(hi, Math.max(lo, x));\n}\n"
CLAMP_TEST = """const test = require("node:test");
const assert = require("node:assert");
const { clamp } = require("../index.js");

test("clamp", () => {
  assert.strictEqual(clamp(5, 0, 3), 3);
  assert.strictEqual(clamp(-1, 0, 3), 0);
});
"""
TURNS = {
    "plan": [
        [
            call("write_file", path="PLAN.md", content="# clamp\n\nOne function, one test.\n"),
            call("write_file", path="plan.json", content=json.dumps(PLAN, indent=2)),
            call("write_file", path="stories.json", content=json.dumps(STORIES, indent=2)),
        ],
        [finish("plan.json lists the two files")],
    ],
    "deps": [[finish("no dependency changes")]],
    "scaffold": [
        [call("write_file", path="test/clamp.test.js", content=CLAMP_TEST)],
        [finish("the test of clamp exists")],
    ],
    "build": [
        [
            call(
                "edit_file",
                path="index.js",
                old=EXPORTS,
                new="module.exports = { parse, clamp };\n",
            ),
            call(
                "edit_file",
                path="index.js",
                old="  return out;\n}\n",
                new="  return out;\n}\n" + CLAMP,
            ),
        ],
        [finish("clamp implemented and tested")],
    ],
    "integrate": [[finish("the smoke run calls clamp")]],
    "validate": [[finish("the suite and the smoke run pass")]],
}
honest = playing(TURNS)
