"""The Ray pool's bookkeeping when one submission's timeout kills an actor that others share (a fake Ray)."""

import sys
import threading
import time
import types

import pytest

from cudaperf_env.evaluate import Evaluation
from cudaperf_env.integrations.ray import EvaluatorPool
from cudaperf_env.status import Status


class Ref:
    def __init__(self, value=None):
        self.done, self.value, self.error = threading.Event(), value, None
        if value is not None:
            self.done.set()


class Method:
    def __init__(self, call):
        self.remote = call


class Handle:
    """One actor: ``stuck`` never answers; any other reply answers at once, except on the first incarnation,
    where it waits like ``stuck`` (so it is in flight when the pool kills the actor for the stuck one)."""

    def __init__(self):
        self.incarnation, self.pending = 0, []
        self.describe = Method(lambda: Ref(("fake", False, 1000 + self.incarnation)))
        self.evaluate = Method(self._evaluate)

    def _evaluate(self, task, action, seed):
        if action != "stuck" and self.incarnation > 0:
            return Ref(Evaluation(Status.OK, f"verdict on {action}", "fake"))
        ref = Ref()
        self.pending.append(ref)
        return ref


class FakeRay(types.ModuleType):
    def __init__(self):
        super().__init__("ray")
        self.handles = []

    def is_initialized(self):
        return True

    def cluster_resources(self):
        return {"CPU": 1}

    def remote(self, cls):
        fake = self

        class ActorClass:
            def options(self, **_):
                return self

            def remote(self, *_):
                fake.handles.append(Handle())
                return fake.handles[-1]

        return ActorClass()

    def wait(self, pending, num_returns, timeout):
        end = time.monotonic() + timeout
        while True:
            done = [r for r in pending if r.done.is_set()][:num_returns]
            if done or time.monotonic() >= end:
                return done, [r for r in pending if r not in done]
            time.sleep(0.01)

    def get(self, ref, timeout=None):
        if isinstance(ref, list):
            return [self.get(r, timeout) for r in ref]
        ref.done.wait(timeout)
        if ref.error is not None:
            raise ref.error
        return ref.value

    def kill(self, handle, no_restart):
        handle.incarnation += 1
        for ref in handle.pending:
            ref.error = RuntimeError("RayActorError: the actor died unexpectedly")
            ref.done.set()
        handle.pending = []


@pytest.fixture
def one_actor_pool(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", FakeRay())
    pool = EvaluatorPool("cpu", num_actors=1, concurrency=2, timeout_s=2.0)
    yield pool
    pool.close()


def test_a_timeout_fails_only_its_own_submission_the_others_on_its_actor_are_sent_again(one_actor_pool):
    stuck = one_actor_pool.submit(None, "stuck")
    time.sleep(1.0)  # the second is in flight on the same actor when the first times out, at 2 s
    honest = one_actor_pool.submit(None, "honest")
    assert stuck.result(timeout=10).status == Status.TIMEOUT
    verdict = honest.result(timeout=10)
    assert verdict.status == Status.OK and verdict.message == "verdict on honest"
    assert one_actor_pool._in_flight == [0]  # every submission answered, none counted twice


def test_an_actor_that_dies_on_its_own_costs_its_submissions_a_runtime_error(one_actor_pool):
    fake = sys.modules["ray"]
    first = one_actor_pool.submit(None, "honest")
    time.sleep(0.3)
    fake.kill(fake.handles[0], no_restart=False)  # not the pool's doing: a crash
    verdict = first.result(timeout=10)
    assert verdict.status == Status.RUNTIME_ERROR and "actor" in verdict.message
    assert one_actor_pool._in_flight == [0]
