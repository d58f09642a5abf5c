// A format-1 record of the C API (Note [Format-1 records] in embed/checkpoint_book.h), for the
// tests that check it still reads and resumes.
#pragma once

namespace strata::embed::fixtures {

// Byte for byte what CheckpointBook::write wrote at 0942f3a (format 1: record.dump(1), no
// newline at the end) for checkpoint "c1" at step 0 of tensors a and b, 64 KiB of f32 each
// (dtype 0), role other (3), in groups ga and gb, with 64 KiB pages.
constexpr const char* kFormat1Record = R"({
 "checkpoints": [
  {
   "manifest": "embed-c1",
   "name": "c1",
   "page_bytes": 65536,
   "step": 0,
   "tensors": [
    [
     "a",
     65536,
     0,
     3,
     "ga"
    ],
    [
     "b",
     65536,
     0,
     3,
     "gb"
    ]
   ]
  }
 ],
 "format": 1
})";

}  // namespace strata::embed::fixtures
