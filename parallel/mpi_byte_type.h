// MpiByteType: `bytes` bytes as one (count, datatype) pair for MPI calls, whose counts are ints.
// Up to INT_MAX bytes it is (bytes, MPI_BYTE); above, one derived datatype of exactly `bytes`
// bytes (count 1) whose extent is also `bytes`, so that the i-th element of a gather or an
// all-to-all still starts at i * bytes. The type signature is a sequence of MPI_BYTE either way,
// so a receiver may use the other form for the same byte count.
// Only compiled with MPI (STRATA_WITH_MPI). Owned by the thread that created it.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>

#include "core/util/status.h"

namespace strata::parallel {

class MpiByteType {
 public:
  // max_count and block_bytes are parameters so that a test can take the derived-type path with
  // small buffers; callers use the defaults. Errors: MPI's (kAborted).
  static Result<MpiByteType> Create(uint64_t bytes, uint64_t max_count = INT_MAX,
                                    uint64_t block_bytes = uint64_t{1} << 30);

  MpiByteType(MpiByteType&& other) noexcept;
  MpiByteType& operator=(MpiByteType&& other) noexcept;
  MpiByteType(const MpiByteType&) = delete;
  MpiByteType& operator=(const MpiByteType&) = delete;
  ~MpiByteType();

  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  MpiByteType(int count, MPI_Datatype type, bool owned)
      : count_(count), type_(type), owned_(owned) {}

  int count_ = 0;
  MPI_Datatype type_ = MPI_BYTE;
  bool owned_ = false;  // a derived type that the destructor frees
};

}  // namespace strata::parallel
