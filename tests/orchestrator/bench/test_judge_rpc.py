"""The judge's wire to the project (:mod:`orchestrator.bench.judge_rpc`), driven against a
real child process that imports a small project.

The judge compares what the project answers, so what matters is that answers arrive as
plain data rebuilt by the standard library, that a remote exception is caught as the check
expects, that the judge's own process never imports the project, and that a child which
dies or writes garbage fails the pending call instead of answering it.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import os
import sys
import textwrap

import pytest

from orchestrator.bench.acceptance_runner import Judge, rpc  # the runner's own copy of the wire

PROJECT = '''
import os


class CalcError(ValueError):
    """The project's own error, a ValueError."""


class Box:
    def __init__(self, value):
        self.value = value


def echo(value):
    return value


def box(value):
    return Box(value)


def fail(kind):
    if kind == "calc":
        raise CalcError("bad input", 7)
    if kind == "key":
        raise KeyError("missing")
    raise RuntimeError(kind)


def apply(function, value):
    return function(value)


def judges_globals(function):
    return function.__globals__


def die():
    os._exit(3)


def garble():
    for fd in range(3, 64):
        try:
            os.write(fd, b"this is not a message\\n")
        except OSError:
            pass
    return 1
'''


@pytest.fixture
def project(tmp_path):
    """A child that imports ``proj`` from a project folder, and the module as a proxy."""
    (tmp_path / "proj.py").write_text(textwrap.dedent(PROJECT))
    judge = Judge(sys.executable, str(tmp_path))
    module = judge.live().request("import", n="proj")
    yield module
    if judge.peer is not None:
        judge.peer.die("the test ended")


VALUES = [
    None, True, 3, -(10**30), 2.5, float("inf"), "text", [1, "a"], (1, (2, 3)), {1, 2},
    frozenset({"x"}), {"a": [1], 2: None}, b"\x00bytes", bytearray(b"ba"), 1 + 2j,
    decimal.Decimal("1.10"), fractions.Fraction(1, 3), datetime.timedelta(days=1, seconds=2),
    datetime.datetime(2026, 12, 4, 6, 0, tzinfo=datetime.UTC), datetime.date(2026, 1, 2),
    datetime.time(6, 30),
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_tagged_type_comes_back_as_itself(project, value):
    back = project.echo(value)
    assert back == value and type(back) is type(value)


def test_a_nan_comes_back_as_a_nan(project):
    back = project.echo(float("nan"))
    assert type(back) is float and back != back


def test_an_object_of_the_project_stays_there_and_is_used_through_a_proxy(project):
    remote = project.box(5)
    assert type(remote) is rpc.Proxy
    assert remote.value == 5


@pytest.mark.parametrize(
    "data",
    [
        {"P": "gASVBAAAAAAAAACMAXiULg=="},  # a pickle: no such tag
        {"zz": 1},
        {"L": [1], "T": [2]},
        [1, 2],
        {"Bt": "print"},  # a builtin that is not a class
        {"Fr": ["x", 1]},
    ],
)
def test_anything_but_the_tags_is_refused(data):
    peer = rpc.Peer(rpc.Wire(-1, -1), judge=True)
    with pytest.raises(rpc.ChildGone):
        peer.decode(data)


def test_a_message_nested_too_deep_is_refused():
    data: object = 1
    for _ in range(rpc.MAX_DEPTH * 3):
        data = {"L": [data]}
    with pytest.raises(rpc.ChildGone, match="too deep"):
        rpc.Peer(rpc.Wire(-1, -1), judge=True).decode(data)


def test_a_message_past_the_size_limit_is_refused(monkeypatch):
    monkeypatch.setattr(rpc, "MAX_MESSAGE", 1000)
    read, write = os.pipe()
    try:
        os.write(write, b"x" * 5000)
        with pytest.raises(rpc.ChildGone, match="size limit"):
            rpc.Wire(read, -1).receive()
    finally:
        os.close(read)
        os.close(write)


def test_a_remote_exception_is_caught_as_its_class_and_its_builtin_base(project):
    with pytest.raises(ValueError) as first:
        project.fail("calc")
    assert type(first.value).__name__ == "CalcError" and first.value.args == ("bad input", 7)
    with pytest.raises(ValueError) as second:
        project.fail("calc")
    assert type(second.value) is type(first.value)  # one local class per remote class
    assert isinstance(second.value, project.CalcError)
    with pytest.raises(KeyError) as key:
        project.fail("key")
    assert type(key.value) is KeyError  # a builtin comes back as itself


def test_a_callback_of_the_judge_is_called_by_the_child(project):
    seen = []

    def double(value):
        seen.append(value)
        return value * 2

    assert project.apply(double, 21) == 42
    assert seen == [21]


def test_the_child_cannot_reach_the_judge_s_globals(project):
    with pytest.raises(AttributeError):
        project.judges_globals(lambda value: value)


def test_a_child_that_exits_in_a_call_fails_it(project):
    with pytest.raises(rpc.ChildGone):
        project.die()


def test_a_child_that_writes_garbage_fails_the_call(project):
    with pytest.raises(rpc.ChildGone):
        project.garble()


def test_the_judge_s_process_never_imports_the_project(project, tmp_path):
    assert project.echo(1) == 1 and project.box(2).value == 2
    assert "proj" not in sys.modules
    assert not [
        m
        for m in list(sys.modules.values())
        if str(getattr(m, "__file__", "") or "").startswith(str(tmp_path))
    ]
