#ifdef STRATA_WITH_MPI

#include "parallel/mpi_byte_type.h"

#include <utility>

#include "parallel/mpi_status.h"

namespace strata::parallel {
namespace {

// Frees an intermediate datatype when it goes out of scope; MPI keeps what a committed type
// built from it needs.
struct TypeGuard {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  ~TypeGuard() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};

// q blocks of block_bytes, then the remaining r bytes: a struct of the two, count 1. (The
// BigMPI construction: no int count anywhere exceeds INT_MAX.)
Result<MPI_Datatype> BuildLargeType(uint64_t bytes, uint64_t block_bytes) {
  const uint64_t blocks = bytes / block_bytes;
  const uint64_t rest = bytes % block_bytes;
  STRATA_CHECK(block_bytes <= INT_MAX && blocks <= INT_MAX) << bytes << " bytes in MPI blocks";
  TypeGuard block, body;
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Type_contiguous(static_cast<int>(block_bytes), MPI_BYTE, &block.type), "block type"));
  STRATA_RETURN_IF_ERROR(MpiStatus(
      MPI_Type_contiguous(static_cast<int>(blocks), block.type, &body.type), "body type"));
  MPI_Datatype whole = MPI_DATATYPE_NULL;
  if (rest == 0) {
    std::swap(whole, body.type);
  } else {
    int lengths[2] = {1, static_cast<int>(rest)};
    MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * block_bytes)};
    MPI_Datatype types[2] = {body.type, MPI_BYTE};
    STRATA_RETURN_IF_ERROR(
        MpiStatus(MPI_Type_create_struct(2, lengths, offsets, types, &whole), "struct type"));
  }
  const Status committed = MpiStatus(MPI_Type_commit(&whole), "commit");
  if (!committed.ok()) {
    MPI_Type_free(&whole);
    return committed;
  }
  return whole;
}

}  // namespace

Result<MpiByteType> MpiByteType::Create(uint64_t bytes, uint64_t max_count, uint64_t block_bytes) {
  STRATA_CHECK(max_count <= INT_MAX && block_bytes >= 1) << "MpiByteType limits";
  if (bytes <= max_count) return MpiByteType(static_cast<int>(bytes), MPI_BYTE, false);
  auto type = BuildLargeType(bytes, block_bytes);
  if (!type.ok()) return type.status().with_context(std::to_string(bytes) + "-byte MPI type");
  return MpiByteType(1, *type, true);
}

MpiByteType::MpiByteType(MpiByteType&& other) noexcept
    : count_(other.count_), type_(other.type_), owned_(std::exchange(other.owned_, false)) {}

MpiByteType& MpiByteType::operator=(MpiByteType&& other) noexcept {
  if (this != &other) {
    if (owned_) MPI_Type_free(&type_);
    count_ = other.count_;
    type_ = other.type_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

MpiByteType::~MpiByteType() {
  if (owned_) MPI_Type_free(&type_);
}

}  // namespace strata::parallel

#endif  // STRATA_WITH_MPI
