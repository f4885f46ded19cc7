"""How much of a GRPO step waits for evaluation, with and without overlapping it with generation (CPU).

A tiny randomly initialized Llama (hidden 32, 2 layers) with a byte-level
tokenizer built here generates (a small vocabulary keeps the optimization
short: it is not what is measured); in each group the first half of the turn-1 replies
are the task's verified implementations (so grading does real work: nvcc check,
g++ build, runs on the CPU backend, against a cold build cache per setting) and
the rest are the model's own samples. The same steps (same tasks, same seeds)
run with ``rollout_workers`` = 1 (tasks one after another: every grading is
waited for) and with more workers (one task graded while another generates).
Reported per setting: mean step time split into generation, evaluation (summed
grading time), optimization, and the share of the step the generator sat idle
waiting for evaluation.

Run: ``python benchmarks/grpo_overlap.py --json benchmarks/results/grpo_overlap_cpu.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any


class OpensWithVerifiedKernels:
    """The model's generations, except the first half of each turn-1 group: the task's implementations."""

    def __init__(self, model: Any, tokenizer: Any, tasks: list[Any]) -> None:
        from agents.policies.transformers_policy import TransformersPolicy

        self.real = TransformersPolicy(model, tokenizer, device="cpu", name="tiny-random", threads=1)
        self.name, self.context_window, self.tasks = self.real.name, self.real.context_window, tasks

    def count_tokens(self, messages: Any) -> int:
        return self.real.count_tokens(messages)

    def generate(self, batch: Any, n: int, sampling: Any) -> Any:
        from agents.policies.base import Generation
        from cudaperf_env.prompt import task_prompt

        out = self.real.generate(batch, n, sampling)
        for messages, row in zip(batch, out, strict=True):
            if len(messages) == 2:
                task = next(t for t in self.tasks if task_prompt(t) == messages[1]["content"])
                for j in range(n // 2):
                    impl = task.implementations[j % len(task.implementations)]
                    row[j] = Generation(f"```cuda\n{impl.source}```", finish_reason="stop")
        return out


def byte_tokenizer() -> Any:
    """A byte-level BPE tokenizer without merges (one token a byte) with a ChatML template."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(specials + pre_tokenizers.ByteLevel.alphabet())},
                               merges=[]))  # fmt: skip
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                                pad_token="<|endoftext|>", additional_special_tokens=specials[1:])
    fast.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return fast


def measure(workers: int, steps: int, tokenizer: Any, tasks: list[Any], out: Path) -> dict[str, Any]:
    import torch
    import transformers

    from agents.grpo.config import GRPOConfig
    from agents.grpo.logbook import read_metrics
    from agents.grpo.trainer import train

    os.environ["CUDAPERF_CACHE_DIR"] = tempfile.mkdtemp(prefix="grpo-overlap-cache-")  # cold builds each setting
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=8192, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    run = GRPOConfig(out=str(out / f"workers-{workers}"), turns=2, group=4, tasks_per_step=4, steps=steps,
                     max_tokens=16, backend="cpu", device="cpu", rollout_workers=workers, lora_r=4, micro_batch=4,
                     ranker=False, tensorboard=False, progress=False, save_every=steps)  # fmt: skip
    train(run, model=model, tokenizer=tokenizer, tasks=tasks, policy=OpensWithVerifiedKernels(model, tokenizer, tasks))
    rows = read_metrics(Path(run.out) / "metrics.jsonl")
    keys = ("time/step_s", "time/rollout_s", "time/generation_s", "time/evaluation_s", "time/optimization_s",
            "time/eval_wait_s", "time/eval_wait_share", "time/eval_hidden_share")  # fmt: skip
    return {"rollout_workers": workers, "steps": len(rows),
            **{k.split("/")[1]: sum(r[k] for r in rows) / len(rows) for k in keys}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    from cudaperf_env.tasks import load_tasks

    tokenizer = byte_tokenizer()
    tasks = [t for t in load_tasks().values() if t.implementations][:8]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(w, args.steps, tokenizer, tasks, Path(tmp)) for w in args.workers]
    result = {"benchmark": "grpo_overlap", "date": datetime.date.today().isoformat(), "machine": platform.machine(),
              "cpus": os.cpu_count(), "load_average": {"start": load_before, "end": os.getloadavg()},
              "tasks": [t.id for t in tasks], "results": rows}  # fmt: skip
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
