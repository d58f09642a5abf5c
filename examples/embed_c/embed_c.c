/* embed_c: a small training loop whose state Strata keeps under a host memory budget.
 *
 * The "model" is LAYERS layers, each one weight vector of WIDTH floats, trained to fit a fixed
 * target: layer l's loss is 1/2 * mean((w - t)^2), so its gradient is (w - t) / WIDTH. Strata
 * holds the weights, their gradients and AdamW's two moments per weight: 4 MiB in all, eight
 * times the 512 KiB host pool. The rest lives on NVMe (the directory given as the argument)
 * and comes back page by page when a tensor is acquired.
 *
 * Usage: embed_c NVME_DIR      (an empty directory; Strata writes its page store there)
 * Exits 0 when the loss went down and the host pool stayed within its budget.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <strata.h>

enum { LAYERS = 16, WIDTH = 16384, ITERATIONS = 20 }; /* WIDTH floats = 64 KiB = one page */

/* Every call returns a status; on failure strata_last_error() says what failed and why. */
static void check(strata_status status, const char* what) {
  if (status == STRATA_OK) return;
  fprintf(stderr, "embed_c: %s failed: %s: %s\n", what, strata_status_name(status),
          strata_last_error());
  exit(EXIT_FAILURE);
}

static float target(int layer, int i) { return sinf(0.001f * (float)i + (float)layer); }

/* One layer's forward and backward: reads the weight, overwrites the gradient, returns the
 * layer's loss. The pointers are into Strata's host pages, valid until the release. */
static double train_layer(strata_runtime* rt, strata_tensor weight, strata_tensor grad, int l) {
  void* w_ptr;
  void* g_ptr;
  /* READ waits for the pending AdamW update of this weight and loads it from NVMe if needed. */
  check(strata_acquire(rt, weight, STRATA_READ, STRATA_TIER_HOST, &w_ptr), "acquire weight");
  /* OVERWRITE: every byte is written below, so the old gradient is not loaded. */
  check(strata_acquire(rt, grad, STRATA_OVERWRITE, STRATA_TIER_HOST, &g_ptr), "acquire grad");
  const float* w = w_ptr;
  float* g = g_ptr;
  double loss = 0.0;
  for (int i = 0; i < WIDTH; ++i) {
    float diff = w[i] - target(l, i);
    loss += 0.5 * diff * diff / WIDTH;
    g[i] = diff / WIDTH;
  }
  check(strata_release(rt, grad), "release grad");
  check(strata_release(rt, weight), "release weight");
  return loss;
}

static strata_runtime* create_runtime(const char* nvme_dir) {
  strata_options* options;
  check(strata_options_create(&options), "strata_options_create");
  check(strata_options_set(options, "host_mem", "512K"), "option host_mem");
  check(strata_options_set(options, "page_size", "64K"), "option page_size");
  check(strata_options_set(options, "nvme_dir", nvme_dir), "option nvme_dir");
  strata_runtime* rt;
  check(strata_runtime_create(options, &rt), "strata_runtime_create");
  strata_options_destroy(options);
  return rt;
}

static void report(strata_runtime* rt) {
  strata_stats s;
  check(strata_get_stats(rt, &s), "strata_get_stats");
  printf("host pool: peak %llu of %llu bytes\n", (unsigned long long)s.host_peak_bytes,
         (unsigned long long)s.host_budget_bytes);
  printf("nvme: read %llu bytes, wrote %llu bytes\n", (unsigned long long)s.nvme_read_bytes,
         (unsigned long long)s.nvme_write_bytes);
  printf("steps %llu, acquires %llu (%llu host misses), stalled %.3f s\n",
         (unsigned long long)s.steps, (unsigned long long)s.acquires,
         (unsigned long long)s.host_misses, s.stall_seconds);
  if (s.host_peak_bytes > s.host_budget_bytes) {
    fprintf(stderr, "embed_c: the host pool went over its budget\n");
    exit(EXIT_FAILURE);
  }
  if (s.nvme_write_bytes == 0) {
    fprintf(stderr, "embed_c: the state never reached NVMe (is it larger than host_mem?)\n");
    exit(EXIT_FAILURE);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s NVME_DIR (an empty directory)\n", argv[0]);
    return EXIT_FAILURE;
  }
  printf("strata %s\n", strata_version());
  strata_runtime* rt = create_runtime(argv[1]);

  /* Register every tensor before the first acquire. A layer is a group: its tensors move
   * together. Pairing a weight with its gradient registers AdamW's two moments for it. */
  strata_tensor weights[LAYERS], grads[LAYERS];
  for (int l = 0; l < LAYERS; ++l) {
    char group[32], name[64];
    snprintf(group, sizeof group, "layer%d", l);
    snprintf(name, sizeof name, "layer%d.weight", l);
    check(strata_register(rt, name, WIDTH * sizeof(float), STRATA_F32, STRATA_ROLE_PARAMETER,
                          group, &weights[l]), "strata_register weight");
    snprintf(name, sizeof name, "layer%d.weight.grad", l);
    check(strata_register(rt, name, WIDTH * sizeof(float), STRATA_F32, STRATA_ROLE_GRADIENT,
                          group, &grads[l]), "strata_register grad");
    check(strata_register_pair(rt, weights[l], grads[l], 0.01f), "strata_register_pair");
  }

  strata_step_options step;
  strata_step_options_init(&step); /* torch.optim.AdamW's defaults... */
  step.lr = 0.05f;                 /* ...with a larger learning rate for a short run */
  step.discard_grads = 1;          /* gradients are rewritten every iteration: never save them */

  double first_loss = 0.0, loss = 0.0;
  for (int it = 0; it < ITERATIONS; ++it) {
    loss = 0.0;
    for (int l = 0; l < LAYERS; ++l) loss += train_layer(rt, weights[l], grads[l], l);
    /* Starts AdamW in the background; the next iteration's acquires wait for their layer. */
    check(strata_step(rt, &step), "strata_step");
    printf("iteration %2d  loss %.6f\n", it, loss);
    if (it == 0) first_loss = loss;
  }
  check(strata_step_wait(rt), "strata_step_wait");

  report(rt);
  check(strata_runtime_close(rt), "strata_runtime_close");
  if (!(loss < first_loss)) {
    fprintf(stderr, "embed_c: the loss did not go down (%f -> %f)\n", first_loss, loss);
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
