"""The KernelBench-mode screen: honest ModelNew sources pass, hostile ones are refused with the right rule."""

from pathlib import Path

import pytest

from cudaperf_env.source.inline_extension import InlineExtension, extension_key
from cudaperf_env.source.python_screen import screen_python

FIXTURES = Path(__file__).parents[2] / "fixtures" / "kernelbench_mode"
TANH = (FIXTURES / "tanh_modelnew.py").read_text()
HEAD, _, _ = TANH.partition("class ModelNew")


def model(forward: str, init: str = "", head: str = HEAD) -> str:
    """The tanh fixture with another forward body (and more of __init__, or another module head)."""
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    body = "".join(f"        {line}\n" for line in forward.splitlines())
    return (
        f"{head}class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.tanh = tanh\n{init_lines}\n    def forward(self, x):\n{body}"
    )


@pytest.mark.parametrize("name", ["tanh_modelnew.py", "linear_mish_relu_modelnew.py"])
def test_honest_kernelbench_solutions_pass(name):
    result = screen_python((FIXTURES / name).read_text())
    assert result.findings == ()
    (ext,) = result.extensions
    assert ext.functions == (name.removesuffix("_modelnew.py") + "_cuda",)
    assert "__global__" in ext.cuda_sources[0] and ext.cpp_sources[0].startswith("torch::Tensor")


def test_honest_forward_may_allocate_take_views_and_loop():
    forward = (
        "n = x.numel()\nout = torch.empty_like(x)\nflat = x.contiguous().view(-1)\n"
        "for _ in range(1):\n    out = self.tanh.tanh_cuda(flat).view(x.shape)\nreturn out"
    )
    assert screen_python(model(forward)).findings == ()


HOSTILE = {
    "reference_compute": (model("return torch.tanh(x)"), "torch_compute", "`torch.tanh` is PyTorch compute"),
    "functional": (
        model("return F.relu(self.tanh.tanh_cuda(x))", head="import torch.nn.functional as F\n" + HEAD),
        "torch_compute",
        "`torch.nn.functional.relu`",
    ),
    "imported_function": (
        model("return tanh_fn(x)", head="from torch import tanh as tanh_fn\n" + HEAD),
        "torch_compute",
        "`torch.tanh` is PyTorch compute",
    ),
    "tensor_method": (model("return x.tanh()"), "torch_compute", "`.tanh(...)` is PyTorch compute"),
    "inplace_method": (model("y = self.tanh.tanh_cuda(x)\ny.mul_(1.0)\nreturn y"), "torch_compute", "`.mul_"),
    "matmul_operator": (model("return self.tanh.tanh_cuda(x @ x)"), "torch_compute", "`@` is a PyTorch matrix"),
    "submodule": (model("return self.act(x)", init="self.act = nn.Tanh()"), "submodule_call", "`self.act(...)`"),
    "submodule_forward": (
        model("return self.act.forward(x)", init="self.act = nn.Tanh()"),
        "submodule_call",
        "on `self.act`",
    ),
    "try_fallback": (
        model("try:\n    return self.tanh.tanh_cuda(x)\nexcept RuntimeError:\n    return x.tanh()"),
        "try",
        "try/except is not allowed",
    ),
    "reference_model": (model("return Model()(x)"), "reference_model", "may not use the reference `Model`"),
    "import_os": (model("return self.tanh.tanh_cuda(x)", head="import os\n" + HEAD), "import", "`import os`"),
    "import_in_forward": (model("import subprocess\nreturn self.tanh.tanh_cuda(x)"), "statement", "`import`"),
    "eval": (model("return eval('self.tanh.tanh_cuda(x)')"), "builtin", "`eval` is not allowed"),
    "open": (model("open('/tmp/x', 'w')\nreturn self.tanh.tanh_cuda(x)"), "builtin", "`open` is not allowed"),
    "getattr": (model("return getattr(torch, 'tanh')(x)"), "builtin", "`getattr` is not allowed"),
    "dunder_import": (model("return __import__('torch').tanh(x)"), "builtin", "`__import__` is not allowed"),
    "dunder_attribute": (model("return x.__class__.tanh(x)"), "private", "`.__class__`"),
    "private_torch": (model("torch._C._set_grad_enabled(False)\nreturn self.tanh.tanh_cuda(x)"), "private", "`._C`"),
    "module_alias": (model("t = torch\nreturn t.tanh(x)"), "module_value", "the torch module"),
    "patch_torch": (
        model("torch.equal = min\nreturn self.tanh.tanh_cuda(x)"),
        "attribute_write",
        "assigning `torch.equal`",
    ),
    "side_stream": (
        model("s = torch.cuda.Stream()\nreturn self.tanh.tanh_cuda(x)"),
        "torch_cuda",
        "streams, devices and synchronization",
    ),
    "format_escape": (
        model("'{0.__globals__}'.format(self)\nreturn self.tanh.tanh_cuda(x)"),
        "torch_compute",
        "`.format(...)`",
    ),
    "pointer_cache": (model("k = id(x)\nreturn self.tanh.tanh_cuda(x)"), "builtin", "`id` is not allowed"),
    "global_state": (model("global CACHE\nreturn self.tanh.tanh_cuda(x)"), "statement", "`global`"),
    "unbound_function": (model("return self.tanh.relu_cuda(x)"), "extension", "`relu_cuda` is not bound"),
    "module_code": (TANH + "\nprint(open('/etc/passwd').read())\n", "module_code", "module-level code runs"),
    "dynamic_source": (
        TANH.replace("cuda_sources=tanh_source", 'cuda_sources=open("k.cu").read()'),
        "load_inline",
        "`cuda_sources` must be written as constants",
    ),
    "linker_flags": (
        TANH.replace('extra_ldflags=[""]', 'extra_ldflags=["-lcublas"]'),
        "load_inline",
        "extra_ldflags is not allowed",
    ),
    "compiler_flag": (
        TANH.replace('extra_cflags=[""]', 'extra_cflags=["-fplugin=/tmp/x.so"]'),
        "load_inline",
        "the compiler flag `-fplugin=/tmp/x.so` is not allowed",
    ),
    "cpp_system_call": (
        TANH.replace("auto size = x.numel();", 'system("id"); auto size = x.numel();'),
        "process",
        "in cuda_sources, line 13: `system` starts",
    ),
    "cpp_python_api": (
        TANH.replace("auto size = x.numel();", 'PyRun_SimpleString("1"); auto size = x.numel();'),
        "extension_escape",
        "the Python C API",
    ),
    "cpp_dispatcher": (
        TANH.replace(
            "auto size = x.numel();",
            "c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); auto size = x.numel();",
        ),
        "extension_escape",
        "reaches the dispatcher",
    ),
    "cpp_cublas": (
        TANH.replace("#include <cuda_runtime.h>", "#include <cublas_v2.h>"),
        "library",
        "belongs to the cublas library",
    ),
    "cpp_inline_asm": (
        TANH.replace("out[idx] = tanhf(x[idx]);", 'asm("exit;"); out[idx] = tanhf(x[idx]);'),
        "asm",
        "inline assembly",
    ),
    "no_extension": (
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return x\n",
        "no_extension",
        "no `name = load_inline(...)`",
    ),
    "no_model": (HEAD, "no_model", "no `class ModelNew(nn.Module)`"),
    "module_method": (model("return self.tanh.tanh_cuda(x)") + "\n    def state_dict(self):\n        return {}\n",
                      "module_method", "`state_dict` redefines nn.Module's own method"),
    "extension_elsewhere": (model("return self.other.tanh_cuda(x)", init="self.other = [tanh][0]"), "extension",
                            "`self.other` is not known to hold the extension"),
    "syntax": ("class ModelNew(nn.Module:\n", "syntax", "Python syntax error"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_sources_are_refused_with_the_reason(case):
    source, rule, words = HOSTILE[case]
    findings = screen_python(source).findings
    assert findings, f"{case} was accepted"
    assert any(f.rule == rule and words in f.message for f in findings), findings


def test_a_refusal_names_its_line_and_what_to_do_instead():
    (finding,) = screen_python(model("return torch.tanh(x)")).findings
    assert finding.line == TANH.count("\n", 0, TANH.index("class ModelNew")) + 7
    assert "your own CUDA kernels, compiled with load_inline" in finding.message


def test_the_key_depends_on_every_build_input():
    ext = InlineExtension("e", ("int f();",), ("__global__ void k() {}",), ("f",), ("-O3",))
    assert ext.key == extension_key("e", "int f();", ["__global__ void k() {}"], "f", ["-O3"])
    assert ext.key != extension_key("e", "int f();", ["__global__ void k() {}"], "f", ["-O2"])
    assert ext.key != extension_key("e2", "int f();", ["__global__ void k() {}"], "f", ["-O3"])
