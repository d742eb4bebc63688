"""colsum: statistics of one numeric column of a CSV file.

Usage: python colsum.py FILE --column NAME [--delimiter CHAR]

FILE is a CSV file whose first row is a header, or ``-`` for standard input. Blank cells
are skipped. It prints the count, sum, mean, minimum and maximum of the column, one per
line as ``name<TAB>value``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterable
from typing import TextIO


def column_values(rows: Iterable[dict[str, str]], column: str) -> list[float]:
    """The numbers in ``column`` of ``rows`` (as csv.DictReader gives them), blanks skipped."""
    values = []
    for row in rows:
        cell = row[column].strip()
        if cell:
            values.append(float(cell))
    return values


def summarize(values: list[float]) -> dict[str, float]:
    """The count, sum, mean, minimum and maximum of ``values``."""
    total = sum(values)
    return {
        "count": len(values),
        "sum": total,
        "mean": total / len(values),
        "min": min(values),
        "max": max(values),
    }


def format_number(value: float) -> str:
    """A whole number without a decimal point; others rounded to at most 4 decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0")


def read_column(stream: TextIO, column: str, delimiter: str = ",") -> list[float]:
    """The values of ``column`` in the CSV text read from ``stream``."""
    return column_values(csv.DictReader(stream, delimiter=delimiter), column)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Statistics of one column of a CSV file.")
    parser.add_argument("file", help="a CSV file with a header row, or - for standard input")
    parser.add_argument("--column", required=True, help="the name of the column")
    parser.add_argument("--delimiter", default=",", help="the field separator (default: ,)")
    args = parser.parse_args(argv)
    if args.file == "-":
        values = read_column(sys.stdin, args.column, args.delimiter)
    else:
        with open(args.file, newline="", encoding="utf-8") as handle:
            values = read_column(handle, args.column, args.delimiter)
    for name, value in summarize(values).items():
        print(f"{name}\t{format_number(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
