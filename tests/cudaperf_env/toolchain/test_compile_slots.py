"""At most COMPILE_JOBS compilers run at once per process; waiting for a slot can be cancelled."""

import threading
import time

from cudaperf_env.toolchain import tools


def test_compilers_beyond_the_bound_wait_for_a_slot(monkeypatch, tmp_path):
    monkeypatch.setattr(tools, "_compile_slots", threading.BoundedSemaphore(1))
    results = []
    start = time.perf_counter()
    threads = [threading.Thread(target=lambda: results.append(tools.run_tool(["sleep", "0.3"], tmp_path, 10)))
               for _ in range(2)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    assert elapsed >= 0.6 and all(r.ok and r.seconds >= 0.3 for r in results)  # one after the other
    # The wait is not charged to the compiler's limit: the charged intervals are disjoint slots
    # inside the elapsed time (charged waits would sum to about 1.5x it, whatever the load).
    assert sum(r.seconds for r in results) <= elapsed


def test_a_cancelled_wait_returns_at_once(monkeypatch, tmp_path):
    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(tools, "_compile_slots", slots)
    slots.acquire()  # every slot busy
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    start = time.perf_counter()
    result = tools.run_tool(["true"], tmp_path, 10, cancel=cancel)
    assert result.timed_out and not result.ok and time.perf_counter() - start < 1.0
    slots.release()
