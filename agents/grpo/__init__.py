"""Multi-turn GRPO for the bundled agent: pure math, a top-to-bottom trainer, the reward ablation.

Where things live:

- ``advantages.py``: per-turn discounted returns, normalized within a group (GRPO, Dr. GRPO);
- ``loss.py``: importance ratios, clipped surrogate, k3 KL, entropy, token/sequence aggregation;
- ``batch.py``: one training sequence per graded turn, only the model's own tokens trained;
- ``generation.py``: the generator shared by rollout threads (transformers or vLLM);
- ``config.py``: :class:`GRPOConfig`, its flags and its TOML/YAML file form;
- ``checkpoint.py``: checkpoints that resume a run exactly;
- ``logbook.py``: metrics.jsonl, TensorBoard scalars, the rich progress view;
- ``trainer.py``: the loop (``cudaperf train grpo``);
- ``ablation.py``: the reward ablation over arms and seeds.
"""
