"""CPU smoke test of the trainer: a tiny random Llama, 2 tasks graded for real on the CPU backend.

The group's first trajectory opens with a task's verified implementation and every
other reply is the tiny model's own sampling, so a group's rewards differ (a random
model alone writes no code, and equal rewards give no gradient).
"""

import json
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

transformers = pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
pytest.importorskip("peft", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
torch = pytest.importorskip("torch")

from agents.grpo.checkpoint import CheckpointMismatchError, latest_checkpoint  # noqa: E402
from agents.grpo.config import GRPOConfig  # noqa: E402
from agents.grpo.logbook import read_metrics  # noqa: E402
from agents.grpo.trainer import sample_tasks, train  # noqa: E402
from agents.model import without_quantizer  # noqa: E402
from agents.policies.base import Generation  # noqa: E402
from agents.policies.transformers_policy import TransformersPolicy  # noqa: E402
from cudaperf_env.prompt import task_prompt  # noqa: E402
from cudaperf_env.tasks import load_tasks  # noqa: E402

TASKS = [load_tasks()[t] for t in ("c2cuda/saxpy_f32", "c2cuda/clamp_i32")]


def tiny_model(tokenizer):
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=8192, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config)


class OpensWithAVerifiedKernel:
    """The tiny model's generations, except the first sample of a group's first turn: a task's naive kernel."""

    def __init__(self, model, tokenizer):
        self.real = TransformersPolicy(model, tokenizer, device="cpu", name="tiny", threads=1)
        self.name, self.context_window = self.real.name, self.real.context_window

    def count_tokens(self, messages):
        return self.real.count_tokens(messages)

    def generate(self, batch, n, sampling):
        out = self.real.generate(batch, n, sampling)
        for messages, row in zip(batch, out, strict=True):
            task = next(t for t in TASKS if task_prompt(t) == messages[1]["content"])
            if len(messages) == 2:
                row[0] = Generation(f"```cuda\n{task.implementation('naive').source}```", finish_reason="stop")
        return out


def config(tmp_path, **changes):
    base = dict(out=str(tmp_path), turns=2, group=2, tasks_per_step=2, steps=2, max_tokens=8, backend="cpu",
                device="cpu", lr=1e-2, lora_r=4, micro_batch=2, save_every=1, tensorboard=False, progress=False,
                ranker=False, seed=3)  # fmt: skip
    return GRPOConfig(**{**base, **changes})


def run(cfg, tokenizer):
    model = tiny_model(tokenizer)
    policy = OpensWithAVerifiedKernel(model, tokenizer)
    result = train(cfg, model=model, tokenizer=tokenizer, tasks=TASKS, policy=policy)
    lora = {k: v.detach().clone() for k, v in model.named_parameters() if "lora_" in k}
    return result, lora


def test_two_steps_train_checkpoint_and_resume_exactly(tmp_path, tiny_tokenizer):
    straight, lora = run(config(tmp_path / "straight"), tiny_tokenizer)
    assert straight.stopped == "done" and straight.step == 2
    rows = read_metrics(tmp_path / "straight" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert math.isfinite(r["loss/total"]) and r["sequences"] >= 4 and r["advantage/abs_mean"] > 0
        assert r["pass_rate/trajectory"] == 0.5  # the opening kernel passes; the tiny model's replies do not
        assert r["reward/correct"] > 0 and r["time/generation_s"] > 0 and 0 <= r["time/eval_wait_share"] <= 1
        assert r["memory/generation_peak_gb"] is None and r["memory/optimization_peak_gb"] is None  # no CUDA here
    # LoRA's B matrices start at 0: any nonzero entry is a trained parameter
    assert any(v.abs().sum() > 0 for k, v in lora.items() if "lora_B" in k)
    assert (tmp_path / "straight" / "final" / "adapter_config.json").is_file()
    assert latest_checkpoint(tmp_path / "straight").name == "checkpoint-000002"
    traj = (tmp_path / "straight" / "trajectories" / "step-000001.jsonl").read_text().splitlines()
    assert {json.loads(line)["task_id"] for line in traj} <= {t.id for t in TASKS}

    # The same run cut by a time budget after one step, then resumed by the same call: the same weights.
    cut, _ = run(config(tmp_path / "cut", max_minutes=1e-6), tiny_tokenizer)
    assert cut.stopped == "budget" and cut.step == 1 and not (tmp_path / "cut" / "final").exists()
    resumed, lora_resumed = run(config(tmp_path / "cut", max_minutes=1e-6), tiny_tokenizer)
    assert resumed.stopped == "done" and resumed.step == 2  # each invocation makes progress
    assert lora_resumed.keys() == lora.keys()
    for k in lora:
        assert torch.equal(lora[k], lora_resumed[k]), k
    assert [r["step"] for r in read_metrics(tmp_path / "cut" / "metrics.jsonl")] == [1, 2]

    with pytest.raises(CheckpointMismatchError, match="preset: checkpoint 'cudaperf', now 'kevin'"):
        run(config(tmp_path / "cut", preset="kevin", steps=3), tiny_tokenizer)


def test_training_tasks_take_starter_and_dataset_ids():
    from agents.grpo.config import GRPOConfig
    from agents.grpo.trainer import training_tasks

    ids = ("c2cuda/saxpy_f32", "c2cuda/map_binary_0001")
    assert [t.id for t in training_tasks(GRPOConfig(task=ids))] == list(ids)


def test_task_draws_depend_only_on_seed_and_step():
    assert sample_tasks(TASKS, 1, 0, 5) == sample_tasks(TASKS, 1, 0, 5)
    draws = {sample_tasks(TASKS, 1, 0, s)[0].id for s in range(20)}
    assert draws == {t.id for t in TASKS}
    assert len(sample_tasks(TASKS, 3, 0, 0)) == 3  # more than there are: drawn with replacement


def test_start_model_merges_an_adapter_into_a_plain_directory(tmp_path, tiny_tokenizer):
    import peft

    from agents.grpo.start_model import adapter_digest, export_start_model, start_identity

    base = tiny_model(tiny_tokenizer)
    base.save_pretrained(tmp_path / "base")
    tiny_tokenizer.save_pretrained(tmp_path / "base")
    lora = peft.get_peft_model(tiny_model(tiny_tokenizer), peft.LoraConfig(r=2, target_modules="all-linear"))
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.fill_(0.1)  # a nonzero adapter, so merging changes the weights
    lora.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([[5, 6, 7]])
    expected = lora(input_ids=ids).logits
    out = export_start_model(str(tmp_path / "base"), tmp_path / "start", adapter=str(tmp_path / "adapter"))
    merged = transformers.AutoModelForCausalLM.from_pretrained(out)
    assert torch.allclose(merged(input_ids=ids).logits, expected, atol=1e-5)
    assert json.loads((out / "start_model.json").read_text())["adapter"] == str(tmp_path / "adapter")
    assert start_identity(out) == adapter_digest(tmp_path / "adapter")  # what an ablation's merge compares


def test_a_batched_rollout_generates_each_turn_of_every_task_in_one_call(tmp_path, tiny_tokenizer):
    model = tiny_model(tiny_tokenizer)
    policy = OpensWithAVerifiedKernel(model, tiny_tokenizer)
    calls, samplings = [], []
    generate = policy.generate
    policy.generate = lambda batch, n, sampling: calls.append((len(batch), n)) or samplings.append(sampling) or \
        generate(batch, n, sampling)  # fmt: skip
    cfg = config(tmp_path, rollout="batched", steps=1, source_tokens_only=True)
    result = train(cfg, model=model, tokenizer=tiny_tokenizer, tasks=TASKS, policy=policy)
    assert result.stopped == "done"
    # turn 1: both tasks' prompts, sampled G=2 times each; turn 2: the trajectories still going, together
    assert calls[0] == (2, 2) and len(calls) == 2 and calls[1][1] == 1
    assert all(s.source_tokens_only for s in samplings)
    row = read_metrics(tmp_path / "metrics.jsonl")[0]
    assert row["pass_rate/trajectory"] == 0.5 and math.isfinite(row["loss/total"])


def test_a_gguf_loaded_model_is_saved_as_plain_weights(tmp_path, tiny_tokenizer):
    # transformers de-quantizes a GGUF file on load but keeps its quantizer, which refuses to save
    model = tiny_model(tiny_tokenizer)
    model.hf_quantizer = SimpleNamespace(quantization_config=SimpleNamespace(quant_method="gguf"))
    model.config.quantization_config = {"quant_method": "gguf"}
    with pytest.raises(ValueError, match="not serializable"):
        model.save_pretrained(tmp_path / "refused")
    without_quantizer(model).save_pretrained(tmp_path / "plain")
    config = json.loads((tmp_path / "plain" / "config.json").read_text())
    assert "quantization_config" not in config
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "plain")
    ids = torch.tensor([[5, 6, 7]])
    assert torch.equal(reloaded(input_ids=ids).logits, model(input_ids=ids).logits)


def test_gradient_accumulation_gives_the_full_batch_gradient_and_kl_runs_through_the_reference(tiny_tokenizer):
    import peft

    from agents.grpo.batch import turn_sample
    from agents.grpo.trainer import optimize

    samples = [turn_sample(tiny_tokenizer, [{"role": "user", "content": "p" * (3 + i)}], "r" * (2 + 3 * i),
                           advantage=a) for i, a in enumerate([1.0, -0.5, 0.25, -0.75])]  # fmt: skip

    def deltas(micro_batch, **changes):
        model = peft.get_peft_model(tiny_model(tiny_tokenizer), peft.LoraConfig(r=2, target_modules="all-linear",
                                                                               init_lora_weights=False))  # fmt: skip
        params = [p for p in model.parameters() if p.requires_grad]
        before = [p.detach().clone() for p in params]
        cfg = GRPOConfig(micro_batch=micro_batch, max_grad_norm=0.0, device="cpu", **changes)
        stats = optimize(model, None, torch.optim.SGD(params, lr=1.0), params, samples, cfg, "cpu", 0, 1.0,
                         between=lambda: calls.append(micro_batch))  # fmt: skip
        return [p.detach() - b for p, b in zip(params, before, strict=True)], stats

    calls = []
    whole, stats = deltas(4)
    pieces, _ = deltas(1)
    assert calls == [4, 1, 1, 1, 1]  # after every micro-batch (a waiting timing may have the card there)
    assert any(d.abs().sum() > 0 for d in whole)
    for a, b in zip(whole, pieces, strict=True):  # float32 sums in another order: rounding, not a wrong scale
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    assert stats["kl"] == 0.0 and stats["sequences"] == 4
    _, with_kl = deltas(2, kl_beta=0.1, minibatches=2)  # random nonzero LoRA: the model differs from its reference
    assert with_kl["kl"] > 0 and math.isfinite(with_kl["loss/total"])
    assert calls.count(2) == 4  # 2 micro-batches: after each frozen log-probability pass and each update
    samples = [replace(s, advantage=0.0) for s in samples]  # all replies alike: nothing to learn, no update
    unchanged, skipped = deltas(4)
    assert skipped["skipped"] == 1.0 and all(d.abs().sum() == 0 for d in unchanged)


def test_full_fine_tune_checkpoints_and_resumes_exactly(tmp_path, tiny_tokenizer):
    def weights(cfg):
        model = tiny_model(tiny_tokenizer)
        train(cfg, model=model, tokenizer=tiny_tokenizer, tasks=TASKS[:1],
              policy=OpensWithAVerifiedKernel(model, tiny_tokenizer))  # fmt: skip
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    initial = tiny_model(tiny_tokenizer).state_dict()
    straight = weights(config(tmp_path / "a", lora_r=0, turns=1, tasks_per_step=1, lr=1e-3))
    assert any(not torch.equal(straight[k], initial[k]) for k in initial)
    assert (tmp_path / "a" / "final" / "model.safetensors").is_file()
    weights(config(tmp_path / "b", lora_r=0, turns=1, tasks_per_step=1, lr=1e-3, max_minutes=1e-6))
    resumed = weights(config(tmp_path / "b", lora_r=0, turns=1, tasks_per_step=1, lr=1e-3, max_minutes=1e-6))
    for k in straight:
        assert torch.equal(straight[k], resumed[k]), k


def test_forward_logprobs_projects_only_the_reply_tail_and_matches_the_full_projection(tiny_tokenizer):
    from agents.grpo.batch import collate, turn_sample
    from agents.grpo.loss import completion_logprobs
    from agents.grpo.trainer import forward_logprobs

    model = tiny_model(tiny_tokenizer).eval()
    prompts = [[{"role": "user", "content": "Write saxpy in CUDA, with a long prompt " * k}] for k in (1, 4)]
    replies = ("__global__ void k()", "x")
    samples = [turn_sample(tiny_tokenizer, m, reply, 1.0) for m, reply in zip(prompts, replies, strict=True)]
    batch = collate(samples, tiny_tokenizer.pad_token_id)
    cfg = GRPOConfig(out="unused", model="tiny", temperature=0.7)
    seen = {}

    def count_positions(_module, _inputs, out):
        seen.setdefault("positions", out.shape[1])

    hook = model.lm_head.register_forward_hook(count_positions)
    with torch.no_grad():
        logp, entropy = forward_logprobs(model, batch, cfg, "cpu")
        hook.remove()
        full = completion_logprobs(model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits,
                                   batch["input_ids"], 0.7)  # fmt: skip
    width, mask = batch["input_ids"].shape[1], batch["mask"].bool()
    first = int(mask.any(0).nonzero()[0])
    assert seen["positions"] == width - first + 1 < width  # the shorter prompt's reply starts the kept tail
    assert logp.shape == entropy.shape == (2, width)
    assert torch.allclose(logp[mask], full[0][mask], atol=1e-5)
    assert torch.allclose(entropy[mask], full[1][mask], atol=1e-4)
