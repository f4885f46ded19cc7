"""Screen bypasses found by the red-team pass: each is now refused, with a message that names it."""

import pytest

from cudaperf_env.source import screen
from cudaperf_env.source.phases import replace_digraphs, splice_lines, translate

KERNEL = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
)
ENTRY = (
    'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n{body}\n'
    "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n"
)


def submission(head: str = "", body: str = "") -> str:
    return head + KERNEL + ENTRY.replace("{body}", body)


def rules(code: str) -> set[str]:
    return {f.rule for f in screen(code, entry="saxpy")}


def test_the_honest_submission_passes():
    assert rules(submission()) == set()


@pytest.mark.parametrize(
    ("head", "body", "rule"),
    [
        ("", '  sys\\\ntem("id");', "process"),  # a line splice inside the name
        ("", '  po\\\npen("id", "r");', "process"),
        ('%:include "/root/secret"\n', "", "include"),  # digraph directives
        ("%:  include <sys/mman.h>\n", "", "include"),
        ("%:define P(a, b) a%:%:b\n", "  P(sys, tem)(\"id\");", "token_paste"),
        ("%:pragma GCC optimize(\"O0\")\n", "", "pragma"),
        ("", '  (open)("/root/secret", 0);', "file"),  # a parenthesised name is still a call
        ("", '  (remove)("/tmp/x");', "file"),
        ("", '  (kill)(-1, 9);', "process"),
        ("", '  fopen64("/root/secret", "r");', "file"),
        ("", '  wordexp("$(id)", 0, 0);', "process"),
        ("", "  _Fork();", "process"),
        ("", "  setpgrp();", "process"),
        ("", "  ftruncate(3, 0);", "file"),
        ("", "  char** e = environ;", "environment"),
        ("", "  __cxa_atexit(0, 0, 0);", "exit"),
        ("", "  daemon(0, 0);", "process"),
        ("", "  dup2(1, 3);", "file"),
        ("", "  memfd_create(\"x\", 0);", "file"),
        ("", "  unshare(0);", "process"),
        ('%:define OPEN fopen64\n', '  OPEN("/root/secret", "r");', "file"),  # through a macro body
        ("", "  int t<:1:> = {0};\n  std::thread th;", "thread"),  # digraph brackets do not hide what follows
    ],
)
def test_bypass_is_refused(head, body, rule):
    found = rules(submission(head, body))
    assert rule in found, found


def test_findings_keep_their_line_numbers_across_splices():
    code = submission("// one\\\n// two\\\n// three\n", '  sys\\\ntem("id");')
    line = next(f.line for f in screen(code, entry="saxpy") if f.rule == "process")
    assert code.splitlines()[line - 1].strip().startswith("sys")


def test_translation_phases_are_what_a_compiler_sees():
    assert splice_lines("a\\\nb c\nd") == "ab c\n\nd"
    assert replace_digraphs('%:include "x%:y" // <% %>\n<::b> a<:1:> <%%>') == '#include "x%:y" // <% %>\n<::b> a[1] {}'
    assert translate("%:def\\\nine X 1") == "#define X 1\n"
    assert replace_digraphs("std::vector<::Foo> v; a<:::b:>") == "std::vector<::Foo> v; a[::b]"
