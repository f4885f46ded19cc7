"""Checkpoints of a GRPO run that resume it exactly: weights, optimizer, step, RNG states, configuration.

Layout of ``OUT/checkpoint-<step>/``: the LoRA adapter (``adapter_model.safetensors``,
``adapter_config.json``) or, for a full fine-tune, the model (``model.safetensors``,
``config.json``); the tokenizer; ``trainer_state.pt`` (optimizer state, step,
Python, NumPy and torch RNG states); ``grpo_config.json``. A checkpoint is
written to ``checkpoint-<step>.tmp`` and renamed, so a run killed mid-write
never leaves a half checkpoint that resume would pick up.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.errors import AgentError

STATE = "trainer_state.pt"
CONFIG = "grpo_config.json"


class CheckpointMismatchError(AgentError):
    """The checkpoint in the run directory was made with other run-defining options."""


@dataclass(frozen=True)
class Restored:
    """What a checkpoint gave back: the step it was taken after and its directory."""

    step: int
    path: Path


def checkpoints(out: str | Path) -> list[Path]:
    """Complete checkpoints in ``out``, oldest first."""
    found = [p for p in Path(out).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted((p for p in found if (p / STATE).is_file()), key=lambda p: int(p.name.split("-")[-1]))


def latest_checkpoint(out: str | Path) -> Path | None:
    """The checkpoint with the highest step, if any."""
    found = checkpoints(out)
    return found[-1] if found else None


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch (CPU and CUDA) RNG states."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(),
                             "torch": torch.get_rng_state()}  # fmt: skip
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(out: str | Path, step: int, model: Any, tokenizer: Any, optimizer: Any, config: dict[str, Any],
                    keep: int = 2) -> Path:  # fmt: skip
    """Write ``checkpoint-<step>`` atomically, then delete all but the ``keep`` newest."""
    final = Path(out) / f"checkpoint-{step:06d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    torch.save({"step": step, "optimizer": optimizer.state_dict(), "rng": rng_state()}, tmp / STATE)
    (tmp / CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in checkpoints(out)[:-keep]:
        shutil.rmtree(old)
    return final


def check_same_run(path: Path, config: dict[str, Any], identity: tuple[str, ...]) -> None:
    """Refuse to resume a checkpoint whose run-defining options differ from ``config``'s.

    Raises:
        CheckpointMismatchError: Names each differing option and what to do.
    """
    saved = json.loads((path / CONFIG).read_text(encoding="utf-8"))
    diff = [f"{k}: checkpoint {saved.get(k)!r}, now {config.get(k)!r}"
            for k in identity if saved.get(k) != config.get(k)]  # fmt: skip
    if diff:
        raise CheckpointMismatchError(
            f"{path} belongs to another run ({'; '.join(diff)}): pass the same options to resume it, "
            "or a new --out to start a new run"
        )


def load_checkpoint(path: Path, model: Any, optimizer: Any, lora: bool) -> Restored:
    """Load weights, optimizer and RNG states from ``path`` into the (already built) model and optimizer."""
    if lora:
        import peft

        peft.set_peft_model_state_dict(model, peft.utils.load_peft_weights(str(path)))
    else:
        from safetensors.torch import load_file

        weights: dict[str, Any] = {}
        for shard in sorted(path.glob("model*.safetensors")):
            weights.update(load_file(str(shard)))
        missing, unexpected = model.load_state_dict(weights, strict=False)
        tied = set(getattr(model, "_tied_weights_keys", None) or [])
        if unexpected or set(missing) - tied:
            raise AgentError(f"{path}: the saved weights do not fit the model (missing {sorted(missing)[:3]}, "
                             f"unexpected {sorted(unexpected)[:3]}); resume with the same --model")
    state = torch.load(path / STATE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return Restored(int(state["step"]), path)
