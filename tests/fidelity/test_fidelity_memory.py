"""Host and device memory kept apart: host code that touches device memory fails as it does on a GPU."""

from pathlib import Path

import pytest

from cudaperf_env.tasks import load_task

SUM = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "sum.yaml")
KERNEL = (
    "__global__ void k(int n, const float* x, float* out) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(out, x[i]);\n}\n"
)

CASES = {
    # The whole answer computed on the host from the device pointers; the kernel does no work.
    "host_computed_answer": (
        "__global__ void idle(float* out) {}\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  double s = 0.0;\n  for (int i = 0; i < n; ++i) s += x[i];\n  out[0] = (float)s;\n"
        "  idle<<<1, 1>>>(out);\n}\n"),
    # The kernel is honest, the host clears the output through the device pointer.
    "host_write_to_device_pointer": KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  out[0] = 0.0f;\n  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"),
    # A device buffer from cudaMalloc read by the host after the kernel.
    "host_read_of_cudamalloc": (
        "__global__ void partial(int n, const float* x, float* p) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(p, x[i]);\n}\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* p; cudaMalloc(&p, sizeof(float)); cudaMemset(p, 0, sizeof(float));\n"
        "  partial<<<(n + 255) / 256, 256>>>(n, x, p);\n  cudaDeviceSynchronize();\n"
        "  float v = p[0];\n  cudaMemcpy(out, &v, sizeof v, cudaMemcpyHostToDevice);\n  cudaFree(p);\n}\n"),
    # A host write to a __device__ variable changes the host's shadow copy only, on a GPU.
    "host_write_to_device_variable": (
        "__device__ float scale;\n"
        "__global__ void k(int n, const float* x, float* out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(out, scale * x[i]);\n}\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  scale = 1.0f;\n  cudaMemset(out, 0, sizeof(float));\n  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"),
}

HONEST = {
    # Device memory through the doors only: cudaMemset, a kernel, cudaMemcpy both ways.
    "memcpy_roundtrip": KERNEL + (
        "#include <vector>\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* tmp; cudaMalloc(&tmp, sizeof(float)); cudaMemset(tmp, 0, sizeof(float));\n"
        "  k<<<(n + 255) / 256, 256>>>(n, x, tmp);\n"
        "  float v = 0.0f; cudaMemcpy(&v, tmp, sizeof v, cudaMemcpyDeviceToHost);\n"
        "  if (v == v) cudaMemcpy(out, tmp, sizeof v, cudaMemcpyDeviceToDevice);\n  cudaFree(tmp);\n}\n"),
    "memcpy_to_symbol": (
        "__device__ float scale;\n"
        "__global__ void k(int n, const float* x, float* out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(out, scale * x[i]);\n}\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float one = 1.0f; cudaMemcpyToSymbol(scale, &one, sizeof one);\n"
        "  cudaMemset(out, 0, sizeof(float));\n  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"),
}

# Kernels reading host heap memory (malloc, new[], std::vector's allocator) fault on a GPU: an illegal address.
HOST_HEAP_LAUNCH = (
    "  cudaMemset(out, 0, sizeof(float));\n  k<<<(n + 255) / 256, 256>>>(n, w, x, out);\n  cudaDeviceSynchronize();\n"
)
# A warp's sum, then one atomic per warp: per-element float atomics at the 100k-element configuration
# strayed past the task's tolerance between timed calls on the H200 (a sum near zero, 2026-12-02).
HOST_HEAP_KERNEL = (
    "__global__ void k(int n, const float* w, const float* x, float* out) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = i < n ? w[0] * x[i] : 0.0f;\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n"
    "  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);\n}\n"
)
HOST_HEAP = {
    "kernel_reads_host_malloc": "#include <cstdlib>\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* w = (float*)malloc(sizeof(float)); w[0] = 1.0f;\n" + HOST_HEAP_LAUNCH + "  free(w);\n}\n"),
    "kernel_reads_host_new_array": HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* w = new float[4]; w[0] = 1.0f;\n" + HOST_HEAP_LAUNCH + "  delete[] w;\n}\n"),
    "kernel_reads_std_vector_data": "#include <vector>\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  std::vector<float> h(4, 1.0f);\n  const float* w = h.data();\n" + HOST_HEAP_LAUNCH + "}\n"),
    # A file-scope host array (the pre-pass gives it storage in the arena, host_arena.h host_variable).
    "kernel_reads_host_static_array": "static float weights[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  const float* w = weights;\n" + HOST_HEAP_LAUNCH + "}\n"),
    "kernel_reads_zeroed_global_array": "float weights[64];\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  weights[0] = 1.0f;\n  const float* w = weights;\n" + HOST_HEAP_LAUNCH + "}\n"),
    "kernel_reads_host_const_table": "static const float weights[2] = {1.0f, 0.5f};\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  const float* w = weights;\n" + HOST_HEAP_LAUNCH + "}\n"),
    "kernel_reads_host_calloc": "#include <cstdlib>\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* w = (float*)calloc(64, sizeof(float)); w[0] = 1.0f;\n" + HOST_HEAP_LAUNCH + "  free(w);\n}\n"),
}

# Kernels handed host stack or function-static memory: an illegal address when the kernel reads it on a GPU;
# on the CPU backend the launch itself refuses a pointer argument into the host's stack or static data.
HOST_STACK_AND_STATIC = {
    "kernel_reads_host_stack_array": HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float w[4] = {1.0f, 1.0f, 1.0f, 1.0f};\n" + HOST_HEAP_LAUNCH + "}\n"),
    "kernel_reads_function_static_array": HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  static float w[4];\n  w[0] = 1.0f;\n" + HOST_HEAP_LAUNCH + "}\n"),
    "kernel_reads_function_static_const_table": HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  static const float w[2] = {1.0f, 0.5f};\n" + HOST_HEAP_LAUNCH + "}\n"),
}

# The C library's allocator reached past the arena: refused on the CPU backend; on a GPU the kernel's read
# faults (__libc_malloc) or the name does not link (__real_malloc exists only under the CPU runtime's --wrap).
ALLOCATOR_BYPASS = {
    name: '#include <cstdlib>\nextern "C" void* NAME(size_t);\n'.replace("NAME", name) + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        f"  float* w = (float*){name}(sizeof(float)); w[0] = 1.0f;\n" + HOST_HEAP_LAUNCH + "}\n")
    for name in ("__real_malloc", "__libc_malloc")
}


# Host heap memory used by host code only, its contents copied to device memory: correct everywhere.
HOST_HEAP_HONEST = {
    "malloc_fill_memcpy_launch": "#include <cstdlib>\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float* h = (float*)malloc(sizeof(float)); h[0] = 1.0f;\n"
        "  float* w; cudaMalloc(&w, sizeof(float));\n  cudaMemcpy(w, h, sizeof(float), cudaMemcpyHostToDevice);\n"
        + HOST_HEAP_LAUNCH + "  h = (float*)realloc(h, 1 << 20); free(h);\n  cudaFree(w);\n}\n"),
    "vector_fill_memcpy_launch": "#include <vector>\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  std::vector<float> h(1000, 1.0f);\n  double* big = new double[1 << 18]();\n"
        "  for (int i = 0; i < 1000; ++i) h[i] += float(big[i]);\n"
        "  float* w; cudaMalloc(&w, h.size() * sizeof(float));\n"
        "  cudaMemcpy(w, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);\n"
        + HOST_HEAP_LAUNCH + "  delete[] big;\n  cudaFree(w);\n}\n"),
    # A file-scope host table used by host code, copied to device memory (zero-filled, initialised, indexed).
    "static_table_memcpy_launch": "static float table[4] = {1.0f, 0.5f};\nint seen[3];\n"
        "const double halves[2] = {0.0, 0.5};\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  seen[1] = 1;\n  float h = table[0] + table[2] * 7.0f + float(seen[0] + seen[1] - 1) + halves[1] - 0.5f;\n"
        "  float* w; cudaMalloc(&w, sizeof(float));\n  cudaMemcpy(w, &h, sizeof(float), cudaMemcpyHostToDevice);\n"
        + HOST_HEAP_LAUNCH + "  cudaFree(w);\n}\n"),
    # A __device__ array's device address (cudaGetSymbolAddress) passed as a kernel argument.
    "device_symbol_address_as_argument": "__device__ float table[4];\n" + HOST_HEAP_KERNEL + (
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  float one[4] = {1.0f, 1.0f, 1.0f, 1.0f};\n  cudaMemcpyToSymbol(table, one, sizeof one);\n"
        "  float* w = nullptr;\n  cudaGetSymbolAddress((void**)&w, table);\n" + HOST_HEAP_LAUNCH + "}\n"),
    # Device-side malloc is CUDA's own heap (legal in a kernel).
    "device_side_malloc": (
        "__global__ void k(int n, const float* x, float* out) {\n"
        "  float* t = (float*)malloc(sizeof(float));\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (t != nullptr) { *t = i < n ? x[i] : 0.0f; atomicAdd(out, *t); free(t); }\n}\n"
        'extern "C" void sum(int n, const float* x, float* out) {\n'
        "  cudaMemset(out, 0, sizeof(float));\n  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"),
}


@pytest.mark.parametrize("name", sorted(HOST_HEAP))
def test_kernel_reading_host_heap_memory_is_an_illegal_address(evaluator, name):
    e = evaluator.evaluate(SUM, HOST_HEAP[name], seed=1)
    assert not e.correct, (e.status, e.message)
    assert e.status == "runtime_error", (e.status, e.message)
    if evaluator.backend.name == "cpu":
        assert "a kernel read host memory from malloc/new" in e.message, e.message
        assert "illegal_address" in e.message or "illegal address" in e.message, e.message


@pytest.mark.parametrize("name", sorted(HOST_STACK_AND_STATIC))
def test_kernel_handed_host_stack_or_static_memory_is_an_illegal_address(evaluator, name):
    e = evaluator.evaluate(SUM, HOST_STACK_AND_STATIC[name], seed=1)
    assert not e.correct, (e.status, e.message)
    if evaluator.backend.name == "cpu":
        assert e.status == "runtime_error" and "illegal address" in e.message, e.message
        where = "the host thread's stack" if "stack" in name else "host static data"
        assert f"was given a pointer to {where}" in e.message and "argument #2" in e.message, e.message


@pytest.mark.parametrize("name", sorted(ALLOCATOR_BYPASS))
def test_host_memory_from_past_the_arena_is_refused(evaluator, name):
    e = evaluator.evaluate(SUM, ALLOCATOR_BYPASS[name], seed=1)
    assert not e.correct, (e.status, e.message)
    if evaluator.backend.name == "cpu":
        assert e.status == "rejected" and f"`{name}` reaches the C library's allocator" in e.message, e.message


@pytest.mark.parametrize("name", sorted(HOST_HEAP_HONEST))
def test_host_heap_memory_used_by_host_code_is_correct(evaluator, name):
    e = evaluator.evaluate(SUM, HOST_HEAP_HONEST[name], seed=1)
    assert e.correct, (e.status, e.message)


# Legal CUDA that a GPU credits, but the host did the work (its copy into the output follows the last launch):
# the CPU backend gives it no credit (a policy, so there is no GPU twin). Initialising an output from the host
# before the kernels that update it stays allowed (a starter does it).
HOST_DID_THE_WORK = (
    "#include <vector>\n"
    "__global__ void touch(float* out) {}\n"
    'extern "C" void sum(int n, const float* x, float* out) {\n'
    "  std::vector<float> h(n);\n  cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);\n"
    "  double s = 0.0;\n  for (int i = 0; i < n; ++i) s += h[i];\n  float f = (float)s;\n"
    "  touch<<<1, 1>>>(out);\n  cudaMemcpy(out, &f, sizeof f, cudaMemcpyHostToDevice);\n}\n"
)


def test_outputs_copied_from_the_host_get_no_credit_on_the_cpu_backend():
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.evaluate import Evaluator

    e = Evaluator(CpuBackend()).evaluate(SUM, HOST_DID_THE_WORK, seed=1)
    assert e.status == "runtime_error" and "outputs must be computed by kernels" in e.message, e.message


# The same work hidden behind a launch that changes nothing, directly or through device memory filled from the host.
HOST_WORK_BEHIND_A_LAUNCH = {
    "copy_then_idle_launch": HOST_DID_THE_WORK.replace(
        "  touch<<<1, 1>>>(out);\n  cudaMemcpy(out, &f, sizeof f, cudaMemcpyHostToDevice);\n",
        "  cudaMemcpy(out, &f, sizeof f, cudaMemcpyHostToDevice);\n  touch<<<1, 1>>>(out);\n"),
    "through_device_scratch": HOST_DID_THE_WORK.replace(
        "  touch<<<1, 1>>>(out);\n  cudaMemcpy(out, &f, sizeof f, cudaMemcpyHostToDevice);\n",
        "  float* d; cudaMalloc(&d, sizeof f);\n  cudaMemcpy(d, &f, sizeof f, cudaMemcpyHostToDevice);\n"
        "  cudaMemcpy(out, d, sizeof f, cudaMemcpyDeviceToDevice);\n  touch<<<1, 1>>>(out);\n  cudaFree(d);\n"),
}
# Honest: the host reads a device value, initialises the output, and a kernel updates it.
HOST_INIT_THEN_KERNEL = KERNEL + (
    'extern "C" void sum(int n, const float* x, float* out) {\n'
    "  float first = 0.0f;\n  cudaMemcpy(&first, x, sizeof first, cudaMemcpyDeviceToHost);\n"
    "  float zero = first - first;\n  cudaMemcpy(out, &zero, sizeof zero, cudaMemcpyHostToDevice);\n"
    "  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"
)


@pytest.mark.parametrize("name", sorted(HOST_WORK_BEHIND_A_LAUNCH))
def test_host_work_behind_a_launch_that_changes_nothing_gets_no_credit(name):
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.evaluate import Evaluator

    e = Evaluator(CpuBackend()).evaluate(SUM, HOST_WORK_BEHIND_A_LAUNCH[name], seed=1)
    assert e.status == "runtime_error" and "after reading device memory" in e.message, e.message


def test_an_output_initialised_from_the_host_and_updated_by_kernels_is_correct():
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.evaluate import Evaluator

    e = Evaluator(CpuBackend()).evaluate(SUM, HOST_INIT_THEN_KERNEL, seed=1)
    assert e.correct, (e.status, e.message)
