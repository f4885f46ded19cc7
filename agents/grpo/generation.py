"""Generation during training: one policy shared by the rollout threads, and its weights kept current.

Rollouts of several tasks run in threads so that one task's replies are graded
while the next task's are generated. :class:`SerialPolicy` lets one
``generate`` call run at a time (one model, one tokenizer: Rust tokenizers
refuse concurrent use), measures how long the generator was busy (the rest of
the rollout phase it sat waiting for evaluation) and keeps the token ids each
reply was sampled as.

Generators (:data:`GENERATORS`):

- ``transformers``: samples from the very model being trained (no copy, no sync);
- ``merged``: samples from a plain copy of the model with the LoRA adapter merged into its
  weights, refreshed in place after every optimizer step: no adapter matrices in the
  per-token step, which the small embedded model is bound by (1.8-2x faster on an H100,
  ``benchmarks/gpu_generation.py``; docs/grpo.md). Costs one more copy of the weights;
  without LoRA it is ``transformers``;
- ``vllm``: a ``vllm.LLM`` engine on the same GPU serving the LoRA adapter being
  trained; after every optimizer step the adapter is written to disk and served
  under a new LoRA id (vLLM caches adapters by id), so each step samples from the
  current weights. Needs LoRA (``lora_r > 0``).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from agents.errors import AgentError
from agents.policies.base import Generation, Message, OnReply, Policy, Sampling, streams_replies


def conversation_key(messages: Sequence[Message]) -> str:
    """A conversation as a dict key (the same messages give the same key)."""
    return json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)


class SerialPolicy:
    """A policy whose calls run one at a time, with busy time and sampled token ids recorded.

    Attributes:
        busy_seconds: Wall time spent inside ``generate`` since the last :meth:`reset`.
        token_ids: ``(conversation key, reply text) -> sampled token ids`` since the last reset.
    """

    def __init__(self, policy: Policy) -> None:
        self.inner = policy
        self.name = policy.name
        self.context_window = policy.context_window
        self._lock = threading.Lock()
        self.busy_seconds = 0.0
        self.token_ids: dict[tuple[str, str], tuple[int, ...]] = {}

    def reset(self) -> None:
        """Forget busy time and token ids (at the start of a step)."""
        with self._lock:
            self.busy_seconds = 0.0
            self.token_ids = {}

    @property
    def streams_replies(self) -> bool:
        """Whether the wrapped policy tells of each reply as it ends (``on_reply``)."""
        return streams_replies(self.inner)

    def generate(self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling,
                 on_reply: OnReply | None = None) -> list[list[Generation]]:  # fmt: skip
        with self._lock:
            start = time.perf_counter()
            if on_reply is not None and self.streams_replies:
                out = self.inner.generate(messages_batch, n, sampling, on_reply=on_reply)  # type: ignore[call-arg]
            else:
                out = self.inner.generate(messages_batch, n, sampling)
            give_back_gpu_cache()
            self.busy_seconds += time.perf_counter() - start
            for messages, row in zip(messages_batch, out, strict=True):
                key = conversation_key(messages)
                for g in row:
                    if g.token_ids:
                        self.token_ids[(key, g.text)] = g.token_ids
        return out

    def count_tokens(self, messages: Sequence[Message]) -> int:
        with self._lock:
            return self.inner.count_tokens(messages)


def give_back_gpu_cache() -> None:
    """PyTorch's cached GPU blocks back to the driver (where torch is loaded and CUDA in use).

    Called after each generate call: the grading that follows runs the replies on the same card,
    beside other training runs' generation and graders, which need that memory more than the next
    call's allocator (re-allocating costs milliseconds against tens of seconds of generation).
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


class Generator(Protocol):
    """Makes replies during training and follows the trained weights."""

    policy: Policy

    def sync(self, model: Any, step: int) -> None:
        """Make the next generations come from ``model``'s current weights."""
        ...


@dataclass
class SharedModelGenerator:
    """Generation by the trained model itself (transformers): nothing to sync."""

    policy: Policy

    def sync(self, model: Any, step: int) -> None:
        return None


@dataclass
class VLLMGenerator:
    """A vLLM engine serving the trained LoRA adapter, re-read from disk after each step."""

    policy: Any
    adapter_dir: Path
    versions: list[Path] = field(default_factory=list)

    def sync(self, model: Any, step: int) -> None:
        from vllm.lora.request import LoRARequest

        path = self.adapter_dir / f"step-{step:06d}"
        model.save_pretrained(path)
        self.policy.lora = LoRARequest(lora_name=f"grpo-step-{step}", lora_int_id=step + 1, lora_path=str(path))
        self.versions.append(path)
        while len(self.versions) > 2:  # the engine has loaded the older ones it needs
            shutil.rmtree(self.versions.pop(0), ignore_errors=True)


@dataclass
class MergedCopyGenerator:
    """Generation by a plain copy of the trained model with its LoRA adapter merged in."""

    policy: Policy
    copy: Any

    def sync(self, model: Any, step: int) -> None:
        merge_into(self.copy, model)


LORA_PREFIX = "base_model.model."
"""How PEFT names the wrapped model's modules (``base_model.model.model.layers.0...``)."""


def merge_into(plain: Any, lora_model: Any) -> int:
    """Write ``lora_model``'s merged weights (base + its active adapter's delta) into ``plain`` in place.

    ``plain`` is an unwrapped copy of the same architecture; its tensors keep their storage, so
    anything captured on them (a compiled or CUDA-graphed step) stays valid. Returns the number
    of layers merged.
    """
    import torch
    from peft.tuners.lora import LoraLayer

    merged = 0
    with torch.no_grad():
        for name, module in lora_model.named_modules():
            if not isinstance(module, LoraLayer) or not name.startswith(LORA_PREFIX):
                continue
            layer: Any = module
            target = plain.get_submodule(name[len(LORA_PREFIX):])
            base = layer.get_base_layer().weight
            delta = sum((layer.get_delta_weight(a) for a in layer.active_adapters if a in layer.lora_A),
                        torch.zeros_like(base))  # fmt: skip
            target.weight.copy_(base + delta.to(base.dtype))
            merged += 1
    return merged


def plain_copy(lora_model: Any) -> Any:
    """The model under ``lora_model``'s adapter as a plain model of its own (weights merged, eval mode)."""
    import copy

    plain = copy.deepcopy(lora_model.get_base_model())
    for name, module in list(plain.named_modules()):  # PEFT's layers -> their base layers
        if hasattr(module, "get_base_layer") and name:
            parent, _, child = name.rpartition(".")
            setattr(plain.get_submodule(parent) if parent else plain, child, module.get_base_layer())
    merge_into(plain, lora_model)
    return plain.eval().requires_grad_(False)


def _transformers(model: Any, tokenizer: Any, *, device: str, name: str, static_cache: bool = False,
                  **_: Any) -> Generator:  # fmt: skip
    from agents.policies.transformers_policy import TransformersPolicy

    return SharedModelGenerator(TransformersPolicy(model, tokenizer, device=device, name=name,
                                                   static_cache=static_cache))  # fmt: skip


def _merged(model: Any, tokenizer: Any, *, device: str, name: str, lora: bool, static_cache: bool = False,
            **_: Any) -> Generator:  # fmt: skip
    from agents.policies.transformers_policy import TransformersPolicy

    if not lora:  # a full fine-tune has nothing to merge
        return _transformers(model, tokenizer, device=device, name=name, static_cache=static_cache)
    copy = plain_copy(model)
    return MergedCopyGenerator(TransformersPolicy(copy, tokenizer, device=device, name=name,
                                                  static_cache=static_cache), copy)  # fmt: skip


def _vllm(model: Any, tokenizer: Any, *, model_path: str, out: Path, lora: bool, memory: float, seed: int,
          context_window: int | None, **_: Any) -> Generator:  # fmt: skip
    from agents.policies.vllm_policy import VLLMPolicy

    if not lora:
        raise AgentError("the vllm generator serves a LoRA adapter: set lora_r > 0 (or use generator=transformers)")
    if not model_path or model_path.endswith(".gguf"):
        raise AgentError("the vllm generator needs --model DIR, a transformers directory: write one with "
                         "`python -m agents.grpo.start_model --out DIR` (optionally --adapter SFT_ADAPTER)")
    adapter_dir = out / "live_adapter"
    first = adapter_dir / "step-000000"
    model.save_pretrained(first)
    rank = max(64, int(model.peft_config["default"].r))
    policy = VLLMPolicy(model_path, adapter=first, gpu_memory_utilization=memory, seed=seed,
                        context_window=context_window, max_lora_rank=rank)  # fmt: skip
    return VLLMGenerator(policy, adapter_dir, [first])


GENERATORS: Mapping[str, Callable[..., Generator]] = MappingProxyType(
    {"transformers": _transformers, "merged": _merged, "vllm": _vllm})
"""Generators by name (``GRPOConfig.generator``)."""
