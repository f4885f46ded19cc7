"""GRPO with TRL on CudaPerf tasks: our reward function and the multi-turn tool environment.

Run: ``python examples/trl_grpo.py --model PATH`` (a local chat model with a tool-calling
template, e.g. a Qwen3 checkpoint). Without ``--model`` it builds a tiny random model and a
byte tokenizer (no download) and runs one step, which shows the wiring, not learning.
"""

import argparse
import os
import tempfile

from cudaperf_env.integrations import trl as cp_trl


def tiny_model_and_tokenizer():
    """A randomly initialised two-layer Qwen2 and a byte-level tokenizer with TRL's Qwen3 chat template."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from trl.chat_template_utils import qwen3_chat_template

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(specials + pre_tokenizers.ByteLevel.alphabet())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                                     pad_token="<|endoftext|>", additional_special_tokens=specials[1:])
    tokenizer.chat_template, tokenizer.padding_side = qwen3_chat_template, "left"
    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)
    return transformers.Qwen2ForCausalLM(config), tokenizer


def main(model_path: str | None = None, steps: int = 1, backend: str = "auto", multi_turn: bool = True) -> list[dict]:
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    cp_trl.configure(backend=backend)
    if model_path is None:
        model, tokenizer = tiny_model_and_tokenizer()
        dataset = cp_trl.build_dataset("starter", task_ids=["c2cuda/saxpy_f32", "c2cuda/clamp_i32"], tools=multi_turn)
        lengths = {"max_completion_length": 16, "per_device_train_batch_size": 4, "num_generations": 2}
    else:
        import transformers

        model, tokenizer = model_path, transformers.AutoTokenizer.from_pretrained(model_path)
        dataset = cp_trl.build_dataset("train", limit=256, tools=multi_turn)
        lengths = {"max_completion_length": 2048, "per_device_train_batch_size": 8, "num_generations": 8}
    args = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="cudaperf-grpo-"), max_steps=steps, report_to="none",
                      logging_steps=1, save_strategy="no", use_cpu=model_path is None, max_tool_calling_iterations=4,
                      **lengths)  # fmt: skip
    trainer = GRPOTrainer(model=model, reward_funcs=cp_trl.reward_function, args=args, train_dataset=dataset,
                          processing_class=tokenizer,
                          environment_factory=cp_trl.CudaPerfToolEnv if multi_turn else None)  # fmt: skip
    trainer.train()
    for row in trainer.state.log_history:
        print({k: v for k, v in row.items() if k.startswith("rewards/") or k in ("step", "loss")})
    return trainer.state.log_history


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="local model folder (default: a tiny random model)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--single-turn", action="store_true", help="reward function only, no tool environment")
    a = parser.parse_args()
    main(a.model, a.steps, a.backend, multi_turn=not a.single_turn)
