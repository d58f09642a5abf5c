// CreateMpiComm for builds without MPI (no MPI found at configure time). With MPI,
// mpi_comm.cc defines it and this file is empty.
#ifndef STRATA_WITH_MPI

#include "parallel/mpi_comm.h"

namespace strata::parallel {

Result<std::unique_ptr<Comm>> CreateMpiComm(const CommOptions& /*options*/) {
  return Status::NotSupported(
      "the mpi comm backend is not built: MPI was not found when strata was configured; "
      "install libopenmpi-dev and openmpi-bin (tools/install-deps.sh) and rebuild");
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
