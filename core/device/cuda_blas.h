// cuBLAS, loaded when the first cuda device is created instead of when the process starts.
// Included by .cu files (nvcc, C++17) and by its test.
//
// Note [cuBLAS loaded on first use]
// libcublas.so needs libcublasLt.so (540 MB on disk for CUDA 13), and the loader runs
// cublasLt's initialisers the moment it maps it: that faults in ~150 MB (50 MB of its code,
// 84 MB of written data) in every process that links it, whether or not it ever touches a GPU.
// Linked into libstrata, it was two thirds of the RSS of an embedder using the sim device with a
// 1 MiB pool (docs/embedding.md, "Memory beyond the budgets"). So nothing links cuBLAS:
// CreateCudaDevice calls LoadCublas, which dlopens libcublas.so.<major> once per process, and
// the cuda streams and kernel entries call it through Cublas(). The CUDA runtime (libcudart,
// 0.4 MB at load) stays linked: it loads the driver itself, at the first CUDA call.
// tests/embed/embed_rss_test.c holds the RSS; tests/core/cuda_blas_test.cc the load.
#pragma once

#include <cublas_v2.h>

#include "core/util/status.h"

namespace strata::cuda {

// cublasGemmEx and cublasGemmStridedBatchedEx have C++ overloads in cublas_api.h (inline
// wrappers taking a cudaDataType compute type); these are the exported ones.
using CublasGemmExFunction = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                cublasOperation_t, int, int, int, const void*,
                                                const void*, cudaDataType, int, const void*,
                                                cudaDataType, int, const void*, void*, cudaDataType,
                                                int, cublasComputeType_t, cublasGemmAlgo_t);
using CublasGemmStridedBatchedExFunction = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// Every cuBLAS function Strata calls: its exported name (cublas_v2.h's macros map cublasCreate to
// cublasCreate_v2, and so on) and its pointer type. Add a function here before calling it.
#define STRATA_CUBLAS_FUNCTIONS(X)                                     \
  X(cublasCreate_v2, decltype(&::cublasCreate_v2))                     \
  X(cublasDestroy_v2, decltype(&::cublasDestroy_v2))                   \
  X(cublasSetStream_v2, decltype(&::cublasSetStream_v2))               \
  X(cublasSetMathMode, decltype(&::cublasSetMathMode))                 \
  X(cublasSgemm_v2, decltype(&::cublasSgemm_v2))                       \
  X(cublasSgemmStridedBatched, decltype(&::cublasSgemmStridedBatched)) \
  X(cublasGemmEx, CublasGemmExFunction)                                \
  X(cublasGemmStridedBatchedEx, CublasGemmStridedBatchedExFunction)    \
  X(cublasGetStatusName, decltype(&::cublasGetStatusName))             \
  X(cublasGetStatusString, decltype(&::cublasGetStatusString))

// The loaded functions; every member is non-null once LoadCublas has succeeded.
struct CublasApi {
#define STRATA_CUBLAS_MEMBER(name, type) type name = nullptr;
  STRATA_CUBLAS_FUNCTIONS(STRATA_CUBLAS_MEMBER)
#undef STRATA_CUBLAS_MEMBER
};

// Loads libcublas.so.<CUBLAS_VER_MAJOR> (the cuBLAS this build was compiled against): first by
// soname (LD_LIBRARY_PATH, the caller's RUNPATH, ld.so.cache), then from the directory of the
// libcudart this process runs with, where a toolkit keeps it. The first call loads; later calls
// return its result. NotSupported when the library or one of its functions is missing: the
// message names the file, dlerror's reason and what to install. Any thread; the library stays
// loaded until the process exits.
Result<const CublasApi*> LoadCublas();

// The table LoadCublas loaded. A check fails when it has not succeeded: every cuda device
// loads it at creation, so its streams and kernel entries may call this freely.
const CublasApi& Cublas();

}  // namespace strata::cuda
