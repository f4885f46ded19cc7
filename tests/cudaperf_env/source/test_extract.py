"""Tests for extracting CUDA source from an agent's text action."""

from __future__ import annotations

import time

import pytest

from cudaperf_env.source.extract import NO_CODE, NO_PYTHON, Extraction, extract_code, extract_python

KERNEL = """__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""


def test_prose_and_one_fenced_block() -> None:
    action = f"Here is my optimized kernel:\n\n```cuda\n{KERNEL}```\n\nOne thread per element."
    assert extract_code(action) == Extraction(KERNEL, None, True)


def test_last_block_with_a_kernel_wins_over_later_plain_blocks() -> None:
    first = KERNEL.replace("256", "128")
    action = (
        f"First try:\n```cuda\n{first}```\nBetter:\n```cpp\n{KERNEL}```\n"
        "Compile with:\n```\nnvcc -O3 saxpy.cu\n```\nand in Python:\n```python\nprint('hi')\n```\n"
    )
    result = extract_code(action)
    assert result.code == KERNEL
    assert result.fenced


def test_last_code_block_when_none_has_a_kernel() -> None:
    action = "```c++\nint a() { return 1; }\n```\ntext\n```cu\nint b() { return 2; }\n```\n"
    assert extract_code(action).code == "int b() { return 2; }\n"


@pytest.mark.parametrize("language", ["cuda", "CUDA", "cpp", "c++", "cu", "c", ""])
def test_accepted_fence_languages(language: str) -> None:
    code = "int f() { return 0; }\n"
    assert extract_code(f"```{language}\n{code}```").code == code


def test_unclosed_fence_runs_to_the_end_and_says_the_reply_was_cut_off() -> None:
    action = f"Sure! Here it is:\n```cuda\n{KERNEL}"
    assert extract_code(action) == Extraction(KERNEL + "\n", None, True, cut_off=True)
    assert not extract_code(f"```cuda\n{KERNEL}```").cut_off
    assert not extract_code(f"```cuda\n{KERNEL}```\nTo build it:\n```\nnvcc -O3").cut_off  # the kernel's block closed
    assert extract_python("```python\nclass ModelNew:\n    pass").cut_off


def test_tilde_fences_longer_fences_and_indented_blocks() -> None:
    action = "1. The code:\n   ````cuda\n   __global__ void k() {}\n   ```\n   ````\n"
    assert extract_code(action).code == "__global__ void k() {}\n```\n"
    assert extract_code("~~~cpp\n__global__ void k() {}\n~~~\n").code == "__global__ void k() {}\n"


def test_only_non_code_blocks_is_an_error_naming_them() -> None:
    result = extract_code("Use this:\n```python\nimport torch\n```\n")
    assert result == Extraction(None, f"{NO_CODE} (found only ```python blocks)", True)


def test_block_of_another_language_that_holds_a_kernel_is_taken() -> None:
    assert extract_code("```text\n__global__ void k() {}\n```").code == "__global__ void k() {}\n"


def test_unfenced_code_is_taken_whole() -> None:
    result = extract_code(KERNEL)
    assert result == Extraction(KERNEL, None, False)
    assert extract_code("int main() { return 0; }").code == "int main() { return 0; }"


def test_prose_without_code_is_an_error() -> None:
    result = extract_code("I think the best approach is shared-memory tiling (with 32x32 tiles).")
    assert result == Extraction(None, NO_CODE, False)
    assert NO_CODE == "no code found: put the CUDA source in a ```cuda fenced block"


@pytest.mark.parametrize("action", ["", "   \n\t  ", "\ufeff"])
def test_empty_or_blank_action(action: str) -> None:
    assert extract_code(action).error == (
        "empty action: expected CUDA C++ source in a ```cuda fenced block"
    )


def test_empty_fenced_block() -> None:
    assert extract_code("```cuda\n\n```").error == (
        "the ```cuda block is empty: put the CUDA source inside it"
    )


def test_code_over_the_limit_says_size_and_limit() -> None:
    big = "__global__ void k() {}\n" + "// pad\n" * 20000
    result = extract_code(f"```cuda\n{big}```")
    assert result.error == (
        f"the code is {len(big):,} characters, over the limit of 65,536; "
        "shorten it (drop unused code and long comments)"
    )
    assert extract_code(f"```cuda\n{big}```", max_chars=len(big)).code == big


def test_giant_text_is_refused_quickly() -> None:
    action = "blah " * 400_000
    started = time.perf_counter()
    result = extract_code(action)
    assert time.perf_counter() - started < 0.5
    assert result.error == (
        "the answer is 2,000,000 characters, over the limit of 1,048,576; "
        "answer with the code in one ```cuda block and little prose"
    )


def test_large_prose_within_the_limit_is_scanned_linearly() -> None:
    action = ("word " * 150_000) + f"\n```cuda\n{KERNEL}```\n" + ("(a " * 50_000)
    started = time.perf_counter()
    assert extract_code(action).code == KERNEL
    assert time.perf_counter() - started < 1.0
    started = time.perf_counter()
    assert extract_code("a (" * 200_000).error == NO_CODE
    assert time.perf_counter() - started < 1.0


def test_control_character_is_refused_with_its_line() -> None:
    code = "__global__ void k() {\n  int a = 1;\x07\n}\n"
    assert extract_code(f"```cuda\n{code}```").error == (
        "line 2 of the code holds U+0007 (a control character), which is not allowed in source; "
        "remove it (only printable characters, tabs and newlines are allowed)"
    )


def test_nul_byte_and_escape_are_refused() -> None:
    assert "U+0000" in (extract_code("__global__ void k() {}\x00").error or "")
    assert "U+001B" in (extract_code("__global__ void k() {}\x1b[31m").error or "")


def test_surrogates_and_replacement_characters_mean_bad_utf8() -> None:
    raw = b"__global__ void k() { int \xff = 1; }"
    assert extract_code(raw.decode("utf-8", "surrogateescape")).error == (
        "line 1 of the code holds U+DCFF (a lone surrogate: the text was not valid UTF-8), "
        "which is not allowed in source; remove it (only printable characters, tabs and "
        "newlines are allowed)"
    )
    assert "REPLACEMENT CHARACTER" in (extract_code(raw.decode("utf-8", "replace")).error or "")


def test_bidi_override_is_refused() -> None:
    code = "__global__ void k() {\n  // ok\n  int a; /* \u202e } */\n}"
    error = extract_code(code).error or ""
    assert error.startswith("line 3 of the code holds U+202E (RIGHT-TO-LEFT OVERRIDE)")


def test_printable_unicode_in_comments_is_kept() -> None:
    code = "__global__ void k() {}  // durée ≈ 3 µs, 线程\n"
    assert extract_code(code).code == code


def test_leading_bom_stripped_and_newlines_normalized() -> None:
    assert extract_code("\ufeff__global__ void k() {}\r\n").code == "__global__ void k() {}\n"
    assert extract_code("```cuda\r\n\ufeff__global__ void k() {}\r\n```").code == (
        "__global__ void k() {}\n"
    )


def test_control_bytes_outside_the_code_block_are_ignored() -> None:
    action = f"\x1b[1mAnswer\x1b[0m\n```cuda\n{KERNEL}```"
    assert extract_code(action).code == KERNEL


def test_bytes_action_is_refused_with_a_hint() -> None:
    assert extract_code(b"__global__ void k() {}").error == (  # type: ignore[arg-type]
        "expected the action as a str, got bytes; decode it as UTF-8 first"
    )


def test_extraction_requires_exactly_one_of_code_and_error() -> None:
    with pytest.raises(ValueError, match="exactly one of code and error"):
        Extraction("x", "y", False)


MODEL_NEW = 'import torch\nsrc = "__global__ void k() {}"\n\nclass ModelNew(torch.nn.Module):\n    pass\n'


def test_python_block_with_model_new_is_taken_in_kernelbench_mode() -> None:
    action = f"Plan:\n```python\nprint('draft')\n```\nFinal:\n```python\n{MODEL_NEW}```\n```cuda\n{KERNEL}```\n"
    assert extract_python(action) == Extraction(MODEL_NEW, None, True)


def test_kernelbench_mode_takes_unfenced_python_defining_model_new() -> None:
    assert extract_python(MODEL_NEW) == Extraction(MODEL_NEW, None, False)


def test_kernelbench_mode_without_python_says_where_to_put_it() -> None:
    result = extract_python(f"```cuda\n{KERNEL}```")
    assert result.code is None and result.error == NO_PYTHON
    assert "```python block" in NO_PYTHON
    assert extract_python("```python\n\n```").error == "the ```python block is empty: put the submission inside it"
