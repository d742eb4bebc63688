"""Every model call: litellm, retries with tenacity, fallbacks, a breaker, a log line per attempt.

What this module decides, and why:

* litellm is the only way to a model, so any provider works by its model
  string, local servers through ``api_base``, and cadillac's own back ends
  (``replay:PATH``, ``scripted:NAME``; :mod:`orchestrator.llm.backends`) run
  through the same call, retry and accounting path as a real provider.
* litellm is imported lazily (``cadillac --help`` must not pay for it) and
  only after ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, so that neither the
  import nor cost lookups reach the network.
* Retries are ours alone: litellm's and the provider client's own are turned
  off (``num_retries=0``, ``max_retries=0``) so attempts are not multiplied.
* ``api_base`` belongs to the model it was given for (:class:`Endpoint`): each fallback
  has its own. A server at an ``api_base`` gets ``CADILLAC_API_KEY`` (or a placeholder),
  never a hosted provider's key from the environment, so a local builder beside a
  hosted improver leaks nothing to the local server.
  Rate limits, timeouts, connection errors and 5xx answers are retried with
  random exponential back-off, waiting at least what a ``Retry-After`` header
  asks for, up to ``max_attempts`` per model; then the next
  ``fallback_models`` entry is tried. Authentication, bad-request and
  context-window errors are not retried: they end the run with a
  :class:`ModelError` that says what to do. Neither is a missing key, which litellm
  reports for some providers as a server error ("Missing credentials"): no retry
  brings a key, so the error names the variable to set (litellm's own list of the
  provider's variables; ``CADILLAC_API_KEY`` for a server at an ``api_base``).
  An ``api_base`` that is not an http(s) URL with a host (and a port that is one) is
  refused when the configuration is made, in one line.
* A provider's bad answer is a server error (:class:`BadAnswerError`): an answer with no
  choices, or a lone surrogate (``\ud800``, which is not text) in what the model wrote,
  is logged and retried like a 5xx, and the error says what the server sent.
* What the user reads is one line in cadillac's words, never litellm's (its tracebacks,
  its ``OpenAIException -`` prefixes): a connection error names the URL and the reason,
  a 404 names the server and the model it was asked for, an answer that is not a chat
  completion says so. A scripted policy that raises is a bug in the policy
  (:class:`~orchestrator.llm.backends.PolicyError`): one line with its type, message,
  file and line, not retried.
* A server that sends tool-call arguments as a JSON object, not a string, is taken at
  its word (the object is the arguments), without pydantic's serializer warnings.
* A circuit breaker: a model that spent all its retries on ``breaker_calls`` calls in
  a row is skipped for the rest of the client's life (one client serves one build), so
  a dead primary costs its retries twice, not on every call before the fallback. The
  log says so once (a line with an ``event``). When every model is skipped, a call
  fails at once with the usual :class:`ModelError`.
* Each attempt, failed or not, is one line of the run's ``llm.jsonl``: the
  request, the response or error, tokens, latency and cost (litellm's price
  where it knows the model, else null). :class:`LLMClient` keeps the totals.
  The request holds the messages new since an earlier request of the same client, not
  the whole conversation, so the log grows with the conversation, not with its square:
  ``{"after": SEQ, "skip": N, "messages": [...], "tools": bool}`` is the first ``N``
  messages of request ``SEQ``, then ``messages`` (no ``after``: ``messages`` is the
  whole list). ``SEQ`` is the earlier request sharing the longest start with this one
  (a retry shares all of it; compaction, which trims old messages in place, shortens
  what is shared). :func:`logged_requests` rebuilds every request of a file, in this
  form (``"v": 2``) or the earlier one (``"v": 1``, the whole conversation per line).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)
from tenacity.wait import wait_base

from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import append_file

MODEL_HINT = (
    "set CADILLAC_MODEL or pass --model (a litellm model string such as "
    "anthropic/claude-sonnet-4-5, openai/gpt-4o or ollama/qwen2.5-coder, with --api-base "
    "for a local server); `make demo` runs offline on a recorded session"
)


LOCAL_KEY = "CADILLAC_API_KEY"
"""The key sent to a server given by --api-base (a placeholder when it is not set)."""


class ModelError(CadillacError):
    """A model call that cannot succeed by retrying (bad model, key, request or context)."""


class BadAnswerError(Exception):
    """The provider answered, but not with a usable reply (no choices, text that is not
    text): a server error, retried like a 5xx."""


def check_api_base(base: str | None, what: str = "api base") -> None:
    """Raise ModelError unless ``base`` (when given) is an http:// or https:// URL with a host
    and, if it has one, a port that is a port."""
    if base is None:
        return
    example = "e.g. http://127.0.0.1:8080/v1"
    if not isinstance(base, str) or not base.strip():
        raise ModelError(f"{what} {base!r} is empty: give an http:// or https:// URL ({example})")
    if base != base.strip() or any(c.isspace() for c in base):
        raise ModelError(f"{what} {base!r} holds blanks: give the URL alone ({example})")
    try:
        parts = urlsplit(base)
    except ValueError as exc:  # an unclosed or malformed [IPv6] host
        raise ModelError(
            f"{what} {base!r} is not a URL ({_first_line(exc)}): a host in brackets is an "
            "IPv6 address, as in http://[::1]:8080/v1"
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        if "://" not in base:
            guess = f"http://{base}"
            looks = urlsplit(guess).hostname and (":" in base or "." in base or "/" in base)
            hint = f"did you mean {guess}?" if looks else example
            raise ModelError(f"{what} {base!r} is not a URL: it needs http:// or https:// ({hint})")
        raise ModelError(
            f"{what} {base!r} uses {scheme}://: a model server is reached over http:// or "
            f"https:// ({example})"
        )
    if not parts.hostname:
        raise ModelError(f"{what} {base!r} has no host ({example})")
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        given = parts.netloc.rpartition(":")[2]
        raise ModelError(
            f"{what} {base!r} has port {given!r}, which is not a port (1 to 65535)"
        ) from None
    if port == 0:
        raise ModelError(f"{what} {base!r} has port 0, which is not a port (1 to 65535)")


class Endpoint(BaseModel):
    """One model and where it is: a provider's service, or a server at ``api_base``."""

    model: str
    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)

    def key(self) -> str | None:
        """The key to send: the given one; for a server at ``api_base``, ``CADILLAC_API_KEY``
        or a placeholder, never a provider's variable; else None (litellm reads the
        provider's usual variable)."""
        if self.api_key is not None:
            return self.api_key
        if self.api_base:
            return os.environ.get(LOCAL_KEY) or "sk-no-key"
        return None


class LLMConfig(BaseModel):
    """How to reach the model."""

    model_config = ConfigDict(extra="forbid")

    model: str = ""
    """litellm model string, or replay:PATH / scripted:NAME."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible or other server (Ollama, llama.cpp, a proxy), for
    ``model`` only."""
    api_key: str | None = Field(default=None, repr=False)
    """Key for the provider; by default litellm reads the provider's usual variable, and a
    server at ``api_base`` gets ``CADILLAC_API_KEY`` (never a hosted provider's key)."""
    fallback_models: list[str] = Field(default_factory=list)
    """Tried in order when the primary keeps failing with retryable errors."""
    fallback_api_bases: list[str | None] = Field(default_factory=list)
    """The server of each fallback model, in the same order (none: its provider)."""
    max_attempts: int = Field(default=4, ge=1)
    """Attempts per model for retryable errors."""
    wait_initial_s: float = Field(default=2.0, ge=0)
    """Scale of the random exponential back-off."""
    wait_max_s: float = Field(default=60.0, ge=0)
    """Longest back-off between attempts (a Retry-After may ask for more)."""
    retry_after_max_s: float = Field(default=120.0, ge=0)
    """Longest Retry-After honoured."""
    request_timeout_s: float = Field(default=600.0, gt=0)
    """Timeout of one request."""
    breaker_calls: int = Field(default=2, ge=1)
    """A model that spent its retries on this many calls in a row is not tried again by
    the client (its circuit opens; the fallbacks answer)."""
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    """The sampling seed, sent where the provider takes one (litellm drops it elsewhere)."""

    @model_validator(mode="after")
    def _api_bases_are_urls(self) -> LLMConfig:
        """A malformed api base is refused now, in one line (a ModelError, not a pydantic
        error), not after the retries of a build that cannot connect."""
        check_api_base(self.api_base)
        for i, base in enumerate(self.fallback_api_bases):
            model = self.fallback_models[i] if i < len(self.fallback_models) else f"#{i + 1}"
            check_api_base(base, f"the api base of fallback model {model!r}")
        return self

    def endpoints(self) -> list[Endpoint]:
        """The primary, then each fallback, with the server each belongs to."""
        bases = list(self.fallback_api_bases)
        fallbacks = [
            Endpoint(model=m, api_base=bases[i] if i < len(bases) else None)
            for i, m in enumerate(self.fallback_models)
        ]
        return [
            Endpoint(model=self.model, api_base=self.api_base, api_key=self.api_key),
            *fallbacks,
        ]


class ToolCall(BaseModel):
    """One tool call as the model made it."""

    id: str
    name: str
    arguments: str
    """The raw JSON text the model sent (the tools check it)."""


class LLMReply(BaseModel):
    """What a model answered."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    """Of ``tokens_in``, those the provider read from its prompt cache."""
    cost_usd: float | None = None
    latency_s: float = 0.0

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


class LLMTotals(BaseModel):
    calls: int = 0
    answered_by: dict[str, int] = Field(default_factory=dict)
    """The calls each model answered (the primary or a fallback), by model string: the
    summary tells a build the fallback served from one the primary did."""
    failed_attempts: int = 0
    """Attempts that failed and were tried again (the summary's "retried"): an error that is
    not retried, or one on the last attempt, is not counted."""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost_usd: float | None = None
    """Sum of known costs; None when no call had a known price."""
    seconds: float = 0.0


_RESPONSE_WARNINGS = (
    r"(?s)Pydantic serializer warnings:"
    r".*(field_name='arguments'.*input_type=dict|Expected `ChatCompletion)"
)
"""The serializer warnings of a provider's response that litellm dumps (see litellm_module)."""


def litellm_module():
    """Import litellm offline-safe, once; register cadillac's back ends."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # litellm dumps the provider client's response model, which the client built without
    # validating it: a server that sends tool-call arguments as an object (taken as the
    # arguments, see _arguments) or a message that is not one makes pydantic warn on the
    # terminal. Only warnings about those response models are silenced (the answer itself is
    # taken or refused as a bad answer); the filter is added again on each call, as a test
    # harness may reset the filters.
    warnings.filterwarnings("ignore", message=_RESPONSE_WARNINGS, category=UserWarning)
    from orchestrator.llm import backends

    backends.register(litellm)
    return litellm


CACHE_MARKER_PROVIDERS = frozenset({"anthropic"})
"""Providers whose prompt cache needs explicit markers (others cache a prefix by themselves)."""


def provider_of(litellm, model: str) -> str | None:
    """The provider litellm routes ``model`` to (``openai``, ``anthropic`` ...); None for a
    name it cannot place."""
    try:
        return litellm.get_llm_provider(model)[1]
    except Exception:
        return None


def takes_cache_markers(litellm, model: str) -> bool:
    """Whether ``model``'s provider needs explicit cache markers (a name litellm cannot
    place: no, its messages are sent as they are)."""
    return provider_of(litellm, model) in CACHE_MARKER_PROVIDERS


def cache_marked(messages: list[dict], stable_chars: int) -> list[dict]:
    """``messages`` with the first ``stable_chars`` characters of the system message as a
    text block marked ``cache_control: ephemeral`` (the rest, if any, a second block)."""
    first = messages[0] if messages else {}
    content = first.get("content")
    if first.get("role") != "system" or not isinstance(content, str):
        return messages
    if not 0 < stable_chars <= len(content):
        return messages
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": content[:stable_chars], "cache_control": {"type": "ephemeral"}}
    ]
    if content[stable_chars:]:
        blocks.append({"type": "text", "text": content[stable_chars:]})
    return [{**first, "content": blocks}, *messages[1:]]


def _cached_tokens(usage) -> int:
    """Prompt tokens read from the provider's cache: OpenAI's ``cached_tokens``, or
    Anthropic's ``cache_read_input_tokens`` (litellm passes on both); 0 when unsaid."""
    details = getattr(usage, "prompt_tokens_details", None)
    found = [getattr(details, "cached_tokens", 0), getattr(usage, "cache_read_input_tokens", 0)]
    return max((int(x) for x in found if isinstance(x, int | float) and x > 0), default=0)


def _retryable_classes(litellm) -> tuple[type[BaseException], ...]:
    return (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )


_NO_KEY = re.compile(
    r"missing credentials|api_key client option must be set|missing [\w ]*api[ _]key"
    r"|no (api )?key is set",
    re.IGNORECASE,
)
"""What litellm and the provider clients say when no key was found (before any request)."""


def is_missing_key(exc: BaseException) -> bool:
    """Whether ``exc`` says no key was found (litellm raises some of these as a 500)."""
    return bool(_NO_KEY.search(str(exc)))


def is_retryable(exc: BaseException, litellm) -> bool:
    if isinstance(exc, BadAnswerError):
        return True
    if is_missing_key(exc):
        return False
    if isinstance(exc, _retryable_classes(litellm)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status >= 500


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a server asked for in a Retry-After header (seconds), if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def model_name_problem(model: str) -> str | None:
    """What is wrong with a model string as given (None when nothing is): empty, blanks at
    its ends (``"openai/gpt-4o "``), or a provider with no model (``"openai/"``)."""
    if not model.strip():
        return "is empty"
    if model != model.strip():
        return "has blanks at its start or end: give the model string alone"
    if any(c.isspace() and c != " " for c in model):
        return "holds a line break or a tab"
    provider, slash, name = model.partition("/")
    if slash and not name.strip():
        return f"names the provider {provider!r} but no model (e.g. {provider}/gpt-4o)"
    return None


def check_model(model: str, api_base: str | None = None) -> None:
    """Raise ModelError now for a model string litellm cannot route, a replay:/scripted:
    model that cannot answer, or a malformed ``api_base`` (before a run starts)."""
    from orchestrator.llm import backends

    if not model.strip():
        raise ModelError(f"no model given: {MODEL_HINT}")
    problem = model_name_problem(model)
    if problem is not None:
        raise ModelError(f"model {model!r} {problem}")
    check_api_base(api_base)
    if backends.is_builtin(model):
        try:
            backends.check(model)
        except backends.BackendError as exc:
            raise ModelError(f"model {model!r}: {exc}") from None
        return
    litellm = litellm_module()
    try:
        litellm.get_llm_provider(model)
    except Exception:  # litellm's BadRequestError for an unknown provider
        raise ModelError(f"model {model!r} is not known to litellm: {MODEL_HINT}") from None


class _HonourRetryAfter(wait_base):
    """Random exponential back-off, but never shorter than a Retry-After header asks."""

    def __init__(self, backoff: wait_base, cap_s: float):
        self.backoff = backoff
        self.cap_s = cap_s

    def __call__(self, retry_state: RetryCallState) -> float:
        wait = self.backoff(retry_state)
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = retry_after_s(exc) if exc is not None else None
        return wait if asked is None else max(wait, min(asked, self.cap_s))


RECENT_REQUESTS = 8
"""Earlier requests a new one may refer to in the log (``after``)."""


class LLMClient:
    """Calls the configured model (and its fallbacks) and logs every attempt."""

    def __init__(
        self,
        config: LLMConfig,
        log_path: Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not config.model.strip():
            raise ModelError(f"no model given: {MODEL_HINT}")
        self.config = config
        self.log_path = log_path
        self.sleep = sleep
        self.totals = LLMTotals()
        self._seq = 0
        self._recent: list[tuple[int, list[bytes]]] = []
        """(seq, a fingerprint of each message) of the last requests logged."""
        from orchestrator.llm import backends

        self.endpoints = config.endpoints()
        self._names: list[str] = []
        for endpoint in self.endpoints:
            try:
                self._names.append(backends.open_session(endpoint.model))
            except (OSError, KeyError, ValueError) as exc:
                raise ModelError(f"model {endpoint.model!r}: {_message_of(exc)}") from None
        self._spent_calls = [0] * len(self.endpoints)
        """Calls in a row on which each model spent its retries."""
        self._last_errors: list[str | None] = [None] * len(self.endpoints)
        """What the last error of each model said (see :func:`describe`)."""
        self.open_circuits: set[int] = set()
        """The endpoints (by index) no longer tried."""

    def complete(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        stable_chars: int | None = None,
    ) -> LLMReply:
        """One model turn; raises ModelError when no model can answer. ``stable_chars``: the
        first message's first characters are the same for the whole build (a provider that
        takes explicit cache markers gets that prefix marked, see :func:`cache_marked`)."""
        litellm = litellm_module()
        last: BaseException | None = None
        said = ""
        for index, endpoint in enumerate(self.endpoints):
            if index in self.open_circuits:
                continue
            try:
                reply = self._call(litellm, index, messages, tools, stable_chars)
            except Exception as exc:  # retries for this model are spent, or it cannot succeed
                if not is_retryable(exc, litellm):
                    raise ModelError(self._explain(litellm, endpoint, exc)) from exc
                last, said = exc, describe(exc, endpoint)
                self._spent(index, exc, said)
                continue
            self._spent_calls[index] = 0
            return reply
        tried = ", ".join(e.model for e in self.endpoints)
        if last is None:  # every circuit was open before this call
            said = next(e for e in reversed(self._last_errors) if e is not None)
            raise ModelError(
                f"every model failed ({tried}) on {self.config.breaker_calls} calls in a row "
                f"and is no longer tried; last error: {said}"
            )
        raise ModelError(f"every model failed ({tried}); last error: {said}") from last

    def _call(self, litellm, index: int, messages, tools, stable_chars=None) -> LLMReply:
        """One model's attempts at one turn (raises what the last attempt raised)."""
        sent = messages
        if stable_chars and takes_cache_markers(litellm, self.endpoints[index].model):
            sent = cache_marked(messages, stable_chars)
        for attempt in self._retrying(litellm):
            with attempt:
                number = attempt.retry_state.attempt_number
                return self._attempt(litellm, index, number, sent, tools)
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover

    def _spent(self, index: int, exc: BaseException, said: str) -> None:
        """A call on which the model ``index`` spent its retries: open its circuit at the
        configured count, and say so once in the log."""
        self._spent_calls[index] += 1
        self._last_errors[index] = said
        calls = self._spent_calls[index]
        if calls < self.config.breaker_calls or index in self.open_circuits:
            return
        self.open_circuits.add(index)
        model = self.endpoints[index].model
        self._log(
            {
                "v": 2,
                "ts": time.time(),
                "event": "circuit_open",
                "model": model,
                "calls": calls,
                "error": f"{type(exc).__name__}: {said}",
                "note": f"{model} spent its retries on {calls} calls in a row; "
                "it is not tried again in this build",
            }
        )

    def _retrying(self, litellm) -> Retrying:
        cfg = self.config
        return Retrying(
            stop=stop_after_attempt(cfg.max_attempts),
            wait=_HonourRetryAfter(
                wait_random_exponential(multiplier=cfg.wait_initial_s, max=cfg.wait_max_s),
                cfg.retry_after_max_s,
            ),
            retry=retry_if_exception(lambda exc: is_retryable(exc, litellm)),
            sleep=self.sleep,
            reraise=True,
        )

    def _attempt(self, litellm, index, attempt, messages, tools) -> LLMReply:
        endpoint = self.endpoints[index]
        model = endpoint.model
        kwargs: dict[str, Any] = {
            "model": self._names[index],
            "messages": messages,
            "num_retries": 0,
            "max_retries": 0,
            "timeout": self.config.request_timeout_s,
        }
        if tools:
            kwargs["tools"] = tools
        settings = {
            "api_base": endpoint.api_base,
            "api_key": endpoint.key(),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
        }
        kwargs.update({k: v for k, v in settings.items() if v is not None})
        if self.config.seed is not None:
            kwargs["drop_params"] = True  # a provider without seeds still answers
        self._seq += 1
        started = time.perf_counter()
        record: dict[str, Any] = {
            "v": 2,
            "ts": time.time(),
            "seq": self._seq,
            "model": model,
            "attempt": attempt,
        }
        if self.log_path is not None:
            record["request"] = self._request(messages, tools)
        try:
            response = litellm.completion(**kwargs)
            latency = time.perf_counter() - started
            reply = _reply(response, endpoint, latency, litellm)
        except Exception as exc:
            if attempt < self.config.max_attempts and is_retryable(exc, litellm):
                self.totals.failed_attempts += 1  # retried: another attempt follows
            status = getattr(exc, "status_code", None)
            record.update(
                latency_s=round(time.perf_counter() - started, 4),
                error=f"{type(exc).__name__}: {describe(exc, endpoint)}",
                status=status if isinstance(status, int) else None,
            )
            self._log(record)
            raise
        record.update(
            latency_s=round(latency, 4),
            response=reply.as_message(),
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            tokens_cached=reply.tokens_cached,
            cost_usd=reply.cost_usd,
        )
        self._log(record)
        t = self.totals
        t.calls += 1
        t.answered_by[model] = t.answered_by.get(model, 0) + 1
        t.tokens_in += reply.tokens_in
        t.tokens_out += reply.tokens_out
        t.tokens_cached += reply.tokens_cached
        t.seconds += latency
        if reply.cost_usd is not None:
            t.cost_usd = (t.cost_usd or 0.0) + reply.cost_usd
        return reply

    def _request(self, messages: list[dict], tools) -> dict[str, Any]:
        """The request as logged: the messages new since the earlier request that shares
        the longest start with this one (see the module docstring)."""
        prints = [_fingerprint(m) for m in messages]
        after, skip = None, 0
        for seq, earlier in reversed(self._recent):
            shared = _shared(prints, earlier)
            if shared > skip:
                after, skip = seq, shared
        self._recent = [*self._recent[-(RECENT_REQUESTS - 1) :], (self._seq, prints)]
        request: dict[str, Any] = {} if after is None else {"after": after}
        request.update(skip=skip, messages=messages[skip:], tools=bool(tools))
        return request

    def _log(self, record: dict[str, Any]) -> None:
        """One line of the log; always valid UTF-8 (a lone surrogate in a message is written
        as JSON's escape, which reads back as the same string)."""
        if self.log_path is None:
            return
        line = json.dumps(record, ensure_ascii=False, default=str)
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            data = json.dumps(record, ensure_ascii=True, default=str).encode("ascii")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        append_file(self.log_path, data + b"\n")

    def _explain(self, litellm, endpoint: Endpoint, exc: BaseException) -> str:
        from orchestrator.llm import backends

        model = endpoint.model
        own = backends.backend_error(exc)
        if own is not None:
            return f"model {model!r}: {own}"
        text = describe(exc, endpoint)
        name = type(exc).__name__
        if "LLM Provider NOT provided" in str(exc):
            return f"model {model!r} is not known to litellm: {MODEL_HINT}"
        if name == "NotFoundError" or _http_status(exc) == 404:
            served = _served_name(litellm, model)
            check = (
                f"check that it serves {served!r} and that the api base is its URL"
                if endpoint.api_base
                else f"check the model name {model!r}"
            )
            return f"{_where(endpoint)} answered 404 for model {served!r} ({_clean(exc)}): {check}"
        if is_missing_key(exc):
            return f"no API key for {model!r}: set {_key_variables(litellm, endpoint)} ({text})"
        if name in ("AuthenticationError", "PermissionDeniedError"):
            if endpoint.api_key is not None:
                what = "the key given in the configuration"
            else:
                what = _key_variables(litellm, endpoint)
            return f"the provider refused the key for {model!r} ({text}); check {what}"
        if name == "ContextWindowExceededError":
            return f"the conversation no longer fits {model!r}'s context window ({text})"
        return f"{model!r} refused the request: {text}"


def _key_variables(litellm, endpoint: Endpoint) -> str:
    """The variable(s) that hold the key of ``endpoint``, in words: ``CADILLAC_API_KEY`` for
    a server at an ``api_base``; else those litellm finds missing for the provider, or
    the provider's usual ``<PROVIDER>_API_KEY``."""
    if endpoint.api_base:
        return LOCAL_KEY
    names: list[str] = []
    try:
        names = list(litellm.validate_environment(model=endpoint.model).get("missing_keys") or [])
        if not names:
            names = [f"{litellm.get_llm_provider(endpoint.model)[1].upper()}_API_KEY"]
    except Exception:  # litellm cannot tell for this model
        pass
    if not names:
        return "the provider's API key variable (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY)"
    return " and ".join(names)


def _fingerprint(message: dict) -> bytes:
    text = json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _shared(a: list[bytes], b: list[bytes]) -> int:
    """How many leading items ``a`` and ``b`` have in common."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def logged_requests(path: Path) -> list[tuple[dict[str, Any], list[dict]]]:
    """Each request of an ``llm.jsonl`` (its record) with the whole message list it sent, in
    the file's order; event lines are left out. Both forms are read (see the module
    docstring): an ``after`` is the latest earlier line of that ``seq`` (a resumed run's
    client numbers from 1 again, after the earlier lines)."""
    out: list[tuple[dict[str, Any], list[dict]]] = []
    by_seq: dict[int, list[dict]] = {}
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            request = record.get("request")
            if not isinstance(request, dict):
                continue
            messages = list(request.get("messages") or [])
            if "after" in request:
                earlier = by_seq.get(request["after"])
                if earlier is None:
                    raise ValueError(
                        f"{path}:{number}: the request refers to request {request['after']}, "
                        "which is not logged before it"
                    )
                messages = earlier[: request.get("skip", 0)] + messages
            by_seq[record.get("seq", 0)] = messages
            out.append((record, messages))
    return out


def logged_messages(path: Path, seq: int) -> list[dict]:
    """The whole message list of the request logged as ``seq`` (the last one, if a resumed
    run logged that number again)."""
    found = [messages for record, messages in logged_requests(path) if record.get("seq") == seq]
    if not found:
        raise KeyError(f"{path} logs no request {seq}")
    return found[-1]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def _message_of(exc: BaseException) -> str:
    """An exception's message as written (a KeyError's str is the repr of its message)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return _first_line(exc)


def _chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and the exceptions behind it (causes and contexts), outermost first."""
    out: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in out):
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


_LITELLM_PREFIX = re.compile(
    r"^\s*(?:litellm\.\w+:|\w+(?:Error|Exception|Timeout)(?: Error)?:|\w+Exception\s+-)\s*"
)
_LITELLM_TAIL = ("Traceback (most recent call last)", "received_args=", "\nModel:")


def _clean(exc: BaseException) -> str:
    """litellm's message without its prefixes, tracebacks and debugging tail, on one line."""
    text = str(exc)
    for stop in _LITELLM_TAIL:
        text = text.split(stop, 1)[0]
    text = " ".join(text.split())
    while (shorter := _LITELLM_PREFIX.sub("", text, count=1)) != text:
        text = shorter
    text = text.strip(" -")
    return text[:300] if text else f"{type(exc).__name__} (no reason given)"


def _where(endpoint: Endpoint) -> str:
    if endpoint.api_base:
        return f"the server at {endpoint.api_base}"
    return f"the provider of {endpoint.model!r}"


def _request_url(exc: BaseException) -> str | None:
    """The URL (without its query, which may hold a key) of the request behind ``exc``: the
    innermost one (litellm's own errors carry a request of its making, to no real URL)."""
    for e in reversed(_chain(exc)):
        try:
            request = getattr(e, "request", None)
            url = getattr(request, "url", None)
        except RuntimeError:  # httpx: "The .request property has not been set"
            continue
        if url is not None and getattr(url, "host", None):
            return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"
    return None


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status a server really answered with (litellm gives some errors a 500 of
    its own making: a connection error, an answer it could not read)."""
    import httpx

    for e in _chain(exc):
        if isinstance(e, httpx.HTTPStatusError):
            return e.response.status_code
        if type(e).__module__.startswith("openai") and any(  # raised by openai's client
            c.__name__ == "APIStatusError" for c in type(e).__mro__
        ):
            status = getattr(e, "status_code", None)
            if isinstance(status, int):
                return status
    return None


def _excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(exc: BaseException, endpoint: Endpoint) -> str:
    """One line that says what went wrong, in cadillac's words: which server, what it
    answered or why it could not be reached; never litellm's tracebacks or prefixes."""
    import httpx

    from orchestrator.llm import backends

    own = backends.backend_error(exc)
    if own is not None:
        return str(own)
    if isinstance(exc, BadAnswerError):
        return str(exc)
    chain = _chain(exc)
    where = _where(endpoint)
    transport = next((e for e in chain if isinstance(e, httpx.TransportError)), None)
    if transport is not None:
        url = _request_url(exc) or endpoint.api_base or where
        reasons = [" ".join(str(e).split()) for e in chain[chain.index(transport) :]]
        reason = next((r for r in reversed(reasons) if r), type(transport).__name__)
        if isinstance(transport, httpx.TimeoutException):
            return f"{url} did not answer in time ({reason})"
        return f"cannot connect to {url} ({reason})"
    full = str(exc)
    if "Invalid response object" in full:
        choices = re.search(r"'choices': (.*?), '(?:created|model|object|usage)'", full, re.S)
        what = f": its choices are {_excerpt(choices.group(1))}" if choices else ""
        return f"{where} sent an answer that is not a chat completion{what}"
    if "Empty or invalid response" in full:
        sent = re.search(r"Received: (.*?)\. Check", full, re.S)
        what = f": it sent {_excerpt(sent.group(1))}" if sent else ""
        return f"{where} sent an answer that is not a chat completion{what}"
    if "Expecting value" in full and "Received response" in full:
        return f"{where} sent an answer that is not JSON (it should be a chat completion)"
    undecodable = next((e for e in chain if isinstance(e, UnicodeDecodeError)), None)
    if undecodable is not None or "codec can't decode" in full:
        at = re.search(r"decode byte (0x[0-9a-f]+) in position (\d+)", full)
        what = f" (byte {at.group(1)} at position {at.group(2)})" if at else ""
        return f"{where} sent an answer that is not valid UTF-8{what}"
    text = _clean(exc)
    status = _http_status(exc)
    if status is not None:
        return f"{where} answered {status}: {text}"
    if text.endswith("(no reason given)") and not backends.is_builtin(endpoint.model):
        return f"{where}: {text}"
    return text


def _served_name(litellm, model: str) -> str:
    """The name the server is asked for (``x`` of ``openai/x``)."""
    try:
        return str(litellm.get_llm_provider(model)[0])
    except Exception:  # litellm cannot route it: the whole string
        return model


def _arguments(value: Any) -> str:
    """A tool call's arguments as JSON text; a server that sends an object (not the string
    the API specifies) is taken at its word: the object is the arguments."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _surrogate(text: str | None) -> int | None:
    """Where ``text`` holds a lone surrogate (a code point that is not text), if it does."""
    if not text:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _check_text(reply: LLMReply, where: str) -> None:
    """Raise BadAnswerError when the reply holds a lone surrogate (a broken encoding at the
    server: it cannot be written to a file, given to a tool or sent back)."""
    fields = [("its content", reply.content)]
    for n, call in enumerate(reply.tool_calls, 1):
        label = f"tool call {call.name!r}" if _surrogate(call.name) is None else f"tool call {n}"
        fields += [
            (f"the name of its {label}", call.name),
            (f"the id of its {label}", call.id),
            (f"the arguments of its {label}", call.arguments),
        ]
    for field, text in fields:
        at = _surrogate(text)
        if at is None or text is None:
            continue
        around = ascii(_excerpt(text[max(0, at - 30) : at + 30], 80))
        raise BadAnswerError(
            f"{where} sent a lone surrogate {ascii(text[at])} in {field} (around {around}), "
            "which is not text: a broken encoding at the server"
        )


def _reply(response, endpoint: Endpoint, latency: float, litellm) -> LLMReply:
    """The reply in ``response``; BadAnswerError when there is none to read."""
    where = _where(endpoint)
    choices = getattr(response, "choices", None)
    if not choices:
        raise BadAnswerError(
            f"{where} answered with no choices (an empty `choices` list): there is no reply "
            "in its answer"
        )
    message = getattr(choices[0], "message", None)
    if message is None:
        raise BadAnswerError(f"{where} answered with a choice that holds no message")
    calls = [
        ToolCall(
            id=c.id or f"call_{i}",
            name=c.function.name or "",
            arguments=_arguments(c.function.arguments),
        )
        for i, c in enumerate(getattr(message, "tool_calls", None) or [])
    ]
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown model: no price
            cost = None
    reply = LLMReply(
        content=message.content,
        tool_calls=calls,
        model=endpoint.model,
        tokens_in=getattr(usage, "prompt_tokens", 0) or 0,
        tokens_out=getattr(usage, "completion_tokens", 0) or 0,
        tokens_cached=_cached_tokens(usage),
        cost_usd=float(cost) if cost is not None else None,
        latency_s=latency,
    )
    _check_text(reply, where)
    return reply
