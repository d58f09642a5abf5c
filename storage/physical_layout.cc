// Note [4 KiB-page reads on virtio-blk]
// Issue 13 asked why IoEngine's 1 MiB QD16 sequential reads from buffers on 4 KiB pages
// (`strata bench io --no-huge-pages`) reached only 0.69 of fio's (BENCHMARKS.md: 1845 vs
// 2691 MiB/s) while writes reached 1.1. Measured on the build machine (a Firecracker guest,
// kernel 6.18, /dev/vda virtio-blk, 2026-11-25; docs/storage.md has the tables):
//
// - Not the engine. Both tools submit one READ_FIXED SQE per 1 MiB on registered buffers and
//   files (strace -f -c, 2 GiB: 3610 io_uring_enter for Strata, 3522 for fio; no readv, no
//   extra SQEs); `bench io`'s callbacks only count (no checksum, no memcpy). Splitting the
//   transfer into 128 KiB or 64 KiB requests at the same bytes in flight did not help.
// - The device. virtio-blk here has no indirect descriptors (feature bit 28 clear), a
//   256-descriptor ring (nr_tags 128) and max_segments 254. Every physically contiguous run
//   of a buffer is one descriptor, and the host spends about 6.5 us per descriptor: a 1 MiB
//   read from 256 scattered pages is split into 1016 KiB + 8 KiB requests, the 1016 KiB one
//   takes the whole ring (2037 driver requeues per 2048 requests, block:block_rq_requeue)
//   and 1.65 ms (about 600 MiB/s). The same read into a huge page is one descriptor.
// - So the rate follows how physically contiguous the buffer's pages happen to be, for fio as
//   for Strata: sampled from /proc/PID/pagemap mid-run over ten alternating rounds, fio read
//   1900/1526/1264/1188 MiB/s at 17/64/52/59 segments per MiB and 414-612 at 160-256, Strata
//   1086 at 55 and 400-700 at 132-250. Which pages a process gets is luck of the page
//   allocator (recently freed pages come back LIFO; a run freed in ascending order returns
//   descending, which does not merge), not something the engine or the allocation call
//   controls: memset, MAP_POPULATE, MADV_POPULATE_WRITE, touching backwards, pinning by
//   io_uring_register_buffers (what fio does) and draining 32-128 MiB first all gave 150-256
//   segments per MiB on average in alternating runs, and fio's and Strata's buffers sampled
//   over 20 alternating runs had the same median (167 and 172).
// - Hence the huge-page default (aligned_buffer.cc), and this function: `strata bench io`
//   reports the segments per MiB its buffer got, so a like-for-like round can be read
//   against the layout it was dealt.
// - 2026-11-27, a slower day of the same disk: fio led in all 10 like-for-like rounds (0.68 and
//   0.74 medians), Strata's buffer at 174-248 segments per MiB; fio's own 16 MiB buffer, sampled
//   from its pagemap in 4 separate 1 MiB QD16 reads, had 104-160 (at 838-974 MiB/s).
// - Why (issue 32, same night, load 3-5 from builds): the two buffers come from different free
//   lists. fio's read buffer is an untouched malloc that io_uring_register_buffers faults in; a
//   long-term pin allocates under memalloc_pin_save(), without __GFP_MOVABLE, so from the
//   per-CPU list of *unmovable* pages, refilled by stealing the largest free movable block.
//   Strata's was memset first: movable pages, the list every build on the machine churns. Each
//   per-CPU list is last-in first-out and this kernel's are deep (pcp high 34871-46196 pages), so
//   a process gets the previous user's freed buffer back in reverse: a buffer faulted in
//   ascending runs and freed in address order leaves runs that the next one gets descending
//   (256 segments per MiB, no two frames in order; /proc/PID/pagemap shows desc=3700+ of 4095
//   neighbours one frame apart downwards). Probe of 16 MiB, alternating with fio: pin-faulted
//   17.7-69 segments per MiB (1038-1594 MiB/s), memset 255-256 (514-651), fio 87-256. Freeing a
//   reversed buffer (MADV_DONTNEED) and pinning it again turns 255.6-256 into 3.5-18.7: the
//   list order is the whole story. Consecutive pinners alternate: 8 in a row gave 48, 180, 107,
//   91, 62, 5.9, 256, 4.4.
// - So AlignedBuffer no longer touches its pages, and register_buffer (the runtime's frame pool,
//   bench io) is their first toucher, as fio's. It does not close the like-for-like gap reliably:
//   now that both tools draw from one list, each gets the previous pinner's frames reversed, and
//   the order of the benchmark's runs decides who: 3 runs of `bench/io_vs_fio.sh` gave read
//   ratios 1.262 (Strata 17-255 seg/MiB, fio 47-256), 0.705 (Strata 41-256, fio 45-151, never
//   descending) and 0.865 (Strata 164-226). What the page allocator deals a 4 KiB-page buffer
//   stays luck; huge pages (the default) stay the fix (read 1.72, randread 2.11 of fio).
#include "storage/physical_layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "storage/aligned_buffer.h"
#include "storage/posix_file.h"

namespace strata::storage {
namespace {

constexpr uint64_t kPfnMask = (uint64_t{1} << 55) - 1;
constexpr uint64_t kPresent = uint64_t{1} << 63;
constexpr uint64_t kPagesPerMiB = (1 << 20) / kIoAlignBytes;

}  // namespace

Result<double> PhysicalSegmentsPerMiB(const void* buffer, uint64_t bytes) {
  if (!IsIoAligned(buffer) || !IsIoAligned(bytes) || bytes == 0) {
    return Status::InvalidArgument("PhysicalSegmentsPerMiB: 4 KiB aligned buffer and size");
  }
  UniqueFd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno(errno, "open /proc/self/pagemap");
  const uint64_t pages = bytes / kIoAlignBytes;
  std::vector<uint64_t> entries(pages);
  const off_t first = static_cast<off_t>(reinterpret_cast<uintptr_t>(buffer) / kIoAlignBytes * 8);
  const ssize_t want = static_cast<ssize_t>(pages * 8);
  errno = 0;
  if (::pread(fd.get(), entries.data(), want, first) != want) {
    return Status::FromErrno(errno == 0 ? EIO : errno, "read /proc/self/pagemap");
  }
  uint64_t segments = 0;
  bool any_pfn = false;
  for (uint64_t i = 0; i < pages; ++i) {
    const uint64_t pfn = entries[i] & kPfnMask;
    any_pfn = any_pfn || ((entries[i] & kPresent) != 0 && pfn != 0);
    // A transfer starts a new segment at each 1 MiB boundary and at each break in the frames.
    const bool joined = i % kPagesPerMiB != 0 && (entries[i] & kPresent) != 0 &&
                        (entries[i - 1] & kPresent) != 0 && pfn == (entries[i - 1] & kPfnMask) + 1;
    if (!joined) ++segments;
  }
  if (!any_pfn) {
    return Status::NotSupported("page frame numbers are hidden (needs CAP_SYS_ADMIN) or the "
                                "buffer is not paged in");
  }
  return static_cast<double>(segments) * kPagesPerMiB / static_cast<double>(pages);
}

}  // namespace strata::storage
