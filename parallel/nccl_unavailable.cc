// CreateNcclComm for builds without NCCL (no CUDA toolkit, no NCCL or no MPI at configure
// time), in the way core/device/cuda_unavailable.cc stands in for the CUDA device. With NCCL,
// nccl_comm_cuda.cc defines it and this file is empty.
#ifndef STRATA_WITH_NCCL

#include "core/util/option.h"
#include "parallel/nccl_comm.h"

namespace strata::parallel {

Result<std::unique_ptr<Comm>> CreateNcclComm(const CommOptions& /*options*/) {
  return AtFault(Option::kComm,
                 Status::NotSupported(
                     Mention(Option::kComm) +
                     " nccl needs a CUDA build and a GPU: this strata was built without NCCL (it "
                     "needs the CUDA toolkit with NCCL and MPI when configuring); rebuild with "
                     "them, or use " +
                     Mention(Option::kComm) + " mpi"));
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_NCCL
