// The one place a cudaError_t or cublasStatus_t becomes a Status. Included only by .cu files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "core/device/cuda_blas.h"
#include "core/util/status.h"

namespace strata::cuda {

inline Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  std::string msg =
      what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  switch (err) {
    case cudaErrorMemoryAllocation: return Status::ResourceExhausted(std::move(msg));
    case cudaErrorInvalidValue: return Status::InvalidArgument(std::move(msg));
    case cudaErrorHostMemoryAlreadyRegistered: return Status::AlreadyExists(std::move(msg));
    case cudaErrorHostMemoryNotRegistered: return Status::NotFound(std::move(msg));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return Status::NotSupported(std::move(msg));
    default: return Status::Internal(std::move(msg));
  }
}

inline Status BlasStatus(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  // A cuBLAS status comes from a cuBLAS call, so the library is loaded.
  std::string msg = what + ": " + Cublas().cublasGetStatusName(status) + " (" +
                    Cublas().cublasGetStatusString(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return Status::ResourceExhausted(std::move(msg));
  if (status == CUBLAS_STATUS_INVALID_VALUE) return Status::InvalidArgument(std::move(msg));
  return Status::Internal(std::move(msg));
}

}  // namespace strata::cuda
