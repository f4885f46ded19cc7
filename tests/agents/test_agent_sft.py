"""SFT smoke test on CPU: a tiny randomly initialized Llama (built from a config), LoRA, checkpoints, resume."""

import json

import pytest

transformers = pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
pytest.importorskip("peft", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
torch = pytest.importorskip("torch")

from agents.sft import SFTConfig, encode, fitting, latest_checkpoint, lr_at, sft_examples, train  # noqa: E402
from cudaperf_env.tasks import load_tasks  # noqa: E402

TASKS = [load_tasks()["c2cuda/saxpy_f32"]]


def tiny_model(tokenizer):
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=4096)  # fmt: skip
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config)


def test_examples_pair_the_agents_prompt_with_each_verified_implementation(tiny_tokenizer):
    examples = sft_examples(TASKS)
    assert [e.task_id for e in examples] == ["c2cuda/saxpy_f32"] * len(TASKS[0].implementations)
    assert examples[0].messages[1]["content"].startswith("Write a fast CUDA implementation")
    assert examples[0].reply.startswith("```cuda\n") and examples[0].reply.endswith("\n```")
    ids, labels = encode(tiny_tokenizer, examples[0])
    assert len(ids) == len(labels) and labels[0] == -100 and labels[-1] == tiny_tokenizer.eos_token_id
    assert ids[len(ids) - sum(x != -100 for x in labels):] == [x for x in labels if x != -100]


def test_examples_too_long_or_with_replies_too_long_are_dropped():
    short, long_reply, long_prompt = ([1] * 3 + [7] * 2, [-100] * 3 + [7] * 2), ([1] + [7] * 6, [-100] + [7] * 6), \
        ([1] * 9 + [7], [-100] * 9 + [7])  # fmt: skip
    encoded = [short, long_reply, long_prompt]
    assert fitting(encoded, max_len=100) == encoded
    assert fitting(encoded, max_len=100, max_reply_tokens=2) == [short, long_prompt]
    assert fitting(encoded, max_len=7, max_reply_tokens=6) == [short, long_reply]


def test_schedule_warms_up_then_decays():
    config = SFTConfig(steps=100, warmup=10, lr=1e-3)
    assert lr_at(0, config) == pytest.approx(1e-4) and lr_at(9, config) == pytest.approx(1e-3)
    assert lr_at(99, config) == pytest.approx(1e-4, rel=0.05)


def test_train_writes_checkpoints_and_resumes(tmp_path, capsys, tiny_tokenizer):
    tokenizer = tiny_tokenizer
    config = SFTConfig(out=str(tmp_path), steps=3, batch_size=2, save_every=2, warmup=1, lr=1e-3, max_len=4096,
                       device="cpu", log_every=1, lora_r=4)  # fmt: skip
    adapter = train(config, tiny_model(tokenizer), tokenizer, TASKS)
    assert (adapter / "adapter_config.json").is_file()
    assert latest_checkpoint(tmp_path).name == "checkpoint-3" and (tmp_path / "checkpoint-2").is_dir()
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["step"] for x in logs] == [1, 2, 3] and all(x["loss"] > 0 for x in logs)
    resumed = SFTConfig(**{**config.__dict__, "steps": 4})
    train(resumed, tiny_model(tokenizer), tokenizer, TASKS)
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert logs[0] == {"resumed_from": str(tmp_path / "checkpoint-3"), "step": 3} and logs[1]["step"] == 4


def test_a_time_limit_ends_the_run_with_a_checkpoint_to_resume_from(tmp_path, capsys, tiny_tokenizer):
    config = SFTConfig(out=str(tmp_path), steps=50, batch_size=1, save_every=40, warmup=1, max_len=4096,
                       device="cpu", log_every=100, lora_r=4, max_minutes=1e-6)  # fmt: skip
    stopped = train(config, tiny_model(tiny_tokenizer), tiny_tokenizer, TASKS)
    assert stopped == tmp_path / "checkpoint-1" and (stopped / "trainer_state.pt").is_file()
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["stopped_at"] == 1
    assert not (tmp_path / "adapter").exists()


def test_a_shipped_adapter_is_its_config_and_float16_weights_that_load(tmp_path, tiny_tokenizer):
    from safetensors.torch import load_file

    from agents.sft import ship_adapter

    config = SFTConfig(out=str(tmp_path / "run"), steps=1, batch_size=1, warmup=1, device="cpu", lora_r=4)
    adapter = train(config, tiny_model(tiny_tokenizer), tiny_tokenizer, TASKS)
    shipped = ship_adapter(adapter, tmp_path / "shipped", base_name="the tiny model")
    assert sorted(p.name for p in shipped.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert json.loads((shipped / "adapter_config.json").read_text())["base_model_name_or_path"] == "the tiny model"
    full = load_file(str(adapter / "adapter_model.safetensors"))
    half = load_file(str(shipped / "adapter_model.safetensors"))
    assert full.keys() == half.keys() and all(t.dtype == torch.float16 for t in half.values())
    assert all(torch.allclose(full[k], half[k].float(), rtol=1e-3, atol=1e-4) for k in full)
    peft = pytest.importorskip("peft")
    model = peft.PeftModel.from_pretrained(tiny_model(tiny_tokenizer), str(shipped))
    assert any("lora_A" in name for name, _ in model.named_parameters())


def test_a_renamed_entry_is_the_same_program_under_another_name():
    """The renamed implementation still compiles, runs and is correct on the renamed task (CPU backend)."""
    from agents.sft import with_entry
    from cudaperf_env.backends import make_backend
    from cudaperf_env.dataset import load_dataset
    from cudaperf_env.evaluate import Evaluator
    from cudaperf_env.turn import grade

    task = next(t for t in load_dataset("train", labels=False).values() if t.family == "scan")
    renamed = with_entry(task, "prefix_sums_i32")
    assert renamed.entry == "prefix_sums_i32" and "prefix_sums_i32" in renamed.reference_source
    assert f'void {task.entry}(' not in renamed.implementations[0].source
    evaluator = Evaluator(make_backend("cpu"))
    turn = grade(renamed, f"```cuda\n{renamed.implementations[0].source}```", evaluator=evaluator)
    assert turn.evaluation.status == "ok", turn.feedback
    wrong_name = grade(renamed, f"```cuda\n{task.implementations[0].source}```", evaluator=evaluator)
    assert wrong_name.evaluation.status == "rejected"  # the family's name no longer answers the prompt


def test_renamed_examples_ask_for_the_name_their_reply_defines():
    import re

    from cudaperf_env.dataset import load_dataset

    tasks = list(load_dataset("train", labels=False).values())[::50]
    plain = sft_examples(tasks)
    examples = sft_examples(tasks, rename_entry=0.5, seed=3)
    assert examples == sft_examples(tasks, rename_entry=0.5, seed=3) and len(examples) == len(plain)
    by_id = {t.id: t for t in tasks}
    renamed = 0
    for ex in examples:
        asked = re.search(r'Define `extern "C" void (\w+)\(', ex.messages[1]["content"]).group(1)
        assert re.search(rf'extern "C"[^(]*\b{asked}\(', ex.reply), (asked, ex.reply[:300])
        renamed += asked != by_id[ex.task_id].entry
    assert 0.3 * len(examples) < renamed < 0.7 * len(examples)
