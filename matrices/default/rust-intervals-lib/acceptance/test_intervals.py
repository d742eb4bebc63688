"""Hidden checks for rust-intervals-lib: a hidden integration test, compiled against the crate.

The crate is copied to a temporary folder (the project itself is not changed), the Rust tests
below are written to its ``tests/`` folder, and ``cargo test --offline`` runs them once; each
check here is one of those Rust tests."""

import os
import re
import shutil
import subprocess
import tempfile

ROOT = os.getcwd()
NAME = "cadillac_hidden"
RUST_TESTS = r"""
use intervals::IntervalSet;

fn set(pairs: &[(i64, i64)]) -> IntervalSet {
    let mut s = IntervalSet::new();
    for &(a, b) in pairs {
        s.insert(a, b);
    }
    s
}

#[test]
fn new_is_empty() {
    let s = IntervalSet::new();
    assert!(s.is_empty());
    assert_eq!(s.intervals(), Vec::<(i64, i64)>::new());
    assert_eq!(s.covered(), 0);
    assert_eq!(s, IntervalSet::default());
    assert_eq!(s.to_string(), "{}");
}

#[test]
fn insert_merges_overlapping_and_touching() {
    let s = set(&[(10, 20), (1, 3), (3, 5), (15, 25), (30, 31)]);
    assert_eq!(s.intervals(), vec![(1, 5), (10, 25), (30, 31)]);
    let bridged = set(&[(0, 2), (4, 6), (8, 10), (1, 9)]);
    assert_eq!(bridged.intervals(), vec![(0, 10)]);
    assert!(!bridged.is_empty());
}

#[test]
fn empty_ranges_change_nothing() {
    let mut s = set(&[(5, 5), (7, 3)]);
    assert!(s.is_empty());
    s.insert(1, 4);
    s.remove(2, 2);
    s.remove(3, 1);
    assert_eq!(s.intervals(), vec![(1, 4)]);
}

#[test]
fn contains_is_half_open() {
    let s = set(&[(-5, 0), (3, 4)]);
    let inside: Vec<i64> = (-7..6).filter(|&x| s.contains(x)).collect();
    assert_eq!(inside, vec![-5, -4, -3, -2, -1, 3]);
}

#[test]
fn remove_trims_and_splits() {
    let mut s = set(&[(0, 10), (20, 30)]);
    s.remove(3, 5);
    assert_eq!(s.intervals(), vec![(0, 3), (5, 10), (20, 30)]);
    s.remove(8, 25);
    assert_eq!(s.intervals(), vec![(0, 3), (5, 8), (25, 30)]);
    s.remove(-100, 100);
    assert!(s.is_empty());
}

#[test]
fn covered_counts_integers() {
    let s = set(&[(1, 5), (3, 8), (10, 12), (-1_000_000_000_000_000, -999_999_999_999_990)]);
    assert_eq!(s.covered(), 7 + 2 + 10);
}

#[test]
fn union_and_intersection_leave_both_sets() {
    let a = set(&[(0, 5), (10, 15)]);
    let b = set(&[(3, 12), (20, 22)]);
    assert_eq!(a.union(&b).intervals(), vec![(0, 15), (20, 22)]);
    assert_eq!(a.intersection(&b).intervals(), vec![(3, 5), (10, 12)]);
    assert_eq!(a.intervals(), vec![(0, 5), (10, 15)]);
    assert_eq!(b.intervals(), vec![(3, 12), (20, 22)]);
    assert!(a.intersection(&set(&[(5, 10)])).is_empty());
}

#[test]
fn equal_when_the_same_integers() {
    let a = set(&[(1, 3), (3, 6)]);
    let b = set(&[(4, 6), (1, 4)]);
    assert_eq!(a, b);
    let mut c = a.clone();
    c.remove(2, 3);
    assert_ne!(a, c);
    assert_eq!(a.intervals(), vec![(1, 6)]);
}

#[test]
fn collects_and_displays() {
    let s: IntervalSet = vec![(5, 8), (1, 3), (9, 9)].into_iter().collect();
    assert_eq!(s.intervals(), vec![(1, 3), (5, 8)]);
    assert_eq!(format!("{}", s), "{[1, 3), [5, 8)}");
    assert_eq!(set(&[(-2, 0)]).to_string(), "{[-2, 0)}");
    let _ = format!("{:?}", s);
}
"""
RAN = {}


def _results():
    """Each Rust test's outcome, from one `cargo test` of a copy of the crate."""
    if "tests" not in RAN:
        work = tempfile.mkdtemp()
        crate = os.path.join(work, "crate")
        shutil.copytree(ROOT, crate, ignore=shutil.ignore_patterns("target", ".venv", ".git"))
        os.makedirs(os.path.join(crate, "tests"), exist_ok=True)
        with open(os.path.join(crate, "tests", f"{NAME}.rs"), "w", encoding="utf-8") as handle:
            handle.write(RUST_TESTS)
        done = subprocess.run(
            ["cargo", "test", "--offline", "--test", NAME, "--target-dir",
             os.path.join(work, "target"), "--", "--test-threads", "1"],
            cwd=crate,
            capture_output=True,
            text=True,
            timeout=55,
        )  # fmt: skip
        RAN["tests"] = dict(re.findall(r"^test (\w+) \.\.\. (\w+)$", done.stdout, re.M))
        RAN["output"] = done.stdout + done.stderr
    return RAN["tests"], RAN["output"]


def _expect(name):
    tests, output = _results()
    if name not in tests:
        raise AssertionError(f"the hidden tests did not run: {output[-600:]}")
    if tests[name] != "ok":
        start = output.find(f"---- {name} stdout ----")
        raise AssertionError(output[start : start + 400] if start >= 0 else tests[name])


def test_new_is_empty():
    _expect("new_is_empty")


def test_insert_merges_overlapping_and_touching():
    _expect("insert_merges_overlapping_and_touching")


def test_empty_ranges_change_nothing():
    _expect("empty_ranges_change_nothing")


def test_contains_is_half_open():
    _expect("contains_is_half_open")


def test_remove_trims_and_splits():
    _expect("remove_trims_and_splits")


def test_covered_counts_integers():
    _expect("covered_counts_integers")


def test_union_and_intersection_leave_both_sets():
    _expect("union_and_intersection_leave_both_sets")


def test_equal_when_the_same_integers():
    _expect("equal_when_the_same_integers")


def test_collects_and_displays():
    _expect("collects_and_displays")
