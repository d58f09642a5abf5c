#!/usr/bin/env bash
# Runs the tests that need a GPU (the cuda device, the NCCL backend, the rank-fold kernel) on a
# machine that has one but not this project's Debian packages: a lent GPU machine of another
# distribution, say. Two steps:
#
#   bash tools/gpu_check.sh pack BUILD_DIR BUNDLE.tar.xz   # here, after tools/build.sh
#   bash tools/gpu_check.sh run BUNDLE.tar.xz [OUT_DIR]    # there, as root
#
# `pack` bundles the test binaries and `strata` with the shared libraries they load (all but
# glibc's, the CUDA driver's, NCCL's and cuBLAS's, which the GPU machine brings: cuBLAS alone is
# 570 MB) and OpenMPI's and PMIx's plugin folders. `run` unpacks it, puts OpenMPI's folders where
# Debian's build looks for them (only where nothing is there yet), finds libnccl.so.2 and the
# CUDA 13 cuBLAS (libcublas.so.13, libcublasLt.so.13) on that machine, and runs the GPU tests
# with the reasons of any skip. OpenMPI starts as an isolated singleton (no orted).
set -euo pipefail

readonly kGpuTests='CudaDevice*:CreateDevice.CudaWith*:EachBackend/BackendKernels.*/cuda:EachBackend/BackendGemmKernels.*/cuda:NcclCommGpu*:RankFoldGpu*:CApiDeviceGpu*'  # ctest -L gpu's
readonly kMpiDirs=(/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2
                   /usr/share/openmpi /usr/share/pmix /etc/openmpi)

pack() {
  local build=$1 bundle=$2 stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" "$stage/mpi"
  local bins=("$build/tools/strata" "$build/tests/strata_core_tests"
              "$build/tests/strata_parallel_tests" "$build/tests/strata_embed_tests")
  cp "${bins[@]}" "$(dirname "$0")/../tests/gpu/train_on_gpu.sh" "$stage/bin/"
  ldd "${bins[@]}" | awk '$3 ~ /^\// {print $1, $3}' | sort -u |
    grep -v -E '^(libc|libm|libdl|libpthread|librt|libcuda|libnccl|libcublas|libcublasLt)\.so' |
    while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
  for d in "${kMpiDirs[@]}"; do
    [[ -e $d ]] && tar -C / -cf - "${d#/}" | tar -C "$stage/mpi" -xf -
  done
  tar -C "$stage" -cJf "$bundle" .
  rm -rf "$stage"
  echo "gpu_check: $(du -h "$bundle" | cut -f1) in $bundle"
}

run() {
  local bundle=$1 out=${2:-/tmp/gpu_check} root=/tmp/strata_gpu_bundle
  mkdir -p "$root" "$out"
  tar -C "$root" -xJf "$bundle"
  for d in "${kMpiDirs[@]}"; do
    if [[ ! -e $d && -e $root/mpi$d ]]; then mkdir -p "$(dirname "$d")"; cp -a "$root/mpi$d" "$d"; fi
  done
  local nccl cublas cublaslt
  nccl=$(find / -xdev -name 'libnccl.so.2*' -not -path '/proc/*' 2>/dev/null | head -1 || true)
  [[ -n $nccl ]] || { echo "gpu_check: no libnccl.so.2 on this machine"; return 1; }
  # cuBLAS (570 MB) is not bundled: the GPU machine brings the CUDA 13 one the build links.
  cublas=$(find / -xdev -name 'libcublas.so.13*' -not -path '/proc/*' 2>/dev/null | head -1 || true)
  cublaslt=$(find / -xdev -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -1 ||
             true)
  [[ -n $cublas && -n $cublaslt ]] || {
    echo "gpu_check: no libcublas.so.13 / libcublasLt.so.13 (CUDA 13 cuBLAS) on this machine"
    return 1
  }
  export LD_LIBRARY_PATH="$root/lib:$(dirname "$nccl"):$(dirname "$cublas"):$(dirname "$cublaslt")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMPI_MCA_ess_singleton_isolated=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
  echo "nccl: $nccl" | tee -a "$out/gpu.txt"
  local rc=0
  for t in strata_core_tests strata_parallel_tests strata_embed_tests; do
    "$root/bin/$t" --gtest_filter="$kGpuTests" --gtest_color=no 2>&1 | tee "$out/$t.log" ||
      rc=1
  done
  # Training on the GPU (tests/gpu/README.md): against the sim device (fp32, bf16), run to run,
  # NCCL dp2 and tp2/pp2 (skipped, exit code 77, with one GPU), and the step benchmark per dtype.
  for check in sim_vs_cuda bf16 run_to_run nccl_dp2 nccl_tp2_pp2; do
    local check_rc=0
    bash "$root/bin/train_on_gpu.sh" "$root/bin/strata" "$root/work_$check" "$check" 2>&1 |
      tee "$out/train_$check.log" || check_rc=${PIPESTATUS[0]}
    [[ $check_rc -eq 0 || $check_rc -eq 77 ]] || rc=1
  done
  for dtype in fp32 bf16; do
    "$root/bin/strata" bench step --device cuda --dtype "$dtype" --model small --batch 8 \
      --steps 5 2>&1 | tee "$out/bench_step_cuda_$dtype.json" || rc=1
  done
  return $rc
}

case ${1:-} in
  pack) pack "$2" "$3" ;;
  run) run "$2" "${3:-}" ;;
  *) echo "usage: $0 pack BUILD_DIR BUNDLE.tar.xz | run BUNDLE.tar.xz [OUT_DIR]" >&2; exit 2 ;;
esac
