// Engine: the driver of a training step over paged model state. It walks the step program
// (scheduler/step_program.h) top to bottom and only enqueues: for each op it finds or fills the
// device slots the op needs (slot_cache.h, transfers.h), launches the op's kernels on the compute
// stream (block_ops.h, model_ops.h), sends finished gradients down, and hands each block over to
// the optimizer queue (optimizer_queue.h) once its gradient is final. Per block it keeps one
// BlockState (block_state.h).
//
// Queues (each its own thread, joined by Events): compute (the Device's compute stream: the
// block ops), h2d and d2h (Device streams: pieces of pages into and out of block slots), the
// driver (the thread calling run_step: walks the program, acquires host pages from the
// MemoryManager — NVMe reads and write-backs happen there — and enqueues everything), and the
// optimizer (a SerialJobThread: AdamW per page on the host over TBB; NVMe-resident moments stream
// through the host pool).
//
// Note [Driver and prefetch]
// The driver never waits for compute inside a step: it enqueues op after op, so the loads of
// later ops are issued as soon as a slot can be given to them. Slots are chosen Belady-style over
// the program's known future (the slot whose content is next used farthest away, empty or stale
// slots first); the H2D stream waits only on the Event of the victim's last use. Host pages are
// pinned only while their pieces are in flight (released by a callback on the copying stream).
// Progress is guaranteed because every Event a stream waits on belongs to work already enqueued.
//
// Note [Exact updates]
// With clipping (--grad-clip > 0) every update waits for the global norm (known after the last
// backward op), then the blocks are updated in forward order while the next step's forward
// starts: the forward of block b waits only on block b's update (per-block futures, the version
// counter param_version_ marks device slots stale). Speculative update + rollback is a later
// improvement. Without clipping a block's update starts as soon as its gradient is final, during
// backward. Either way the arithmetic is the in-memory trainer's (Note [Canonical arithmetic] in
// trainer.h), so results are bit-identical.
//
// Note [Gradient order]
// Backward finishes the embedding's gradient (block 0) last, yet the next step needs block 0's
// update first: its first op is the embedding's forward, and the h2d stream loads in program
// order. Queued behind block 1's gradient on the one d2h stream, block 0's small gradient would
// wait for all of block 1's, then block 1's update and load would wait for it: the step boundary
// would hold one whole block's d2h plus one block's h2d. So block 0's gradient has its own d2h
// stream (sharing the link, as CUDA streams share PCIe), and updates, gradient copies and loads
// are tracked per page, so block 1's pages go d2h -> AdamW -> h2d one page behind each other.
//
// Note [Delayed update] (--delayed-update, opt-in, one step stale as ZeRO-Offload's DPU)
// AdamW updates a master copy (Role::kMaster pages) instead of the parameters. The update of
// step s-1 is *published* (master copied onto the parameter pages) during step s, right after
// the op that last reads a block's parameters in step s, so step s computes with the
// parameters of step s-2's update and never waits for step s-1's. Deterministic (the same bits
// for any budget or placement) but not the exact trajectory; the master is what --export writes.
//
// Note [Eager refresh]
// A device slot that holds a block's parameters is stale once the block's update is submitted.
// Loading the new version lazily, at the block's next use, puts every parameter upload of a
// placement that keeps parameters on the device into the next forward, behind a driver that
// waits on the host for each update. Instead, when the update is submitted the slot is marked
// for refresh and the optimizer thread itself enqueues each page's upload on the `refresh`
// stream (an h2d stream sharing the link) right after it has updated that page: d2h -> AdamW ->
// h2d run one page behind each other, and the driver never waits for an update to load. The
// slot's ready Event is handed to the driver through a future that it resolves only when an op
// uses the slot (or a load overwrites it). It applies where the refreshed slot is next used
// before any other block needs it: with --params-on device (every block keeps its slot; without
// clipping the refreshes run during backward and the next forward loads nothing) and, for any
// placement, with clipping (updates in forward order after backward, refreshing the slots that
// backward left with blocks 1, 2, ... — the next forward's first ops). A refreshed slot's next
// use lies in the next step and counts for Belady (choose_victim), unlike a stale one's.
//
// Threads: Create, run_step, Drain and enqueue_after_updates from one thread (the driver). Borrowed
// objects (layout, pages, memory manager, device, timeline) must outlive the Engine.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device/device.h"
#include "core/nn/model.h"
#include "core/util/status.h"
#include "memory/memory_manager.h"
#include "parallel/comm.h"
#include "scheduler/block_ops.h"
#include "scheduler/block_state.h"
#include "scheduler/boundary_store.h"
#include "scheduler/device_buffers.h"
#include "scheduler/host_pages.h"
#include "scheduler/memory_plan.h"
#include "scheduler/optimizer_queue.h"
#include "scheduler/pipe_stage.h"
#include "scheduler/shard_plan.h"
#include "scheduler/slot_cache.h"
#include "scheduler/split_plan.h"
#include "scheduler/state_pages.h"
#include "scheduler/step_program.h"
#include "scheduler/trace.h"
#include "scheduler/transfers.h"

namespace strata::scheduler {

struct EngineOptions {
  const Model* model = nullptr;         // what the ops compute (model_ops.h)
  const ModelLayout* layout = nullptr;  // this rank's blocks (its tensor-parallel slice)
  const StatePages* pages = nullptr;
  memory::MemoryManager* memory = nullptr;
  Device* device = nullptr;
  Timeline* timeline = nullptr;
  MemoryPlan plan;
  int batch = 1;       // rows per step
  int micro_rows = 1;  // rows per micro-batch (divides batch)
  int seq = 1;
  int threads = 1;  // compute and optimizer TBB arenas
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  float grad_clip = 1.0f;  // <= 0: no clipping, updates start during backward
  // --delayed-update (Note [Delayed update]); needs the pages to hold Role::kMaster.
  bool delayed_update = false;
  // --movement-only: every op keeps its slots, events and moves, but its kernels do not run
  // (losses and gradient sums read 0). Measures movement alone in the same program.
  bool skip_kernels = false;
  kernels::Dtype dtype = kernels::Dtype::kFp32;  // --dtype: the kernel table the ops run
  // Learn the host tier's access plan from the second step and set it on the memory manager
  // (Note [Host access plan] in host_pages.h); false: the pool stays LRU steered by demote.
  bool host_access_plan = false;
  // Data parallelism (Note [Data-parallel gradients] in data_parallel.h): the job's ranks
  // (nullptr or one rank: none); `batch` is then this rank's rows and `global_batch` the step's.
  parallel::Comm* comm = nullptr;
  int global_batch = 0;
  // Sharded blocks (Note [Shards] in shard_plan.h): `pages` hold only this rank's floats of them;
  // a slot is gathered after each load and a final gradient reduce-scattered. nullptr: none.
  const ShardPlan* shards = nullptr;
  // Split blocks (Note [Split operators] in split_plan.h) and the Comm their slices are gathered
  // on; nullptr: none.
  const SplitPlan* split = nullptr;
  parallel::Comm* slice_comm = nullptr;
  // Tensor parallelism (Note [Tensor-parallel slices] in core/nn/tp_layout.h): `layout` is this
  // rank's slice and its blocks all-reduce over this rank's tp group. nullptr: none.
  parallel::Comm* tp_comm = nullptr;
  // Pipeline parallelism: this rank's stage (nullptr or one stage: none); the Engine runs its
  // stage program (Note [Stage programs] in step_program.h).
  const PipeStage* pipe = nullptr;
};

struct EngineStepResult {
  float loss = 0;
  double grad_norm = 0;
  bool clipped = false;
  double compute_comm_s = 0;  // BlockOps::take_compute_comm_s
  // The device's and the memory manager's counters when the step's compute had finished, before
  // its updates were submitted. A step's movement is the difference of successive snapshots:
  // the uploads after step s's updates count in step s+1, whose compute waits for them, so
  // nothing depends on when a caller reads the counters (Note [Eager refresh]).
  DeviceStats device_at_end;
  memory::MemoryStats memory_at_end;
};

class Engine {
 public:
  // Allocates the block slots (plan.slot_sizes) and the ops' buffers from the device, creates
  // the streams and pins the pages whose home is the host. ResourceExhausted when the device
  // refuses.
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const StepProgram& program() const { return program_; }

  // One optimizer step (0-based `step`) on `tokens`: batch*seq inputs then batch*seq targets.
  // Returns when the step's compute has finished; its updates may still run (see
  // Note [Exact updates]). `on_grads`, if set, runs after backward with every gradient on its
  // host pages (used by --export-grads; updates only read them meanwhile).
  Status run_step(long step, float lr, const int32_t* tokens, EngineStepResult* result,
                 const std::function<Status()>& on_grads = nullptr);
  // Waits for every queued move and update; returns the first error.
  Status drain();
  // Runs `job` on the optimizer queue after every update submitted so far and before any later
  // one: it sees the parameters and moments of the last step, while the next step's forward and
  // backward run (checkpoints use it so as not to stall the driver). If one of those updates
  // failed, `job` is not called (it would see a half-updated step) and the result is that error.
  std::shared_future<Status> enqueue_after_updates(std::function<Status()> job);

 private:
  explicit Engine(const EngineOptions& options);
  Status setup();
  Status pin_host_homes();
  FrameLender host_frame_lender() const;

  // The driver, in the order a step calls them (engine.cc).
  Status copy_tokens_in(const int32_t* tokens);
  Status schedule(size_t pos, const Op& op, long step);
  std::vector<int> find_hits(const Op& op, Status* status);
  Status fill_misses(size_t pos, const Op& op, long step, std::vector<int>& chosen);
  Result<std::shared_ptr<Event>> launch(const Op& op, const std::vector<int>& chosen, long step);
  Status copy_grad_down(int block, std::shared_ptr<Event> after, long step, bool final);
  // A collective of `block` over `bytes` of its slot on the comm stream after `after` (a
  // timeline slice): its first error is kept for the step's end (comm_status_). Returns the
  // Event of its completion.
  Result<std::shared_ptr<Event>> on_comm(int block, const char* what, uint64_t bytes,
                                         std::function<Status()> collective,
                                         const std::shared_ptr<Event>& after, long step);
  Status sync_comm();
  Status finish_compute(long step, EngineStepResult* result);

  // Handing blocks to the optimizer (engine_updates.cc).
  void submit_update(UpdateJob job);
  void submit_publish(int block, long step);
  void read_ahead_first_update();
  void learn_host_plan(long step);

  EngineOptions o_;
  const StatePages& sp_;
  Device& device_;
  Timeline& timeline_;
  StepProgram program_;
  std::vector<BlockState> blocks_;
  size_t last_block_bwd_ = SIZE_MAX;  // Note [Update read-ahead] (optimizer_queue.cc); none: never

  HostPages host_;
  DeviceBuffers buffers_;
  std::unique_ptr<BlockOps> ops_;
  SlotCache slots_;
  std::unique_ptr<Stream> compute_;
  std::unique_ptr<Stream> comm_;  // data parallelism: the gradients' sums over the ranks
  std::mutex comm_mu_;
  Status comm_status_;  // the first failed sum (guarded by comm_mu_)
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<OptimizerQueue> optimizer_;

  uint64_t op_seq_ = 0;  // compute ops scheduled so far (all steps)
  std::shared_ptr<Event> last_compute_;
  std::vector<int32_t> tokens_host_;
  std::shared_ptr<Event> tokens_copied_;
  long steps_run_ = 0;  // run_step calls so far (Note [Host access plan])
  std::vector<std::shared_future<Status>> recorded_jobs_;
};

}  // namespace strata::scheduler
