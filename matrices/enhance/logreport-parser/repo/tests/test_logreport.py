import contextlib
import io
import os
import tempfile
import unittest
from datetime import datetime

from logreport import Entry, ParseError, main, parse_line, parse_lines, render, summarize

LOG = """# a sample
2024-05-01T10:00:00 GET /index.html 200 40ms
2024-05-01T10:01:00 POST /report 201 300ms

2024-05-01T10:02:30 GET /index.html 200 40ms
2024-05-01T10:03:10 GET /health 503 25ms
"""


class ParseTest(unittest.TestCase):
    def test_a_line(self):
        entry = parse_line("2024-05-01T10:00:00 GET /index.html 200 12ms")
        self.assertEqual(entry, Entry(datetime(2024, 5, 1, 10), "GET", "/index.html", 200, 12))

    def test_blank_and_comment_lines(self):
        self.assertIsNone(parse_line("   \n"))
        self.assertIsNone(parse_line("# comment"))

    def test_bad_lines_name_their_number(self):
        bad = [
            "2024-05-01T10:00:00 GET /x 200",
            "yesterday GET /x 200 1ms",
            "2024-05-01T10:00:00 FETCH /x 200 1ms",
            "2024-05-01T10:00:00 GET x 200 1ms",
            "2024-05-01T10:00:00 GET /x 700 1ms",
            "2024-05-01T10:00:00 GET /x 200 1s",
        ]
        for line in bad:
            with self.subTest(line=line), self.assertRaises(ParseError) as caught:
                parse_line(line, 7)
            self.assertEqual(caught.exception.line_no, 7)
            self.assertTrue(str(caught.exception).startswith("line 7: "))

    def test_lines(self):
        entries = parse_lines(LOG.splitlines())
        self.assertEqual(
            [e.path for e in entries], ["/index.html", "/report", "/index.html", "/health"]
        )
        with self.assertRaisesRegex(ParseError, "^line 2: "):
            parse_lines(["", "nonsense"])


class ReportTest(unittest.TestCase):
    def test_summary(self):
        summary = summarize(parse_lines(LOG.splitlines()), top=2)
        self.assertEqual(summary["requests"], 4)
        self.assertEqual(summary["statuses"], {"2xx": 3, "5xx": 1})
        self.assertEqual(summary["mean_ms"], 101.2)
        self.assertEqual(summary["slowest"], [("/report", 300.0), ("/index.html", 40.0)])

    def test_an_empty_log(self):
        self.assertEqual(render(summarize([])), "requests: 0\nmean duration: 0.0 ms")

    def test_the_command(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "access.log")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(LOG)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(main([path, "--top", "2"]), 0)
        self.assertIn("slow: /report 300.0 ms\nslow: /index.html 40.0 ms", out.getvalue())


if __name__ == "__main__":
    unittest.main()
