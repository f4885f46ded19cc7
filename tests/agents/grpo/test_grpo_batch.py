"""Training sequences: only the model's own reply tokens are trained."""

import pytest

pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")

from agents.grpo.batch import chunks, collate, prompt_ids, sequence_and_mask, turn_sample  # noqa: E402


def test_mask_marks_only_the_models_own_segments():
    ids, mask = sequence_and_mask([([1, 2, 3], False), ([4, 5], True), ([6], False), ([7], True)])
    assert ids == [1, 2, 3, 4, 5, 6, 7] and mask == [0, 0, 0, 1, 1, 0, 1]


def test_turn_sample_masks_prompt_feedback_and_earlier_replies(tiny_tokenizer):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
                {"role": "assistant", "content": "EARLIER"}, {"role": "user", "content": "FEEDBACK"}]  # fmt: skip
    sample = turn_sample(tiny_tokenizer, messages, "```cuda\nint x;\n```", advantage=0.5, turn=2)
    prompt = prompt_ids(tiny_tokenizer, messages)
    assert sample.input_ids[: len(prompt)] == tuple(prompt) and not any(sample.mask[: len(prompt)])
    trained = [t for t, m in zip(sample.input_ids, sample.mask, strict=True) if m]
    assert tiny_tokenizer.decode(trained) == "```cuda\nint x;\n```"
    untrained = tiny_tokenizer.decode([t for t, m in zip(sample.input_ids, sample.mask, strict=True) if not m])
    assert "EARLIER" in untrained and "FEEDBACK" in untrained
    # the sampled ids win over re-encoding the text
    sampled = turn_sample(tiny_tokenizer, messages, "ignored", 0.5, sampled_ids=[7, 8, 9])
    assert sampled.input_ids[-3:] == (7, 8, 9) and sampled.completion_tokens == 3


def test_collate_right_pads_and_keeps_advantages(tiny_tokenizer):
    a = turn_sample(tiny_tokenizer, [{"role": "user", "content": "a"}], "xy", 1.0)
    b = turn_sample(tiny_tokenizer, [{"role": "user", "content": "longer prompt"}], "z", -1.0)
    batch = collate([a, b], pad_id=0)
    width = len(b.input_ids)
    assert batch["input_ids"].shape == (2, width) and batch["mask"].sum().item() == 3
    assert batch["attention_mask"][0].tolist() == [1] * len(a.input_ids) + [0] * (width - len(a.input_ids))
    assert batch["advantages"].tolist() == [1.0, -1.0]
    assert [list(r) for r in chunks(5, 2)] == [[0, 1], [2, 3], [4]]
