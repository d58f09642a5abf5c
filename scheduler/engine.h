// Engine: runs the step program (scheduler/step_program.h) over paged model state.
//
// Queues (each its own thread, joined by Events): compute (the Device's compute stream: the
// block ops), h2d and d2h (Device streams: pieces of pages into and out of block slots), the
// driver (the thread calling RunStep: walks the program, acquires host pages from the
// MemoryManager — NVMe reads and write-backs happen there — and enqueues everything), and the
// optimizer (a HostQueue: AdamW per page on the host over TBB; NVMe-resident moments stream
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
// use lies in the next step and counts for Belady (ChooseVictim), unlike a stale one's.
//
// Honesty of the sim device: every compute op checks (STRATA_CHECK) that each buffer it touches
// lies inside a live device allocation before it runs.
//
// Threads: Create, RunStep, Drain and ReadParams from one thread (the driver). Borrowed objects
// (layout, pages, memory manager, device, timeline) must outlive the Engine.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device/device.h"
#include "core/nn/gpt_blocks.h"
#include "core/nn/gpt_layout.h"
#include "core/util/status.h"
#include "memory/memory_manager.h"
#include "scheduler/host_queue.h"
#include "scheduler/memory_plan.h"
#include "scheduler/state_pages.h"
#include "scheduler/step_program.h"
#include "scheduler/trace.h"

namespace strata::scheduler {

struct EngineOptions {
  const GptLayout* layout = nullptr;
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
};

struct EngineStepResult {
  float loss = 0;
  double grad_norm = 0;
  bool clipped = false;
  // The device's and the memory manager's counters when the step's compute had finished, before
  // its updates were submitted. A step's movement is the difference of successive snapshots:
  // the uploads after step s's updates count in step s+1, whose compute waits for them, so
  // nothing depends on when a caller reads the counters (Note [Eager refresh]).
  DeviceStats device_at_end;
  memory::MemoryStats memory_at_end;
};

class Engine {
 public:
  // Allocates the activations, the tokens buffer and plan.slots slots from the device, creates the
  // streams and pins the pages whose home is the host. ResourceExhausted when the device refuses.
  static Result<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const StepProgram& program() const { return program_; }

  // One optimizer step (0-based `step`) on `tokens`: batch*seq inputs then batch*seq targets.
  // Returns when the step's compute has finished; its updates may still run (see
  // Note [Exact updates]). `on_grads`, if set, runs after backward with every gradient on its
  // host pages (used by --export-grads; updates only read them meanwhile).
  Status RunStep(long step, float lr, const int32_t* tokens, EngineStepResult* result,
                 const std::function<Status()>& on_grads = nullptr);
  // Waits for every queued move and update; returns the first error.
  Status Drain();
  // Runs `job` on the optimizer queue after every update submitted so far and before any later
  // one: it sees the parameters and moments of the last step, while the next step's forward and
  // backward run (checkpoints use it so as not to stall the driver).
  std::shared_future<Status> EnqueueAfterUpdates(std::function<Status()> job);

 private:
  struct Slot {
    float* ptr = nullptr;
    uint64_t bytes = 0;  // holds any block of at most this size (scheduler/slot_sizes.h)
    int block = -1;  // -1: empty
    SlotRole role = SlotRole::kParam;
    uint64_t version = 0;             // param_version_ of the block when loaded
    bool grad_active = false;         // a gradient being accumulated (must not be evicted)
    std::shared_ptr<Event> ready;     // compute waits on it before using the content
    std::shared_ptr<Event> last_use;  // whoever overwrites the slot waits on it
    uint64_t last_use_seq = 0;        // op_seq_ when last_use was scheduled (victim tie-break)
    // Note [Eager refresh]: set while the optimizer uploads the block's new version; yields the
    // Event after which the slot holds it (ResolveRefresh makes it ready/last_use).
    std::shared_future<Result<std::shared_ptr<Event>>> refresh;
  };

  explicit Engine(const EngineOptions& options);
  Status Setup();
  Status PinHostHomes();

  // Driver helpers.
  Status Schedule(size_t pos, const Op& op, long step);
  int FindSlot(int block, SlotRole role) const;
  // Among slots of at least `bytes` not in `taken`; -1 when there is none.
  int ChooseVictim(size_t pos, const std::vector<int>& taken, uint64_t bytes) const;
  Status LoadSlot(int slot, int block, memory::Role role, long step);
  // Enqueues the copies of page k of (block, role)'s tensor pieces into the block-layout buffer
  // `dst` on `stream` (a `queue` slice in the trace); `ref` pins the host page until they ran.
  Status UploadPage(memory::PageRef ref, int block, memory::Role role, size_t k, float* dst,
                    Stream& stream, Queue queue, long step);
  Status CopyGradDown(int slot, int block, const std::shared_ptr<Event>& after, long step);
  struct UpdateJob {
    int block = 0;
    long step = 0;
    float lr = 0, coef = 1;
    bool discard_grads = true;  // drop the gradient pages once read (not when on_grads reads them)
    int next_block = -1;        // the block updated next, whose first pages are read ahead
    // Note [Eager refresh]: upload each updated page into this slot (nullptr: none) on the
    // refresh stream after `refresh_after` (the slot's last use), then fulfil refresh_done.
    float* refresh_dst = nullptr;
    std::shared_ptr<Event> refresh_after = nullptr;
    std::shared_ptr<std::promise<Result<std::shared_ptr<Event>>>> refresh_done = nullptr;
  };
  void SubmitUpdate(UpdateJob job);
  // Note [Eager refresh]: marks the slot of `block`'s (now stale) parameters for refresh by
  // `job`; nothing when no slot holds them or the placement does not refresh eagerly.
  void MarkRefresh(int block, UpdateJob& job);
  // Makes a pending refresh of slot `slot` its ready and last-use Event (waits until the
  // optimizer has enqueued it); the update's error if it failed.
  Status ResolveRefresh(int slot);
  // Enqueues the upload of page k of job.block's parameters into job.refresh_dst.
  Status RefreshPage(const UpdateJob& job, size_t k);
  void SubmitPublish(int block);
  Status PublishBlock(int block);
  // Starts reading page index k of `block`'s grad, m, v and param pages (master with
  // --delayed-update) into the host pool, k past the block's end running into next_block (< 0:
  // none). No-op without NVMe.
  void PrefetchUpdatePage(int block, int next_block, size_t k);
  // Updates the block page by page; page_done(k) runs once page k's parameters are written.
  Status UpdateBlock(const UpdateJob& job, const std::vector<std::shared_ptr<Event>>& grads,
                     const std::function<void(size_t)>& page_done);
  std::shared_ptr<Event> Record(Stream& stream);
  void Mark(Stream& stream, Queue queue, std::string name, uint64_t bytes, long step,
            const std::function<void()>& enqueue);

  // Compute.
  void RunOp(const Op& op, const std::vector<float*>& slot_ptrs);
  bool Recomputed(int layer) const { return layer < o_.plan.recompute_layers; }
  const float* BlockInput(int layer) const;
  const TransformerActs& ActsFor(int layer);

  // Host pins of pages whose home is the host (any thread; pins_mu_).
  void Unpin(memory::PageId page);
  Status Repin(memory::PageId page);

  EngineOptions o_;
  const GptLayout& layout_;
  const StatePages& sp_;
  memory::MemoryManager& mm_;
  Device& device_;
  Timeline& timeline_;
  StepProgram program_;
  int micro_batches_ = 1;
  float dloss_ = 0;

  std::unique_ptr<Stream> compute_, h2d_, d2h_;
  std::unique_ptr<Stream> d2h_first_;  // block 0's gradient (Note [Gradient order])
  std::unique_ptr<Stream> refresh_;    // uploads after updates, from the optimizer thread only
  std::unique_ptr<tbb::task_arena> compute_arena_, optimizer_arena_;
  size_t optimizer_read_ahead_ = 1;  // page indices the optimizer reads ahead (engine.cc)
  std::unique_ptr<HostQueue> optimizer_;
  std::vector<void*> allocations_;  // device buffers, freed in the destructor

  // Device buffers.
  int32_t* tokens_ = nullptr;
  float* emb_out_ = nullptr;
  // Layer l's output (the next one's input): its own activations' `out`, or, for a recomputed
  // layer, a residual buffer that the rebuild in backward writes again (the same bits).
  std::vector<float*> outputs_;
  std::vector<TransformerActs> layer_acts_;  // per layer; empty for recomputed layers
  TransformerActs work_acts_{};              // where recomputed layers are rebuilt
  HeadActs head_acts_{};
  BackwardScratch scratch_{};
  float* dres_ = nullptr;

  std::vector<Slot> slots_;
  uint64_t op_seq_ = 0;  // compute ops scheduled so far (all steps)
  std::vector<uint64_t> param_version_;
  std::vector<bool> updated_this_step_;  // the block's update of the current step was submitted
  // Per block, per parameter page: what the next load of that page waits on (its update or
  // publish). Page granularity lets a block's load start while its later pages still update.
  std::vector<std::vector<std::shared_future<Status>>> update_done_;
  std::vector<std::shared_future<Status>> jobs_;         // every optimizer job since Drain
  std::vector<std::shared_future<Status>> grads_read_;   // the last update reading a block's grads
  std::vector<size_t> last_param_use_;                   // op index, per block
  // Per block, per gradient page: the page's final gradient is on the host (the update of that
  // page waits for it alone).
  std::vector<std::vector<std::shared_ptr<Event>>> grad_ready_;
  std::shared_ptr<Event> norm_ready_;
  std::shared_ptr<Event> last_compute_;
  std::vector<int32_t> tokens_host_;
  std::shared_ptr<Event> tokens_copied_;

  // Written by compute ops, read after the step's compute (or an Event) completed.
  std::vector<double> block_sums_;
  std::vector<float> losses_;

  std::mutex pins_mu_;
  std::vector<memory::PageRef> pins_;  // indexed by page id; empty refs for other pages
  std::vector<bool> pinned_home_;      // page's home is the host
};

}  // namespace strata::scheduler
