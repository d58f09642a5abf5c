// CheckpointWriter: the paged trainer's checkpoints after a step (scheduler/checkpoint.h, Note
// [Checkpoint retirement]). It owns the checkpoint record in force (the one SetUpNvmeTier
// decided, nvme_setup.h) and the checkpoint still being written; asked for one, it queues it on
// the Engine's optimizer queue behind the step's updates, where it saves the durable pages as an
// NVMe snapshot, writes the record that lists it (dropping the oldest beyond `keep`) and deletes
// every checkpoint manifest the record no longer lists.
//
// Threads: the writer is made on the setup thread. checkpoint() and wait() are called from the
// Engine's driver thread (the one that calls Engine::run_step), and only from it: they read and
// replace the pending checkpoint. The write itself runs on the Engine's optimizer queue
// (Engine::enqueue_after_updates), after every update of the steps so far and before any later
// one, so the snapshot holds exactly the state after `steps_done` steps while the driver goes on
// with the next step; the record in force is read and replaced only there once made.
// Lifetimes: `memory`, `engine` and `world` are borrowed. The owner drains the Engine (which runs
// a queued checkpoint) before it destroys the writer, the Engine or the memory manager.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "memory/memory_manager.h"
#include "parallel/comm.h"
#include "scheduler/checkpoint.h"
#include "scheduler/engine.h"
#include "scheduler/state_pages.h"

namespace strata::scheduler {

// Parameters and moments (and the master copy with --delayed-update) of every block: what a
// checkpoint must hold (gradients are rebuilt every step).
std::vector<memory::PageId> DurablePages(const StatePages& pages, int num_blocks,
                                         bool delayed_update);

struct CheckpointWriterOptions {
  std::string dir;                          // --ckpt-dir: where the record is written
  int keep = 2;                             // the record lists the `keep` newest checkpoints
  std::vector<memory::PageId> pages;        // what a checkpoint holds (DurablePages)
  memory::MemoryManager* memory = nullptr;  // its NVMe snapshots are the checkpoints
  Engine* engine = nullptr;                 // its optimizer queue writes them
  parallel::Comm* world = nullptr;          // the job's ranks; nullptr: one rank
};

class CheckpointWriter {
 public:
  // `record`: the record in force (empty for a new --ckpt-dir).
  CheckpointWriter(CheckpointWriterOptions options, CheckpointRecord record);
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues the checkpoint after `steps_done` steps. First the previous one must have finished
  // (its error is returned here), and with several ranks every rank's previous one is durable
  // before any rank starts its next (a barrier over `world`, Note [Checkpoints across ranks] in
  // data_parallel.h). A write's error comes back from the next checkpoint() or wait(), with the
  // context "checkpoint after step N".
  Status checkpoint(long steps_done);
  // Waits for the pending checkpoint (durable once it returns Ok); Ok when none was asked for.
  Status wait();

 private:
  Status write(long steps_done);  // on the optimizer queue

  const CheckpointWriterOptions o_;
  CheckpointRecord record_;             // in force; after construction only write's
  std::shared_future<Status> pending_;  // the driver thread's
};

}  // namespace strata::scheduler
