#ifdef STRATA_WITH_MPI

#include "parallel/mpi_status.h"

#include <mpi.h>

namespace strata::parallel {

// kAborted: an MPI error on a communicator means the job can no longer communicate reliably;
// retrying the op is not useful.
Status MpiStatus(int mpi_code, const std::string& what) {
  if (mpi_code == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(mpi_code, text, &length) != MPI_SUCCESS) {
    return Status::Aborted(what + ": MPI error " + std::to_string(mpi_code));
  }
  return Status::Aborted(what + ": " + std::string(text, length));
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
