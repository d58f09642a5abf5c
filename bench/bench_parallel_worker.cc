// `strata bench parallel-worker collectives` (hidden; `strata bench parallel` launches it under
// mpirun): on every rank, all-gather and reduce-scatter through the Comm (MPI backend) and raw
// MPI_Allgather / MPI_Reduce_scatter_block (MPI_FLOAT, MPI_SUM) on MPI_COMM_WORLD, of the same
// bytes from the same buffers, alternating which goes first in each round. Each timed op starts
// after an MPI_Barrier and counts the slowest rank's time. Rank 0 prints one JSON line:
//   {"ranks":2,"thread_level":"multiple","sizes":[{"bytes":B,"outputs_equal":true,
//    "all_gather":{"strata_s":[...],"mpi_s":[...]},"reduce_scatter":{...}}, ...]}
//
// Threads: the Comm's thread calls MPI while one of its ops runs; this thread calls MPI only
// between ops (it waits on every work before the next raw call), so MPI_THREAD_SERIALIZED is
// enough; below that the worker says NotSupported.
#include "bench/bench_parallel.h"

#ifdef STRATA_WITH_MPI
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/util/log_words.h"
#include "parallel/comm.h"
#endif

namespace strata::bench::parallel_bench {

#ifdef STRATA_WITH_MPI
namespace {

Status RawMpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status::Internal(std::string("bench parallel-worker: ") + what +
                          " failed: " + std::string(text, size_t(length)));
}

// One op's seconds on the slowest rank, timed from a barrier that every rank has passed.
Result<double> TimeOp(const std::function<Status()>& op) {
  STRATA_RETURN_IF_ERROR(RawMpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"));
  const double start = MPI_Wtime();
  STRATA_RETURN_IF_ERROR(op());
  double mine = MPI_Wtime() - start, slowest = 0;
  STRATA_RETURN_IF_ERROR(RawMpi(
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce"));
  return slowest;
}

// One size's buffers: what this rank sends, and Strata's and MPI's outputs apart, to compare.
struct SizeBuffers {
  SizeBuffers(uint64_t bytes, int rank, int ranks)
      : chunk(bytes / sizeof(float) / size_t(ranks)),
        ag_send(chunk),
        ag_strata(chunk * ranks),
        ag_mpi(chunk * ranks),
        rs_send(chunk * ranks),
        rs_strata(chunk),
        rs_mpi(chunk) {
    for (size_t i = 0; i < ag_send.size(); ++i) ag_send[i] = float(rank * 4096 + int(i % 4096));
    for (size_t i = 0; i < rs_send.size(); ++i) rs_send[i] = 0.25f * float((i * 31 + rank) % 4096);
  }
  size_t chunk;  // floats per rank
  std::vector<float> ag_send, ag_strata, ag_mpi, rs_send, rs_strata, rs_mpi;
};

// One op done both ways, and each way's times per round.
struct OpPair {
  OpPair(std::function<Status()> strata_op, std::function<Status()> mpi_op)
      : strata(std::move(strata_op)), mpi(std::move(mpi_op)) {}
  std::function<Status()> strata, mpi;
  std::vector<double> strata_s, mpi_s;
  nlohmann::ordered_json json() const { return {{"strata_s", strata_s}, {"mpi_s", mpi_s}}; }
};

// One untimed run of each (first touch, MPI's connections), then `rounds` timed rounds.
Status TimeRounds(std::vector<OpPair*> pairs, int rounds) {
  for (OpPair* p : pairs) {
    STRATA_RETURN_IF_ERROR(p->strata());
    STRATA_RETURN_IF_ERROR(p->mpi());
  }
  for (int r = 0; r < rounds; ++r) {
    for (OpPair* p : pairs) {
      for (int k = 0; k < 2; ++k) {
        const bool strata = (k == 0) == (r % 2 == 0);
        STRATA_ASSIGN_OR_RETURN(const double s, TimeOp(strata ? p->strata : p->mpi));
        (strata ? p->strata_s : p->mpi_s).push_back(s);
      }
    }
  }
  return Status::Ok();
}

Result<bool> OutputsEqualEverywhere(const SizeBuffers& b) {
  const auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    return std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  };
  int mine = same(b.ag_strata, b.ag_mpi) && same(b.rs_strata, b.rs_mpi) ? 1 : 0, all = 0;
  STRATA_RETURN_IF_ERROR(
      RawMpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce"));
  return all != 0;
}

Result<nlohmann::ordered_json> MeasureSize(parallel::Comm& comm, uint64_t bytes, int rounds) {
  SizeBuffers b(bytes, comm.rank(), comm.size());
  const int count = int(b.chunk);  // ParseSizes keeps a rank's chunk far below INT_MAX floats
  OpPair ag{[&] {
              return comm.all_gather(b.ag_send.data(), b.ag_strata.data(), b.chunk * sizeof(float))
                  .wait();
            },
            [&] {
              return RawMpi(MPI_Allgather(b.ag_send.data(), count, MPI_FLOAT, b.ag_mpi.data(),
                                          count, MPI_FLOAT, MPI_COMM_WORLD),
                            "MPI_Allgather");
            }};
  OpPair rs{
      [&] { return comm.reduce_scatter_sum(b.rs_send.data(), b.rs_strata.data(), b.chunk).wait(); },
      [&] {
        return RawMpi(MPI_Reduce_scatter_block(b.rs_send.data(), b.rs_mpi.data(), count, MPI_FLOAT,
                                               MPI_SUM, MPI_COMM_WORLD),
                      "MPI_Reduce_scatter_block");
      }};
  STRATA_RETURN_IF_ERROR(TimeRounds({&ag, &rs}, rounds));
  STRATA_ASSIGN_OR_RETURN(const bool equal, OutputsEqualEverywhere(b));
  nlohmann::ordered_json out;
  out["bytes"] = bytes;
  out["outputs_equal"] = equal;
  out["all_gather"] = ag.json();
  out["reduce_scatter"] = rs.json();
  return out;
}

const char* ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "single";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    default:
      return "multiple";
  }
}

Status MeasureAll(parallel::Comm& comm, const WorkerFlags& f) {
  STRATA_ASSIGN_OR_RETURN(const std::vector<uint64_t> sizes, ParseSizes(f.sizes));
  int level = MPI_THREAD_SINGLE;
  STRATA_RETURN_IF_ERROR(RawMpi(MPI_Query_thread(&level), "MPI_Query_thread"));
  if (level < MPI_THREAD_SERIALIZED) {
    return Status::NotSupported(std::string("bench parallel-worker: this MPI provides only "
                                            "MPI_THREAD_") +
                                ThreadLevelName(level) +
                                "; the worker needs MPI_THREAD_SERIALIZED (it calls MPI from "
                                "its main thread beside the Comm's thread)");
  }
  nlohmann::ordered_json out;
  out["ranks"] = comm.size();
  out["thread_level"] = ThreadLevelName(level);
  out["sizes"] = nlohmann::ordered_json::array();
  for (const uint64_t bytes : sizes) {
    if (bytes % (sizeof(float) * size_t(comm.size())) != 0) {
      return Status::InvalidArgument("--sizes: " + std::to_string(bytes) +
                                     " bytes is not a whole number of floats per rank");
    }
    STRATA_ASSIGN_OR_RETURN(nlohmann::ordered_json one, MeasureSize(comm, bytes, f.rounds));
    out["sizes"].push_back(std::move(one));
  }
  if (comm.rank() == 0) {
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace

Status RunCollectivesWorker(const WorkerFlags& f) {
  if (f.rounds <= 0) {
    return Status::InvalidArgument("--rounds must be positive, got " + std::to_string(f.rounds));
  }
  parallel::CommOptions options;
  options.backend = parallel::CommBackend::kMpi;
  options.timeout_s = f.comm_timeout_s;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<parallel::Comm> comm, parallel::CreateComm(options));
  const Status st = MeasureAll(*comm, f);
  if (!st.ok() && comm->size() > 1) {
    // The peers may wait in a raw MPI call that has no timeout: end the job.
    std::fprintf(stderr, "strata: error: [rank %d] %s\n", comm->rank(),
                 InLogTerms(st.message()).c_str());
    comm->abort(1);
  }
  return st;
}

Status CheckBuiltWithMpi() { return Status::Ok(); }

#else  // !STRATA_WITH_MPI

Status CheckBuiltWithMpi() {
  return Status::NotSupported(
      "bench parallel: this strata was built without MPI; install OpenMPI (Debian: apt-get "
      "install openmpi-bin libopenmpi-dev) and rebuild with bash tools/build.sh");
}

Status RunCollectivesWorker(const WorkerFlags&) { return CheckBuiltWithMpi(); }

#endif

}  // namespace strata::bench::parallel_bench
