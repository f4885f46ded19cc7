"""tools/offline_gpu: vLLM's wheels packed in parts (pack_vllm.sh), installed once all have come (setup_vllm.sh).

A tiny wheel stands for the real ones (nothing is downloaded): pack_vllm.sh packs it from
``WHEELS_FROM`` into parts of a few hundred bytes, and each simulated command carries one part.
"""

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[2] / "tools" / "offline_gpu"


def fake_wheel(folder: Path) -> Path:
    """A valid pure-Python wheel of a distribution named vllm, with some incompressible bytes."""
    files = {
        "fakevllm/__init__.py": b"VERSION = '0.0.1'\n",
        "fakevllm/blob.bin": os.urandom(3000),
        "vllm-0.0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: vllm\nVersion: 0.0.1\n",
        "vllm-0.0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files["vllm-0.0.1.dist-info/RECORD"] = ("\n".join([*record, "vllm-0.0.1.dist-info/RECORD,,"]) + "\n").encode()
    folder.mkdir()
    wheel = folder / "vllm-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


def pack(tmp: Path) -> tuple[Path, list[Path]]:
    """pack_vllm.sh run on the fake wheel into ``tmp/tree``: the tree and its .packvNN folders."""
    tree = tmp / "tree"
    tree.mkdir()
    env = {**os.environ, "WHEELS_FROM": str(fake_wheel(tmp / "wheels").parent), "PACK_DIR": str(tree),
           "PART_BYTES": "1200"}  # fmt: skip
    out = subprocess.run(["bash", str(KIT / "pack_vllm.sh")], env=env, capture_output=True, text=True, check=True)
    folders = sorted(tree.glob(".packv*"))
    assert f"in {len(folders)} parts" in out.stdout and len(folders) >= 3
    assert (tree / ".packv01" / "count").read_text().strip() == str(len(folders))
    return tree, folders


def command(tree: Path, root: Path, carried: Path | None, hidden: Path) -> str:
    """One command on the GPU machine: ``carried`` (one .packvNN folder, or none) is in the tree."""
    if carried is not None:
        (hidden / carried.name).rename(carried)
    script = f"source {KIT / 'setup_vllm.sh'} && echo PYTHONPATH=$PYTHONPATH FI=$VLLM_USE_FLASHINFER_SAMPLER"
    env = {**os.environ, "OFFLINE_ROOT": str(root), "OFFLINE_PYTHON": sys.executable, "PYTHONPATH": str(tree)}
    out = subprocess.run(["bash", "-c", script], cwd=tree, env=env, capture_output=True, text=True, check=True)
    if carried is not None:
        carried.rename(hidden / carried.name)
    return out.stdout


def hide(tree: Path, folders: list[Path]) -> Path:
    hidden = tree.parent / "elsewhere"
    hidden.mkdir()
    for f in folders:
        f.rename(hidden / f.name)
    return hidden


def test_the_wheels_are_installed_once_all_parts_have_come_in_any_order(tmp_path):
    tree, folders = pack(tmp_path)
    hidden, root = hide(tree, folders), tmp_path / "root"
    order = [folders[1], folders[0], *folders[2:]]  # the count (in .packv01) comes second
    outputs = [command(tree, root, f, hidden) for f in order]
    n = len(folders)
    assert "setup_vllm: parts 1/?" in outputs[0]
    assert f"setup_vllm: parts 2/{n}" in outputs[1]
    assert f"setup_vllm: parts {n - 1}/{n}" in outputs[-2]
    site = root / "vllm-site"
    assert f"setup_vllm: vllm 0.0.1 installed at {site}" in outputs[-1]
    assert f"PYTHONPATH={tree}:{site} FI=0" in outputs[-1]
    assert (site / "fakevllm" / "blob.bin").is_file()
    later = command(tree, root, None, hidden)  # a later command carries nothing and installs nothing
    assert "installed at" in later and "installing" not in later
    assert sum("installing" in o for o in [*outputs, later]) == 1


def test_a_damaged_part_is_dropped_and_said_and_installs_once_it_comes_again(tmp_path):
    tree, folders = pack(tmp_path)
    hidden, root = hide(tree, folders), tmp_path / "root"
    part = hidden / ".packv02" / "vpart02"
    good = part.read_bytes()
    part.write_bytes(bytes([good[0] ^ 0xFF]) + good[1:])
    outputs = [command(tree, root, f, hidden) for f in folders]
    assert "vpart02 is damaged (sha256 mismatch), dropped: carry .packv02 again" in outputs[1]
    assert f"setup_vllm: parts {len(folders) - 1}/{len(folders)}" in outputs[-1]
    assert not (root / "vllm-site").exists()
    part.write_bytes(good)
    again = command(tree, root, folders[1], hidden)
    assert "setup_vllm: vllm 0.0.1 installed at" in again
