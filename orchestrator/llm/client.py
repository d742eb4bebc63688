"""Every model call: litellm, retries with tenacity, fallbacks, and a log line per attempt.

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
  :class:`ModelError` that says what to do.
* Each attempt, failed or not, is one line of the run's ``llm.jsonl``: the
  request, the response or error, tokens, latency and cost (litellm's price
  where it knows the model, else null). :class:`LLMClient` keeps the totals.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)
from tenacity.wait import wait_base

from orchestrator.errors import CadillacError

MODEL_HINT = (
    "set CADILLAC_MODEL or pass --model (a litellm model string such as "
    "anthropic/claude-sonnet-4-5, openai/gpt-4o or ollama/qwen2.5-coder, with --api-base "
    "for a local server); `make demo` runs offline on a recorded session"
)


LOCAL_KEY = "CADILLAC_API_KEY"
"""The key sent to a server given by --api-base (a placeholder when it is not set)."""


class ModelError(CadillacError):
    """A model call that cannot succeed by retrying (bad model, key, request or context)."""


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
    temperature: float | None = None
    max_tokens: int | None = None

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
    failed_attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    """Sum of known costs; None when no call had a known price."""
    seconds: float = 0.0


def litellm_module():
    """Import litellm offline-safe, once; register cadillac's back ends."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    from orchestrator.llm import backends

    backends.register(litellm)
    return litellm


def _retryable_classes(litellm) -> tuple[type[BaseException], ...]:
    return (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )


def is_retryable(exc: BaseException, litellm) -> bool:
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


def check_model(model: str) -> None:
    """Raise ModelError now for a model string litellm cannot route (before a run starts)."""
    from orchestrator.llm import backends

    if not model.strip():
        raise ModelError(f"no model given: {MODEL_HINT}")
    if backends.is_builtin(model):
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
        from orchestrator.llm import backends

        self.endpoints = config.endpoints()
        self._names: list[str] = []
        for endpoint in self.endpoints:
            try:
                self._names.append(backends.open_session(endpoint.model))
            except (OSError, KeyError, ValueError) as exc:
                message = str(exc).strip(chr(39))
                raise ModelError(f"model {endpoint.model!r}: {message}") from None

    def complete(self, messages: list[dict], tools: list[dict] | None = None) -> LLMReply:
        """One model turn; raises ModelError when no model can answer."""
        litellm = litellm_module()
        last: BaseException | None = None
        for index, endpoint in enumerate(self.endpoints):
            try:
                for attempt in self._retrying(litellm):
                    with attempt:
                        number = attempt.retry_state.attempt_number
                        return self._attempt(litellm, index, number, messages, tools)
            except Exception as exc:  # retries for this model are spent, or it cannot succeed
                if not is_retryable(exc, litellm):
                    raise ModelError(self._explain(endpoint.model, exc)) from exc
                last = exc
        assert last is not None
        tried = ", ".join(e.model for e in self.endpoints)
        raise ModelError(f"every model failed ({tried}); last error: {_first_line(last)}") from last

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
        }
        kwargs.update({k: v for k, v in settings.items() if v is not None})
        self._seq += 1
        started = time.perf_counter()
        record: dict[str, Any] = {
            "v": 1,
            "ts": time.time(),
            "seq": self._seq,
            "model": model,
            "attempt": attempt,
            "request": {"messages": messages, "tools": bool(tools)},
        }
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:
            self.totals.failed_attempts += 1
            record.update(
                latency_s=round(time.perf_counter() - started, 4),
                error=f"{type(exc).__name__}: {_first_line(exc)}",
                status=getattr(exc, "status_code", None),
            )
            self._log(record)
            raise
        latency = time.perf_counter() - started
        reply = _reply(response, model, latency, litellm)
        record.update(
            latency_s=round(latency, 4),
            response=reply.as_message(),
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost_usd=reply.cost_usd,
        )
        self._log(record)
        t = self.totals
        t.calls += 1
        t.tokens_in += reply.tokens_in
        t.tokens_out += reply.tokens_out
        t.seconds += latency
        if reply.cost_usd is not None:
            t.cost_usd = (t.cost_usd or 0.0) + reply.cost_usd
        return reply

    def _log(self, record: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    def _explain(self, model: str, exc: BaseException) -> str:
        text = _first_line(exc)
        name = type(exc).__name__
        if "LLM Provider NOT provided" in text or name == "NotFoundError":
            return f"model {model!r} is not known to litellm: {MODEL_HINT}"
        if name in ("AuthenticationError", "PermissionDeniedError"):
            return (
                f"the provider refused the key for {model!r} ({text}); set the provider's "
                "API key variable (e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY)"
            )
        if name == "ContextWindowExceededError":
            return f"the conversation no longer fits {model!r}'s context window ({text})"
        return f"{model!r} refused the request: {text}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def _reply(response, model: str, latency: float, litellm) -> LLMReply:
    message = response.choices[0].message
    calls = [
        ToolCall(
            id=c.id or f"call_{i}",
            name=c.function.name or "",
            arguments=c.function.arguments or "",
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
    return LLMReply(
        content=message.content,
        tool_calls=calls,
        model=model,
        tokens_in=getattr(usage, "prompt_tokens", 0) or 0,
        tokens_out=getattr(usage, "completion_tokens", 0) or 0,
        cost_usd=float(cost) if cost is not None else None,
        latency_s=latency,
    )
