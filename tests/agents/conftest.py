"""Helpers of the agent tests: a byte-level tokenizer with a ChatML template, built here (no downloads)."""

import pytest

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_tokenizer():
    """A byte-level BPE tokenizer without merges (one token a byte) plus ChatML specials."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(specials + pre_tokenizers.ByteLevel.alphabet())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=specials[1:]
    )
    fast.chat_template = CHATML
    return fast


@pytest.fixture(scope="session")
def tiny_tokenizer():
    pytest.importorskip("transformers", reason="needs the agent extra: pip install 'cudaperf-env[agent]'")
    return build_tiny_tokenizer()
