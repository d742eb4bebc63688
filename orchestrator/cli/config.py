"""What the model and sandbox options of a command line make: the build's configuration.

``build``, ``matrix run``, ``improve`` and ``nightly`` take the same options for the
model (``--model``, ``--api-base``, fallbacks) and the sandbox (``--unsafe-no-sandbox``);
:func:`build_config` turns them into one :class:`~orchestrator.loop.agent.BuildConfig`,
and says on the terminal, first, when the sandbox is off. Text that cannot be stored (not
UTF-8: a shell's bytes ``$'\\xff'`` reach Python as lone surrogates) is refused here, in one
line, before anything is made.

A resumed build (``build --resume``) passes the configuration its run recorded: the model
comes from it, with its api base and its fallbacks with theirs, unless the command line
gives them again. Another model given takes only the api base given with it (an api base
belongs to its model; the same model given again keeps its recorded one); fallbacks given
again replace the recorded ones with their bases.
"""

from __future__ import annotations

import argparse
import os

from orchestrator.cli import output
from orchestrator.errors import CadillacError

UNSAFE = (
    "--unsafe-no-sandbox: the model's commands run on this machine without a sandbox; "
    "they can read and change your files"
)


def utf8(text: str, what: str) -> str:
    """``text``, or CadillacError when it is not valid UTF-8 (it could not be stored)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"character {exc.start + 1} is U+{ord(text[exc.start]):04X}, a lone surrogate"
        try:  # the bytes as the shell gave them
            raw = text.encode("utf-8", "surrogateescape")
            raw.decode("utf-8")
        except UnicodeEncodeError:  # a surrogate that no byte stands for
            pass
        except UnicodeDecodeError as bad:
            where = f"byte 0x{raw[bad.start]:02x} at position {bad.start}"
        raise CadillacError(f"{what} is not valid UTF-8 ({where}): give it as UTF-8 text") from None
    return text


def _recorded_llm(recorded: dict | None) -> dict:
    """The model settings a run recorded in its task.json (what has the wrong type is left
    out: a damaged record gives nothing rather than something wrong)."""
    llm = (recorded or {}).get("llm")
    if not isinstance(llm, dict):
        return {}
    out: dict = {}
    if isinstance(llm.get("model"), str) and llm["model"].strip():
        out["model"] = llm["model"]
    if isinstance(llm.get("api_base"), str) and llm["api_base"]:
        out["api_base"] = llm["api_base"]
    models = llm.get("fallback_models")
    if isinstance(models, list) and all(isinstance(m, str) for m in models):
        out["fallback_models"] = models
        bases = llm.get("fallback_api_bases")
        if isinstance(bases, list) and all(b is None or isinstance(b, str) for b in bases):
            out["fallback_api_bases"] = bases[: len(models)]
    return out


def build_config(
    args: argparse.Namespace, per_build_cost: bool = True, recorded: dict | None = None
):
    """The BuildConfig a command line asks for (model, api base, fallbacks, cost cap, sandbox).

    ``per_build_cost=False``: the command's ``--max-cost`` caps a whole run, not each build.
    ``recorded``: the configuration of the run being resumed (its task.json's ``config``),
    whose model settings stand where the command line gives none (see the module docstring).
    """
    from orchestrator.llm.client import MODEL_HINT, LLMConfig
    from orchestrator.loop.agent import BuildConfig
    from orchestrator.sandbox.executor import ExecConfig

    old = _recorded_llm(recorded)
    env_base = os.environ.get("CADILLAC_API_BASE") or None
    if args.model and args.model != old.get("model"):
        model, api_base = args.model, args.api_base or env_base
    elif old.get("model"):  # the recorded model, or the same one given again
        model, api_base = old["model"], args.api_base or old.get("api_base")
    else:
        model, api_base = os.environ.get("CADILLAC_MODEL", ""), args.api_base or env_base
    if not model:
        raise CadillacError(f"no model given: {MODEL_HINT}")
    if args.fallback_model or args.fallback_api_base:
        fallbacks, fallback_bases = args.fallback_model or [], args.fallback_api_base or []
    else:
        fallbacks = old.get("fallback_models", [])
        fallback_bases = old.get("fallback_api_bases", [])
    source = "--model (or CADILLAC_MODEL)" if args.model or not old.get("model") else "the model"
    utf8(model, source)
    if api_base:
        utf8(api_base, "--api-base (or CADILLAC_API_BASE)")
    for name in fallbacks:
        utf8(name, "--fallback-model")
    for base in fallback_bases:
        if base:
            utf8(base, "--fallback-api-base")
    timeout = getattr(args, "request_timeout", None)
    llm = LLMConfig(
        model=model,
        api_base=api_base,
        fallback_models=fallbacks,
        fallback_api_bases=fallback_bases,
        **({} if timeout is None else {"request_timeout_s": timeout}),
    )
    if len(llm.fallback_api_bases) > len(llm.fallback_models):
        raise CadillacError("--fallback-api-base given without a --fallback-model to belong to")
    executor = ExecConfig(sandbox="none" if getattr(args, "unsafe_no_sandbox", False) else "bwrap")
    if executor.sandbox == "none":
        output.warn(UNSAFE)
    cap = getattr(args, "max_cost", None) if per_build_cost else None
    tokens = getattr(args, "max_tokens", None) if per_build_cost else None
    return BuildConfig(llm=llm, executor=executor, max_cost_usd=cap, max_tokens=tokens)


def warn_unused_api_base(args: argparse.Namespace, config) -> None:
    """Say so when ``--api-base`` was given for a model that calls no server (a replay or a
    scripted model): it is ignored, and the user may have meant another model."""
    from orchestrator.llm import backends

    model = config.llm.model
    if getattr(args, "api_base", None) and backends.is_builtin(model):
        output.warn(f"--api-base is ignored: {model} is built into cadillac and calls no server")
