"""Generation throughput of the embedded model (SmolLM2-135M GGUF via transformers) on this machine's CPU.

Measures model load time, then for each batch shape (1 x 1, 1 conversation x G
samples) the wall time and tokens/s of sampling a fixed number of new tokens
from the saxpy task prompt (the agent's turn-1 prompt; no early stop, so every
sample generates exactly ``--tokens`` unless it hits EOS). The load average at
start and end is recorded: on a shared machine, tokens/s scales with the CPU
share the process gets, so quote the figures with it.

Measured on the shared 2-core development machine (nice 10, load average 2-3, torch 2.13 CPU):
64 new tokens at 10.9 tokens/s with 1 thread, 128 at 1.9 tokens/s with 2 threads (OpenMP
spin-waits when the cores are shared), model load 25-35 s. On a quiet moment of it (load
average about 1, 2026-12-07; benchmarks/results/agent_generation_cpu_2026-12-07.json): load 15 s,
128 tokens at 18.2 / 19.3 tokens/s (1 / 2 threads), 4 samples together 25.1 / 30.9 tokens/s.

Run: ``python benchmarks/agent_generation.py [--model PATH] [--tokens 128] [--group 4] [--threads N] --json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from typing import Any


def measure(model: str | None, tokens: int, group: int, threads: int) -> dict[str, Any]:
    """Load the model, then time sampling ``tokens`` new tokens at batch 1 and at ``group`` samples."""
    import torch

    from agents.context import SYSTEM_PROMPT
    from agents.model import default_model_path
    from agents.policies.base import Sampling
    from agents.policies.transformers_policy import TransformersPolicy
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import load_tasks

    load_before = os.getloadavg()
    start = time.perf_counter()
    policy = TransformersPolicy(model or default_model_path(), device="cpu", threads=threads)
    load_s = time.perf_counter() - start
    task = load_tasks()["c2cuda/saxpy_f32"]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task_prompt(task)}]
    sampling = Sampling(max_tokens=tokens, stop_after_code_block=False, seed=0)
    runs = []
    for n in sorted({1, group}):
        start = time.perf_counter()
        [gens] = policy.generate([messages], n, sampling)
        seconds = time.perf_counter() - start
        generated = sum(len(g.token_ids) for g in gens)
        runs.append(
            {
                "samples": n,
                "generated_tokens": generated,
                "seconds": round(seconds, 2),
                "tokens_per_s": round(generated / seconds, 2),
                "distinct_replies": len({g.text for g in gens}),
            }
        )
    return {
        "model": policy.name,
        "prompt_tokens": policy.count_tokens(messages),
        "load_seconds": round(load_s, 1),
        "runs": runs,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "nice": os.nice(0),
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="model directory or .gguf file (default: the embedded model)")
    parser.add_argument("--tokens", type=int, default=128, help="new tokens per sample")
    parser.add_argument("--group", type=int, default=4, help="samples of the batched run")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: half the cores)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    result = measure(args.model, args.tokens, args.group, args.threads)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['model']}: load {result['load_seconds']} s, prompt {result['prompt_tokens']} tokens")
    for r in result["runs"]:
        print(
            f"  {r['samples']} sample(s): {r['generated_tokens']} tokens in {r['seconds']} s"
            f" = {r['tokens_per_s']} tok/s"
        )
    print(f"  load average {result['loadavg_start']} -> {result['loadavg_end']} on {result['cpus']} CPUs")


if __name__ == "__main__":
    main()
