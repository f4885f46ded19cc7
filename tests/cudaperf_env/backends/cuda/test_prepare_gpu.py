"""On a real GPU: a timing's input sets are made before the card is held, ahead of the replies where asked.

Marked ``gpu``: skipped where no NVIDIA GPU is usable (CI).
"""

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

pytestmark = pytest.mark.gpu
SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]  # perf configurations of 2^24 and more elements
QUICK = TimingOptions(min_trials=5, max_trials=20, budget_s=1.0)


@pytest.mark.parametrize("ahead", [False, True], ids=["made-by-the-timing", "made-ahead"])
def test_the_card_is_never_held_while_input_sets_are_made(ahead):
    evaluator = Evaluator(CudaBackend(timing=QUICK, timeout_s=10))
    if ahead:
        evaluator.prepare([(SAXPY, 3)]).result(timeout=300)
    e = evaluator.evaluate(SAXPY, SAXPY.implementation(SAXPY.baseline).source, seed=3)
    assert (e.status, e.correct) == ("ok", True), e.message
    # Inside the hold, fetching the sets is a table lookup; making them (hundreds of MB) takes seconds.
    assert e.seconds["timing.inputs_s"] < 0.05, e.seconds
    assert e.seconds["timing.upload_s"] > 0  # the sets did reach the card
