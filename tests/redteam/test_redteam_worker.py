"""Attacks from inside the worker: the reply channel, the buffer files, the host, other evaluations.

Each runs hostile C in the real, confined worker (the screen is not in the way here: the
kernel boundary is what is tested) and asserts no credit and no effect outside.
"""

import os
import secrets
import socket
import threading
from pathlib import Path

import numpy as np
from hostile import HONEST, SAXPY, build_hostile, confined_processes, needs_namespaces, run_hostile, shm_entries

from cudaperf_env.backends.execute import Job, call_reply, run_jobs
from cudaperf_env.backends.sandbox import frame, unframe
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain.cache import scratch_dir


def test_garbage_on_every_descriptor_is_a_runtime_error_not_an_exception():
    body = 'for (int fd = 0; fd < 65536; ++fd) if (fd != 1 && fd != 2) write(fd, "{\\"ok\\": true}\\n", 13);\n' + HONEST
    _, results, _ = run_hostile(body)
    assert results[0].status == "runtime_error" and "malformed reply" in results[0].message


def test_a_forged_frame_with_wrong_types_is_a_runtime_error():
    forged = '{\\"ok\\": true, \\"code\\": \\"0\\", \\"error\\": 7, \\"seconds\\": -1}'
    body = (f'const char* j = "{forged}"; unsigned len = strlen(j); char buf[256];\n'
            'memcpy(buf, "CPF1", 4); memcpy(buf + 4, &len, 4); memcpy(buf + 8, j, len);\n'
            'for (int fd = 3; fd < 65536; ++fd) write(fd, buf, 8 + len);\n' + HONEST)  # fmt: skip
    _, results, _ = run_hostile(body)
    assert results[0].status == "runtime_error" and "malformed reply" in results[0].message


def test_a_giant_frame_length_is_refused_before_it_is_read():
    body = ('unsigned len = 0xffffffffu; char buf[8]; memcpy(buf, "CPF1", 4); memcpy(buf + 4, &len, 4);\n'
            'for (int fd = 3; fd < 65536; ++fd) write(fd, buf, 8);\n' + HONEST)  # fmt: skip
    _, results, _ = run_hostile(body)
    assert results[0].status == "runtime_error" and "frame" in results[0].message


def test_frames_parse_only_when_whole_and_well_formed():
    good = frame({"ok": True, "code": 0})
    assert unframe(good) == ({"ok": True, "code": 0}, b"", "")
    assert unframe(good[:5]) == (None, good[:5], "")
    assert unframe(b"XPF1" + good[4:])[2] == "magic"
    assert unframe(b"CPF1" + (5).to_bytes(4, "little") + b"[1,2]")[2] == "not a JSON object"
    assert unframe(b"CPF1" + (3).to_bytes(4, "little") + b"{{{")[2] == "unreadable JSON"
    assert call_reply({"code": True, "error": ""}, 2) != (1, "", 0.0, [])
    assert isinstance(call_reply({"code": 0, "error": "", "overrun_args": [5]}, 2), str)
    assert call_reply({"code": 0, "error": "", "seconds": 0.5}, 2) == (0, "", 0.5, [])


def test_truncating_the_buffer_file_cannot_crash_the_parent():
    body = 'int fd = open("io/buffers-0.bin", O_RDWR); if (fd >= 0) { ftruncate(fd, 0); close(fd); }'
    _, results, _ = run_hostile(body, configs=SAXPY.configs[:2])
    assert len(results) == 1 and results[0].status == "runtime_error" and "resized" in results[0].message


def test_growing_the_buffer_file_is_refused_too():
    body = ('int fd = open("io/buffers-0.bin", O_RDWR); struct stat st;\n'  # a little: the file-size limit stops more
            'if (fd >= 0 && fstat(fd, &st) == 0) { ftruncate(fd, st.st_size + 8192); close(fd); }\n' + HONEST)
    _, results, _ = run_hostile(body)
    assert results[0].status == "runtime_error" and "resized" in results[0].message


def test_links_planted_for_the_parent_lead_nowhere(tmp_path):
    """The worker owns its scratch dir: links where the parent writes (buffers) or reads (stdout) must not work."""
    target = tmp_path / "victim"
    target.write_text("intact")
    body = (f'symlink("{target}", "io/buffers-1.bin"); unlink("worker.stdout");\n'
            f'symlink("{target}", "worker.stdout");\n' + HONEST)  # fmt: skip
    _, results, _ = run_hostile(body, configs=SAXPY.configs[:2])
    assert [r.status for r in results] == ["ok", "ok"]
    assert target.read_text() == "intact" and all("intact" not in r.stdout for r in results)


@needs_namespaces
def test_root_only_files_and_task_files_are_not_visible(secret):
    path, marker = secret
    task_file = Path(__file__).parents[2] / "cudaperf_env" / "tasks" / "data"
    body = (f'FILE* f = fopen("{path}", "r"); char s[64] = {{0}}; if (f) {{ fgets(s, 63, f); printf("%s", s); }}\n'
            f'y[0] = f ? 1.0f : 0.0f; y[1] = access("{task_file}", F_OK) == 0 ? 1.0f : 0.0f;\n'
            'y[2] = access("/root", F_OK) == 0 && opendir("/root/.ssh") ? 1.0f : 0.0f;')  # fmt: skip
    _, results, _ = run_hostile(body)
    assert results[0].status == "ok"
    assert results[0].buffers["y"][:3].tolist() == [0.0, 0.0, 0.0]
    assert marker not in results[0].stdout


@needs_namespaces
def test_the_network_is_unreachable(tmp_path):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    body = (f'int s = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in sa = {{0}}; sa.sin_family = AF_INET;\n'
            f'sa.sin_port = htons({port}); sa.sin_addr.s_addr = htonl(0x7f000001);\n'
            'y[0] = (s >= 0 && connect(s, (struct sockaddr*)&sa, sizeof sa) == 0) ? 1.0f : -1.0f;')  # fmt: skip
    try:
        _, results, _ = run_hostile(body)
    finally:
        server.close()
    assert results[0].status == "ok" and results[0].buffers["y"][0] == -1.0


@needs_namespaces
def test_tmp_and_dev_shm_writes_vanish_and_are_bounded():
    name = f"cudaperf-redteam-{secrets.token_hex(4)}"
    before = shm_entries()
    body = (f'FILE* f = fopen("/dev/shm/{name}", "w"); FILE* g = fopen("/tmp/{name}", "w");\n'
            'static char block[1 << 20]; long written = 0;\n'
            'if (f) for (int i = 0; i < 256; ++i) { size_t w = fwrite(block, 1, sizeof block, f); written += w;'
            ' if (w < sizeof block) break; }\n'
            'y[0] = (float)(written >> 20); y[1] = g ? 1.0f : 0.0f;')  # fmt: skip
    _, results, _ = run_hostile(body)
    assert results[0].status == "ok"
    assert 0 < results[0].buffers["y"][0] <= 64  # private tmpfs of 64 MiB: never the host's RAM
    assert not Path(f"/dev/shm/{name}").exists() and not Path(f"/tmp/{name}").exists()
    assert shm_entries() <= before | {e for e in shm_entries() if e.startswith("cudaperf-")}


@needs_namespaces
def test_other_evaluations_scratch_dirs_are_not_visible():
    body = ('DIR* d = opendir("/dev/shm"); int count = 0; struct dirent* e;\n'
            'while (d && (e = readdir(d))) if (e->d_name[0] != \'.\') ++count;\n'
            'y[0] = (float)count;')  # fmt: skip
    _, results, _ = run_hostile(body)
    assert results[0].status == "ok" and results[0].buffers["y"][0] == 1.0  # its own scratch dir only


@needs_namespaces
def test_killing_everything_spares_a_concurrent_honest_evaluation():
    """kill(-1) and a fork bomb in one evaluation; an honest one runs at the same time, unharmed."""
    attack = ('for (int i = 0; i < 400; ++i) if (fork() == 0) { kill(-1, SIGKILL); for (;;) pause(); }\n'
              'kill(-1, SIGKILL); for (;;) {}')  # fmt: skip
    outcome: dict[str, list] = {}

    def run(name: str, body: str, timeout_s: float) -> None:
        outcome[name] = run_hostile(body, timeout_s=timeout_s, configs=SAXPY.configs[:2])[1]

    threads = [threading.Thread(target=run, args=("attacker", attack, 2.0)),
               threading.Thread(target=run, args=("honest", HONEST, 20.0))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status for r in outcome["honest"]] == ["ok", "ok"]
    assert outcome["attacker"][0].status in ("timeout", "runtime_error")
    assert confined_processes() == []


def test_the_parent_keeps_no_descriptor_of_a_finished_evaluation():
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        run_hostile("close(3); close(4); " + HONEST)
    assert len(os.listdir("/proc/self/fd")) <= before
    assert np.isfinite(before)


def test_a_folder_link_planted_for_a_later_run_is_refused_not_followed(tmp_path):
    """A submission owns its scratch dir and may plant links for the harness's later runs there (a checker's,
    a baseline's folder): the run is refused and nothing is created or given away at the link's target."""
    victim = tmp_path / "victim"
    victim.mkdir()
    work = scratch_dir()
    (work / "later").symlink_to(victim)
    job = Job(SAXPY.configs[0], make_inputs(SAXPY, SAXPY.configs[0], seed=1))
    results = run_jobs(build_hostile(HONEST), SAXPY, [job], work / "later", 5.0)
    assert results[0].status == "runtime_error" and "tampered" in results[0].message
    assert list(victim.iterdir()) == [] and victim.stat().st_uid == os.geteuid()


@needs_namespaces
def test_the_expected_outputs_folder_is_closed_to_the_submissions_worker():
    """The evaluation computes expected outputs in ``workdir/ref`` while the submission runs in ``workdir``."""
    body = ('FILE* f = fopen("ref/expected.bin", "r"); char s[64] = {0}; if (f) { fgets(s, 63, f); printf("%s", s); }\n'
            "y[0] = f ? 1.0f : 0.0f;")
    for mode, readable in ((0o755, 1.0), (0o700, 0.0)):  # 0o755: the test reaches the file when it is open
        workdir = scratch_dir()
        (workdir / "ref").mkdir(mode=mode)
        (workdir / "ref").chmod(mode)
        marker = secrets.token_hex(8)
        (workdir / "ref" / "expected.bin").write_text(marker)
        (workdir / "ref" / "expected.bin").chmod(0o644)
        _, results, _ = run_hostile(body, workdir=workdir)
        assert results[0].status == "ok" and results[0].buffers["y"][0] == readable, (mode, results[0].message)
        assert marker not in results[0].stdout or readable


def test_the_evaluation_computes_expected_outputs_in_a_folder_of_its_own(monkeypatch):
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.backends.reference import ReferenceOutputs
    from cudaperf_env.evaluate import Evaluator

    modes = []
    real = ReferenceOutputs.expected

    def expected(self, task, jobs, seed, workdir):
        modes.append(workdir.stat().st_mode & 0o777)
        return real(self, task, jobs, seed, workdir)

    monkeypatch.setattr(ReferenceOutputs, "expected", expected)
    e = Evaluator(CpuBackend(timeout_s=5.0)).evaluate(SAXPY, SAXPY.implementation("naive").source, seed=1)
    assert e.correct and modes == [0o700], (e.message, modes)
