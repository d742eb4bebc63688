"""Hidden checks for semver-lib: parsing, precedence, bumping and constraints."""

import unittest

from semver_tools import Version, max_satisfying, satisfies


class TestParsing(unittest.TestCase):
    def test_parse_fields_and_round_trip(self):
        version = Version.parse("1.22.333-rc.1")
        self.assertEqual((version.major, version.minor, version.patch), (1, 22, 333))
        self.assertEqual(version.prerelease, ("rc", "1"))
        self.assertEqual(str(version), "1.22.333-rc.1")
        self.assertEqual(Version.parse("0.0.1").prerelease, ())

    def test_invalid_versions_raise_value_error(self):
        for text in ["1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.2.3-", "1.2.3+build", "", "v1.2.3"]:
            with self.subTest(text=text), self.assertRaises(ValueError):
                Version.parse(text)

    def test_equality_and_hashing_by_value(self):
        self.assertEqual(Version.parse("1.2.3"), Version.parse("1.2.3"))
        self.assertNotEqual(Version.parse("1.2.3"), Version.parse("1.2.3-a"))
        self.assertEqual(len({Version.parse("2.0.0"), Version.parse("2.0.0")}), 1)


class TestPrecedence(unittest.TestCase):
    def test_semver_spec_order(self):
        ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.2.0",
            "1.10.0",
            "2.0.0",
        ]
        versions = [Version.parse(text) for text in ordered]
        self.assertEqual([str(v) for v in sorted(reversed(versions))], ordered)
        self.assertTrue(versions[0] < versions[1] <= versions[1] < versions[-1])
        self.assertTrue(versions[-1] >= versions[-2] > versions[0])

    def test_bump(self):
        self.assertEqual(str(Version.parse("1.2.3-rc.1").bump("major")), "2.0.0")
        self.assertEqual(str(Version.parse("1.2.3").bump("minor")), "1.3.0")
        self.assertEqual(str(Version.parse("1.2.3").bump("patch")), "1.2.4")
        with self.assertRaises(ValueError):
            Version.parse("1.2.3").bump("build")


def test_satisfies_comparators():
    assert satisfies("1.4.0", ">=1.2.0, <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0,<2.0.0")
    assert satisfies("1.2.3", "==1.2.3")
    assert not satisfies("1.2.3", "!=1.2.3")
    assert satisfies("1.0.0-rc.1", "<1.0.0")
    assert satisfies("3.0.0", ">2.9.9")
    assert satisfies("3.0.0", "<=3.0.0")


def test_caret_and_tilde_ranges():
    assert satisfies("1.9.9", "^1.2.3")
    assert not satisfies("2.0.0", "^1.2.3")
    assert not satisfies("1.2.2", "^1.2.3")
    assert satisfies("0.2.9", "^0.2.3")
    assert not satisfies("0.3.0", "^0.2.3")
    assert satisfies("1.2.9", "~1.2.3")
    assert not satisfies("1.3.0", "~1.2.3")


def test_malformed_constraint_raises():
    for constraint in ["=>1.0.0", ">=1.0", "", "^", "1.0.0 <2.0.0"]:
        try:
            satisfies("1.0.0", constraint)
        except ValueError:
            continue
        raise AssertionError(f"{constraint!r} should raise ValueError")


def test_max_satisfying():
    versions = ["1.2.3", "1.10.0", "1.9.0", "2.0.0", "1.10.0-rc.1"]
    assert max_satisfying(versions, "^1.0.0") == "1.10.0"
    assert max_satisfying(versions, "~1.2.0") == "1.2.3"
    assert max_satisfying(versions, ">=3.0.0") is None
