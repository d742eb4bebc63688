"""Which environment variables a model needs, so a sandboxed process gets those and no others.

An improve trial builds with the model in a sandbox whose environment starts empty; it
gets the variables its provider reads (its key, and the few settings some providers
need) and nothing else. cadillac's own back ends (``replay:``, ``scripted:``) need none,
and neither does a model reached through ``--api-base``: there the key, if the server
wants one, is ``CADILLAC_API_KEY``, and a hosted provider's key is never sent.
"""

from __future__ import annotations

from orchestrator.llm.client import LOCAL_KEY, litellm_module

PROVIDER_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY", "OPENAI_ORGANIZATION"),
    "text-completion-openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "azure": ("AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION"),
    "gemini": ("GEMINI_API_KEY",),
    "vertex_ai": ("VERTEXAI_PROJECT", "VERTEXAI_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"),
    "bedrock": (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION_NAME",
    ),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "ollama": (),
    "ollama_chat": (),
}


def provider_env(model: str, api_base: str | None) -> tuple[str, ...]:
    """The names of the variables ``model`` reads (none for a model behind ``api_base``)."""
    from orchestrator.llm import backends

    if backends.is_builtin(model):
        return ()
    if api_base:
        return (LOCAL_KEY,)
    try:
        _, provider, _, _ = litellm_module().get_llm_provider(model)
    except Exception:  # an unknown provider: check_model refuses it before this is asked
        return ()
    return PROVIDER_ENV.get(provider, (f"{provider.upper()}_API_KEY",))
