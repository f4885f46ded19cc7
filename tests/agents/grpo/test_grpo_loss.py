"""The GRPO loss pieces against hand-computed values: ratios, clipping, k3, aggregation, masking."""

import math

import pytest

torch = pytest.importorskip("torch")

from agents.grpo.loss import (  # noqa: E402
    AGGREGATIONS,
    clipped_surrogate,
    completion_logprobs,
    grpo_loss,
    k3_kl,
    token_weights,
)


def test_clipped_surrogate_takes_the_pessimistic_side():
    old = torch.zeros(4)[None]  # (1, 4)
    logp = torch.tensor([[math.log(1.5), math.log(1.5), math.log(0.5), math.log(0.5)]])
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    objective, clipped = clipped_surrogate(logp, old, adv, clip_low=0.2, clip_high=0.2)
    # ratio 1.5: A=+1 -> min(1.5, 1.2); A=-1 -> min(-1.5, -1.2). ratio 0.5: A=+1 -> 0.5; A=-1 -> min(-0.5, -0.8)
    assert objective.tolist()[0] == pytest.approx([1.2, -1.5, 0.5, -0.8])
    assert clipped.tolist()[0] == [1.0, 0.0, 0.0, 1.0]
    higher, _ = clipped_surrogate(logp, old, adv, clip_low=0.2, clip_high=0.28)  # DAPO clip-higher
    assert higher[0, 0].item() == pytest.approx(1.28)


def test_k3_is_exp_d_minus_d_minus_one():
    logp = torch.tensor([[0.0, math.log(0.5)]])
    ref = torch.tensor([[0.0, 0.0]])  # d = (0, log 2)
    assert k3_kl(logp, ref).tolist()[0] == pytest.approx([0.0, 2 - math.log(2) - 1])


def test_aggregation_weights():
    assert set(AGGREGATIONS) == {"token", "sequence", "drgrpo"}
    assert token_weights([2, 4], "token", 8) == pytest.approx([1 / 6, 1 / 6])
    assert token_weights([2, 4], "sequence", 8) == pytest.approx([1 / 4, 1 / 8])
    assert token_weights([2, 4], "drgrpo", 8) == pytest.approx([1 / 16, 1 / 16])
    with pytest.raises(ValueError, match="expected one of token, sequence, drgrpo"):
        token_weights([1], "mean", 8)


def _loss(kind, logp):
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([1.0, -1.0])
    w = torch.tensor(token_weights([2, 3], kind, 4))
    return grpo_loss(logp, logp.detach(), None, adv, mask, w, torch.zeros(2, 3))


def test_token_and_sequence_aggregation_differ_as_computed_by_hand():
    logp = torch.zeros(2, 3, requires_grad=True)
    # ratio 1 everywhere: the objective is A per kept token.
    assert _loss("token", logp).loss.item() == pytest.approx(-(2 * 1 - 3 * 1) / 5)  # 0.2
    assert _loss("sequence", logp).loss.item() == pytest.approx(0.0, abs=1e-7)  # -(2 * 1/4 - 3 * 1/6)
    assert _loss("drgrpo", logp).loss.item() == pytest.approx(-(2 - 3) / 8)


def test_masked_tokens_get_no_gradient():
    logp = torch.zeros(2, 3, requires_grad=True)
    _loss("token", logp).loss.backward()
    # d loss / d logp = -A * w on kept tokens (ratio 1), 0 on masked ones
    assert logp.grad.flatten().tolist() == pytest.approx([-0.2, -0.2, 0.0, 0.2, 0.2, 0.2])


def test_kl_term_adds_beta_times_the_weighted_k3():
    logp = torch.full((1, 2), math.log(0.5))
    ref = torch.zeros(1, 2)
    terms = grpo_loss(logp, logp, ref, torch.zeros(1), torch.ones(1, 2), torch.tensor([0.5]), torch.zeros(1, 2),
                      kl_beta=0.1)  # fmt: skip
    assert terms.kl == pytest.approx(2 - math.log(2) - 1)
    assert terms.loss.item() == pytest.approx(0.1 * (2 - math.log(2) - 1))


def test_completion_logprobs_score_each_token_given_the_ones_before():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [5.0, 5.0]]])  # (1, 3, 2)
    ids = torch.tensor([[0, 1, 0]])
    logp, entropy = completion_logprobs(logits, ids)
    assert logp.tolist()[0] == pytest.approx([0.0, math.log(0.5), math.log(0.75)])
    assert entropy.tolist()[0] == pytest.approx([0.0, math.log(2), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))])
    hot, _ = completion_logprobs(logits, ids, temperature=2.0)  # logits / 2: p(0) = sqrt(3) / (sqrt(3) + 1)
    assert hot[0, 2].item() == pytest.approx(math.log(math.sqrt(3) / (math.sqrt(3) + 1)))
