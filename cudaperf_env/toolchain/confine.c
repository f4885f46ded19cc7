/* Confinement launcher in C: the steps of confine_exec.py (read its docstring for what the
 * child sees), without an interpreter start, so confinement costs milliseconds per process.
 *
 *   confine [--mode root|user|limits] [--uid N --gid N] [--cwd DIR] [--ro PATH]... [--rw PATH]...
 *           [--dev PATH]... [--sys] [--no-seccomp] [--tmpfs-bytes N] [--rlimit NAME=N]... [--env NAME=VALUE]...
 *           -- PROGRAM ARGS...
 *
 * After the privilege drop a seccomp filter refuses (EPERM) the system calls no compiler, runtime
 * or CUDA driver needs and that reach past the sandbox or into rarely hardened kernel code
 * (ptrace and cross-process memory, namespaces, mounts, modules, bpf, perf events, io_uring,
 * userfaultfd, keyrings, clocks, ...); clone with namespace flags is refused, clone3 answers
 * ENOSYS so the C library falls back to clone, whose flags the filter can read.
 *
 * Set-up failures: "cudaperf-confine: ..." on stderr and exit status 125, before PROGRAM runs.
 * Built once per cache by toolchain/confine.py with the host C compiler (trusted source).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PATHS 256
#define ROOT "/tmp/.cudaperf-root"

static const char *ro[MAX_PATHS], *rw[MAX_PATHS], *dev[MAX_PATHS];
static int n_ro, n_rw, n_dev, show_sys, no_seccomp;
static void print_seccomp(void);
static const char *mode = "root", *cwd = "/";
static long uid = -1, gid = -1;
static long long tmpfs_bytes = 64LL << 20;
static struct { int resource; long long value; } limits[16];
static int n_limits;
static pid_t child;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "cudaperf-confine: %s %s: %s (errno %d)\n", what, detail ? detail : "", strerror(errno), errno);
  _exit(125);
}

static int limit_of(const char *name) {
  static const struct { const char *name; int resource; } names[] = {
      {"as", RLIMIT_AS}, {"data", RLIMIT_DATA}, {"cpu", RLIMIT_CPU}, {"fsize", RLIMIT_FSIZE},
      {"nproc", RLIMIT_NPROC}, {"nofile", RLIMIT_NOFILE}, {"core", RLIMIT_CORE}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (strcmp(name, names[i].name) == 0) return names[i].resource;
  return -1;
}

static int parse(int argc, char **argv) {
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(flag, "--sys") == 0) { show_sys = 1; continue; }
    if (strcmp(flag, "--no-seccomp") == 0) { no_seccomp = 1; continue; }
    if (strcmp(flag, "--print-seccomp") == 0) print_seccomp();
    if (value == NULL) { errno = EINVAL; die("missing value for", flag); }
    ++i;
    if (strcmp(flag, "--mode") == 0) mode = value;
    else if (strcmp(flag, "--uid") == 0) uid = atol(value);
    else if (strcmp(flag, "--gid") == 0) gid = atol(value);
    else if (strcmp(flag, "--cwd") == 0) cwd = value;
    else if (strcmp(flag, "--tmpfs-bytes") == 0) tmpfs_bytes = atoll(value);
    else if (strcmp(flag, "--ro") == 0 && n_ro < MAX_PATHS) ro[n_ro++] = value;
    else if (strcmp(flag, "--rw") == 0 && n_rw < MAX_PATHS) rw[n_rw++] = value;
    else if (strcmp(flag, "--dev") == 0 && n_dev < MAX_PATHS) dev[n_dev++] = value;
    else if (strcmp(flag, "--env") == 0) {
      char *copy = strdup(value), *eq = strchr(copy, '=');
      if (eq) { *eq = 0; setenv(copy, eq + 1, 1); }
      free(copy);
    } else if (strcmp(flag, "--rlimit") == 0 && n_limits < 16) {
      char name[16] = {0};
      const char *eq = strchr(value, '=');
      if (!eq || eq - value >= (long)sizeof name) { errno = EINVAL; die("bad --rlimit", value); }
      memcpy(name, value, eq - value);
      limits[n_limits].resource = limit_of(name);
      limits[n_limits].value = atoll(eq + 1);
      if (limits[n_limits].resource < 0) { errno = EINVAL; die("unknown rlimit", name); }
      ++n_limits;
    } else { errno = EINVAL; die("unknown option", flag); }
  }
  if (i + 1 >= argc) { errno = EINVAL; die("no program after", "--"); }
  return i + 1;
}

static void make_parents(char *path) {
  for (char *p = path + 1; *p; ++p)
    if (*p == '/') {
      *p = 0;
      if (mkdir(path, 0755) != 0 && errno != EEXIST) die("mkdir", path);
      *p = '/';
    }
}

/* Show `path` (open as O_PATH `fd`) at the same place under the new root. */
static void show(const char *path, int fd, int read_only) {
  char inside[PATH_MAX], source[64];
  struct stat st;
  if (fstat(fd, &st) != 0) die("stat", path);
  snprintf(inside, sizeof inside, "%s%s", ROOT, path);
  make_parents(inside);
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(inside, 0755) != 0 && errno != EEXIST) die("mkdir", inside);
  } else {
    int made = open(inside, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (made < 0 && errno != EEXIST) die("create", inside);
    if (made >= 0) close(made);
  }
  snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
  if (mount(source, inside, NULL, MS_BIND | MS_REC, NULL) != 0) die("bind", path);
  if (read_only) {
    struct statvfs sv;
    unsigned long locked = statvfs(inside, &sv) == 0 ? sv.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC) : 0;
    if (mount(NULL, inside, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | locked, NULL) != 0)
      die("read-only", path);
  }
}

static void build_root(void) {
  static const char *base_devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  const char *paths[3 * MAX_PATHS + 8];
  int read_only[3 * MAX_PATHS + 8], fds[3 * MAX_PATHS + 8], n = 0;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("make private", "/");
  for (int i = 0; i < n_ro; ++i) paths[n] = ro[i], read_only[n++] = 1;
  for (size_t i = 0; i < sizeof base_devices / sizeof base_devices[0]; ++i) paths[n] = base_devices[i], read_only[n++] = 0;
  for (int i = 0; i < n_dev; ++i) paths[n] = dev[i], read_only[n++] = 0;
  if (show_sys) paths[n] = "/sys", read_only[n++] = 1;
  for (int i = 0; i < n_rw; ++i) paths[n] = rw[i], read_only[n++] = 0;
  for (int i = 0; i < n; ++i) {  /* opened before any mount hides them */
    struct stat st;
    fds[i] = -1;
    if (lstat(paths[i], &st) != 0) continue;
    if (S_ISLNK(st.st_mode) && strchr(paths[i] + 1, '/') == NULL) { fds[i] = -2; continue; }  /* /bin -> usr/bin */
    fds[i] = open(paths[i], O_PATH | O_CLOEXEC);
  }
  char opts[64];
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) die("tmpfs", "/tmp");
  if (mkdir(ROOT, 0755) != 0) die("mkdir", ROOT);
  if (mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") != 0) die("tmpfs", ROOT);
  snprintf(opts, sizeof opts, "mode=1777,size=%lld", tmpfs_bytes);
  if (mkdir(ROOT "/tmp", 0755) != 0 || mkdir(ROOT "/dev", 0755) != 0 || mkdir(ROOT "/dev/shm", 0755) != 0)
    die("mkdir", ROOT "/tmp, /dev/shm");
  if (mount("tmpfs", ROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) die("tmpfs", "/tmp");
  if (mount("tmpfs", ROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) die("tmpfs", "/dev/shm");
  for (int i = 0; i < n; ++i) {
    if (fds[i] == -2) {
      char target[PATH_MAX], inside[PATH_MAX];
      ssize_t len = readlink(paths[i], target, sizeof target - 1);
      if (len < 0) continue;
      target[len] = 0;
      snprintf(inside, sizeof inside, "%s%s", ROOT, paths[i]);
      if (symlink(target, inside) != 0 && errno != EEXIST) die("symlink", paths[i]);
    } else if (fds[i] >= 0) {
      show(paths[i], fds[i], read_only[i]);
      close(fds[i]);
    }
  }
  if (mkdir(ROOT "/proc", 0755) != 0 && errno != EEXIST) die("mkdir", ROOT "/proc");
  if (mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mount", "/proc");
  if (chroot(ROOT) != 0 || chdir("/") != 0) die("chroot", ROOT);
}

static void write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) die("write", path);
  close(fd);
}

static void enter_user_namespace(void) {
  char map[64];
  uid_t me = getuid();
  gid_t my_group = getgid();
  if (unshare(CLONE_NEWUSER) != 0) die("unshare", "(user)");
  write_file("/proc/self/setgroups", "deny");
  snprintf(map, sizeof map, "%u %u 1", me, me);
  write_file("/proc/self/uid_map", map);
  snprintf(map, sizeof map, "%u %u 1", my_group, my_group);
  write_file("/proc/self/gid_map", map);
}

static void kill_child(int sig) { (void)sig; if (child > 0) kill(child, SIGKILL); }

static void mirror(int status) {
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

/* Outside the namespace: wait for its process 1 and exit as PROGRAM did. */
static void outside(int report) {
  int status = 125 << 8, word = 0;
  signal(SIGINT, kill_child);
  signal(SIGTERM, kill_child);
  signal(SIGHUP, kill_child);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  if (read(report, &word, sizeof word) == (ssize_t)sizeof word) status = word;
  mirror(status);
}

/* Process 1 of the namespace: PROGRAM runs as its child (a process 1 cannot be ended by the
 * signals it sends itself: abort() would not work); it reaps orphans and reports PROGRAM's status. */
static void init(int report) {
  pid_t program = fork();
  if (program < 0) die("fork", "(program)");
  if (program == 0) { close(report); return; }
  for (;;) {
    int status;
    pid_t done = wait(&status);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) _exit(125);
    if (done == program) {
      if (write(report, &status, sizeof status) != (ssize_t)sizeof status) _exit(125);
      _exit(0);  /* the kernel then kills whatever PROGRAM left in the namespace */
    }
  }
}


#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#endif

#ifdef AUDIT_ARCH_HERE
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
#define NS_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
                  CLONE_NEWCGROUP)

static struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),  /* another ABI's numbers: never ours */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),  /* the x32 ABI under the same arch */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),  /* flags (low word) */
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    CUDAPERF_SECCOMP_DENIED,  /* seccomp_policy.DENIED, compiled in by confine.py */
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* --print-seccomp: the filter's bytes on stdout (the test that it is seccomp_policy.program). */
static void print_seccomp(void) {
  if (fwrite(filter, sizeof filter, 1, stdout) != 1) _exit(125);
  fflush(stdout);
  _exit(0);
}

static void install_seccomp(void) {
  struct sock_fprog program = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0 && errno != EINVAL)
    die("seccomp", "");  /* EINVAL: a kernel without seccomp filters; the rest of the sandbox stands */
}
#else
static void install_seccomp(void) {}  /* no filter for this architecture yet */
static void print_seccomp(void) { _exit(0); }
#endif

static void drop(void) {
  for (int i = 0; i < n_limits; ++i) {
    struct rlimit rl = {(rlim_t)limits[i].value, (rlim_t)limits[i].value};
    if (setrlimit(limits[i].resource, &rl) != 0) die("setrlimit", "");
  }
  if (uid >= 0 && geteuid() == 0 && strcmp(mode, "user") != 0) {
    if (setgroups(0, NULL) != 0 || setgid((gid_t)(gid >= 0 ? gid : uid)) != 0 || setuid((uid_t)uid) != 0)
      die("drop privileges to", "");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("prctl", "(no_new_privs)");
  if (!no_seccomp) install_seccomp();
}

int main(int argc, char **argv) {
  int program = parse(argc, argv);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (strcmp(mode, "root") == 0 || strcmp(mode, "user") == 0) {
    int report[2];
    if (strcmp(mode, "user") == 0) enter_user_namespace();
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET) != 0)
      die("unshare", "(mount, pid, net, ipc, uts)");
    if (pipe2(report, O_CLOEXEC) != 0) die("pipe", "");
    child = fork();
    if (child < 0) die("fork", "");
    if (child > 0) { close(report[1]); outside(report[0]); }
    close(report[0]);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("prctl", "(pdeathsig)");
    build_root();
    init(report[1]);
  }
  drop();
  if (chdir(cwd) != 0) die("chdir", cwd);
  execv(argv[program], argv + program);
  fprintf(stderr, "cudaperf-confine: cannot run %s: %s\n", argv[program], strerror(errno));
  _exit(127);
}
