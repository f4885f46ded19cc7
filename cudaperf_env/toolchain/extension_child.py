"""Builds one torch extension from a KernelBench-mode submission's screened ``load_inline`` arguments.

Run confined by :mod:`cudaperf_env.toolchain.extension` as ``python -I extension_child.py SPEC`` in the
build folder, its only writable place. It is trusted code with untrusted sources: it calls PyTorch's own
``load_inline`` (the path KernelBench uses) with the screened arguments and a build directory of this
folder, and stops before loading the module, so no code of the submission runs here; the worker loads
it. On failure it prints the build error and exits 1.

SPEC is a JSON file: ``{"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags",
"extra_cuda_cflags", "env": {NAME: VALUE}}``.
"""

import json
import os
import sys


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    os.environ.update(spec["env"])  # CUDA_HOME, TORCH_CUDA_ARCH_LIST, MAX_JOBS, TORCH_EXTENSIONS_DIR
    from torch.utils import cpp_extension

    # Build only: importing the module would run its initialisers in this process.
    cpp_extension._import_module_from_library = lambda name, path, is_python_module: os.path.join(path, name)
    try:
        cpp_extension.load_inline(
            name=spec["name"],
            cpp_sources=list(spec["cpp_sources"]),
            cuda_sources=list(spec["cuda_sources"]) or None,
            functions=list(spec["functions"]),
            extra_cflags=list(spec["extra_cflags"]),
            extra_cuda_cflags=list(spec["extra_cuda_cflags"]),
            build_directory=os.getcwd(),
            verbose=False,
            with_cuda=bool(spec["cuda_sources"]),
        )
    except Exception as exc:  # noqa: BLE001 - every build failure is reported to the parent as text
        print(f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
