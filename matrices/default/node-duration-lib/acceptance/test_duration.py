"""Hidden checks for node-duration-lib: the module imported by `node -e`, answering in JSON.

Each check sends a batch of calls (a function's name and its arguments as JavaScript source)
to one `node` process, which imports `duration.mjs` from the project root and prints, per
call, the value returned or the kind of error thrown."""

import json
import os
import subprocess

ROOT = os.getcwd()
SCRIPT = r"""
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
let lib;
try {
  lib = await import(pathToFileURL(resolve("duration.mjs")).href);
} catch (e) {
  process.stderr.write(`duration.mjs cannot be imported: ${e.message}`);
  process.exit(3);
}
const kind = (e) =>
  e instanceof RangeError ? "RangeError" : e instanceof TypeError ? "TypeError" : `other: ${e}`;
const out = JSON.parse(process.argv[1]).map(([name, args]) => {
  try {
    return { value: lib[name](...new Function(`return [${args}];`)()) };
  } catch (e) {
    return { error: kind(e) };
  }
});
process.stdout.write(JSON.stringify(out));
"""


def _calls(name, *args):
    """What `name` gives for each JavaScript argument list: a value, or {"error": kind}."""
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", SCRIPT, json.dumps([[name, a] for a in args])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr[:500]
    return [r["value"] if "value" in r else {"error": r["error"]} for r in json.loads(proc.stdout)]


RANGE, TYPE = {"error": "RangeError"}, {"error": "TypeError"}


def test_parse_units_and_plain_seconds():
    got = _calls("parseDuration", '"1h30m"', '"2d3s"', '"0s"', '"90"', '"90m"', '"1d1h1m1s"')
    assert got == [5400, 172803, 0, 90, 5400, 90061]


def test_parse_refuses_other_forms():
    bad = ['""', '" 1h"', '"1h "', '"1h 30m"', '"30m1h"', '"1h1h"', '"-5s"', '"1.5h"', '"3w"',
           '"2H"', '"h"', '"1hm"', '"+3"', '"1e3"']  # fmt: skip
    assert _calls("parseDuration", *bad) == [RANGE] * len(bad)


def test_parse_refuses_what_is_not_a_string():
    assert _calls("parseDuration", "90", "null", "undefined", '["1h"]') == [TYPE] * 4


def test_format_is_canonical():
    got = _calls("formatDuration", "5400", "3600", "86401", "90061", "0", "59", "60", "172800")
    assert got == ["1h30m", "1h", "1d1s", "1d1h1m1s", "0s", "59s", "1m", "2d"]


def test_humanize_words_and_joins():
    got = _calls("humanize", "90061", "3660", "0", "1", "2", "86400", "7322", "172861")
    assert got == [
        "1 day, 1 hour, 1 minute and 1 second",
        "1 hour and 1 minute",
        "0 seconds",
        "1 second",
        "2 seconds",
        "1 day",
        "2 hours, 2 minutes and 2 seconds",
        "2 days, 1 minute and 1 second",
    ]


def test_format_and_humanize_refuse_bad_numbers():
    for name in ("formatDuration", "humanize"):
        got = _calls(name, "-1", "1.5", "Infinity", "NaN", '"60"', "null")
        assert got == [RANGE, RANGE, RANGE, RANGE, TYPE, TYPE], name


def test_sum_adds_and_formats():
    got = _calls("sumDurations", '["1h", "30m", "45m", "15"]', "[]", '["1d", "23h59m59s", "1"]')
    assert got == ["2h15m15s", "0s", "2d"]


def test_sum_refuses_bad_input():
    assert _calls("sumDurations", '"1h"', '["1h", "bad"]', '["1h", 5]') == [TYPE, RANGE, TYPE]
