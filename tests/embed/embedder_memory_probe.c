/* embedder_memory_probe: the memory of a small C program that links libstrata.so, as an embedder
 * has it (embedder_memory_test.cc runs it and checks the numbers; docs/embedding.md, "Memory
 * beyond the budgets").
 *
 * It creates a runtime with host_mem 1M, gpu_mem 1M, 64K pages and an NVMe tier in NVME_DIR,
 * registers 8 layers of (weight, gradient) pairs (2 MiB of state, so pages go through NVMe),
 * trains 3 iterations (the second acquires the weights on the device tier) with a step each, and
 * closes. After each stage it prints one line read from /proc/self/status:
 *   stage <name> rss_kib <VmRSS> hwm_kib <VmHWM> threads <Threads>
 * then `budget_kib <host_mem + gpu_mem>` and `cublas_mapped <0|1>` (whether any libcublas is
 * mapped into the process at the end). Exits 1, naming the call, when a Strata call fails.
 *
 * With --life it runs itself as a child instead, passes the child's lines through and adds
 * `life_peak_kib <peak RSS>`: the child's whole life, its libraries' exit handlers included
 * (wait4's ru_maxrss). The child is spawned from here, not from the caller, because a child's
 * ru_maxrss starts at the RSS of the process that spawned it: a test process's would count.
 *
 * Usage: embedder_memory_probe [--life] NVME_DIR
 */
#define _DEFAULT_SOURCE /* wait4 */

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata.h>

extern char** environ; /* POSIX: declared by the program */

enum { LAYERS = 8, TENSOR_BYTES = 64 << 10, ITERATIONS = 3 };
static const long kBudgetKib = 1024 + 1024; /* host_mem 1M + gpu_mem 1M */

static void check(strata_status status, const char* what) {
  if (status == STRATA_OK) return;
  fprintf(stderr, "embedder_memory_probe: %s failed: %s: %s\n", what, strata_status_name(status),
          strata_last_error());
  exit(1);
}

/* The value of `key` in /proc/self/status (kB for the Vm* lines), -1 when absent. */
static long status_value(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long value = -1;
  const size_t n = strlen(key);
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') value = atol(line + n + 1);
  }
  fclose(f);
  return value;
}

static void stage(const char* name) {
  printf("stage %s rss_kib %ld hwm_kib %ld threads %ld\n", name, status_value("VmRSS"),
         status_value("VmHWM"), status_value("Threads"));
  fflush(stdout);
}

static int cublas_mapped(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return -1;
  char line[1024];
  int found = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, "libcublas") != NULL) found = 1;
  }
  fclose(f);
  return found;
}

static strata_runtime* create_runtime(const char* nvme_dir) {
  strata_options* options;
  check(strata_options_create(&options), "strata_options_create");
  check(strata_options_set(options, "host_mem", "1M"), "option host_mem");
  check(strata_options_set(options, "gpu_mem", "1M"), "option gpu_mem");
  check(strata_options_set(options, "page_size", "64K"), "option page_size");
  check(strata_options_set(options, "nvme_dir", nvme_dir), "option nvme_dir");
  strata_runtime* rt;
  check(strata_runtime_create(options, &rt), "strata_runtime_create");
  strata_options_destroy(options);
  return rt;
}

/* One iteration: each layer's weight read (on `tier`), its gradient written, then a step. */
static void iterate(strata_runtime* rt, const strata_tensor* w, const strata_tensor* g,
                    strata_tier tier, int first) {
  for (int l = 0; l < LAYERS; ++l) {
    void* w_ptr;
    void* g_ptr;
    check(strata_acquire(rt, w[l], STRATA_READ, tier, &w_ptr), "acquire weight");
    check(strata_acquire(rt, g[l], STRATA_OVERWRITE, STRATA_TIER_HOST, &g_ptr), "acquire grad");
    float* grad = g_ptr;
    for (int i = 0; i < TENSOR_BYTES / 4; ++i) grad[i] = 0.01f * (float)(i % 7 - 3);
    check(strata_release(rt, g[l]), "release grad");
    check(strata_release(rt, w[l]), "release weight");
    if (first && l == 0) stage("first_acquire");
  }
  strata_step_options so;
  strata_step_options_init(&so);
  check(strata_step(rt, &so), "strata_step");
  check(strata_step_wait(rt), "strata_step_wait");
}

/* Runs this program on `nvme_dir` as a child; returns its exit code after printing its peak. */
static int run_child(const char* nvme_dir) {
  char* argv[] = {"/proc/self/exe", (char*)nvme_dir, NULL};
  pid_t pid;
  fflush(stdout);
  const int spawned = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
  if (spawned != 0) {
    fprintf(stderr, "embedder_memory_probe: posix_spawn %s: %s\n", argv[0], strerror(spawned));
    return 1;
  }
  int status = 0;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) != pid) {
    perror("embedder_memory_probe: wait4");
    return 1;
  }
  printf("life_peak_kib %ld\n", usage.ru_maxrss); /* KiB on Linux */
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void train(const char* nvme_dir) {
  strata_runtime* rt = create_runtime(nvme_dir);
  stage("create");
  strata_tensor w[LAYERS], g[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    char name[32], group[32];
    snprintf(group, sizeof group, "layer%d", l);
    snprintf(name, sizeof name, "layer%d.w", l);
    check(strata_register(rt, name, TENSOR_BYTES, STRATA_F32, STRATA_ROLE_PARAMETER, group, &w[l]),
          "strata_register weight");
    snprintf(name, sizeof name, "layer%d.w.grad", l);
    check(strata_register(rt, name, TENSOR_BYTES, STRATA_F32, STRATA_ROLE_GRADIENT, group, &g[l]),
          "strata_register grad");
    check(strata_register_pair(rt, w[l], g[l], 0.1f), "strata_register_pair");
  }
  for (int it = 0; it < ITERATIONS; ++it) {
    iterate(rt, w, g, it == 1 ? STRATA_TIER_DEVICE : STRATA_TIER_HOST, it == 0);
  }
  stage("steps");
  check(strata_runtime_close(rt), "strata_runtime_close");
  stage("close");
}

int main(int argc, char** argv) {
  const int life = argc == 3 && strcmp(argv[1], "--life") == 0;
  if (argc != 2 && !life) {
    fprintf(stderr, "usage: embedder_memory_probe [--life] NVME_DIR\n");
    return 2;
  }
  if (life) return run_child(argv[2]);
  stage("start");
  train(argv[1]);
  printf("budget_kib %ld\ncublas_mapped %d\n", kBudgetKib, cublas_mapped());
  return 0;
}
