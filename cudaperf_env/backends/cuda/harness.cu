// Trusted GPU harness: device buffers with canaries, L2 flush, timed calls.
// Built once per architecture and loaded by the GPU worker beside the submission;
// cudart is linked statically, so a submission cannot interpose these calls.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace {


__global__ void fill_canary(unsigned char* p, size_t begin, size_t end) {
  for (size_t i = begin + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < end; i += (size_t)gridDim.x * blockDim.x)
    p[i] = i % 4 == 2 ? 0xbf : 0xff;
}

__global__ void check_canary(const unsigned char* p, size_t begin, size_t end, int* bad) {
  for (size_t i = begin + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < end; i += (size_t)gridDim.x * blockDim.x)
    if (p[i] != (i % 4 == 2 ? 0xbf : 0xff)) atomicExch(bad, 1);
}

int report(cudaError_t e, char* err, int len) {
  if (e != cudaSuccess && err) snprintf(err, len, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
  return (int)e;
}

void* g_flush = nullptr;
size_t g_flush_bytes = 0;
int* g_flag = nullptr;

}  // namespace

typedef int (*call_fn)(void** argv, char* err, int err_len);

extern "C" {

// Device facts for the result record; creates the context.
int cph_init(int device, char* name, int name_len, int* cc, int* sms, long long* l2_bytes, int* driver,
             char* err, int err_len) {
  cudaError_t e = cudaSetDevice(device);
  cudaDeviceProp p;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) return report(e, err, err_len);
  snprintf(name, name_len, "%s", p.name);
  *cc = p.major * 10 + p.minor;
  *sms = p.multiProcessorCount;
  *l2_bytes = p.l2CacheSize;
  cudaDriverGetVersion(driver);
  e = cudaMalloc(&g_flag, sizeof(int));
  return report(e, err, err_len);
}

// bytes + canary_bytes of device memory; the canary tail filled with the pattern.
int cph_alloc(size_t bytes, size_t canary_bytes, void** out, char* err, int err_len) {
  cudaError_t e = cudaMalloc(out, bytes + canary_bytes);
  if (e == cudaSuccess && canary_bytes) {
    fill_canary<<<64, 256>>>((unsigned char*)*out, bytes, bytes + canary_bytes);
    e = cudaDeviceSynchronize();
  }
  return report(e, err, err_len);
}

int cph_free(void* p) { return (int)cudaFree(p); }

int cph_copy(void* dst, const void* src, size_t bytes, int kind, char* err, int err_len) {
  return report(cudaMemcpy(dst, src, bytes, (cudaMemcpyKind)kind), err, err_len);
}

int cph_memset(void* dst, int value, size_t bytes, char* err, int err_len) {
  cudaError_t e = cudaMemset(dst, value, bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return report(e, err, err_len);
}

// 1 in *intact when the canary after bytes is unchanged.
int cph_canary_intact(const void* p, size_t bytes, size_t canary_bytes, int* intact, char* err, int err_len) {
  cudaError_t e = cudaMemset(g_flag, 0, sizeof(int));
  if (e == cudaSuccess) check_canary<<<64, 256>>>((const unsigned char*)p, bytes, bytes + canary_bytes, g_flag);
  int bad = 0;
  if (e == cudaSuccess) e = cudaMemcpy(&bad, g_flag, sizeof(int), cudaMemcpyDeviceToHost);
  *intact = !bad;
  return report(e, err, err_len);
}

// Allocate the L2 flush buffer (a few times the L2 size).
int cph_flush_setup(size_t bytes, char* err, int err_len) {
  g_flush_bytes = bytes;
  return report(cudaMalloc(&g_flush, bytes), err, err_len);
}

// One timed call: flush L2, start event, call (the shim synchronizes the whole device
// and checks errors), end event. Host wall time of the same span in *wall_ms.
int cph_timed_call(call_fn fn, void** argv, int flush, float* ms, double* wall_ms, char* err, int err_len) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaError_t e = cudaSuccess;
  if (flush && g_flush) e = cudaMemsetAsync(g_flush, flush & 0xff, g_flush_bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return report(e, err, err_len);
  auto t0 = std::chrono::steady_clock::now();
  cudaEventRecord(start);
  int code = fn(argv, err, err_len);
  cudaEventRecord(stop);
  e = cudaEventSynchronize(stop);
  *wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (code != 0) return code;
  if (e == cudaSuccess) e = cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return report(e, err, err_len);
}

// Device-to-device copy bandwidth in GB/s counting bytes read and written (the ceiling
// against which achieved bandwidth is judged).
int cph_copy_bandwidth(size_t bytes, int reps, double* gbps, char* err, int err_len) {
  void *a = nullptr, *b = nullptr;
  cudaError_t e = cudaMalloc(&a, bytes);
  if (e == cudaSuccess) e = cudaMalloc(&b, bytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float best = 1e30f;
  for (int r = 0; e == cudaSuccess && r < reps + 1; ++r) {
    cudaEventRecord(start);
    e = cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (r > 0 && t < best) best = t;  // first copy is a warm-up
  }
  *gbps = 2.0 * bytes / (best * 1e-3) / 1e9;
  cudaFree(a);
  cudaFree(b);
  return report(e, err, err_len);
}

}  // extern "C"
