// SizeNvmeTier: how many bytes of slots an NVMe tier asks for, decided before the store is
// created, from the page counts, the host pool and the kept checkpoints. A pure function of
// numbers (no disk, no words): the paged trainer measures the free space and words the outcome;
// the C API sizes its default capacity with it (embed/runtime_store.cc).
//
// Note [NVMe capacity]
// The store is copy-on-write (docs/storage.md): a page's new version goes to a free slot and
// the old one is freed when the new one commits, unless a checkpoint's manifest pins it. So at
// any moment its slots hold:
//   - at most one committed version of every page ever written to it. Parameters and moments
//     are; gradients are meant not to be (each is made in backward and consumed by AdamW), but
//     a dirty gradient that the host pool evicts before AdamW reads it is written back, and its
//     committed version stays after the page is discarded: the small model at --host-mem 4M
//     wrote back 655 of its 667 gradient pages;
//   - the staged versions not yet committed. A staged version's buffer is the page's host
//     frame, held until the commit (Note [Grouped write-back] in memory/write_back.cc), so there
//     are at most as many as the host pool has frames (and at most one per page);
//   - per kept checkpoint, one older version of every page: a manifest pins every committed
//     version, the gradients' too (the newest checkpoint pins the current ones, counted above);
//   - while a checkpoint is saved, before the oldest is retired (Note [Checkpoint retirement]
//     in scheduler/checkpoint.h), the next step's gradients may be written back: one more
//     version of each gradient page.
// minimum  = state + min(host pool, state) [+ state + gradients]
// default  = minimum + (keep - 1) * state                          (every kept checkpoint fits)
// in pages; the bracket and keep apply to a run that saves checkpoints (keep 0 otherwise:
// default = minimum). Measured on `strata train --model small` (2668 pages of 64K, 2001 of
// them parameters and moments), 8 steps with a checkpoint after each: at the minimum with one
// kept checkpoint (6067 pages) the peak was 5344 pages; at the default of --keep-checkpoints 2
// (8735) it was 7965. Counting only the parameters and moments per checkpoint (4733 pages) the
// store was full at step 3.
// The old floor was two versions of every page of state (3x the state by default): gpt2-xl at
// --host-mem 2G asked 50.62 GiB at least and 75.94 GiB by default; without checkpoints it now
// needs 27.31 GiB, 1.44x its parameters and moments (tests/scheduler/nvme_capacity_test.cc).
#pragma once

#include <cstdint>
#include <limits>

namespace strata::memory {

struct NvmeSizingInput {
  uint64_t page_bytes = 0;
  uint64_t state_pages = 0;       // every page of the run's plan: parameters, gradients, moments
  uint64_t durable_pages = 0;     // parameters, moments, master copies (the rest: gradients)
  uint64_t host_pages = 0;        // frames of the host pool (whole pages of --host-mem)
  uint64_t keep_checkpoints = 0;  // checkpoints kept at once; 0 when the run saves none
  uint64_t asked_bytes = 0;       // a capacity the user asked for; 0: size it here
  // Bytes of slot files the disks can take for a new store (the catalog's headroom already
  // subtracted); the maximum when not checked (a store that exists keeps its own capacity).
  uint64_t room_bytes = std::numeric_limits<uint64_t>::max();
};

enum class NvmeFit {
  kAsked,              // asked_bytes, at least the minimum (the store checks the disk itself)
  kAskedBelowMinimum,  // asked_bytes < min_bytes: refused
  kDefault,            // the default fits the room
  kFewerCheckpoints,   // the room holds the minimum, and 1 <= checkpoints_fit < keep_checkpoints
  kBelowMinimum,       // the room holds less than the minimum: refused
};

struct NvmeSizing {
  uint64_t min_bytes = 0;         // Note [NVMe capacity]'s minimum
  uint64_t checkpoint_bytes = 0;  // what one more kept checkpoint adds
  uint64_t default_bytes = 0;     // the minimum and every kept checkpoint
  uint64_t capacity_bytes = 0;    // what the store is opened with (0 when refused)
  uint64_t checkpoints_fit = 0;   // kept checkpoints capacity_bytes has room for
  NvmeFit fit = NvmeFit::kDefault;
  bool refused() const {
    return fit == NvmeFit::kAskedBelowMinimum || fit == NvmeFit::kBelowMinimum;
  }
};

// Below the default but at or above the minimum, the capacity is the minimum and as many more
// whole checkpoints as the room holds; the run then keeps checkpoints_fit of them.
NvmeSizing SizeNvmeTier(const NvmeSizingInput& in);

}  // namespace strata::memory
