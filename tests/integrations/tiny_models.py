"""Test helpers: a tiny random causal LM and a byte-level tokenizer, built here (no downloads)."""

SAXPY = "c2cuda/saxpy_f32"


def build_byte_tokenizer(chat_template: str):
    """A byte-level BPE tokenizer without merges (one token a byte) plus ChatML specials, with ``chat_template``."""
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
    fast.chat_template = chat_template
    fast.padding_side = "left"
    return fast


def build_tiny_lm(vocab_size: int, seed: int = 0):
    """A randomly initialised two-layer Qwen2 causal LM (a few hundred thousand weights)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.Qwen2Config(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                      max_position_embeddings=8192, tie_word_embeddings=True)  # fmt: skip
    return transformers.Qwen2ForCausalLM(config)
