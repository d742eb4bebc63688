"""Each runner's own report, read test by test, from a real run in the sandbox: go test's
JSON, cargo test's lines and node's TAP (pytest's JUnit and unittest's hook are in
test_suite_gate.py). Each project has a passing, a failing and a skipped test."""

from __future__ import annotations

from pathlib import Path

import pytest

from phases.suite import discover_test_command
from phases.suite.gate import project_run
from phases.suite.results import SuiteResults, read_results
from tests.support import phase_context, write_files

pytestmark = pytest.mark.e2e


def first_run(ws: Path, records: Path) -> SuiteResults:
    command = discover_test_command(ws)
    assert command
    return project_run(phase_context(ws, records=records), command)


def test_go_test_json_names_each_test_of_each_package(tmp_path):
    ws = write_files(
        tmp_path / "ws",
        {
            "go.mod": "module example.com/calc\n\ngo 1.19\n",
            "calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
            "calc_test.go": """package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("2 + 3")
	}
}

func TestBroken(t *testing.T) {
	t.Errorf("Add(1, 1) = %d, want 3", Add(1, 1))
}

func TestLater(t *testing.T) {
	t.Skip("not yet")
}
""",
        },
    )
    found = first_run(ws, tmp_path / "records")
    assert found.command == "go test ./..."
    assert found.report == "go", found.tail
    assert found.tests == {
        "example.com/calc::TestAdd": "passed",
        "example.com/calc::TestBroken": "failed",
        "example.com/calc::TestLater": "skipped",
    }
    assert "want 3" in found.messages["example.com/calc::TestBroken"]


def test_cargo_test_lines_name_each_test_of_each_binary(tmp_path):
    ws = write_files(
        tmp_path / "ws",
        {
            "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": """pub fn add(a: i32, b: i32) -> i32 { a + b }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() { assert_eq!(add(2, 3), 5); }

    #[test]
    fn broken() { assert_eq!(add(1, 1), 3); }

    #[test]
    #[ignore]
    fn later() {}
}
""",
            "tests/outside.rs": "#[test]\nfn from_outside() { assert_eq!(calc::add(1, 2), 3); }\n",
        },
    )
    found = first_run(ws, tmp_path / "records")
    assert found.report == "cargo", found.tail
    assert found.tests["unittests src/lib.rs::tests::adds"] == "passed"
    assert found.tests["unittests src/lib.rs::tests::broken"] == "failed"
    assert found.tests["unittests src/lib.rs::tests::later"] == "skipped"
    # the integration binary runs only when the unit tests passed: fix them and run again
    (ws / "src" / "lib.rs").write_text(
        (ws / "src" / "lib.rs").read_text().replace("add(1, 1), 3", "add(1, 1), 2")
    )
    again = first_run(ws, tmp_path / "records")
    assert again.tests["tests/outside.rs::from_outside"] == "passed"
    assert again.ran() == 3


def test_node_test_tap_names_nested_tests_and_skips(tmp_path):
    ws = write_files(
        tmp_path / "ws",
        {
            "package.json": '{"name": "calc", "version": "1.0.0", "type": "module", '
            '"scripts": {"test": "node --test"}}\n',
            "calc.js": "export const add = (a, b) => a + b;\n",
            "test/calc.test.js": """import test from "node:test";
import assert from "node:assert/strict";
import { add } from "../calc.js";

test("add", async (t) => {
  await t.test("small numbers", () => assert.equal(add(2, 3), 5));
  await t.test("broken", () => assert.equal(add(1, 1), 3));
});

test("later", { skip: "not yet" }, () => {});
""",
        },
    )
    found = first_run(ws, tmp_path / "records")
    assert found.command == "npm test"
    assert found.report == "tap", found.tail
    assert found.tests["add > small numbers"] == "passed"
    assert found.tests["add > broken"] == "failed"
    assert found.tests["add"] == "failed"
    assert found.tests["later"] == "skipped"


def test_tape_style_tap_names_assertions_by_their_section(tmp_path):
    """tape prints ``# name`` then one point per assertion, often with the same message."""
    (tmp_path / "output.txt").write_text(
        "TAP version 13\n# parses flags\nok 1 should be equal\nok 2 should be equal\n"
        "# parses numbers\nnot ok 3 should be equal\n  ---\n  ...\nok 4 # SKIP later\n\n"
        "1..4\n# tests 4\n# pass  2\n# fail  1\n"
    )
    found = read_results(tmp_path)
    assert found.report == "tap"
    assert found.tests == {
        "parses flags > should be equal": "passed",
        "parses flags > should be equal #2": "passed",
        "parses numbers > should be equal": "failed",
        "parses numbers > (unnamed)": "skipped",
    }


def test_output_without_a_report_gives_no_results(tmp_path):
    (tmp_path / "output.txt").write_text("ok  \texample.com/calc\t0.01s\ntests ok\n")
    assert read_results(tmp_path).report == ""


def test_long_lines_a_project_prints_cost_no_more_than_their_length(tmp_path):
    """A test's output is the model's: lines of spaces that once made the TAP and cargo
    patterns backtrack (a quadratic match per line) are read in linear time."""
    import time

    spaces = " " * 200_000  # 20,000 took the old patterns 1.5 to 3 s a line
    (tmp_path / "output.txt").write_text(
        f"TAP version 13\nok x{spaces}y\nnot ok 1 - a{spaces}b\nRunning x{spaces}y\n"
        f"test x{spaces}y\nnot ok 2 - real {spaces[:100]}# SKIP\nok 3 - kept\n1..3\n"
    )
    started = time.perf_counter()
    found = read_results(tmp_path)
    assert time.perf_counter() - started < 2
    assert found.report == "tap"
    assert found.tests == {"real": "skipped", "kept": "passed"}
