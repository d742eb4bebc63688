import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

import colsum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SALES = "region,amount\nnorth,10\nsouth,60\n east ,\nwest,25.5\nnorth,35\n"


def run_main(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = colsum.main(args)
    return status, out.getvalue()


class ColumnValuesTest(unittest.TestCase):
    def test_blank_cells_are_skipped(self):
        rows = [{"n": "1"}, {"n": "  "}, {"n": " 2.5 "}]
        self.assertEqual(colsum.column_values(rows, "n"), [1.0, 2.5])


class SummarizeTest(unittest.TestCase):
    def test_summary(self):
        summary = colsum.summarize([10.0, 60.0, 25.5, 35.0])
        self.assertEqual(
            summary, {"count": 4, "sum": 130.5, "mean": 32.625, "min": 10.0, "max": 60.0}
        )

    def test_format_number(self):
        self.assertEqual(colsum.format_number(4.0), "4")
        self.assertEqual(colsum.format_number(32.625), "32.625")
        self.assertEqual(colsum.format_number(1 / 3), "0.3333")


class CommandLineTest(unittest.TestCase):
    def test_a_file(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "sales.csv")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(SALES)
            status, out = run_main([path, "--column", "amount"])
        self.assertEqual(status, 0)
        self.assertEqual(
            out.splitlines(),
            ["count\t4", "sum\t130.5", "mean\t32.625", "min\t10", "max\t60"],
        )

    def test_standard_input_and_delimiter(self):
        done = subprocess.run(
            [
                sys.executable,
                os.path.join(ROOT, "colsum.py"),
                "-",
                "--column",
                "b",
                "--delimiter",
                ";",
            ],
            input="a;b\nx;2\ny;4\n",
            capture_output=True,
            text=True,
            timeout=20,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.splitlines()[:2], ["count\t2", "sum\t6"])


if __name__ == "__main__":
    unittest.main()
