"""Hidden checks for expr-calc: precedence, number types, errors with positions, the CLI."""

import os
import subprocess
import sys

from exprcalc import CalcError, evaluate

ROOT = os.getcwd()


def _run(*args):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "exprcalc.py"), *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )


def _error(expression, variables=None):
    try:
        value = evaluate(expression, variables)
    except CalcError as error:
        assert isinstance(error, Exception)
        return error
    raise AssertionError(f"{expression!r} gave {value!r} instead of raising CalcError")


def _same(value, expected):
    return value == expected and type(value) is type(expected)


def test_precedence_associativity_and_parentheses():
    cases = {
        "2 + 3 * 4": 14,
        "(2 + 3) * 4": 20,
        "10 - 4 - 3": 3,
        "2 * 3 % 4": 2,
        "100 / 10 / 5": 2.0,
        "((7))": 7,
        "1+2*3-4": 3,
        "\t8 -  2 * (3 - 1)\t": 4,
    }
    for expression, expected in cases.items():
        assert _same(evaluate(expression), expected), (expression, evaluate(expression))


def test_power_is_right_associative_and_binds_tighter_than_unary_minus():
    cases = {
        "2 ** 3 ** 2": 512,
        "-2 ** 2": -4,
        "(-2) ** 2": 4,
        "2 ** -1": 0.5,
        "--3": 3,
        "3 - -2": 5,
        "-3 % 5": 2,
        "2 * -3 ** 2": -18,
        "(2 ** 3) ** 2": 64,
    }
    for expression, expected in cases.items():
        assert _same(evaluate(expression), expected), (expression, evaluate(expression))


def test_int_and_float_rules():
    cases = {
        "7 / 2": 3.5,
        "6 / 3": 2.0,
        "7 % 3": 1,
        "-7 % 3": 2,
        "7 % -3": -2,
        "1.5 * 2": 3.0,
        "2 ** 10": 1024,
        "2.0 ** 2": 4.0,
        "10 - 2.5": 7.5,
        "7.5 % 2": 1.5,
        "4 ** -2": 0.0625,
    }
    for expression, expected in cases.items():
        assert _same(evaluate(expression), expected), (expression, evaluate(expression))


def test_variables():
    variables = {"price": 12, "rate": 0.25, "_n2": 3}
    assert _same(evaluate("price * _n2", variables), 36)
    assert _same(evaluate("price * (1 + rate)", variables), 15.0)
    assert _same(evaluate("-price ** 2", variables), -144)
    assert _same(evaluate("7"), 7) and _same(evaluate("7", None), 7)
    error = _error("price + tax * 2", variables)
    assert (error.message, error.position) == ("unknown variable 'tax'", 8)
    assert str(error) == "unknown variable 'tax' at position 8"


def test_bad_characters():
    error = _error("3 + $")
    assert (error.message, error.position) == ("unexpected character '$'", 4)
    assert str(error) == "unexpected character '$' at position 4"
    assert str(_error("2 = 2")) == "unexpected character '=' at position 2"
    assert str(_error("(1 + ) & 2")) == "unexpected character '&' at position 7"


def test_syntax_errors_name_the_token_or_the_end():
    cases = {
        "1 +": "unexpected end of expression at position 3",
        "": "unexpected end of expression at position 0",
        "   ": "unexpected end of expression at position 3",
        "(1 + 2": "unexpected end of expression at position 6",
        "1 + 2)": "unexpected token ')' at position 5",
        "2 3": "unexpected token '3' at position 2",
        "4 * / 2": "unexpected token '/' at position 4",
        "() + 1": "unexpected token ')' at position 1",
        "2 ** ** 3": "unexpected token '**' at position 5",
        "+3": "unexpected token '+' at position 0",
        "2 x": "unexpected token 'x' at position 2",
    }
    for expression, expected in cases.items():
        assert str(_error(expression)) == expected, (expression, str(_error(expression)))


def test_errors_come_in_token_parse_evaluate_order():
    assert str(_error("1 / 0 + (")) == "unexpected end of expression at position 9"
    assert str(_error("y / 0 ) ?")) == "unexpected character '?' at position 8"
    assert str(_error("y + 1 / 0")) == "unknown variable 'y' at position 0"
    assert str(_error("1 / 0 + y")) == "division by zero at position 2"


def test_division_by_zero():
    cases = {
        "1 / (2 - 2)": "division by zero at position 2",
        "5 % 0": "division by zero at position 2",
        "1 + 2.5 / 0.0": "division by zero at position 8",
        "0 ** -1": "division by zero at position 2",
    }
    for expression, expected in cases.items():
        assert str(_error(expression)) == expected, (expression, str(_error(expression)))
    error = _error("x / y", {"x": 1, "y": 0})
    assert (error.message, error.position) == ("division by zero", 2)


def test_cli_prints_the_result():
    proc = _run("2 + 3 * 4")
    assert (proc.returncode, proc.stdout) == (0, "14\n"), proc.stderr
    proc = _run("x / y", "x=7", "y=2")
    assert (proc.returncode, proc.stdout) == (0, "3.5\n"), proc.stderr
    proc = _run("w * 2 + k", "w=-1.5", "k=3")
    assert (proc.returncode, proc.stdout) == (0, "0.0\n"), proc.stderr
    proc = _run("n ** 2", "n=-3")
    assert (proc.returncode, proc.stdout) == (0, "9\n"), proc.stderr


def test_cli_expression_errors_exit_1():
    proc = _run("1 + # 2")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip() == "error: unexpected character '#' at position 4"
    proc = _run("q * 2")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == "error: unknown variable 'q' at position 0"


def test_cli_malformed_variables_exit_2():
    for bad in ("x", "x=", "x=abc", "1x=2", "x=1.", "=3"):
        proc = _run("x + 1", bad)
        assert proc.returncode == 2, (bad, proc.returncode, proc.stdout)
        assert proc.stderr.startswith("error:"), (bad, proc.stderr)
        assert proc.stdout == "", bad
