"""Policies: one interface (:class:`Policy`), a backend per module, built by name with :func:`make_policy`.

Backends import their heavy packages (torch, transformers, vllm, openai) only
when built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.policies.base import Generation, Message, Policy, Sampling
from agents.policies.scripted import ScriptedPolicy

__all__ = ["POLICIES", "Generation", "Message", "Policy", "Sampling", "ScriptedPolicy", "make_policy"]


def _transformers(model: str | None, **kwargs: Any) -> Policy:
    from agents.model import default_model_path, resolve_adapter
    from agents.policies.transformers_policy import TransformersPolicy

    kwargs["adapter"] = resolve_adapter(model, kwargs.get("adapter"))
    return TransformersPolicy(model or default_model_path(), **kwargs)


def _vllm(model: str | None, **kwargs: Any) -> Policy:
    from agents.model import default_model_path, resolve_adapter
    from agents.policies.vllm_policy import VLLMPolicy

    kwargs["adapter"] = resolve_adapter(model, kwargs.get("adapter"))
    return VLLMPolicy(model or default_model_path(), **kwargs)


def _openai(model: str | None, **kwargs: Any) -> Policy:
    from agents.policies.openai_policy import OpenAIPolicy, ServerConfig

    if not model:
        raise ValueError("the openai policy needs --model NAME (the served model) and --base-url URL")
    return OpenAIPolicy(ServerConfig(model=model, **kwargs))


POLICIES: dict[str, Callable[..., Policy]] = {"transformers": _transformers, "vllm": _vllm, "openai": _openai}


def make_policy(kind: str, model: str | None = None, **kwargs: Any) -> Policy:
    """Build a policy by backend name (``transformers``, ``vllm``, ``openai``).

    Args:
        kind: The backend.
        model: A local model path (default: the embedded model) or, for ``openai``, the served model's name.
        **kwargs: The backend's own options (``device=``, ``adapter=``, ``base_url=``, ...).
    """
    if kind not in POLICIES:
        raise ValueError(f"unknown policy {kind!r}; expected one of {', '.join(POLICIES)}")
    return POLICIES[kind](model, **kwargs)
