"""Drive the built artifact through the plan's user stories, as a user would; print one
signed JSON line: which stories held, what was sent and what came back.

:mod:`phases.stories.runner` runs this script in the sandbox, from the project's folder,
on cadillac's own interpreter with ``-I -S``
(``python -I -S driver.py SETTINGS``: a JSON file naming the stories, the key file, the
project's interpreter and a folder for screenshots), with this folder bound read-only
beside the project. Nothing in its command line, or in what it gives the project, names
cadillac.

What this module decides, and why:

* **It is a judge, built as the acceptance runner is**
  (:mod:`orchestrator.bench.acceptance_runner`, loaded from beside this file): the
  standard library only; the key file read and removed before any project code runs, and
  the result line signed with it (``take_key``, ``signed``), so a line the project prints
  is ignored; not dumpable (``protect``), so no process of the sandbox may read its memory.
  The project's code never runs in this process: every story starts a program, a server
  or a child interpreter, and only what comes back out of it is judged, here.
* **Nothing tells the project it is being driven.** A program gets the argv, stdin and
  environment a user's shell would give it (the sandbox's, the story's own over it); a
  server gets ``PORT`` and requests like curl's (``User-Agent: curl/8.5.0``, ``Accept:
  */*``); there is no header, variable or argument that names cadillac, and the ready
  probe is an ordinary ``GET`` of the story's own path. A project that answers right only
  when it is sure it is watched is wrong where a user would find it wrong.
* **Argv is a list, always.** No story field ever reaches a shell: programs start by
  ``execve`` of the story's argv, stdin and bodies are bytes, headers are values.
* **What a story leaves running dies with it.** This process is a child subreaper, so a
  server's children that leave its process group (``setsid``, a double fork) are still
  ours: after each story the group is killed and so is every process left under us.
* **No story outlasts its limits, whatever the project does.** A program's output (and a
  library call's answer) is read as it is written, the first :data:`READ_BYTES` kept and
  the rest read away (``Drain``): a full pipe never stalls a child, output without end
  never fills this process; a server's answers, however slowly it drips them, end at the
  story's time limit (``fetch_within``); a ``matches`` pattern that backtracks stops after
  :data:`PATTERN_S`.
* Per story, what was sent and what came back are kept (each cut to
  :data:`KEEP_CHARS`); a failing story's ``got`` starts with what did not hold.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import http.client
import http.server
import importlib.util
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEEP_CHARS = 2000
READ_BYTES = 4 * 1024 * 1024
LIBRARY_TIMEOUT_S = 60.0
DRAIN_S = 5.0
"""How long a pipe's reader is waited for once everything that wrote to it is dead."""
PATTERN_S = 5.0
"""The longest a story's ``matches`` pattern may search (one that backtracks without end
fails the story, saying so, and the run goes on)."""
READY_POLL_S = 0.1
PR_SET_CHILD_SUBREAPER = 36
USER_HEADERS = {"User-Agent": "curl/8.5.0", "Accept": "*/*"}
NOT_AVAILABLE = "browser stories are not available"


def load_beside(name: str):
    """A module of the judge's, from beside this file (never from ``sys.path``)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, str(HERE / f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cut(text: str) -> str:
    if len(text) <= KEEP_CHARS:
        return text
    return (
        text[: KEEP_CHARS // 2]
        + f"\n[... {len(text) - KEEP_CHARS:,} chars cut ...]\n"
        + (text[-KEEP_CHARS // 2 :])
    )


def decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# ---------------------------------------------------------------------------- judging
MISSING = object()


def same(want, got) -> bool:
    """JSON equality, with true and 1 told apart."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return want == got
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(same(want[k], got[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(same(a, b) for a, b in zip(want, got, strict=False))
    return type(want) is type(got) and want == got


def at_path(value, path: str):
    """``items.0.title`` of a JSON value; MISSING when it is not there."""
    for part in path.split(".") if path else []:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(value) <= index < len(value):
                return MISSING
            value = value[index]
        else:
            return MISSING
    return value


def search(pattern: str, text: str):
    """``re.search``, stopped (TimeoutError) after :data:`PATTERN_S`: Python's matcher
    checks for signals, so an alarm ends a pattern that backtracks without end."""

    def late(*_) -> None:
        raise TimeoutError

    before = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, PATTERN_S)
    try:
        return re.search(pattern, text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def text_problems(what: str, expect: dict | None, text: str) -> list[str]:
    """What of ``expect`` (a TextExpect) ``text`` does not hold, one line each."""
    if not expect:
        return []
    problems = []
    equals = expect.get("equals")
    if equals is not None and text.rstrip("\n") != equals.rstrip("\n"):
        problems.append(f"{what} is not {equals!r}")
    for part in expect.get("contains") or []:
        if part not in text:
            problems.append(f"{what} does not contain {part!r}")
    pattern = expect.get("matches")
    if pattern is not None:
        try:
            found = search(pattern, text)
        except re.error as exc:
            found, problems = True, [*problems, f"the pattern {pattern!r} is invalid: {exc}"]
        except TimeoutError:
            found = True
            problems.append(f"the pattern {pattern!r} searched {what} past {PATTERN_S:g} s")
        if not found:
            problems.append(f"{what} does not match {pattern!r}")
    paths = expect.get("json") or {}
    if paths:
        try:
            value = json.loads(text)
        except ValueError:
            return [*problems, f"{what} is not JSON"]
        for path, want in paths.items():
            got = at_path(value, path)
            if got is MISSING:
                problems.append(f"{what} has no {path}")
            elif not same(want, got):
                problems.append(f"{what}: {path} is {json.dumps(got)}, not {json.dumps(want)}")
    return problems


def outcome(sent: str, got: str, problems: list[str], screenshot=None) -> dict:
    head = "\n".join(problems)
    return {
        "passed": not problems,
        "sent": cut(sent),
        "got": cut(f"{head}\n{got}" if head else got),
        "screenshot": screenshot,
    }


# ---------------------------------------------------------------------------- processes
def reap_left() -> None:
    """Kill and reap every process left under this one (a subreaper: orphans are ours)."""
    me = str(os.getpid())
    for _ in range(50):
        children = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[1].decode() == me:
                children.append(int(pid))
        if not children:
            return
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def end_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    reap_left()


def start(argv: list[str], root: str, env: dict, **streams) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=root, env=env, start_new_session=True, **streams)


class Drain(threading.Thread):
    """A pipe read to its end as the child writes it, the first :data:`READ_BYTES` kept:
    a child that writes more than the pipe holds never waits on us, and one that writes
    without end never fills this process's memory."""

    def __init__(self, pipe) -> None:
        super().__init__(daemon=True)
        self.pipe, self.data = pipe, b""
        self.start()

    def run(self) -> None:
        with self.pipe:
            self.data = self.pipe.read(READ_BYTES)
            while self.pipe.read(READ_BYTES):
                pass

    def read(self) -> bytes:
        """What was kept, once the writers are gone (waiting at most :data:`DRAIN_S`)."""
        self.join(DRAIN_S)
        return self.data


def feed(pipe, data: bytes) -> None:
    """Write ``data`` to a child's stdin and close it, in the background (a child that does
    not read it, or ends first, is its own business)."""

    def write() -> None:
        with contextlib.suppress(OSError), pipe:
            pipe.write(data)

    threading.Thread(target=write, daemon=True).start()


def user_env(extra: dict) -> dict:
    return {**os.environ, **{str(k): str(v) for k, v in extra.items()}}


# ---------------------------------------------------------------------------- cli
def cli(story: dict, root: str, **_) -> dict:
    argv, stdin = story["argv"], story.get("stdin") or ""
    sent = f"argv: {json.dumps(argv)}\nstdin: {stdin!r}"
    if story.get("env"):
        sent += f"\nenv: {json.dumps(story['env'])}"
    try:
        proc = start(
            argv,
            root,
            user_env(story.get("env") or {}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return outcome(sent, "", [f"the program could not start: {exc}"])
    outs = (Drain(proc.stdout), Drain(proc.stderr))
    feed(proc.stdin, stdin.encode())
    try:
        proc.wait(timeout=story.get("timeout_s") or 30)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        end_group(proc)
    stdout, stderr = (decode(o.read()) for o in outs)
    got = f"exit status {proc.returncode}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    if timed_out:
        return outcome(sent, got, [f"the program ran past {story.get('timeout_s') or 30:g} s"])
    problems = []
    if story.get("exit") is not None and proc.returncode != story["exit"]:
        problems.append(f"the exit status is {proc.returncode}, not {story['exit']}")
    problems += text_problems("stdout", story.get("stdout"), stdout)
    problems += text_problems("stderr", story.get("stderr"), stderr)
    return outcome(sent, got, problems)


# ---------------------------------------------------------------------------- http
class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 3xx is an answer, as curl gives it


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirects())


NO_ANSWER = (OSError, ValueError, http.client.HTTPException)
"""What a request that got no (valid) answer raises: refused, reset, garbled, a bad header."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str, method="GET", body: bytes | None = None, headers=None, timeout=10.0):
    """(status, headers, body text) of one request; OSError when nothing answered."""
    request = urllib.request.Request(url, data=body, method=method)
    for name, value in {**USER_HEADERS, **(headers or {})}.items():
        request.add_header(name, value)
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read(READ_BYTES)
    except urllib.error.HTTPError as answer:
        with answer:
            return answer.code, dict(answer.headers.items()), answer.read(READ_BYTES)


def fetch_within(deadline: float, url: str, *args, **kwargs):
    """:func:`fetch`, given up at ``deadline`` (TimeoutError) however the server answers: one
    that drips its answer a byte at a time gets no more time than one that is silent (the
    request's thread ends when the story's server is killed)."""
    box: dict = {}

    def work() -> None:
        try:
            box["answer"] = fetch(url, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        raise TimeoutError("no whole answer within the story's time limit")
    if "error" in box:
        raise box["error"]
    return box["answer"]


def serve(argv: list[str], root: str, ready: str, timeout_s: float, log):
    """Start a server on a free port and wait until ``ready`` answers: (proc, base URL, "")
    or (proc or None, "", why not)."""
    port = free_port()
    try:
        proc = start(
            argv, root, user_env({"PORT": port}), stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
    except OSError as exc:
        return None, "", f"the server could not start: {exc}"
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc, "", f"the server exited with status {proc.returncode} before it answered"
        try:
            wait = max(0.2, min(2.0, deadline - time.monotonic()))
            fetch_within(time.monotonic() + wait, base + ready, timeout=wait)
            return proc, base, ""
        except NO_ANSWER:
            time.sleep(READY_POLL_S)
    return proc, "", f"the server did not answer {ready} within {timeout_s:g} s"


def log_tail(log) -> str:
    log.seek(0)
    return decode(log.read()[-KEEP_CHARS:])


def http_story(story: dict, root: str, **_) -> dict:
    sent = [f"start: {json.dumps(story['start'])} (PORT set)", f"ready: GET {story['ready']}"]
    got: list[str] = []
    with tempfile.TemporaryFile() as log:
        proc, base, why = serve(story["start"], root, story["ready"], story["timeout_s"], log)
        try:
            if why:
                return outcome("\n".join(sent), f"server output:\n{log_tail(log)}", [why])
            problems, deadline = [], time.monotonic() + story["timeout_s"]
            for request in story["requests"]:
                line, answer, wrong = one_request(base, request, deadline)
                sent.append(line)
                got.append(answer)
                problems += wrong
            if problems:
                got.append(f"server output:\n{log_tail(log)}")
            return outcome("\n".join(sent), "\n".join(got), problems)
        finally:
            if proc is not None:
                end_group(proc)


def one_request(base: str, request: dict, deadline: float) -> tuple[str, str, list[str]]:
    """(what was sent, what came back, what did not hold) of one request of a story, whose
    requests all end by ``deadline``."""
    method, path = request["method"], request["path"]
    headers, body = dict(request.get("headers") or {}), None
    if request.get("json_body") is not None:
        body = json.dumps(request["json_body"]).encode()
        headers.setdefault("Content-Type", "application/json")
    elif request.get("body") is not None:
        body = request["body"].encode()
    line = f"{method} {path}" + (f" headers {json.dumps(headers)}" if headers else "")
    line += f" body {decode(body)!r}" if body is not None else ""
    try:
        left = max(0.1, deadline - time.monotonic())
        status, answer_headers, data = fetch_within(
            deadline, base + path, method, body, headers, left
        )
    except NO_ANSWER as exc:
        return line, f"{method} {path}: no answer ({exc})", [f"{method} {path}: no answer"]
    text = decode(data)
    answer = f"{method} {path} -> {status} {json.dumps(answer_headers)}\n{text}"
    wrong = []
    if status != request["status"]:
        wrong.append(f"{method} {path}: the status is {status}, not {request['status']}")
    wrong += text_problems(f"{method} {path}: the body", request.get("expect"), text)
    lower = {k.lower(): v for k, v in answer_headers.items()}
    for name, value in (request.get("expect_headers") or {}).items():
        if value not in lower.get(name.lower(), ""):
            wrong.append(f"{method} {path}: the header {name} does not contain {value!r}")
    return line, answer, wrong


# ---------------------------------------------------------------------------- library
PYTHON_CALL = r"""
import importlib, json, os, sys
fd = int(sys.argv[1])
spec = json.loads(sys.stdin.read())
sys.path.insert(0, os.getcwd())
def send(answer):
    os.write(fd, json.dumps(answer).encode())
    os._exit(0)
try:
    target = importlib.import_module(spec["module"])
    for part in spec["function"].split("."):
        target = getattr(target, part)
    value = target(*spec["args"])
except BaseException as exc:
    names = [c.__name__ for c in type(exc).__mro__]
    send({"raised": type(exc).__name__, "names": names, "message": str(exc)[:500]})
try:
    send({"value": json.loads(json.dumps(value))})
except (TypeError, ValueError):
    send({"unserializable": repr(value)[:500]})
"""

JAVASCRIPT_CALL = r"""
const fs = require("fs"), path = require("path"), url = require("url");
const { createRequire } = require("module");
const fd = Number(process.argv[process.argv.length - 1]);
const send = (answer) => { fs.writeSync(fd, JSON.stringify(answer)); process.exit(0); };
(async () => {
  const spec = JSON.parse(fs.readFileSync(0, "utf8"));
  let value;
  try {
    const name = spec.module;
    let where = name;
    if (name.startsWith(".") || name.startsWith("/") || /\.[cm]?[jt]sx?$/.test(name)) {
      where = url.pathToFileURL(path.resolve(name)).href;
    } else {
      try {
        const req = createRequire(path.join(process.cwd(), "index.js"));
        where = url.pathToFileURL(req.resolve(name)).href;
      } catch (e) {}
    }
    const loaded = await import(where);
    const parts = spec.function.split(".");
    let owner = loaded;
    if (!(parts[0] in loaded) && loaded.default && parts[0] in Object(loaded.default)) {
      owner = loaded.default;
    }
    let target = owner;
    for (const part of parts) { owner = target; target = target[part]; }
    if (typeof target !== "function") throw new TypeError(spec.function + " is not a function");
    value = await target.apply(owner, spec.args);
  } catch (e) {
    const names = [];
    for (let p = e; p && p.constructor; p = Object.getPrototypeOf(p)) {
      if (p.constructor.name && !names.includes(p.constructor.name)) names.push(p.constructor.name);
    }
    const message = String(e && e.message).slice(0, 500);
    send({ raised: (e && e.name) || typeof e, names, message });
  }
  let text;
  try { text = JSON.stringify(value === undefined ? null : value); } catch (e) {}
  if (text === undefined) send({ unserializable: String(value).slice(0, 500) });
  send({ value: JSON.parse(text) });
})();
"""


def call_argv(story: dict, python: str, fd: int) -> list[str]:
    if story["language"] == "python":
        return [python, "-c", PYTHON_CALL, str(fd)]
    loader = []
    if re.search(r"\.[cm]?tsx?$", story["module"]) and os.path.isdir("node_modules/tsx"):
        loader = ["--import", "tsx"]
    return ["node", *loader, "-e", JAVASCRIPT_CALL, "--", str(fd)]


def library(story: dict, root: str, python: str, **_) -> dict:
    call = {k: story[k] for k in ("module", "function", "args")}
    args = ", ".join(json.dumps(a) for a in story["args"])
    sent = f"{story['language']}: {story['function']}({args}) of {story['module']}"
    read_end, write_end = os.pipe()
    try:
        proc = start(
            call_argv(story, python, write_end),
            root,
            user_env({}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write_end,),
        )
    except OSError as exc:
        os.close(read_end)
        return outcome(sent, "", [f"the {story['language']} child could not start: {exc}"])
    finally:
        os.close(write_end)
    answers, output = Drain(os.fdopen(read_end, "rb")), Drain(proc.stdout)
    feed(proc.stdin, json.dumps(call).encode())
    try:
        proc.wait(timeout=LIBRARY_TIMEOUT_S)
        late = ""
    except subprocess.TimeoutExpired:
        late = f"the call ran past {LIBRARY_TIMEOUT_S:g} s"
    finally:
        end_group(proc)
    answer_text = decode(answers.read())
    printed = decode(output.read())
    try:
        answer = json.loads(answer_text)
    except ValueError:
        why = late or "the call gave no answer (the child ended first)"
        return outcome(sent, f"output:\n{printed}", [why])
    return outcome(sent, describe_answer(answer, printed), library_problems(story, answer))


def describe_answer(answer: dict, printed: str) -> str:
    if "raised" in answer:
        text = f"raised {answer['raised']}: {answer.get('message', '')}"
    elif "unserializable" in answer:
        text = f"returned a value that is not JSON: {answer['unserializable']}"
    else:
        text = f"returned {json.dumps(answer.get('value'))}"
    return text + (f"\noutput:\n{printed}" if printed else "")


def library_problems(story: dict, answer: dict) -> list[str]:
    raises = story.get("raises")
    if raises:
        if answer.get("raised") is None:
            return [f"the call did not raise {raises}"]
        if raises not in answer.get("names", [answer["raised"]]):
            return [f"the call raised {answer['raised']}, not {raises}"]
        return []
    if "raised" in answer:
        return [f"the call raised {answer['raised']}"]
    if "unserializable" in answer:
        return ["the call returned a value that is not JSON"]
    if not same(story.get("returns"), answer.get("value")):
        return [f"the call returned {json.dumps(answer.get('value'))}, not "
                f"{json.dumps(story.get('returns'))}"]  # fmt: skip
    return []


# ---------------------------------------------------------------------------- files
def read_no_links(root: str, relative: str) -> bytes:
    """A regular file under ``root``, walked folder by folder without following a link."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    fd = os.open(root, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            deeper = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        leaf = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(leaf, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{relative} is not a regular file")
        return handle.read(READ_BYTES)


def files(story: dict, root: str, **_) -> dict:
    sent = f"read {story['path']}"
    try:
        text = decode(read_no_links(root, story["path"]))
    except OSError as exc:
        why = exc.strerror or str(exc)
        return outcome(sent, "", [f"{story['path']} cannot be read as a regular file: {why}"])
    return outcome(sent, text, text_problems(story["path"], story["expect"], text))


# ---------------------------------------------------------------------------- browser
class StaticFiles(http.server.SimpleHTTPRequestHandler):
    """The built front end's files, never one reached through a link out of its folder;
    a path with no file is the app's page (``index.html``), as a single-page app needs."""

    def translate_path(self, path: str) -> str:
        base = os.path.realpath(self.directory)
        real = os.path.realpath(super().translate_path(path))
        self.refused = real != base and not real.startswith(base + os.sep)
        if not os.path.exists(real) and "." not in os.path.basename(real):
            return os.path.join(base, "index.html")
        return real

    def send_head(self):
        path = self.translate_path(self.path)
        if self.refused or not (os.path.isdir(path) or os.path.isfile(path)):
            self.send_error(404)
            return None
        return super().send_head()

    def log_message(self, *args) -> None:
        pass


def built_folder(root: str, relative: str) -> str | None:
    """``root/relative`` when each of its parts is a real folder inside ``root`` (walked
    without following a link, never ``..``); None otherwise."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if relative.startswith("/") or ".." in parts:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open(root, flags)
    try:
        for part in parts:
            deeper = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = deeper
    except OSError:
        return None
    finally:
        os.close(fd)
    return os.path.join(root, *parts)


def static_server(folder: str):
    handler = functools.partial(StaticFiles, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def load_drive(sites: list[str]):
    """cadillac's browser driver (:mod:`phases.stories.browser`), imported from the folders
    the runner made visible (cadillac's own modules and Playwright's, read-only); (drive,
    "") or (None, why it cannot be loaded)."""
    sys.path.extend(sites)
    try:
        from phases.stories.browser import drive
    except Exception as exc:  # noqa: BLE001 - any failure to load it fails the story, saying why
        return None, f"{NOT_AVAILABLE} ({type(exc).__name__}: {exc})"
    return drive, ""


def browser(story: dict, root: str, out: str, sites: list[str], **_) -> dict:
    sent = f"open {story['path']}, steps {json.dumps(story.get('steps') or [])}"
    drive, why = load_drive(sites)
    if drive is None:
        return outcome(sent, "", [why])
    with tempfile.TemporaryFile() as log:
        proc, server = None, None
        try:
            if story.get("start"):
                proc, base, why = serve(
                    story["start"], root, story["path"], story["timeout_s"], log
                )
                if why:
                    return outcome(sent, f"server output:\n{log_tail(log)}", [why])
            else:
                folder = built_folder(root, story.get("serve") or "dist")
                if folder is None:
                    return outcome(sent, "", [f"{story.get('serve')} is not a built folder"])
                server = static_server(folder)
                base = f"http://127.0.0.1:{server.server_address[1]}"
            return browser_outcome(sent, drive(story, base, out))
        except Exception as exc:  # the browser's own failure fails this story, not the run
            return outcome(sent, "", [f"the browser failed: {type(exc).__name__}: {exc}"])
        finally:
            if server is not None:
                server.shutdown()
            if proc is not None:
                end_group(proc)
            reap_left()


def browser_outcome(sent: str, done: dict) -> dict:
    got = str(done.get("got", ""))
    for key in ("console_errors", "failed_requests", "refused"):
        if done.get(key):
            got += f"\n{key.replace('_', ' ')}: {json.dumps(done[key])}"
    shot = done.get("screenshot")
    problems = [] if done.get("passed") is True else ["the page did not do what the story says"]
    return outcome(
        str(done.get("sent") or sent), got, problems, os.path.basename(shot or "") or None
    )


KINDS = {"cli": cli, "http": http_story, "library": library, "files": files, "browser": browser}


def run_all(stories: list[dict], **where) -> list[dict]:
    results = []
    for story in stories:
        try:
            done = KINDS[story["kind"]](story, **where)
        except Exception as exc:  # the story fails, with why; the run goes on
            done = outcome("", "", [f"the story could not be run: {type(exc).__name__}: {exc}"])
        finally:
            reap_left()
        results.append({"name": story["name"], "kind": story["kind"], **done})
    return results


def keep_result(path: str, line: str) -> None:
    """The signed line, in a new regular file at ``path`` too (whatever the project left
    there is removed first; when it cannot be written, the printed line is all there is)."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(OSError), open(os.open(path, flags, 0o644), "w") as handle:
        handle.write(line)


def subreaper() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Drive the artifact through its stories.")
    parser.add_argument(
        "settings",
        help="a JSON file: stories (a file of them), key_file (the runner's secret, removed "
        "at once), python (the project's interpreter), out (a folder for screenshots), sites "
        "(where Playwright is), result (a file for the signed line too)",
    )
    with open(parser.parse_args(argv).settings, encoding="utf-8") as handle:
        args = argparse.Namespace(
            **{"key_file": None, "python": sys.executable, "out": ".", "sites": [], "result": None}
            | json.load(handle)
        )
    judge = load_beside("acceptance_runner")
    try:
        key = judge.take_key(args.key_file) if args.key_file else None
    except OSError as exc:
        print(f"the story driver cannot take its key: {exc}", file=sys.stderr, flush=True)
        return 3
    unsafe = judge.protect()
    if unsafe:
        print(f"the story driver cannot protect itself: {unsafe}", file=sys.stderr, flush=True)
        return 3
    subreaper()
    with open(args.stories, encoding="utf-8") as handle:
        stories = json.load(handle)["stories"]
    python = os.path.abspath(args.python) if os.sep in args.python else args.python
    root = os.getcwd()
    with judge.quiet_fd1() as real_stdout:
        results = run_all(stories, root=root, python=python, out=args.out, sites=args.sites)
        os.chdir(root)
        report = {"total": len(results), "results": results}
        line = judge.signed(report, key) + "\n"
        if args.result:
            keep_result(args.result, line)
        real_stdout.write(line)
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
