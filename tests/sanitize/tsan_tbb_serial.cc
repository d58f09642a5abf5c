// Preloaded (LD_PRELOAD) into the ThreadSanitizer runs by run_sanitized.sh; not part of any
// Strata target.
//
// Why: Debian's libtbb is not built with TSan, so the happens-before edges of its fork/join
// (spawning a parallel_for task on one thread, running it on a worker, joining it back) happen
// inside uninstrumented code and are invisible to TSan. Every parallel_for body then "races"
// with the code around it: one scheduler test produced 505 such reports, in TBB's own headers
// (blocked_range splitting, start_for, fold_tree) and in every kernel body, none of them real.
// Suppressing them would need patterns broad enough ("any stack inside a TBB task") to also hide
// real races between a kernel and another Strata thread.
//
// So TSan runs cap TBB at one thread: parallel algorithms run on the thread that calls them, no
// fork/join edge is hidden, and races between Strata's own threads (stream workers, I/O
// completion, the optimizer updater, callers) are still all reported. Intra-kernel parallelism
// is static partitioning checked by the determinism tests, not by TSan.
#include <oneapi/tbb/global_control.h>

namespace {

// Lives for the whole process: the limit holds while the object exists.
const oneapi::tbb::global_control kSerialTbb(oneapi::tbb::global_control::max_allowed_parallelism,
                                             1);

}  // namespace
