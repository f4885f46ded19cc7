"""The start model of GRPO runs as one plain transformers directory: a base model with its SFT adapter merged.

GRPO trains a fresh LoRA adapter on top of its start model, and the start model
is the KL reference (the model with the adapter disabled). Merging the SFT
adapter into the base weights first keeps that true, and gives vLLM and
``cudaperf evaluate --model DIR --adapter RUN/final`` one directory to load
(a GGUF file is de-quantized once here).

Run: ``python -m agents.grpo.start_model --model BASE.gguf --adapter runs/sft/adapter --out runs/start``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path


def export_start_model(model: str, out: str | Path, adapter: str | None = None, dtype: str = "float32") -> Path:
    """Write ``model`` (merged with ``adapter`` when given) as a transformers directory at ``out``."""
    from agents.model import default_model_path, export_hf_model

    target = export_hf_model(model or default_model_path(), out, dtype=dtype, adapter=adapter)
    provenance = {"base": str(model or default_model_path()), "adapter": adapter, "dtype": dtype,
                  "adapter_sha256": adapter_digest(adapter) if adapter else None}  # fmt: skip
    (target / "start_model.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return target


def adapter_digest(adapter: str | Path) -> str:
    """The first 16 hex digits of the sha256 of an adapter's weights: which SFT adapter a start model holds."""
    return hashlib.sha256((Path(adapter) / "adapter_model.safetensors").read_bytes()).hexdigest()[:16]


def start_identity(model: str | Path) -> str:
    """Which start model ``model`` is: its adapter's digest (``start_model.json``), ``none`` for the base
    model alone, ``unknown`` for a directory this module did not write (or wrote before it kept the digest)."""
    try:
        provenance = json.loads((Path(model) / "start_model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unknown"
    if provenance.get("adapter") is None:
        return "none"
    return str(provenance.get("adapter_sha256") or "unknown")


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.grpo.start_model``."""
    parser = argparse.ArgumentParser(prog="python -m agents.grpo.start_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="base model directory or .gguf file (default: the embedded one)")
    parser.add_argument("--adapter", help="an SFT LoRA adapter directory to merge in (agents/sft.py's OUT/adapter)")
    parser.add_argument("--out", required=True, help="the directory to write")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args(argv)
    print(export_start_model(args.model, args.out, args.adapter, args.dtype))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
