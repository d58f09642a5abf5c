// The local backend: one process, rank 0 of 1. Every op is a copy (or nothing) done on the
// calling thread before it returns, so its work is already complete. Point-to-point ops have no
// peer and fail with kInvalidArgument. It lets a trainer call the same Comm code paths with no
// launcher and no MPI.
#pragma once

#include <memory>

#include "parallel/comm.h"

namespace strata::parallel {

std::unique_ptr<Comm> CreateLocalComm();

}  // namespace strata::parallel
