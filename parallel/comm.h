// Comm: collectives and point-to-point messages between the ranks of one training job.
//
// parallel/ moves raw buffers between processes; it knows nothing about pages or models.
// docs/parallel.md ("The Comm interface") describes the backends and the rules below.
//
// Contract:
// - Stream order. Every op is enqueued, in issue order, on the Comm's own queue (the "comm
//   stream": one thread for MPI, a CUDA stream for NCCL) and returns a CommWork at once. An op
//   starts only after the op issued before it has completed, so ops never overlap each other
//   and one op may consume what the previous one produced. Issue from one thread at a time (the
//   calls' order is the issue order); waiting on a CommWork is safe from any thread.
// - Buffers. MPI and Local take host pointers; NCCL takes device pointers on the GPU that the
//   Comm chose (device()), or host pointers, whose ops it runs over its MPI bootstrap (an op's
//   buffers all on one side: routed_comm.h). A buffer must stay valid and untouched until its
//   op's work completes.
// - Every rank issues the same collectives in the same order with the same sizes (counts and
//   roots included); a rank that does not makes its peers' ops fail with a timeout.
// - Deterministic reductions (Note [Deterministic reductions] in docs/parallel.md): the reduced
//   value is the left fold, in rank order, of the ranks' contributions, ((x_0 + x_1) + x_2) + ...,
//   in the element type's own arithmetic, so a result's bits depend only on the inputs and the
//   number of ranks, never on the backend or the network.
// - Timeouts. An op that does not finish within CommOptions::timeout_s fails with kTimeout and a
//   message naming the op, its bytes, this rank and the timeout. After any failed op the Comm is
//   broken: later ops fail at once with kAborted naming the first failure. A job with a failed
//   rank should end every rank with abort().
// - Errors the caller can cause (a bad root, peer or tag) complete the work at once with
//   kInvalidArgument; the Comm stays usable.
#pragma once

#include <cstddef>
#include <memory>

#include "core/util/status.h"

namespace strata::parallel {

enum class CommBackend { kLocal, kMpi, kNccl };
// "local", "mpi", "nccl".
const char* CommBackendName(CommBackend backend);

// Which process this is, read from the launcher's environment without initializing MPI. The
// rank comes from the first of OMPI_COMM_WORLD_RANK (OpenMPI), PMI_RANK (MPICH, Intel MPI) and
// PMIX_RANK that is set; the size from OMPI_COMM_WORLD_SIZE or PMI_SIZE. When no rank variable
// is set, or one does not parse as a rank below the size: rank 0 of 1, not under MPI. When a
// rank is set but no size (PMIx alone exports none), size is 0: known only once MPI starts.
struct LaunchInfo {
  int rank = 0;
  int size = 1;
  bool under_mpi = false;  // a launcher's rank variable was set and valid
};
LaunchInfo DetectLaunch();

struct CommOptions {
  CommBackend backend = CommBackend::kLocal;
  // A collective or message that does not finish in this time fails instead of hanging. For MPI
  // it counts from when the op starts on the comm thread; for NCCL, from when wait() or
  // barrier() starts waiting. Must be > 0.
  double timeout_s = 300;
};

// The completion of one op, shared by the backend that completes it and the CommWorks that wait
// on it (parallel/work_state.h).
class WorkState;

// A handle on one enqueued op. Copyable; every copy refers to the same op. A default-constructed
// CommWork is complete and OK.
class CommWork {
 public:
  CommWork();
  explicit CommWork(std::shared_ptr<WorkState> state);
  // A work that is already complete with `status`.
  static CommWork Done(Status status);

  // Blocks until the op completes or fails (a failure comes at the latest about timeout_s after
  // the op started); returns its outcome. Any number of times, from any thread.
  [[nodiscard]] Status wait() const;
  // True once the op has completed or failed; never blocks.
  bool done() const;

 private:
  std::shared_ptr<WorkState> state_;
};

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual CommBackend backend() const = 0;
  // The CUDA device the buffers live on (NCCL), or -1 for host memory (Local, MPI).
  virtual int device() const { return -1; }

  // recv[i] = fold over ranks of send[i], for i < count. recv may equal send (in place); any
  // other overlap is not allowed.
  virtual CommWork all_reduce_sum(const float* send, float* recv, size_t count) = 0;
  virtual CommWork all_reduce_sum(const double* send, double* recv, size_t count) = 0;
  // send holds size() chunks of recv_count elements; rank r receives the fold over ranks of
  // chunk r. recv may lie inside send.
  virtual CommWork reduce_scatter_sum(const float* send, float* recv, size_t recv_count) = 0;
  virtual CommWork reduce_scatter_sum(const double* send, double* recv, size_t recv_count) = 0;
  // recv holds size() * bytes_per_rank bytes: rank r's send at offset r * bytes_per_rank.
  // send may be recv + rank() * bytes_per_rank (in place); no other overlap.
  virtual CommWork all_gather(const void* send, void* recv, size_t bytes_per_rank) = 0;
  // root's buffer is copied into every other rank's buffer. 0 <= root < size().
  virtual CommWork broadcast(void* buffer, size_t bytes, int root) = 0;

  // Point-to-point, matched by (peer, tag); 0 <= tag <= kMaxTag and peer != rank(). NCCL has
  // no tags: between two ranks, its messages match in issue order. The receiver's bytes must
  // equal the sender's (MPI: a shorter message fails the recv with kInvalidArgument and, like any
  // failed op, breaks the comm). Each op runs alone in stream order, so two ranks that both send
  // to each other before receiving wait on each other (until the timeout) once a message is too
  // large for MPI's eager path, and always on NCCL: exchange with send_recv instead.
  static constexpr int kMaxTag = 32767;  // the smallest MPI_TAG_UB the MPI standard allows
  virtual CommWork send(const void* buffer, size_t bytes, int peer, int tag) = 0;
  virtual CommWork recv(void* buffer, size_t bytes, int peer, int tag) = 0;
  // One op that sends to `to` and receives from `from` at the same time (a ring step, a halo
  // exchange); to and from may be the same peer. Buffers must not overlap.
  virtual CommWork send_recv(const void* send, size_t send_bytes, int to, void* recv,
                             size_t recv_bytes, int from, int tag) = 0;

  // Blocks until every rank has reached the barrier and every op issued before it here has
  // completed; fails like an op after timeout_s.
  [[nodiscard]] virtual Status barrier() = 0;

  // A new Comm over the ranks that give the same `color` (>= 0), ranked by `key`, ties by rank:
  // one tensor-, data- or pipeline-parallel group of the grid (parallel/grid.h). Collective: every
  // rank calls it, in its stream order, after the ops issued before it have completed; it fails
  // like an op after timeout_s. The new Comm has its own queue, communicator and timeout, and may
  // outlive this one. kInvalidArgument for a negative color. NCCL splits its MPI bootstrap, then
  // its communicator (ncclCommSplit); the new Comm routes host buffers as its parent does.
  virtual Result<std::unique_ptr<Comm>> split(int color, int key) = 0;

  // Ends this process and, for MPI and NCCL, every rank of the job (MPI_Abort) with exit code
  // `code`: for a rank that failed, so that its peers do not wait for it until their timeouts.
  // Callable from any thread, at any time, even while ops are in flight.
  [[noreturn]] virtual void abort(int code) = 0;
};

// Creates the backend:
// - kLocal: rank 0 of 1. Ops are copies (recv = send) and complete before they return.
// - kMpi: initializes MPI on first use (MPI_Init_thread, asking for MPI_THREAD_MULTIPLE) and
//   finalizes it when the last MPI Comm is destroyed; MPI cannot start again afterwards in the
//   same process (kFailedPrecondition), so keep one Comm for the process's life. Works on its
//   own duplicate of MPI_COMM_WORLD, so Comms never see each other's messages. Creation is
//   collective: every rank must create its Comm (within timeout_s). With an MPI that provides
//   less than MPI_THREAD_MULTIPLE, one MPI Comm at a time may exist (its comm thread is then the
//   only thread that calls MPI).
// - kNccl: needs a CUDA build, a GPU and MPI (the unique id travels over MPI); kNotSupported
//   otherwise. Each rank uses GPU (local rank % GPUs on its host).
// Errors: kInvalidArgument for a bad timeout_s; kNotSupported for a backend this build or
// machine lacks; kTimeout when a peer does not join the creation in time.
Result<std::unique_ptr<Comm>> CreateComm(const CommOptions& options);

}  // namespace strata::parallel
