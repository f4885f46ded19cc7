// Launch limits as the target GPU enforces them: per-kernel registers and static shared memory
// (from ptxas, through the kernel resources file), the opt-in for more than 48 KiB of dynamic
// shared memory (cudaFuncSetAttribute), and the error each violation returns on a GPU.
#pragma once

namespace cudaperf {
namespace detail {

// One kernel's resources, keyed by its base name (no namespace, template arguments or parameters).
struct KernelLimits {
  char name[112];
  int registers;             // per thread, as ptxas reports them; -1: unknown
  long static_shared;        // bytes; -1: unknown
  long max_dynamic_shared;   // cudaFuncAttributeMaxDynamicSharedMemorySize; -1: not set
};

constexpr unsigned kMaxKernelLimits = 256;
inline KernelLimits g_kernel_limits[kMaxKernelLimits];
inline unsigned g_kernel_limit_count = 0;
inline pthread_mutex_t g_kernel_limits_mutex = PTHREAD_MUTEX_INITIALIZER;
// The target's limits (defaults: sm_90); the kernel resources file overrides them.
inline long g_shared_optin = 232448;     // sharedMemPerBlockOptin
inline long g_register_file = 65536;     // registers per block (and per SM)
// The schedule seed (0: natural order), from the kernel resources file's `schedule <seed>` line.
inline unsigned long long g_schedule_seed = 0;
// The race detector (racecheck.h) on, from the file's `racecheck 1` line: one worker thread then.
inline bool g_race_requested = false;

// The file the parent writes beside the worker (cwd) before a run: first line
// `arch <sm_XX> <shared_optin_bytes> <registers_per_block>`, an optional `schedule <seed>` (block
// and thread orders perturbed, launch.h), then `<regs> <static_smem> <name>` per kernel.
constexpr const char* kKernelResourcesFile = "cudaperf_kernels.txt";

#if !CUDAPERF_DEFINE_LINKED
CUDAPERF_COLD CUDAPERF_LINKED void base_name(const char* text, char* out, size_t cap);
CUDAPERF_COLD CUDAPERF_LINKED KernelLimits* kernel_limits(const char* name, bool create);
CUDAPERF_COLD CUDAPERF_LINKED void load_kernel_resources();
CUDAPERF_COLD CUDAPERF_LINKED void reload_kernel_resources_if_changed();
CUDAPERF_COLD CUDAPERF_LINKED cudaError_t check_launch_limits(const char* kernel, dim3 grid,
                                                              dim3 block, size_t smem);
#else
// "&ns::k<float, 256>" -> "k"; "(const void*)k" -> "k"; "void ns::k<int>(int*, int)" -> "k".
CUDAPERF_COLD CUDAPERF_LINKED void base_name(const char* text, char* out, size_t cap) {
  char flat[256];
  size_t n = 0;
  int angle = 0, paren = 0;
  const char* start = text;
  // A leading C-style cast "(...)" is skipped; a trailing parameter list is dropped.
  while (*start == ' ' || *start == '&' || *start == '*') ++start;
  if (*start == '(') {
    const char* close = std::strchr(start, ')');
    if (close != nullptr && close[1] != '\0') start = close + 1;
  }
  for (const char* p = start; *p != '\0' && n + 1 < sizeof flat; ++p) {
    char c = *p;
    if (c == '<') ++angle;
    else if (c == '>') --angle;
    else if (c == '(' && angle == 0) {
      if (n > 0) break;  // parameters follow a name; a cast's parenthesis leads
      ++paren;
    } else if (c == ')' && angle == 0) {
      if (paren > 0) --paren;
    } else if (angle == 0 && c != ' ' && c != '&' && c != '*') {
      flat[n++] = c;
    } else if (angle == 0 && c == ' ' && n > 0) {
      n = 0;  // "void k" -> "k": a return type before the name
    }
  }
  flat[n] = '\0';
  const char* last = flat;
  for (const char* p = flat; *p != '\0'; ++p) {
    if (p[0] == ':' && p[1] == ':') last = p + 2;
  }
  std::snprintf(out, cap, "%s", last);
}

CUDAPERF_COLD CUDAPERF_LINKED KernelLimits* kernel_limits(const char* name, bool create) {
  char key[sizeof(KernelLimits::name)];
  base_name(name, key, sizeof key);
  if (key[0] == '\0') return nullptr;
  for (unsigned i = 0; i < g_kernel_limit_count; ++i) {
    if (std::strcmp(g_kernel_limits[i].name, key) == 0) return &g_kernel_limits[i];
  }
  if (!create || g_kernel_limit_count >= kMaxKernelLimits) return nullptr;
  KernelLimits* k = &g_kernel_limits[g_kernel_limit_count++];
  std::snprintf(k->name, sizeof k->name, "%s", key);
  k->registers = -1;
  k->static_shared = -1;
  k->max_dynamic_shared = -1;
  return k;
}

CUDAPERF_COLD CUDAPERF_LINKED void load_kernel_resources() {
  g_schedule_seed = 0;
  g_race_requested = false;
  std::FILE* f = std::fopen(kKernelResourcesFile, "r");
  if (f == nullptr) return;  // no file: nothing is known beyond the fixed limits
  MutexLock lock(&g_kernel_limits_mutex);
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char arch[32], name[400];
    long a = 0, b = 0;
    unsigned long long seed = 0;
    int race = 0;
    if (std::sscanf(line, "racecheck %d", &race) == 1) {
      g_race_requested = race != 0;
      continue;
    }
    if (std::sscanf(line, "schedule %llu", &seed) == 1) {
      g_schedule_seed = seed;
      continue;
    }
    if (std::sscanf(line, "arch %31s %ld %ld", arch, &a, &b) == 3) {
      if (a > 0) g_shared_optin = a;
      if (b > 0) g_register_file = b;
      continue;
    }
    if (std::sscanf(line, "%ld %ld %399[^\n]", &a, &b, name) != 3) continue;
    KernelLimits* k = kernel_limits(name, true);
    if (k == nullptr) continue;
    // Instantiations of one template share a base name: keep the smallest (never a false failure).
    if (k->registers < 0 || a < k->registers) k->registers = static_cast<int>(a);
    if (k->static_shared < 0 || b < k->static_shared) k->static_shared = b;
  }
  std::fclose(f);
}

// The parent rewrites the file between calls (another schedule seed): read it again when it changed.
CUDAPERF_COLD CUDAPERF_LINKED void reload_kernel_resources_if_changed() {
  static long long seen = -1;
  struct stat st;
  long long stamp = ::stat(kKernelResourcesFile, &st) == 0
                        ? static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                              st.st_mtim.tv_nsec + st.st_size * 7919LL + static_cast<long long>(st.st_ino)
                        : -2;
  if (stamp == seen) return;
  seen = stamp;
  load_kernel_resources();
}

// cudaSuccess, or the error a GPU returns for this launch (and runs nothing).
CUDAPERF_COLD CUDAPERF_LINKED cudaError_t check_launch_limits(const char* kernel, dim3 grid,
                                                              dim3 block, size_t smem) {
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    return cudaErrorInvalidConfiguration;
  if (block.x > kMaxBlockDimXY || block.y > kMaxBlockDimXY || block.z > kMaxBlockDimZ)
    return cudaErrorInvalidConfiguration;
  unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (threads > kMaxThreadsPerBlock) return cudaErrorInvalidConfiguration;
  if (grid.x > kMaxGridDimX || grid.y > kMaxGridDimYZ || grid.z > kMaxGridDimYZ)
    return cudaErrorInvalidConfiguration;
  MutexLock lock(&g_kernel_limits_mutex);
  KernelLimits* k = kernel_limits(kernel, false);
  long static_shared = k != nullptr && k->static_shared > 0 ? k->static_shared : 0;
  // Without the opt-in, static + dynamic shared memory must fit the default 48 KiB.
  long allowed = k != nullptr && k->max_dynamic_shared >= 0
                     ? k->max_dynamic_shared
                     : static_cast<long>(kSharedPerBlock) - static_shared;
  if (static_cast<long long>(smem) > allowed ||
      static_cast<long long>(smem) + static_shared > g_shared_optin)
    return cudaErrorInvalidValue;
  if (k != nullptr && k->registers > 0) {
    // Registers are allocated per warp in units of 256 (CUDA occupancy calculator).
    long per_warp = (static_cast<long>(k->registers) * 32 + 255) / 256 * 256;
    long warps = static_cast<long>((threads + 31) / 32);
    if (per_warp * warps > g_register_file) return cudaErrorLaunchOutOfResources;
  }
  return cudaSuccess;
}
#endif

}  // namespace detail
}  // namespace cudaperf

