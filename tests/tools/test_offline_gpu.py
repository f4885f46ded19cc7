"""tools/offline_gpu: the model rebuilt from parts that arrive one per command, and detached jobs waited for."""

import hashlib
import lzma
import os
import subprocess
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2] / "tools" / "offline_gpu"


def setup(tree: Path, root: Path) -> str:
    """Source setup.sh in ``tree`` as a command on the GPU machine does; its output and OFFLINE_MODEL."""
    command = f"source {KIT / 'setup.sh'} && echo model=$OFFLINE_MODEL"
    env = {**os.environ, "OFFLINE_ROOT": str(root)}
    return subprocess.run(["bash", "-c", command], cwd=tree, env=env, capture_output=True, text=True, check=True).stdout


def pack(tree: Path, model: bytes, tamper: bool = False) -> list[Path]:
    """The three pack folders as pack.sh lays them out, for a model of these bytes."""
    packed = lzma.compress(model)
    (tree / ".pack1").mkdir()
    (tree / ".pack1" / "model.sha256").write_text(f"{hashlib.sha256(packed).hexdigest()}  model.gguf.xz\n")
    third = len(packed) // 3 + 1
    folders = []
    for i in range(3):
        folder = tree / f".pack{i + 1}"
        folder.mkdir(exist_ok=True)
        part = bytearray(packed[i * third:(i + 1) * third])
        if tamper and i == 1:
            part[0] ^= 0xFF
        (folder / f"part0{i}").write_bytes(bytes(part))
        folders.append(folder)
    return folders


def arrive_one_per_command(tree: Path, root: Path, folders: list[Path]) -> list[str]:
    """Each command carries one folder (the others are not in the tree then)."""
    hidden = tree / "elsewhere"
    hidden.mkdir()
    for f in folders:
        f.rename(hidden / f.name)
    outputs = []
    for f in folders:
        (hidden / f.name).rename(f)
        outputs.append(setup(tree, root))
        f.rename(hidden / f.name)
    return outputs


def test_the_model_is_rebuilt_once_all_three_parts_have_come(tmp_path):
    model = os.urandom(50_000) + b"GGUF" * 1000
    outputs = arrive_one_per_command(tmp_path, tmp_path / "root", pack(tmp_path, model))
    assert "parts 1/3" in outputs[0] and "parts 2/3" in outputs[1]
    path = tmp_path / "root" / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert f"model={path}" in outputs[2]
    assert path.read_bytes() == model
    assert "wheels missing" in outputs[2]  # no wheels were packed here


def test_a_damaged_part_gives_no_model_and_says_so(tmp_path):
    outputs = arrive_one_per_command(tmp_path, tmp_path / "root", pack(tmp_path, os.urandom(20_000), tamper=True))
    assert "do not reassemble" in outputs[2]
    assert not (tmp_path / "root" / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()


@pytest.mark.timeout(60)
def test_a_detached_job_outlives_its_command_and_is_waited_for(tmp_path):
    env = {**os.environ, "OFFLINE_ROOT": str(tmp_path), "OUT": str(tmp_path / "out")}
    (tmp_path / "out").mkdir()
    subprocess.run(["bash", str(KIT / "detached.sh"), "job", "bash", "-c", "sleep 3; echo done-writing"], env=env,
                   check=True, capture_output=True)  # fmt: skip
    first = subprocess.run(["bash", str(KIT / "wait.sh"), "job", "0"], env=env, capture_output=True, text=True)
    assert first.stdout.strip().endswith("RUNNING")
    last = subprocess.run(["bash", str(KIT / "wait.sh"), "job", "30"], env=env, capture_output=True, text=True)
    assert last.stdout.strip().endswith("FINISHED")
    assert (tmp_path / "out" / "job.log").read_text().strip() == "done-writing"
    for run in ("eval", "starter"):  # two reports of one name come back apart
        (tmp_path / run).mkdir()
        (tmp_path / run / "report.json").write_text(run)
    files = [str(tmp_path / "eval" / "report.json"), str(tmp_path / "starter" / "report.json"), str(KIT / "wait.sh")]
    subprocess.run(["bash", str(KIT / "wait.sh"), "job", "0", *files], env=env, check=True, capture_output=True)
    assert (tmp_path / "out" / "eval-report.json").read_text() == "eval"
    assert (tmp_path / "out" / "starter-report.json").read_text() == "starter"
    assert (tmp_path / "out" / "wait.sh").is_file()
