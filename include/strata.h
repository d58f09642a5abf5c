/* strata.h: Strata's memory runtime as a C API, for embedding under another framework.
 *
 * One header, C11 and C++ compatible. Link with -lstrata (pkg-config strata, or CMake
 * find_package(Strata) and the target Strata::strata). docs/embedding.md walks through it.
 *
 * What it is
 *   The embedder registers tensors (name, bytes, dtype, role, group). Strata lays them into
 *   fixed-size pages and keeps those pages in a pinned host pool and on NVMe under hard budgets,
 *   and on the device when asked. The embedder acquires a tensor when it needs it (a pointer
 *   that stays valid until release) and releases it after use. A host AdamW step runs over the
 *   registered (parameter, gradient) pairs, page by page, in the background.
 *
 * Errors
 *   Every call returns a strata_status. On failure, strata_last_error() gives a message naming
 *   what failed and what to change; it is per thread and valid until that thread's next call.
 *   No C++ exception crosses this boundary.
 *
 * Threads
 *   Every call on one runtime may be made from any thread, concurrently (the runtime locks
 *   internally; an acquire that must wait for NVMe or for the optimizer blocks only its caller).
 *   strata_runtime_close must not race with other calls on the same runtime. Pointers returned
 *   by strata_acquire may be used from any thread until the matching strata_release.
 *
 * Lifetime
 *   Tensors are registered before the first strata_acquire, strata_prefetch, strata_discard or
 *   strata_step ("the layout is sealed" then). Tensor handles live as long as their runtime.
 *
 * Handles
 *   A strata_runtime* and a strata_tensor are opaque, pointer-sized values, never pointers to
 *   memory the caller may read. Every call checks each handle it takes, and a bad one is
 *   STRATA_INVALID_ARGUMENT with a message naming the handle, never another runtime or tensor
 *   and never a crash:
 *   - a runtime handle after strata_runtime_close succeeded on it ("was closed"), or a value no
 *     strata_runtime_create gave;
 *   - a tensor handle of another runtime, or of a closed one: a tensor handle carries its
 *     runtime's identity, and a runtime's identity is never reused in the process;
 *   - a NULL handle, or a value no strata_register or strata_find gave.
 *   Undefined: a value the caller made up (or cast from another type) that happens to equal a
 *   handle of an open runtime or of one of its tensors. strata_runtime_close must still not race
 *   other calls on the same runtime; a call made after it returned is the error above. Handles
 *   are 64-bit values: the library is built for 64-bit platforms only, and a process may create
 *   up to 2^32 - 1 runtimes.
 */
#ifndef STRATA_H_
#define STRATA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STRATA_API __attribute__((visibility("default")))
#else
#define STRATA_API
#endif

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1

typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_INVALID_ARGUMENT = 1,  /* a bad option, handle, size or name */
  STRATA_NOT_FOUND = 2,         /* a checkpoint or tensor that does not exist */
  STRATA_ALREADY_EXISTS = 3,    /* a tensor name registered twice */
  STRATA_OUT_OF_RANGE = 4,
  STRATA_RESOURCE_EXHAUSTED = 5, /* a budget too small for what was asked */
  STRATA_FAILED_PRECONDITION = 6, /* the call is not valid now (e.g. acquired twice for write) */
  STRATA_IO_ERROR = 7,
  STRATA_CORRUPTION = 8,        /* a page or checkpoint failed its checksum */
  STRATA_NOT_SUPPORTED = 9,     /* e.g. device "cuda" in a build without CUDA */
  STRATA_TIMEOUT = 10,          /* a request made no progress (the message lists the holders) */
  STRATA_ABORTED = 11,
  STRATA_INTERNAL = 12,
  STRATA_STATUS_MAX_ENUM = 0x7FFFFFFF  /* Note [Enum range] */
} strata_status;

/* Note [Enum range]: each enum ends in a MAX_ENUM of 0x7FFFFFFF, never a valid value. It makes
 * every int from 0 up a value of the enum's type in C++, so that a bad value a C caller passes
 * is an error the call reports (INVALID_ARGUMENT), not undefined behaviour (Vulkan's practice). */

typedef enum strata_dtype {
  STRATA_F32 = 0,
  STRATA_F16 = 1,
  STRATA_BF16 = 2,
  STRATA_F64 = 3,
  STRATA_I32 = 4,
  STRATA_I64 = 5,
  STRATA_U8 = 6,
  STRATA_DTYPE_MAX_ENUM = 0x7FFFFFFF
} strata_dtype;

typedef enum strata_role {
  STRATA_ROLE_PARAMETER = 0,
  STRATA_ROLE_GRADIENT = 1,
  STRATA_ROLE_OPTIMIZER_STATE = 2,
  STRATA_ROLE_OTHER = 3,
  STRATA_ROLE_MAX_ENUM = 0x7FFFFFFF
} strata_role;

typedef enum strata_intent {
  STRATA_READ = 0,      /* the contents are read; many readers at once */
  STRATA_WRITE = 1,     /* read and modified; one writer, no readers */
  STRATA_OVERWRITE = 2, /* every byte will be written: nothing is loaded (the contents are
                           undefined until written) */
  STRATA_INTENT_MAX_ENUM = 0x7FFFFFFF
} strata_intent;

typedef enum strata_tier {
  STRATA_TIER_DEVICE = 0, /* the device's memory (the sim backend: host memory counted as the
                             device's, under gpu_mem) */
  STRATA_TIER_HOST = 1,   /* the pinned host pool: a pointer into the page itself, no copy */
  STRATA_TIER_MAX_ENUM = 0x7FFFFFFF
} strata_tier;

typedef struct strata_runtime strata_runtime;
typedef struct strata_options strata_options;
/* A registered tensor. Opaque: its value is checked by every call that takes it (Handles). */
typedef struct strata_tensor_handle* strata_tensor;

/* The message of this thread's last failed call ("" when none). */
STRATA_API const char* strata_last_error(void);
/* "STRATA_OK", "STRATA_INVALID_ARGUMENT", ... */
STRATA_API const char* strata_status_name(strata_status status);
/* "0.1.0" */
STRATA_API const char* strata_version(void);

/* ---- options ------------------------------------------------------------------------------
 * Options are key/value strings, as on strata's command line:
 *   "device"          "sim" (default) or "cuda" (CUDA builds with a GPU)
 *   "gpu_mem"         device budget, a size: "4096", "512K", "64M", "1.5G" (default 256M)
 *   "host_mem"        pinned host pool budget, a size (required)
 *   "nvme_dir"        a directory for the NVMe tier; set it several times for several
 *                     directories (default: none, the host pool is the last tier)
 *   "nvme_mem"        NVMe tier capacity, a size, taken on disk at first use (default:
 *                     twice the registered tensors' pages, four times with a
 *                     checkpoint_dir; at least 64M)
 *   "page_size"       page size, a multiple of 4K (default 16M; not necessarily a power of
 *                     two: "2.25M" is one); a host pointer covers one page, so a tensor
 *                     acquired on the host tier must fit in one
 *   "threads"         worker threads for the optimizer and copies, "0" = every core (default)
 *   "checkpoint_dir"  where strata_checkpoint records checkpoints (their pages live in the
 *                     NVMe tier; without nvme_dir the store is made in <checkpoint_dir>/pages)
 *   "resume"          the name of a checkpoint in checkpoint_dir to reopen the runtime from
 *   "keep_checkpoints" K > 0: after strata_checkpoint records a new checkpoint, the oldest beyond
 *                     the newest K are dropped (as strata_checkpoint_drop does); "0" keeps every
 *                     one (default). Needs checkpoint_dir
 *   "stall_timeout_ms" how long a request may make no progress before failing (default 30000)
 *   "log_level"       "debug", "info", "warn" (default), "error" or "off": Strata's logging to
 *                     stderr, process-wide (its loggers are shared by every runtime)
 * The NVMe store is opened when the layout is sealed (its default capacity follows the
 * registered tensors): a directory that cannot be created fails strata_runtime_create, and a
 * disk without room for the store fails the first acquire. Without "resume", a directory that
 * holds a store already fails strata_runtime_create: FAILED_PRECONDITION "... is in use by pid
 * N" while a runtime (of any process) has it open, else "holds the page store of an earlier
 * runtime". A failed first acquire (a store in use, a full disk) is tried again by the next.
 */
STRATA_API strata_status strata_options_create(strata_options** out);
STRATA_API strata_status strata_options_set(strata_options* options, const char* key,
                                            const char* value);
STRATA_API void strata_options_destroy(strata_options* options);

/* ---- runtime ------------------------------------------------------------------------------ */
/* Creates a runtime. The options may be destroyed afterwards. */
STRATA_API strata_status strata_runtime_create(const strata_options* options,
                                               strata_runtime** out);
/* Waits for a running step, releases everything and closes the runtime. Every acquired tensor
 * must have been released (otherwise FAILED_PRECONDITION and nothing is closed). The error of a
 * step that failed is strata_step_wait's to report (close logs it). NULL is a no-op; a handle
 * already closed is INVALID_ARGUMENT (Handles), as is any call on it afterwards. */
STRATA_API strata_status strata_runtime_close(strata_runtime* runtime);

/* ---- tensors ------------------------------------------------------------------------------
 * `group` (NULL: the tensor is a group of its own) is the unit that moves together, e.g. a
 * layer: tensors of one group and one role share pages. A tensor that fits in a page never
 * straddles one (its host pointer is into the page itself); a larger tensor spans consecutive
 * pages and is acquired whole only on the device tier (a contiguous copy).
 * Sizes are checked here, before anything is allocated for them:
 *   - `bytes` must be a whole number (> 0) of `dtype`'s elements (INVALID_ARGUMENT);
 *   - the registered tensors may take at most 4194304 (2^22) pages: beyond, INVALID_ARGUMENT
 *     (raise page_size);
 *   - they must fit what the tiers could ever hold: host_mem's pages, plus nvme_mem's (or, with
 *     nvme_mem unset, the size of the filesystems of the NVMe tier's directories): beyond,
 *     RESOURCE_EXHAUSTED naming the budget to raise.
 * The messages give the numbers. */
STRATA_API strata_status strata_register(strata_runtime* runtime, const char* name,
                                         uint64_t bytes, strata_dtype dtype, strata_role role,
                                         const char* group, strata_tensor* out);
/* A registered tensor by name (NOT_FOUND otherwise). */
STRATA_API strata_status strata_find(strata_runtime* runtime, const char* name,
                                     strata_tensor* out);

/* Makes the tensor's contents available on `tier` with `intent` and returns their address in
 * *out (valid until strata_release). A tensor nobody wrote reads as zeros. Waits for the
 * pending optimizer update of a parameter. FAILED_PRECONDITION for a second writer, a writer
 * while readers hold it, or a tensor held on the other tier. On the device tier every page of
 * the tensor is pinned in the host pool while its copy is made: a tensor of more pages than
 * host_mem holds, or larger than gpu_mem, is RESOURCE_EXHAUSTED at once, with the numbers. */
STRATA_API strata_status strata_acquire(strata_runtime* runtime, strata_tensor tensor,
                                        strata_intent intent, strata_tier tier, void** out);
/* Ends one acquire of `tensor` (the writer's, else one reader's). A device copy written to is
 * copied back to its pages. */
STRATA_API strata_status strata_release(strata_runtime* runtime, strata_tensor tensor);
/* A hint: the tensor will be acquired soon. Never blocks, never fails on a full pool. */
STRATA_API strata_status strata_prefetch(strata_runtime* runtime, strata_tensor tensor);
/* The tensor's contents are dead: they are dropped without being written back, and the tensor
 * reads as zeros afterwards. FAILED_PRECONDITION while it is acquired. */
STRATA_API strata_status strata_discard(strata_runtime* runtime, strata_tensor tensor);

/* ---- optimizer ----------------------------------------------------------------------------
 * AdamW with torch.optim.AdamW's semantics over registered (parameter, gradient) pairs, both
 * STRATA_F32 of the same size. Registering a pair registers its two moments (role
 * OPTIMIZER_STATE, named "<param>.exp_avg" and "<param>.exp_avg_sq", in the parameter's
 * group). `weight_decay` is this pair's (torch's parameter groups: 0 for biases and norms). */
STRATA_API strata_status strata_register_pair(strata_runtime* runtime, strata_tensor param,
                                              strata_tensor grad, float weight_decay);

typedef struct strata_step_options {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float max_grad_norm;  /* > 0: clip the global gradient norm first, as
                           torch.nn.utils.clip_grad_norm_ does; 0: no clipping */
  int discard_grads;    /* nonzero: each gradient is discarded once its update read it (zero
                           for the next accumulation, never written back) */
} strata_step_options;
/* lr 1e-3, betas (0.9, 0.999), eps 1e-8, no clipping, gradients kept: torch's defaults. */
STRATA_API void strata_step_options_init(strata_step_options* options);

/* Starts one optimizer step over every pair and returns without waiting: the updates run on
 * the runtime's threads, page by page, in the order the parameters were acquired last
 * iteration. An acquire of a parameter (or of its gradient) waits for that pair's update. Every
 * pair's tensors must be released. Errors of the background step are returned by the next
 * strata_step_wait (and by the acquire that waited on the failed update). */
STRATA_API strata_status strata_step(strata_runtime* runtime, const strata_step_options* options);
/* Waits until the last strata_step has finished; returns its error, if any. */
STRATA_API strata_status strata_step_wait(strata_runtime* runtime);
/* The number of optimizer steps taken (restored from a checkpoint). */
STRATA_API strata_status strata_step_count(strata_runtime* runtime, int64_t* out);
/* The global gradient norm the last step computed (before clipping). It is computed only when
 * the step clips (max_grad_norm > 0); 0 otherwise and before any step. Each gradient's part of
 * it is measured when its writer releases it, so the step rarely reads a gradient twice. */
STRATA_API strata_status strata_last_grad_norm(strata_runtime* runtime, double* out);

/* ---- checkpoints --------------------------------------------------------------------------
 * Durably saves every registered tensor and the optimizer's step count under `name` (waits for
 * a running step first). Reopen with the option "resume" = name and the same registrations (in
 * the same order). Needs "checkpoint_dir". Every tensor must be released. A checkpoint keeps the
 * versions of its pages in the NVMe tier until it is dropped: with "keep_checkpoints" = K, the
 * oldest beyond the newest K are dropped after this one is recorded (so the tier needs room for
 * K + 1 while it is saved). A tier that fills is RESOURCE_EXHAUSTED ("NVMe store is full"). */
STRATA_API strata_status strata_checkpoint(strata_runtime* runtime, const char* name);
/* Drops the checkpoint `name`: checkpoint_dir's record stops listing it, durably, and then the
 * NVMe tier frees the page versions only it kept (a kill in between leaves versions that the
 * next runtime resuming from that store frees). The runtime's tensors are unchanged, and it
 * may be the checkpoint this runtime resumed from. NOT_FOUND (naming the checkpoints there
 * are) for a name not recorded; FAILED_PRECONDITION without "checkpoint_dir". */
STRATA_API strata_status strata_checkpoint_drop(strata_runtime* runtime, const char* name);

/* ---- stats -------------------------------------------------------------------------------- */
typedef struct strata_stats {
  uint64_t device_bytes, device_peak_bytes, device_budget_bytes;
  uint64_t host_bytes, host_peak_bytes, host_budget_bytes;
  uint64_t nvme_bytes, nvme_peak_bytes, nvme_budget_bytes;
  uint64_t host_to_device_bytes, device_to_host_bytes; /* copies between device and host */
  uint64_t nvme_read_bytes, nvme_write_bytes;          /* traffic between host and NVMe */
  double stall_seconds;      /* time acquires spent waiting (loads, the optimizer) */
  uint64_t acquires;         /* strata_acquire calls that succeeded */
  uint64_t host_misses;      /* page pins that found the page not in the host pool, the
                                embedder's acquires and the optimizer's */
  uint64_t predicted_acquires;   /* acquires the learned access order foresaw (prefetched) */
  uint64_t unpredicted_acquires; /* acquires it did not (first iteration, changed order) */
  uint64_t prefetches;       /* pages prefetched from the learned order or by strata_prefetch */
  uint64_t steps;            /* optimizer steps finished */
  uint64_t tensors, pages, page_bytes;
  uint64_t norm_page_reads;  /* gradient pages a clipping step read for the norm: only those of
                                gradients not measured when their writer released them (after
                                a resume, say) */
} strata_stats;
STRATA_API strata_status strata_get_stats(strata_runtime* runtime, strata_stats* out);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* STRATA_H_ */
