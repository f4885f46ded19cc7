"""Which differences between timed outputs and the baseline's make a wrong answer (pure)."""

from cudaperf_env.backends.cuda.backend import TIMED_MISMATCH_FRACTION, mismatch_message, output_checks
from cudaperf_env.tasks import load_tasks

SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]


def test_summation_order_noise_passes_and_stale_results_fail():
    total = 33_554_432
    reordered = [{"set": 0, "arg": 3, "count": 63_265, "first": 11, "total": total}]  # 0.19%: a scan at 32M
    assert mismatch_message(SAXPY, reordered) == ""
    stale = [{"set": 1, "arg": 3, "count": total - 5, "first": 0, "total": total}]
    message = mismatch_message(SAXPY, stale)
    assert "input set 2" in message and "`y`" in message and "must not depend on earlier calls" in message
    assert mismatch_message(SAXPY, []) == ""
    at_the_bound = [{"set": 0, "arg": 3, "count": int(TIMED_MISMATCH_FRACTION * total) + 1, "first": 0, "total": total}]
    assert mismatch_message(SAXPY, at_the_bound)


def test_output_checks_name_each_output_with_its_tolerance():
    checks = output_checks(SAXPY)
    assert [c["arg"] for c in checks] == [i for i, a in enumerate(SAXPY.args) if a.role in ("out", "inout")]
    tol = SAXPY.tolerance(SAXPY.args[checks[0]["arg"]].dtype)
    assert checks[0] == {"arg": checks[0]["arg"], "elem_bytes": 4, "is_float": 1, "atol": tol.atol, "rtol": tol.rtol}
