#!/usr/bin/env bash
# Runs the tests that need a GPU (the cuda device, the NCCL backend, the rank-fold kernel), the
# training checks and the CUDA benchmarks on a machine that has one but not this project's Debian
# packages: a lent GPU machine of another distribution, say. Two steps:
#
#   bash tools/gpu_check.sh pack BUILD_DIR BUNDLE.tar.xz          # here, after tools/build.sh
#   bash tools/gpu_check.sh run BUNDLE.tar.xz [OUT_DIR [STEP...]]  # there, as root
#
# `pack` bundles the test binaries and `strata` with the shared libraries they load (all but
# glibc's, the CUDA driver's, NCCL's and cuBLAS's, which the GPU machine brings: cuBLAS alone is
# 570 MB) and OpenMPI's and PMIx's plugin folders. `run` unpacks it, puts OpenMPI's folders where
# Debian's build looks for them (only where nothing is there yet), finds libnccl.so.2 and the
# CUDA 13 cuBLAS (libcublas.so.13, libcublasLt.so.13) on that machine, and runs the steps
# (tests/gpu/README.md says what each is), each under its own timeout, logging to OUT_DIR.
# OpenMPI starts as an isolated singleton (no orted).
set -euo pipefail

readonly kMpiDirs=(/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2
                   /usr/share/openmpi /usr/share/pmix /etc/openmpi)

pack() {
  local build=$1 bundle=$2 stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" "$stage/mpi"
  # strata and the test binaries of the gpu label's gtest entries (tests/gpu/gtest_filters.txt).
  local bins=("$build/tools/strata") module
  for module in $(grep '^[a-z]' "$(dirname "$0")/../tests/gpu/gtest_filters.txt" | cut -d' ' -f1); do
    bins+=("$build/tests/strata_${module}_tests")
  done
  cp "${bins[@]}" "$(dirname "$0")"/../tests/gpu/{train_on_gpu,loss_diff}.sh \
    "$(dirname "$0")/demo.sh" "$stage/bin/"
  ldd "${bins[@]}" | awk '$3 ~ /^\// {print $1, $3}' | sort -u |
    grep -v -E '^(libc|libm|libdl|libpthread|librt|libcuda|libnccl|libcublas|libcublasLt)\.so' |
    while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
  for d in "${kMpiDirs[@]}"; do
    [[ -e $d ]] && tar -C / -cf - "${d#/}" | tar -C "$stage/mpi" -xf -
  done
  realpath "$build/tools/strata" > "$stage/strata_binary_path"
  tar -C "$stage" -cJf "$bundle" .
  rm -rf "$stage"
  echo "gpu_check: $(du -h "$bundle" | cut -f1) in $bundle"
}

# step NAME SECONDS CMD...: runs CMD under a timeout, its output in $out/NAME.log; one line per
# step in $out/summary.txt (name, exit status, seconds), so a run cut short still says how far it got.
step() {
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  echo "=== $name (limit ${limit}s): $*" | tee "$out/$name.log"
  timeout --kill-after=5 "$limit" "$@" >> "$out/$name.log" 2>&1 || rc=$?
  tail -4 "$out/$name.log"
  printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$out/summary.txt"
  [[ $rc -eq 0 || $rc -eq 77 ]] || failed=1
}

# run BUNDLE OUT [STEP...]: the steps (default all): tests train demo step trace reference offload;
# `profile` (Nsight Compute over one step) and `scale` (gpt2-xl, 8x --gpu-mem) only when named.
run() {
  local bundle=$1 root=/tmp/strata_gpu_bundle
  out=${2:-/tmp/gpu_check}
  shift 2 || shift $#
  local steps=${*:-tests train demo step trace reference offload}
  work=/tmp/strata_gpu_work failed=0
  mkdir -p "$root" "$out" "$work"
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
  # The tools tests run the strata binary at the path the build machine compiled into them.
  if [[ -f $root/strata_binary_path ]]; then
    local compiled
    compiled=$(cat "$root/strata_binary_path")
    [[ -e $compiled ]] || { mkdir -p "$(dirname "$compiled")"; ln -s "$root/bin/strata" "$compiled"; }
  fi
  { date -u "+%F %T UTC"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    echo "nccl: $nccl"; echo "cublas: $cublas"; nproc; } 2>&1 | tee "$out/gpu.txt" || true
  local here
  here=$(cd "$(dirname "$0")/.." && pwd)
  for s in $steps; do
    case $s in
      tests)
        # ctest -L gpu's entries (tests/gpu/gtest_filters.txt): module, seconds, filter.
        local entries entry module limit filter
        mapfile -t entries < <(grep '^[a-z]' "$here/tests/gpu/gtest_filters.txt")
        for entry in "${entries[@]}"; do
          read -r module limit filter <<< "$entry"
          [[ -x $root/bin/strata_${module}_tests ]] || continue
          step "gtest_$module" "$limit" "$root/bin/strata_${module}_tests" --gtest_filter="$filter" \
            --gtest_color=no
        done
        ;;
      train)
        # Training on the GPU (tests/gpu/README.md): against the sim device (fp32, bf16), run to
        # run, NCCL dp2 and tp2/pp2 (skipped, exit code 77, with one GPU).
        for check in sim_vs_cuda bf16 run_to_run nccl_dp2 nccl_tp2_pp2; do
          step "train_$check" 120 bash "$root/bin/train_on_gpu.sh" "$root/bin/strata" "$work/$check" "$check"
        done
        ;;
      reference)
        for dtype in fp32 bf16; do
          step "reference_$dtype" 180 python3 "$here/tests/reference/gpt2_reference.py" compare \
            --device cuda --dtype "$dtype" --strata "$root/bin/strata" --workdir "$work/reference_$dtype"
        done
        ;;
      demo)
        # The sim run's losses may come from the build machine (DEMO_SIM_JSONL): they do not
        # depend on the machine, and the GPU's time is short.
        local devices="sim cuda"
        if [[ -n ${DEMO_SIM_JSONL:-} ]]; then cp "$DEMO_SIM_JSONL" "$out/demo_sim.jsonl"; devices=cuda; fi
        for device in $devices; do
          step "demo_$device" 240 env STRATA_DEMO_NO_BUILD=1 STRATA_DEMO_BIN="$root/bin/strata" \
            STRATA_DEMO_NVME_DIR="$work/demo_$device" bash "$root/bin/demo.sh" --device "$device" \
            --log-json "$out/demo_$device.jsonl"
        done
        # Within 1e-4 relative: the tolerance the README states for this comparison.
        step demo_compare 10 bash "$root/bin/loss_diff.sh" "$out/demo_sim.jsonl" \
          "$out/demo_cuda.jsonl" 1e-4 sim cuda
        ;;
      step)
        # Model FLOP utilisation: gpt2 and gpt2-medium at batch x 1024 tokens, fp32 and bf16.
        for model in gpt2 gpt2-medium; do
          for dtype in fp32 bf16; do
            step "bench_step_${model}_$dtype" 120 "$root/bin/strata" bench step --device cuda \
              --dtype "$dtype" --model "$model" --batch 8 --seq 1024 --steps 5 --warmup-steps 2
          done
        done
        step bench_step_gpt2_bf16_b16 120 "$root/bin/strata" bench step --device cuda --dtype bf16 \
          --model gpt2 --batch 16 --seq 1024 --steps 5 --warmup-steps 2
        ;;
      trace)
        for dtype in fp32 bf16; do
          step "trace_gpt2_$dtype" 120 "$root/bin/strata" train --device cuda --dtype "$dtype" \
            --model gpt2 --batch 8 --seq 1024 --steps 2 --trace "$out/trace_gpt2_$dtype.json"
        done
        ;;
      profile)
        # Where a GPT-2 step's GPU time goes: every kernel of one step of a one-block gpt2
        # (batch 8 x 1024) timed by Nsight Compute (one metric, the clocks left alone), and the
        # same run's step time without it (the difference is the GPU idle between kernels).
        local ncu
        ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
        for dtype in fp32 bf16; do
          local one_block=("$root/bin/strata" train --device cuda --dtype "$dtype" --model gpt2
                           --n-layer 1 --batch 8 --seq 1024 --engine memory)
          step "steptime_gpt2_1block_$dtype" 60 "${one_block[@]}" --steps 6
          if [[ -n $ncu ]]; then
            step "profile_gpt2_1block_$dtype" 120 "$ncu" --clock-control none --csv --page raw \
              --metrics gpu__time_duration.sum,launch__grid_size "${one_block[@]}" --steps 1
          fi
        done
        ;;
      scale)
        # States far beyond --gpu-mem on the host tier vs the same run in GPU memory: gpt2-xl
        # (25 GB of state) under --gpu-mem 3G (8.3x), 16 rows of 1024 tokens a step in
        # micro-batches of one, every block recomputed, in both runs.
        local xl=("$root/bin/strata" train --device cuda --model gpt2-xl --batch 16 --micro-batch 1
                  --seq 1024 --recompute all --steps 3)
        step scale_memory 100 "${xl[@]}" --engine memory --log-json "$out/scale_memory.jsonl"
        step scale_paged 100 "${xl[@]}" --gpu-mem 3G --log-json "$out/scale_paged.jsonl"
        ;;
      offload)
        mkdir -p "$work/offload_nvme"
        step bench_offload_cuda 240 "$root/bin/strata" bench offload --device cuda \
          --nvme-dir "$work/offload_nvme" ${OFFLOAD_FLAGS:-}
        ;;
      *) echo "gpu_check: unknown step $s" >&2; return 2 ;;
    esac
  done
  cat "$out/summary.txt"
  return $failed
}

case ${1:-} in
  pack) pack "$2" "$3" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 pack BUILD_DIR BUNDLE.tar.xz | run BUNDLE.tar.xz [OUT_DIR [STEP...]]" >&2; exit 2 ;;
esac
