"""Does the static coalescing verdict agree with Nsight Compute on the starter implementations?

Builds every implementation of every bundled C-to-CUDA task, then runs them all once,
in one process under ``ncu`` (largest shown configuration, CuPy buffers, the entry
called through the submission ABI), with a marker kernel launched before each so the
profiled kernels can be attributed. For each implementation it compares the static
analysis' ``coalescing`` feature (source: static) with ncu's global-load efficiency
(bytes used per byte fetched) and sectors per request:

- agreement: share of implementations where "static says coalesced" (coalescing
  >= 0.99) equals "ncu says coalesced": global loads touch no more 32-byte sectors
  per request than a unit-stride warp access of the task's element size needs
  (32 lanes x size / 32 B, with 25% slack for misaligned tiles), or use at least
  ``--threshold`` of the bytes they fetch (vector loads). The sector rule credits
  broadcasts (one address per warp), which waste most of a sector yet are one
  transaction; the efficiency rule credits vector loads. Stores are recorded but
  not judged, since older result files lack them;
- Spearman correlation of static coalescing and ncu's load efficiency.

``--rescore FILE`` recomputes the verdicts of a saved result (same measurements).

Run on a GPU machine with ncu and CuPy:
``python benchmarks/coalescing_vs_ncu.py --out benchmarks/results/coalescing_vs_ncu.json``.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MARKER = "cudaperf_marker"


def run_manifest(manifest: str) -> None:
    """Under ncu: call every listed implementation once, a marker kernel before each."""
    import cupy as cp

    from cudaperf_env.tasks import load_tasks
    from cudaperf_env.tasks.inputs import make_inputs

    tasks = load_tasks()
    marker = cp.RawKernel(f'extern "C" __global__ void {MARKER}() {{}}', MARKER)
    err = ctypes.create_string_buffer(512)
    for entry in json.loads(Path(manifest).read_text()):
        marker((1,), (1,), ())
        cp.cuda.Device().synchronize()
        task = tasks[entry["task"]]
        config = max(task.configs, key=lambda c: sum(c.values()))
        inputs = make_inputs(task, config, 0)
        keep, argv = [], (ctypes.c_void_p * len(task.args))()
        for i, arg in enumerate(task.args):
            if arg.is_buffer:
                array = cp.asarray(inputs[arg.name]) if arg.name in inputs else cp.empty(
                    arg.numel(config), dtype=arg.dtype.numpy)  # fmt: skip
                keep.append(array)
                argv[i] = array.data.ptr
            else:
                value = (ctypes.c_double if arg.dtype.is_float and arg.dtype.itemsize == 8 else
                         ctypes.c_float if arg.dtype.is_float else
                         {1: ctypes.c_int8, 2: ctypes.c_int16, 4: ctypes.c_int32, 8: ctypes.c_int64}[arg.dtype.itemsize]
                         )(arg.scalar_value(config))  # fmt: skip
                keep.append(value)
                argv[i] = ctypes.addressof(value)
        call = getattr(ctypes.CDLL(entry["library"]), entry["symbol"])
        code = call(argv, err, 512)
        print(json.dumps({"task": entry["task"], "impl": entry["impl"], "code": code}), file=sys.stderr, flush=True)


def attribute(profiles, count: int) -> list[list]:
    """Profiled kernels grouped by the marker launched before them (pure)."""
    groups: list[list] = []
    for p in profiles:
        if p.kernel.split("(")[0] == MARKER:
            groups.append([])
        elif groups:
            groups[-1].append(p)
    return groups + [[] for _ in range(count - len(groups))]


def ncu_coalesced(sectors_per_request: float, efficiency: float, element_bytes: int, threshold: float) -> bool:
    """ncu's verdict on one implementation's global loads (pure; see the module docstring)."""
    return efficiency >= threshold or sectors_per_request <= 1.25 * element_bytes


def element_bytes(task) -> int:
    """The widest input element: what a unit-stride warp load of the task moves per lane."""
    return max(a.dtype.itemsize for a in task.args if a.role in ("in", "inout"))


def score(rows: list[dict], threshold: float) -> dict:
    """Verdicts per row, agreement and Spearman (pure but for the task lookup)."""
    from cudaperf_env.analysis.agreement import spearman
    from cudaperf_env.tasks import load_tasks

    tasks = load_tasks()
    for r in rows:
        ncu = ncu_coalesced(r["ncu_load_sectors_per_request"], r["ncu_load_efficiency"],
                            element_bytes(tasks[r["task"]]), threshold)  # fmt: skip
        r["agree"] = (r["static_coalescing"] >= 0.99) == ncu
    return {
        "threshold": threshold, "implementations": len(rows),
        "agreement": sum(r["agree"] for r in rows) / len(rows),
        "spearman": spearman([r["static_coalescing"] for r in rows], [r["ncu_load_efficiency"] for r in rows]),
    }  # fmt: skip


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run_manifest(sys.argv[2])
        return
    from rich.console import Console
    from rich.table import Table

    from cudaperf_env.analysis import analyze
    from cudaperf_env.analysis.profiler import find_ncu, ncu_command, parse_ncu_csv, profile_features
    from cudaperf_env.backends.cuda.backend import detect_arch
    from cudaperf_env.datagen.bundle import build_bundles
    from cudaperf_env.tasks import load_tasks

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/coalescing_vs_ncu.json")
    parser.add_argument("--threshold", type=float, default=0.8, help="ncu load efficiency counted as coalesced")
    parser.add_argument("--rescore", help="recompute the verdicts of this saved result file instead of measuring")
    args = parser.parse_args()
    if args.rescore:
        result = json.loads(Path(args.rescore).read_text())
        result.update(score(result["rows"], args.threshold))
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"agreement {result['agreement']:.3f} over {result['implementations']}, "
              f"Spearman {result['spearman']:.3f}")
        return
    ncu = find_ncu()
    if ncu is None:
        sys.exit("ncu not found: put Nsight Compute on PATH or set CUDAPERF_NCU")

    pairs = [(task, impl) for task in load_tasks(kind="c2cuda").values() for impl in task.implementations]
    built = build_bundles([(t, i.source) for t, i in pairs], detect_arch(), workers=os.cpu_count() or 1)
    manifest = [{"task": t.id, "impl": i.name, "library": str(b.library), "symbol": b.symbol, "source": i.source}
                for (t, i), b in zip(pairs, built, strict=True) if b.library is not None]  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(manifest, f)
    command = ncu_command([sys.executable, __file__, "run", f.name], ncu=ncu)
    out = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    groups = attribute(parse_ncu_csv(out.stdout), len(manifest))
    rows = []
    for entry, kernels in zip(manifest, groups, strict=True):
        measured = profile_features(kernels)
        efficiency = measured.get("ncu_load_efficiency", float("nan"))
        if not kernels or efficiency != efficiency:  # no global loads profiled
            continue
        static = analyze(entry["source"], None).value("coalescing")
        if not isinstance(static, (int, float)):  # no global access the static pass could judge
            continue
        rows.append({"task": entry["task"], "impl": entry["impl"], "static_coalescing": static,
                     "ncu_load_efficiency": efficiency,
                     "ncu_load_sectors_per_request": measured.get("ncu_load_sectors_per_request"),
                     "ncu_store_efficiency": measured.get("ncu_store_efficiency"),
                     "ncu_store_sectors_per_request": measured.get("ncu_store_sectors_per_request")})  # fmt: skip
    if not rows:
        sys.exit(f"ncu profiled nothing:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    driver = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True, check=False).stdout.strip().split(", ")  # fmt: skip
    result = {"card": driver[0], "driver": driver[-1], "date": datetime.date.today().isoformat(),
              "arch": detect_arch(), **score(rows, args.threshold), "rows": rows}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    table = Table(title=f"static coalescing vs ncu on {result['card']} ({result['date']})")
    for column in ("task", "impl", "static", "ncu load eff.", "sectors/req", "agree"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["task"].split("/")[-1], r["impl"], f"{r['static_coalescing']:.2f}",
                      f"{r['ncu_load_efficiency']:.2f}", f"{r['ncu_load_sectors_per_request']:.1f}",
                      "yes" if r["agree"] else "[red]no[/red]")  # fmt: skip
    console = Console()
    console.print(table)
    console.print(f"agreement {result['agreement']:.3f} over {len(rows)} implementations; "
                  f"Spearman {result['spearman']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
