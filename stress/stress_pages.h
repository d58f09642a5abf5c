// The checkpoint pages of a stress configuration's NVMe store, reached from outside the training
// process (only while no child runs): one byte flipped in a page of the newest checkpoint (bit
// rot, storage::FlipByteOnDisk), and every checkpoint page read back with its checksum verified.
// Checkpoints are the store's manifests named step-N (scheduler/checkpoint.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::stress {

struct RottedPage {
  std::string manifest;  // the checkpoint, e.g. step-00000004
  long step = 0;         // its N
  uint64_t page = 0;
  uint32_t file = 0;  // slot file (index of its --nvme-dir)
  uint64_t slot = 0;
  std::string path;  // the slot file
  uint64_t offset = 0;  // of the flipped byte in it
};

// Flips one byte of a page of the newest checkpoint, in a slot that no other checkpoint shares,
// so that an older checkpoint stays whole; `pick` chooses the page and the byte. NotFound when
// the store holds fewer than two checkpoints (one rotted checkpoint alone cannot be recovered
// from, so it is not tried).
Result<RottedPage> RotNewestCheckpoint(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                       uint64_t pick);

// Reads every page of every checkpoint in the store (each read verifies the page's checksum),
// except the slots in `rotted` while the checkpoint that was rotted still exists. Returns the
// number of pages verified; Corruption naming the checkpoint and page when one fails.
Result<uint64_t> VerifyCheckpointPages(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                       const std::vector<RottedPage>& rotted);

}  // namespace strata::stress
