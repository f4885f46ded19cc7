"""A model and the graders that time its replies on one card: which lock, and generation letting timings through."""

import threading
import time
from types import SimpleNamespace

import pytest

from agents.card import share_card_with_timings, timings_lock
from cudaperf_env.backends import make_backend
from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.device_lock import DeviceLock


def test_the_lock_is_the_timing_cards_when_the_model_is_on_it():
    graders = SimpleNamespace(backend=CudaBackend(device=1))
    assert timings_lock(graders, "cuda:1") is graders.backend.gpu_lock
    assert timings_lock(graders, "cuda") is None and timings_lock(graders, "cpu") is None  # another card, the CPU
    assert timings_lock(SimpleNamespace(backend=CudaBackend(measures_time=False)), "cuda") is None  # nothing timed
    assert timings_lock(SimpleNamespace(backend=make_backend("cpu")), "cuda") is None
    assert timings_lock(object(), "cuda") is None  # a Ray pool grades elsewhere: no backend of its own here


def test_a_wrapped_transformers_policy_on_the_card_is_made_to_let_timings_through():
    graders = SimpleNamespace(backend=CudaBackend())
    on_card, wrapped = SimpleNamespace(timings_lock=None, device="cuda:0"), SimpleNamespace()
    wrapped.inner = on_card
    assert share_card_with_timings(wrapped, graders) and on_card.timings_lock is graders.backend.gpu_lock
    elsewhere = SimpleNamespace(timings_lock=None, device="cpu")
    assert not share_card_with_timings(elsewhere, graders) and elsewhere.timings_lock is None
    assert not share_card_with_timings(SimpleNamespace(), graders)  # a policy that cannot (a server's)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_generation_pauses_for_a_waiting_timing_at_a_stop_check(tmp_path, tiny_tokenizer, device):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from agents.policies.base import Sampling
    from agents.policies.transformers_policy import TransformersPolicy

    config = transformers.LlamaConfig(vocab_size=len(tiny_tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=512, eos_token_id=tiny_tokenizer.eos_token_id,
                                      pad_token_id=tiny_tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    policy = TransformersPolicy(transformers.LlamaForCausalLM(config), tiny_tokenizer, device=device)  # cuda: the
    # GPU's queue is drained (torch.cuda.synchronize) before the timing gets the card
    lock = policy.timings_lock = DeviceLock("card", tmp_path)
    steps, seen = [], {}

    def timing():  # a grader's timing, asked for while the batch generates
        with lock:
            seen["at"] = len(steps)
            time.sleep(0.3)
            seen["after"] = len(steps)  # no token step while the timing has the card

    forward = policy.model.forward

    def counted(*args, **kwargs):
        steps.append(1)
        if len(steps) == 3:
            threading.Thread(target=timing).start()
            end = time.monotonic() + 20
            while not lock.waited_on() and time.monotonic() < end:  # the timing waits for the card
                time.sleep(0.01)
        return forward(*args, **kwargs)

    policy.model.forward = counted
    messages = [{"role": "user", "content": "saxpy"}]
    policy.generate([messages], 2, Sampling(max_tokens=40, seed=0, stop_after_code_block=False))
    assert 3 <= seen["at"] < len(steps) and seen["after"] == seen["at"]  # let through mid-generation, paused for it
