// MPI return codes as Statuses: the one place an MPI error code becomes a Status.
// Only compiled with MPI (STRATA_WITH_MPI).
#pragma once

#include <string>

#include "core/util/status.h"

namespace strata::parallel {

// OK for MPI_SUCCESS; otherwise kAborted with "<what>: <MPI's error string>".
Status MpiStatus(int mpi_code, const std::string& what);

}  // namespace strata::parallel
