// LoadCublas and Cublas (cuda_blas.h; Note [cuBLAS loaded on first use]).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "core/device/cuda_blas.h"
#include "core/util/check.h"

namespace strata::cuda {
namespace {

// The cuBLAS this build was compiled against.
std::string Soname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

// The directory (with its trailing '/') of the object that holds cudaGetDeviceCount: the
// libcudart this process loaded, or the object it is linked into statically. Empty when unknown.
std::string CudartDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudaGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// dlopen by soname, then next to libcudart; the reasons of both tries when neither loads.
Result<void*> OpenLibrary() {
  const std::string soname = Soname();
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  std::string reasons = dlerror();
  const std::string directory = CudartDirectory();
  if (!directory.empty()) {
    handle = dlopen((directory + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return handle;
    reasons += "; " + std::string(dlerror());
  }
  return Status::NotSupported(
      "the cuda device needs cuBLAS, and " + soname + " could not be loaded (" + reasons +
      "); install the CUDA toolkit's cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
      " or add its directory to LD_LIBRARY_PATH, or use the sim device");
}

Result<CublasApi> LoadApi() {
  STRATA_ASSIGN_OR_RETURN(void* handle, OpenLibrary());
  CublasApi api;
  std::string missing;
  // The handle is never closed: the functions are called until the process exits.
#define STRATA_CUBLAS_LOOKUP(name, type)                   \
  api.name = reinterpret_cast<type>(dlsym(handle, #name)); \
  if (api.name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  STRATA_CUBLAS_FUNCTIONS(STRATA_CUBLAS_LOOKUP)
#undef STRATA_CUBLAS_LOOKUP
  if (!missing.empty()) {
    return Status::NotSupported("the cuda device needs cuBLAS, and the loaded " + Soname() +
                                " lacks " + missing + "; install the cuBLAS of CUDA " +
                                std::to_string(CUBLAS_VER_MAJOR) + ", or use the sim device");
  }
  return api;
}

// Loaded once per process, on the first call (a function-local static: C++ makes the first
// load race-free), then read-only. Global because a loaded library is process-wide anyway.
const Result<CublasApi>& Loaded() {
  static const Result<CublasApi> loaded = LoadApi();
  return loaded;
}

}  // namespace

Result<const CublasApi*> LoadCublas() {
  const Result<CublasApi>& loaded = Loaded();
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

const CublasApi& Cublas() {
  const Result<CublasApi>& loaded = Loaded();
  STRATA_CHECK(loaded.ok()) << "cuBLAS used before a cuda device loaded it: "
                            << loaded.status().to_string();
  return loaded.value();
}

}  // namespace strata::cuda
