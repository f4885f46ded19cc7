"""Generated glue around a submission: the entry's declaration and the call shim.

The declaration is prepended to the user's code, so a wrong signature is a
compile error that says so and a forgotten ``extern "C"`` still links. The worker
calls the shim with an array of argument pointers. Builds that run put the shim where
no macro or declaration of the submission can rewrite it: before the submission in
one translation unit (:func:`shim_first`: the CPU backend, which then parses its
runtime header once per build instead of twice), or in a unit of its own
(:func:`units`: the CUDA backend); the compile check, which runs nothing, reads the
single unit :func:`wrap` makes.
"""

from __future__ import annotations

from cudaperf_env.tasks.schema import Task

CALL_SYMBOL = "cudaperf_call"


def entry_declaration(task: Task, language: str = "cuda") -> str:
    """The entry's C declaration (``extern "C"`` for C++/CUDA)."""
    prefix = 'extern "C" ' if language == "cuda" else ""
    includes = "".join(f"#include <{h}>\n" for h in task.headers(language))
    return f"{includes}{task.type_declarations(language)}{prefix}{task.signature};\n"


def call_shim(task: Task, language: str = "cuda", symbol: str = CALL_SYMBOL) -> str:
    """``int cudaperf_call(void** argv, char* err, int err_len)`` (named ``symbol``) calling the entry.

    Scalars arrive by pointer, buffers as pointers. For CUDA the shim
    synchronizes and returns the CUDA error code, with its name in ``err``.
    """
    params = []
    for i, arg in enumerate(task.args):
        c_type = arg.c_type
        if arg.is_buffer:
            const = "const " if arg.role == "in" else ""
            params.append(f"({const}{c_type}*)argv[{i}]")
        else:
            params.append(f"*({c_type}*)argv[{i}]")
    call = f"{task.entry}({', '.join(params)});"
    if language == "c":
        return (
            f"\n#line 1 \"cudaperf_harness.c\"\n"
            f"int {symbol}(void** argv, char* err, int err_len) {{\n"
            f"  (void)err; (void)err_len;\n  {call}\n  return 0;\n}}\n"
        )
    return (
        f'\n#line 1 "cudaperf_harness.cu"\n#include <cstdio>\n'
        f'extern "C" int {symbol}(void** argv, char* err, int err_len) {{\n'
        f"  {call}\n"
        "  cudaError_t e = cudaDeviceSynchronize();\n"
        "  if (e == cudaSuccess) e = cudaGetLastError();\n"
        "  if (e != cudaSuccess)\n"
        '    snprintf(err, err_len, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));\n'
        "  return (int)e;\n}\n"
    )


def wrap(task: Task, user_code: str, language: str = "cuda", filename: str = "submission.cu") -> str:
    """Declaration + user code (line numbers kept) + shim: one translation unit."""
    return (
        entry_declaration(task, language)
        + f'#line 1 "{filename}"\n'
        + user_code
        + ("" if user_code.endswith("\n") else "\n")
        + call_shim(task, language)
    )


def units(task: Task, user_code: str, language: str = "cuda", filename: str = "submission.cu") -> tuple[str, str]:
    """``(submission unit, harness unit)``: declaration + user code, and declaration + shim, apart."""
    submission = entry_declaration(task, language) + f'#line 1 "{filename}"\n' + user_code
    harness = entry_declaration(task, language) + call_shim(task, language)
    return submission + ("" if submission.endswith("\n") else "\n"), harness


def shim_first(task: Task, user_code: str, language: str = "cuda", filename: str = "submission.cu") -> str:
    """Declaration + shim + user code (line numbers kept): one translation unit the submission cannot rewrite.

    Macros act only on the text after their definition and the shim's calls are resolved where
    they stand, so nothing the user code defines reaches the shim (as with :func:`units`), while
    the build reads the headers once.
    """
    code = user_code + ("" if user_code.endswith("\n") else "\n")
    return entry_declaration(task, language) + call_shim(task, language) + f'#line 1 "{filename}"\n' + code
