"""The per-card GPU lock: timings alone, correctness runs side by side, across threads and processes, whatever
index they see the card under."""

import multiprocessing as mp
import os
import pickle
import signal
import threading
import time

import pytest

from cudaperf_env.backends.cuda.device_lock import DeviceLock, SharedHold, device_identity, visible_device


def test_cuda_visible_devices_maps_indices_to_physical_cards():
    assert visible_device(1, "2,3") == "3" and visible_device(0, "GPU-aa, GPU-bb") == "GPU-aa"
    assert visible_device(3, None if "CUDA_VISIBLE_DEVICES" not in os.environ else "") == "3"
    assert device_identity(0, "MIG-1/2:x") == "MIG-1_2_x"  # a safe file name
    assert device_identity(0, "GPU-aa") == device_identity(1, "GPU-bb,GPU-aa")  # same card, other index


def _hold(directory, identity, marks, seconds):
    (marks / f"{identity}-{os.getpid()}-waiting").touch()
    with DeviceLock(identity, directory):
        (marks / f"{identity}-{os.getpid()}-acquired").touch()
        time.sleep(seconds)


def _wait_for(predicate, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_another_process_waits_for_the_same_card_and_not_for_another(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx = mp.get_context("fork")
    with DeviceLock("card-a", tmp_path / "locks"):
        same = ctx.Process(target=_hold, args=(tmp_path / "locks", "card-a", marks, 0))
        other = ctx.Process(target=_hold, args=(tmp_path / "locks", "card-b", marks, 0))
        same.start(), other.start()
        assert _wait_for(lambda: (marks / f"card-b-{other.pid}-acquired").exists())  # another card: not held up
        assert _wait_for(lambda: (marks / f"card-a-{same.pid}-waiting").exists())
        time.sleep(0.5)
        assert not (marks / f"card-a-{same.pid}-acquired").exists()  # the same card: waits for us
    assert _wait_for(lambda: (marks / f"card-a-{same.pid}-acquired").exists())
    same.join(20), other.join(20)
    assert same.exitcode == 0 and other.exitcode == 0


def test_a_killed_holder_releases_the_card(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    holder = mp.get_context("fork").Process(target=_hold, args=(tmp_path, "card", marks, 120))
    holder.start()
    assert _wait_for(lambda: (marks / f"card-{holder.pid}-acquired").exists())
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(10)
    start = time.monotonic()
    with DeviceLock("card", tmp_path):
        assert time.monotonic() - start < 10


def test_threads_of_one_process_take_turns_and_the_lock_pickles(tmp_path):
    lock = DeviceLock("card", tmp_path)
    copy = pickle.loads(pickle.dumps(lock))
    assert copy.path == lock.path
    with lock, pytest.raises(BlockingIOError):  # the copy's own descriptor conflicts: flock is per open file
        import fcntl

        fd = os.open(copy.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    with copy:
        pass



def _hold_mode(directory, name, marks, seconds, exclusive):
    lock = DeviceLock("card", directory)
    (marks / f"{name}-waiting").touch()
    with lock.hold(exclusive=exclusive):
        (marks / f"{name}-acquired").touch()
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (marks / f"{name}-release").exists():
            time.sleep(0.02)
    (marks / f"{name}-released").touch()


def _start(tmp_path, name, exclusive, seconds=60):
    process = mp.get_context("fork").Process(target=_hold_mode,
                                             args=(tmp_path / "locks", name, tmp_path, seconds, exclusive))  # fmt: skip
    process.start()
    assert _wait_for(lambda: (tmp_path / f"{name}-waiting").exists())
    return process


def _acquired(tmp_path, name, within=20.0):
    return _wait_for(lambda: (tmp_path / f"{name}-acquired").exists(), within)


def _release(tmp_path, *processes_and_names):
    for process, name in processes_and_names:
        (tmp_path / f"{name}-release").touch()
        process.join(20)
        assert process.exitcode == 0


def test_correctness_runs_share_the_card_and_a_timing_waits_for_all_of_them(tmp_path):
    run_a, run_b = _start(tmp_path, "run-a", exclusive=False), _start(tmp_path, "run-b", exclusive=False)
    assert _acquired(tmp_path, "run-a") and _acquired(tmp_path, "run-b")  # two runs at once
    timing = _start(tmp_path, "timing", exclusive=True)
    assert not _acquired(tmp_path, "timing", within=0.5)
    _release(tmp_path, (run_a, "run-a"))
    assert not _acquired(tmp_path, "timing", within=0.5)  # one run still on the card
    _release(tmp_path, (run_b, "run-b"))
    assert _acquired(tmp_path, "timing")
    _release(tmp_path, (timing, "timing"))


def test_a_run_waits_for_a_timing_and_a_waiting_timing_goes_before_later_runs(tmp_path):
    first = _start(tmp_path, "run-first", exclusive=False)
    assert _acquired(tmp_path, "run-first")
    timing = _start(tmp_path, "timing", exclusive=True)  # waits for the first run
    time.sleep(0.3)
    later = _start(tmp_path, "run-later", exclusive=False)  # came after the waiting timing: queues behind it
    assert not _acquired(tmp_path, "run-later", within=0.5) and not _acquired(tmp_path, "timing", within=0.1)
    _release(tmp_path, (first, "run-first"))
    assert _acquired(tmp_path, "timing")
    assert not _acquired(tmp_path, "run-later", within=0.5)  # the timing is alone on the card
    _release(tmp_path, (timing, "timing"))
    assert _acquired(tmp_path, "run-later")
    _release(tmp_path, (later, "run-later"))


def test_threads_share_for_runs_and_take_turns_for_timings(tmp_path):
    lock, inside, most = DeviceLock("card", tmp_path), [0], {"shared": 0, "exclusive": 0}
    guard = threading.Lock()

    def phase(kind):
        with lock.shared() if kind == "shared" else lock:
            with guard:
                inside[0] += 1
                most[kind] = max(most[kind], inside[0])
            time.sleep(0.2)
            with guard:
                inside[0] -= 1

    for kind in ("shared", "exclusive"):
        threads = [threading.Thread(target=phase, args=(kind,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    assert most == {"shared": 4, "exclusive": 1}


def test_long_shared_work_keeps_a_timing_out_until_it_lets_it_through_then_waits_for_it(tmp_path):
    lock, events = DeviceLock("card", tmp_path), []

    def timing():
        with lock:
            events.append("timing")
            time.sleep(0.3)
            events.append("timing done")

    def run():  # a correctness run shares the card with the work
        with lock.shared():
            events.append("run")

    with SharedHold(lock) as hold:
        assert not hold.let_through()  # nobody waits: it keeps the card
        runner = threading.Thread(target=run)
        runner.start()
        runner.join(5)
        assert events == ["run"]
        waiting = threading.Thread(target=timing)
        waiting.start()
        assert _wait_for(lambda: lock.waited_on())  # the timing waits at the turnstile
        time.sleep(0.2)
        assert events == ["run"]  # and keeps waiting until the work's next let_through
        assert hold.let_through()  # it ran in between; the work holds the card again after it
        events.append("work")
    waiting.join(5)
    assert events == ["run", "timing", "timing done", "work"]


def test_a_timing_in_another_process_gets_the_card_at_the_next_let_through(tmp_path):
    lock = DeviceLock("card", tmp_path / "locks")
    with SharedHold(lock) as hold:
        timing = _start(tmp_path, "timing", exclusive=True)
        assert _wait_for(lambda: lock.waited_on()) and not _acquired(tmp_path, "timing", within=0.5)
        let_through = threading.Thread(target=hold.let_through)
        let_through.start()
        assert _acquired(tmp_path, "timing")
        time.sleep(0.2)
        assert let_through.is_alive()  # the work waits while the timing has the card
        _release(tmp_path, (timing, "timing"))
        let_through.join(5)
        assert not let_through.is_alive()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_child_forked_while_a_timing_waits_does_not_keep_the_turnstile(tmp_path):
    lock = DeviceLock("card", tmp_path)

    def time_alone():
        with lock:
            pass

    with SharedHold(lock) as hold:
        timing = threading.Thread(target=time_alone)
        timing.start()
        assert _wait_for(lambda: lock.waited_on())  # the timing holds the turnstile while it waits
        child = os.fork()  # no exec (multiprocessing's fork): the child has a copy of every open file
        if child == 0:
            time.sleep(3)
            os._exit(0)
        try:
            started = time.monotonic()
            assert hold.let_through()  # the work takes the card back once the timing is done
            assert time.monotonic() - started < 2, "the child's copy of the turnstile kept it locked"
            timing.join(5)
            assert not lock.waited_on()
        finally:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)


@pytest.mark.gpu
def test_on_a_gpu_the_lock_is_named_by_the_cards_uuid_under_any_index():
    identity = device_identity(0, "0")
    assert identity.startswith("GPU-"), identity  # NVML answered: every process names the card alike
    assert device_identity(0, identity) == identity  # CUDA_VISIBLE_DEVICES=<uuid>: the same lock file
