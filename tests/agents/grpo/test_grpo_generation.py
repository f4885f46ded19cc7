"""The merged generator: a plain copy of the trained model with its LoRA adapter merged in, kept in step."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
peft = pytest.importorskip("peft", reason="needs the agent extra")

from agents.grpo.generation import GENERATORS, MergedCopyGenerator, merge_into, plain_copy  # noqa: E402
from agents.policies.base import Sampling  # noqa: E402


def lora_model(tokenizer, seed=0):
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=512, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)
    for name, p in model.named_parameters():  # B starts at zero: make the adapter matter
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.05)
    return model.eval()


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_the_plain_copy_computes_what_the_adapted_model_computes_and_follows_its_updates(tiny_tokenizer):
    model = lora_model(tiny_tokenizer)
    ids = torch.tensor([tiny_tokenizer("__global__ void k(float* x) {}")["input_ids"]])
    plain = plain_copy(model)
    assert not any("lora" in n for n, _ in plain.named_parameters())
    assert torch.allclose(logits(plain, ids), logits(model, ids), atol=1e-5)
    storage = {n: p.data_ptr() for n, p in plain.named_parameters()}
    with torch.no_grad():  # an optimizer step on the adapter
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.add_(0.1 * torch.randn_like(p))
    assert not torch.allclose(logits(plain, ids), logits(model, ids), atol=1e-3)
    assert merge_into(plain, model) == 14  # 7 linear layers in each of 2 blocks
    assert torch.allclose(logits(plain, ids), logits(model, ids), atol=1e-5)
    assert storage == {n: p.data_ptr() for n, p in plain.named_parameters()}  # updated in place


def test_the_merged_generator_samples_what_the_trained_model_samples(tiny_tokenizer):
    model = lora_model(tiny_tokenizer, seed=1)
    merged = GENERATORS["merged"](model, tiny_tokenizer, device="cpu", name="tiny", lora=True)
    shared = GENERATORS["transformers"](model, tiny_tokenizer, device="cpu", name="tiny", lora=True)
    assert isinstance(merged, MergedCopyGenerator)
    messages = [[{"role": "user", "content": "Write saxpy in CUDA."}]]
    greedy = Sampling(temperature=0.0, max_tokens=12, stop_after_code_block=False)
    [[a]], [[b]] = merged.policy.generate(messages, 1, greedy), shared.policy.generate(messages, 1, greedy)
    assert a.token_ids == b.token_ids and a.text == b.text
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.mul_(-3.0)
    merged.sync(model, step=1)
    [[a]], [[b]] = merged.policy.generate(messages, 1, greedy), shared.policy.generate(messages, 1, greedy)
    assert a.token_ids == b.token_ids


def test_without_lora_the_merged_generator_is_the_model_itself(tiny_tokenizer):
    base = lora_model(tiny_tokenizer).get_base_model()
    generator = GENERATORS["merged"](base, tiny_tokenizer, device="cpu", name="tiny", lora=False)
    assert generator.policy.model is base


def test_the_trainer_runs_with_the_merged_generator(tmp_path, tiny_tokenizer):
    from agents.grpo.config import GRPOConfig
    from agents.grpo.logbook import read_metrics
    from agents.grpo.trainer import train
    from cudaperf_env.tasks import load_tasks

    model = lora_model(tiny_tokenizer).get_base_model()  # the trainer puts its own adapter on
    cfg = GRPOConfig(out=str(tmp_path), turns=1, group=2, tasks_per_step=1, steps=1, max_tokens=8, backend="cpu",
                     device="cpu", lora_r=4, micro_batch=2, tensorboard=False, progress=False, ranker=False,
                     generator="merged", seed=1)  # fmt: skip
    result = train(cfg, model=model, tokenizer=tiny_tokenizer, tasks=[load_tasks()["c2cuda/saxpy_f32"]])
    assert result.step == 1 and (tmp_path / "final").is_dir()
    [row] = read_metrics(tmp_path / "metrics.jsonl")
    assert row["time/generation_s"] > 0
