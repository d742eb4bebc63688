import doctest
import unittest

from durations import core, format_duration, parse_duration


class ParseTest(unittest.TestCase):
    def test_units(self):
        self.assertEqual(parse_duration("90s"), 90)
        self.assertEqual(parse_duration("15m"), 900)
        self.assertEqual(parse_duration("1h30m"), 5400)
        self.assertEqual(parse_duration("2d 4h"), 187_200)

    def test_case_spaces_and_bare_numbers(self):
        self.assertEqual(parse_duration(" 1H 5M 3S "), 3903)
        self.assertEqual(parse_duration("45"), 45)

    def test_bad_durations(self):
        for text in ["", "  ", "1x", "1h1h", "30m1h", "h", "-5s"]:
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_duration(text)


class FormatTest(unittest.TestCase):
    def test_compact_form(self):
        self.assertEqual(format_duration(5400), "1h30m")
        self.assertEqual(format_duration(93_784), "1d2h3m4s")
        self.assertEqual(format_duration(86_400), "1d")
        self.assertEqual(format_duration(0), "0s")

    def test_round_trip(self):
        for seconds in [1, 59, 61, 3599, 3600, 90_061, 1_000_000]:
            self.assertEqual(parse_duration(format_duration(seconds)), seconds)

    def test_negative(self):
        with self.assertRaises(ValueError):
            format_duration(-1)


class DocTest(unittest.TestCase):
    def test_the_examples_in_the_docstrings(self):
        result = doctest.testmod(core)
        self.assertEqual(result.failed, 0)


if __name__ == "__main__":
    unittest.main()
