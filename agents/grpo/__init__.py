"""Multi-turn GRPO for the bundled agent: pure math, a top-to-bottom trainer, the reward ablation.

Where things live:

- ``advantages.py``: per-turn discounted returns, normalized within a group (GRPO, Dr. GRPO);
- ``loss.py``: importance ratios, clipped surrogate, k3 KL, entropy;
- ``aggregation.py``: token-level, sequence-level and Dr. GRPO loss aggregation (per-token weights);
- ``batch.py``: one training sequence per graded turn, only the model's own tokens trained;
- ``generation.py``: the generator shared by rollout threads (transformers or vLLM);
- ``config.py``: :class:`GRPOConfig`, its flags and its TOML/YAML file form;
- ``checkpoint.py``: checkpoints that resume a run exactly;
- ``logbook.py``: metrics.jsonl, TensorBoard scalars, the rich progress view;
- ``trainer.py``: the loop (``cudaperf train grpo``);
- ``start_model.py``: the start model as one directory (base plus merged SFT adapter);
- ``ablation.py``, ``ablation_results.py``: the reward ablation over arms and seeds, and its results.
"""
