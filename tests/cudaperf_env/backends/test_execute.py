"""The untrusted worker: real crashes, hangs and overruns become structured results.

These use host C "submissions" built with gcc, so they exercise the runner and
sandbox independently of the CUDA-on-CPU runtime.
"""

import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from cudaperf_env.backends.buffers import PAGE, layout
from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import load_task
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.native import build_library

TASK = load_task(Path(__file__).parents[2] / "fixtures" / "tasks" / "saxpy.yaml")
PREFIX = "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <signal.h>\n"


def run_c(body: str, timeout_s: float = 5.0, configs=None, workdir=None, uid=None):
    code = PREFIX + "void saxpy(int n, float a, const float* x, float* y) {\n" + body + "\n}\n"
    build = build_library(tools.host_compiler("gcc"), ["-std=gnu11", "-O1", "-fPIC", "-shared"],
                          wrap(TASK, code, "c"), ".c")  # fmt: skip
    assert build.ok, build.log
    jobs = [Job(c, make_inputs(TASK, c, seed=7)) for c in (configs or TASK.configs)]
    return jobs, run_jobs(build.library, TASK, jobs, workdir or scratch_dir(), timeout_s, uid=uid)


def test_correct_code_returns_every_buffer():
    jobs, results = run_c("for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];")
    assert [r.status for r in results] == ["ok"] * 3
    for job, r in zip(jobs, results, strict=True):
        np.testing.assert_allclose(r.buffers["y"], 2.5 * job.inputs["x"] + job.inputs["y"], rtol=1e-6)
        assert r.overruns == ()


def test_segfault_is_a_runtime_error_and_stops():
    _, results = run_c("*(volatile int*)0 = 1;")
    assert len(results) == 1
    assert results[0].status == "runtime_error" and "SIGSEGV" in results[0].message


def test_write_before_a_buffer_hits_the_guard_page():
    _, results = run_c("y[-1] = 0.0f;")
    assert results[0].status == "runtime_error" and "SIGSEGV" in results[0].message


def test_off_by_one_write_is_caught_by_the_canary():
    _, results = run_c("for (int i = 0; i <= n; ++i) y[i] = a * x[i] + y[i];", configs=[{"N": 1823}])
    assert results[0].status == "ok" and results[0].overruns == ("y",)


def test_infinite_loop_times_out_and_children_die():
    start = time.monotonic()
    body = (
        'pid_t p = fork(); if (p == 0) { setsid(); for(;;) pause(); }\n'
        'FILE* f = fopen("child.uid", "w"); fprintf(f, "%d", (int)getuid()); fclose(f);\n'
        "for (;;) {}"
    )
    workdir = scratch_dir()
    _, results = run_c(body, timeout_s=1.0, workdir=workdir)
    assert results[0].status == "timeout" and "1 s" in results[0].message
    assert time.monotonic() - start < 5
    # the forked grandchild left the process group (setsid) but not the worker's PID namespace
    # (or, unconfined, its uid's processes): nothing of that user is left running
    uid = int((workdir / "child.uid").read_text())
    time.sleep(0.2)
    assert uid == 0 or live_processes_of(uid) == []


def live_processes_of(uid: int) -> list[int]:
    """Host pids of processes (not zombies) whose real uid is ``uid``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith(("Z", "X")):
            found.append(int(status.parent.name))
    return found


def test_abort_is_reported():
    _, results = run_c("abort();")
    assert results[0].status == "runtime_error" and "SIGABRT" in results[0].message


def test_layout_aligns_buffers_and_separates_them_with_guards():
    slots, guards, size = layout(TASK, {"N": 1823})
    assert [s.arg.name for s in slots] == ["x", "y"]
    assert all(s.offset % PAGE == 0 for s in slots)
    assert guards == (0, slots[0].canary_end, slots[1].canary_end)
    assert size == guards[-1] + PAGE


@pytest.mark.parametrize("seed", [1, 2])
def test_inputs_are_reproducible_per_seed(seed):
    a = make_inputs(TASK, {"N": 100}, seed)
    b = make_inputs(TASK, {"N": 100}, seed)
    c = make_inputs(TASK, {"N": 100}, seed + 10)
    assert np.array_equal(a["x"], b["x"]) and not np.array_equal(a["x"], c["x"])


@pytest.mark.skipif(os.geteuid() != 0, reason="privilege drop applies when the environment runs as root")
def test_submission_runs_unprivileged_and_cannot_write_system_files():
    probe = Path("/etc/cudaperf-sandbox-probe")
    body = f'FILE* f = fopen("{probe}", "w"); y[0] = f ? 1.0f : 0.0f; y[1] = (float)geteuid();'
    _, results = run_c(body, configs=[{"N": 1000}], uid=65534)
    assert results[0].status == "ok"
    # a confined worker has a user id of its own; unconfined it drops to the one asked for
    assert results[0].buffers["y"][0] == 0.0 and results[0].buffers["y"][1] not in (0.0,) and not probe.exists()


def test_an_entry_named_like_a_libc_function_calls_its_own_definition():
    from cudaperf_env.tasks import parse_task
    from cudaperf_env.toolchain.native import build_c_reference

    data = yaml.safe_load((Path(__file__).parents[2] / "fixtures" / "tasks" / "saxpy.yaml").read_text())
    data.pop("signature")
    data["entry"] = "step"  # glibc exports step(); the reference must not call that one
    data["reference"]["source"] = data["reference"]["source"].replace("void saxpy(", "void step(")
    task = parse_task(data)
    build = build_c_reference(wrap(task, task.reference_source, "c", "reference.c"))
    assert build.ok, build.log
    job = Job({"N": 1000}, make_inputs(task, {"N": 1000}, seed=1))
    [result] = run_jobs(build.library, task, [job], scratch_dir(), timeout_s=5)
    assert result.status == "ok", result.message
    np.testing.assert_allclose(result.buffers["y"], 2.5 * job.inputs["x"] + job.inputs["y"], rtol=1e-6)
