"""The ablation end to end on the CPU backend: a tiny random Llama, real subprocesses, one results file.

What the device sessions run, at the smallest scale: the start model's evaluation on both
held-out splits (one ``cudaperf evaluate`` job), a training run, the final checkpoint's
evaluation with its adapter, and the results read back from the reports.
"""

import json

import pytest

transformers = pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
pytest.importorskip("peft", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
torch = pytest.importorskip("torch")

from agents.grpo.ablation import main  # noqa: E402


def test_the_ablation_runs_end_to_end_and_reports_each_held_out_split(tmp_path, tiny_tokenizer, capsys):
    config = transformers.LlamaConfig(vocab_size=len(tiny_tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=8192, eos_token_id=tiny_tokenizer.eos_token_id,
                                      pad_token_id=tiny_tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "model")
    tiny_tokenizer.save_pretrained(tmp_path / "model")
    results = tmp_path / "grpo_ablation.json"
    assert main(["--model", str(tmp_path / "model"), "--out", str(tmp_path / "abl"), "--results", str(results),
                 "--arms", "speedup_only", "--seeds", "0", "--steps", "1", "--turns", "1", "--group", "2",
                 "--tasks-per-step", "1", "--max-tokens", "8", "--eval-limit", "1", "--eval-group", "2",
                 "--backend", "cpu", "--generator", "transformers", "--eval-policy", "transformers",
                 "--no-tensorboard", "--jobs-per-gpu", "2"]) == 0  # fmt: skip
    saved = json.loads(results.read_text())
    assert saved["complete"] and set(saved["jobs"].values()) == {"done"} and len(saved["jobs"]) == 3
    entry = saved["arms"][0]["per_seed"][0]
    for which in ("start", "final"):
        assert entry[which]["tasks"] == 2  # one task of each split, rolled out together
        per_split = entry[which]["per_split"]
        assert {s: per_split[s]["tasks"] for s in per_split} == {"validation": 1, "test": 1}
    assert entry["step_times"]["steps_logged"] == 1
    [paired] = saved["comparisons"]  # one arm: its final against the start model, 2 tasks x 2 samples
    assert (paired["a"], paired["b"], paired["tasks"], paired["samples"]) == ("speedup_only", "start", 2, 4)
    printed = capsys.readouterr().out
    assert "paired by seed and task" in printed  # the driver's table, unwrapped in a log (no terminal)
    assert any(line.count("speedup_only") == 1 and "start" in line for line in printed.splitlines())
    final_eval = (tmp_path / "abl" / "logs" / "eval-speedup_only-s0.log").read_text()
    assert "--split validation --split test" in final_eval and "runs/speedup_only/seed-0/final" in final_eval
