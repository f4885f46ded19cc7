"""Evaluation spread over Ray actors: one per GPU (owning its device and build cache), or CPU actors.

::

    from cudaperf_env.integrations.ray import EvaluatorPool
    pool = EvaluatorPool(backend="cuda", address="auto")        # one actor per GPU of the cluster
    evaluations = pool.evaluate_many(task, replies)             # like Evaluator.evaluate_many
    grader = pool.grader()                                      # Grader.grade / grade_many on the pool

Each submission is one actor call, sent to the actor with the fewest in flight;
an actor runs up to ``concurrency`` at once (compiles overlap; a GPU backend
serializes its timing phase, so measurements on one device never overlap). A GPU
actor reserves a whole GPU (``num_gpus=1``: fractional GPUs would skew timing) and
sees only that device; each actor keeps its build cache in its own folder
(``<cache_root>/actor-<n>``) unless ``private_caches=False``.

Failures never hang the caller: a submission whose actor died is answered with a
``runtime_error`` verdict, one that runs past ``timeout_s`` with ``timeout`` (its
actor is killed to stop it); Ray restarts dead actors (``max_restarts``) and the
pool goes on with them. A submission that shared an actor the pool killed for
another's timeout is not at fault: it is sent again, once, to a live actor.
"""

from __future__ import annotations

import copyreg
import os
import threading
import time
import types
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.evaluate import STAGES, EvalOptions, Evaluation, Evaluator, all_of
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Task
from cudaperf_env.turn import Grader, RewardConfig, Turn, turn_of

__all__ = ["EvaluatorPool", "PoolBackend"]


def _mappingproxy(mapping: dict[str, Any]) -> types.MappingProxyType[str, Any]:
    return types.MappingProxyType(mapping)


# Structural reports hold read-only mappings, which pickle cannot carry; they travel as dicts.
copyreg.pickle(types.MappingProxyType, lambda m: (_mappingproxy, (dict(m),)))


class _EvaluatorActor:
    """The remote side: an evaluator on this process's backend (and, for a GPU actor, its one visible device)."""

    def __init__(self, backend: str, options: EvalOptions | None, cache_dir: str | None,
                 backend_options: Mapping[str, Any], skip_stages: Sequence[str] = ()) -> None:  # fmt: skip
        if cache_dir:
            os.environ["CUDAPERF_CACHE_DIR"] = cache_dir
        from cudaperf_env.backends import make_backend

        stages = [s for s in STAGES if s.__name__ not in set(skip_stages)]
        self.evaluator = Evaluator(make_backend(backend, **backend_options), options, stages=stages)

    def describe(self) -> tuple[str, bool, int]:
        """``(backend name, measures time, process id)``."""
        return self.evaluator.backend.name, self.evaluator.measures_time, os.getpid()

    def evaluate(self, task: Task, action: str, seed: int) -> Evaluation:
        """One submission (never raises on a bad one)."""
        return self.evaluator.evaluate(task, action, seed=seed)

    def prepare(self, jobs: Sequence[tuple[Task, int]]) -> None:
        """Start :meth:`Evaluator.prepare` here and return (the making runs on the evaluator's own threads)."""
        self.evaluator.prepare(jobs)


@dataclass(frozen=True)
class PoolBackend:
    """What a caller can know of the actors' backend without one in-process (``Grader.backend_name``)."""

    name: str


class EvaluatorPool:
    """Evaluators on Ray actors, used like an :class:`~cudaperf_env.evaluate.Evaluator`.

    Args:
        backend: ``cpu``, ``cuda`` or ``auto`` (``cuda`` when the cluster has GPUs).
        num_actors: Actors to start (default: one per GPU of the cluster for ``cuda``; for
            ``cpu``, the cluster's CPUs over ``cpus_per_actor``).
        address: A running cluster (``"auto"``, ``"ray://host:10001"``); None starts a local
            one unless Ray is already initialised.
        options: Pipeline limits for every actor.
        concurrency: Submissions one actor evaluates at once.
        cpus_per_actor: CPUs reserved by each actor (compilers and CPU-backend runs).
        timeout_s: Longest wait for one submission before it is a ``timeout`` verdict.
        max_restarts: How often Ray restarts a dead actor (-1: always).
        cache_root: Where actors keep build caches (default: ``$CUDAPERF_CACHE_DIR`` or
            ``~/.cache/cudaperf``, on each actor's node).
        private_caches: One cache folder per actor (else they share ``cache_root``, which is
            safe: content-addressed, atomic writes, a lock around shared builds).
        init_kwargs: Passed to ``ray.init`` when the pool starts Ray (``num_cpus`` ...).
        backend_options: Passed to ``make_backend`` on each actor (``timeout_s`` ...).
        skip_stages: Pipeline stages the actors leave out, by name (``("rank",)``: no ranker score).
    """

    def __init__(self, backend: str = "auto", num_actors: int | None = None, address: str | None = None,
                 options: EvalOptions | None = None, concurrency: int = 4, cpus_per_actor: float = 1.0,
                 timeout_s: float = 900.0, max_restarts: int = -1, cache_root: str | None = None,
                 private_caches: bool = True, init_kwargs: Mapping[str, Any] | None = None,
                 backend_options: Mapping[str, Any] | None = None,
                 skip_stages: Sequence[str] = ()) -> None:  # fmt: skip
        try:
            import ray
        except ImportError as exc:
            raise BackendUnavailableError(
                f"the Ray evaluator pool needs ray: pip install 'cudaperf-env[ray]' ({exc})") from exc

        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False, **dict(init_kwargs or {}))
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        if backend == "auto":
            backend = "cuda" if gpus else "cpu"
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"unknown backend {backend!r}; expected cpu, cuda or auto")
        if backend == "cuda" and not gpus:
            raise RuntimeError("backend='cuda' but the Ray cluster has no GPU; use backend='cpu' or a GPU cluster")
        count = num_actors or (gpus if backend == "cuda" else max(1, int(resources.get("CPU", 1) // cpus_per_actor)))
        root = cache_root or os.environ.get("CUDAPERF_CACHE_DIR") or os.path.expanduser("~/.cache/cudaperf")
        remote: Any = ray.remote(_EvaluatorActor).options(
            num_gpus=1 if backend == "cuda" else 0, num_cpus=cpus_per_actor, max_concurrency=max(1, concurrency),
            max_restarts=max_restarts, max_task_retries=0,
        )  # fmt: skip
        self._ray = ray
        self.backend_kind = backend
        self.timeout_s = timeout_s
        extra = dict(backend_options or {})
        folders = [os.path.join(root, f"actor-{i}") if private_caches else root for i in range(count)]
        skip = tuple(skip_stages)
        self.actors: list[Any] = [remote.remote(backend, options, folder, extra, skip) for folder in folders]
        described = ray.get([a.describe.remote() for a in self.actors])
        self.backend = PoolBackend(described[0][0])
        self.measures_time = bool(described[0][1])
        self._in_flight = [0] * count  # submissions sent to each actor and not yet answered (under _books)
        self._kills = [0] * count  # how often the pool killed each actor (under _books)
        self._books = threading.Lock()  # submit's threads dispatch and answer at once
        self._ready = [True] * count  # False from an actor's failure until it answers again
        self._pids = [int(d[2]) for d in described]
        self._killed: list[int | None] = [None] * count  # pid killed by the pool: its last answers do not count
        self._submitting = ThreadPoolExecutor(count * max(1, concurrency), thread_name_prefix="cudaperf-pool")

    def __len__(self) -> int:
        return len(self.actors)

    def evaluate(self, task: Task, action: str, seed: int = 0) -> Evaluation:
        """Judge one submission on an actor."""
        return self.evaluate_many(task, [action], seed=seed)[0]

    def evaluate_many(self, task: Task, actions: Sequence[str], seed: int = 0,
                      max_workers: int | None = None) -> list[Evaluation]:  # fmt: skip
        """Judge several submissions for one task across the actors, in order (``max_workers`` is ignored)."""
        return self.evaluate_batch([(task, a, seed) for a in actions])

    def evaluate_batch(self, jobs: Sequence[tuple[Task, str, int]]) -> list[Evaluation]:
        """Judge ``(task, action, seed)`` jobs of any tasks across the actors, in order; never raises on a job."""
        return self._evaluate_jobs(jobs, resend=True)

    def _evaluate_jobs(self, jobs: Sequence[tuple[Task, str, int]], resend: bool) -> list[Evaluation]:
        ray = self._ray
        refs, owners, kills = [], [], []
        ready = self._ready_actors() if jobs else []
        with self._books:
            for task, action, seed in jobs:
                i = min(ready, key=lambda k: self._in_flight[k])
                self._in_flight[i] += 1
                refs.append(self.actors[i].evaluate.remote(task, action if isinstance(action, str) else "", seed))
                owners.append(i)
                kills.append(self._kills[i])
        results: dict[int, Evaluation] = {}
        again: list[int] = []  # jobs whose actor the pool killed for another job's timeout
        index = {ref: n for n, ref in enumerate(refs)}
        pending = list(refs)
        deadline = time.monotonic() + self.timeout_s
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            if not done:
                for ref in pending:
                    results[index[ref]] = self._failed(Status.TIMEOUT, f"no verdict within {self.timeout_s:g} s")
                self._answered([owners[index[ref]] for ref in pending])
                for i in sorted({owners[index[ref]] for ref in pending}):
                    self._restart(i)  # stops the stuck evaluation; Ray starts the actor again
                break
            for ref in done:
                n = index[ref]
                self._answered([owners[n]])
                try:
                    results[n] = ray.get(ref)
                except Exception as error:  # noqa: BLE001  (an actor death or crash is a verdict)
                    if resend and self._kills[owners[n]] != kills[n]:
                        again.append(n)
                        continue
                    results[n] = self._failed(Status.RUNTIME_ERROR, f"the evaluator actor failed: {_reason(error)}")
                    self._ready[owners[n]] = False
        if again:
            results.update(zip(again, self._evaluate_jobs([jobs[n] for n in again], resend=False), strict=True))
        return [results[n] for n in range(len(refs))]

    def _answered(self, owners: Sequence[int]) -> None:
        with self._books:
            for i in owners:
                self._in_flight[i] -= 1

    def submit(self, task: Task, action: str, seed: int = 0) -> Future[Evaluation]:
        """:meth:`evaluate` in the background (a thread here waits for the actor's verdict); its future."""
        return self._submitting.submit(self.evaluate, task, action, seed)

    def prepare(self, jobs: Sequence[tuple[Task, int]]) -> Future[None]:
        """:meth:`Evaluator.prepare <cudaperf_env.evaluate.Evaluator.prepare>` on every ready actor (any may grade
        any reply), without waiting: the future is done once every actor has started it (the actors make it in
        the background); a busy or failed actor delays no rollout, and its evaluations report any failure."""
        return all_of([self.actors[i].prepare.remote(list(jobs)).future() for i in self._ready_actors()])

    def grade_many(self, task: Task, replies: Sequence[str], previous: Sequence[Turn | None] | None = None,
                   seed: int = 0, reward: RewardConfig | None = None) -> list[Turn]:  # fmt: skip
        """:func:`cudaperf_env.turn.grade_many` on the pool."""
        before = list(previous) if previous is not None else [None] * len(replies)
        if len(before) != len(replies):
            raise ValueError(f"previous has {len(before)} entries for {len(replies)} replies")
        evaluations = self.evaluate_many(task, replies, seed=seed)
        return [turn_of(task, e, p, reward) for e, p in zip(evaluations, before, strict=True)]

    def grader(self, reward: RewardConfig | None = None) -> Grader:
        """A :class:`~cudaperf_env.turn.Grader` whose evaluations run on the pool (for ``CudaPerfEnv.grader``...)."""
        return Grader(cast(Evaluator, self), reward or RewardConfig())

    def actor_pids(self, wait_s: float = 120.0) -> list[int]:
        """Process id of each actor, waiting up to ``wait_s`` for restarting ones (a restarted actor has a new one)."""
        return [int(self._describe(i, wait_s)[2]) for i in range(len(self.actors))]

    def _describe(self, i: int, wait_s: float) -> tuple[str, bool, int]:
        """Ask actor ``i`` until it answers (it may be restarting) or ``wait_s`` passes."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                answer = self._ray.get(self.actors[i].describe.remote(), timeout=max(0.1, deadline - time.monotonic()))
                if int(answer[2]) != self._killed[i]:  # the old process answers until the kill lands
                    self._ready[i], self._pids[i], self._killed[i] = True, int(answer[2]), None
                    return cast(tuple[str, bool, int], answer)
            except Exception:
                if time.monotonic() >= deadline:
                    raise
            if time.monotonic() >= deadline:
                raise TimeoutError(f"evaluator actor {i} did not come back within {wait_s:g} s")
            time.sleep(0.5)

    def _ready_actors(self) -> list[int]:
        """Actors that answer now; when none does, wait for the first failed one to come back."""
        for i, ok in enumerate(self._ready):
            if not ok:
                try:
                    self._describe(i, wait_s=1.0)
                except Exception:  # noqa: BLE001  (still restarting: skip it this time)
                    continue
        ready = [i for i, ok in enumerate(self._ready) if ok]
        if not ready:
            self._describe(0, wait_s=self.timeout_s)
            ready = [0]
        return ready

    def close(self) -> None:
        """Stop the actors (Ray itself stays up)."""
        self._submitting.shutdown(wait=False, cancel_futures=True)
        for actor in self.actors:
            self._ray.kill(actor, no_restart=True)
        self.actors = []

    def _restart(self, i: int) -> None:
        with self._books:
            self._kills[i] += 1
        self._ready[i] = False
        self._killed[i] = self._pids[i]
        self._ray.kill(self.actors[i], no_restart=False)  # Ray starts it again (max_restarts)

    def _failed(self, status: Status, message: str) -> Evaluation:
        return Evaluation(status, message, self.backend.name)


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]
