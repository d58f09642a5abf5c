#!/usr/bin/env bash
# The training checks of the `gpu` label (tests/gpu/README.md): `strata train --device cuda`
# against the sim device, against itself, and with two NCCL ranks. Exit 77 (ctest: skipped) with
# the reason when the machine lacks what a check needs; 0 when it holds; 1 when it does not.
#
#   train_on_gpu.sh STRATA_BIN WORKDIR sim_vs_cuda|bf16|run_to_run|nccl_dp2|nccl_tp2_pp2
set -euo pipefail

readonly strata=$1 work=$2 check=$3
readonly kSkip=77
# A small paged run that moves pages every step: parameters and optimizer state on NVMe.
readonly kPaged=(--model tiny --batch 4 --seq 64 --steps 5 --threads 2 --page-size 16K
                 --engine paged --host-mem 160K --params-on nvme --optimizer-on nvme)

gpus() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }

# The losses of a --log-json file, one per line, as printed (enough digits to read back exactly).
losses() { grep -o '"loss":[^,}]*' "$1" | cut -d: -f2; }

train() {  # train NAME DEVICE [flags...]: writes $work/NAME.jsonl
  local name=$1 device=$2
  shift 2
  mkdir -p "$work/$name.nvme"
  "$strata" train "${kPaged[@]}" --nvme-dir "$work/$name.nvme" --device "$device" \
    --log-json "$work/$name.jsonl" "$@" 2> "$work/$name.err" ||
    { echo "FAIL: strata train ($name, --device $device):"; tail -5 "$work/$name.err"; exit 1; }
}

need_two_gpus() {  # need_two_gpus CHECK: exit 77 (skip) unless 2 GPUs and mpirun are here
  if [[ $(gpus) -lt 2 ]]; then
    echo "SKIP: the $1 check needs 2 GPUs (NCCL runs one rank per GPU); found $(gpus)"
    exit $kSkip
  fi
  command -v mpirun > /dev/null || { echo "SKIP: no mpirun on this machine"; exit $kSkip; }
}

train_ranks() {  # train_ranks NAME [flags...]: 2 ranks over NCCL, one GPU each; $work/NAME.jsonl
  local name=$1
  shift
  mkdir -p "$work/$name.nvme"
  timeout 600 mpirun --allow-run-as-root --oversubscribe -np 2 "$strata" train "${kPaged[@]}" \
    --nvme-dir "$work/$name.nvme" --device cuda --comm nccl --log-json "$work/$name.jsonl" "$@" \
    2> "$work/$name.err" ||
    { echo "FAIL: mpirun -np 2 strata train --comm nccl $*:"; tail -5 "$work/$name.err"; exit 1; }
}

# within A B TOL: every step's loss of run B within TOL relative of run A's, at least 5 steps.
within() { bash "$(dirname "$0")/loss_diff.sh" "$work/$1.jsonl" "$work/$2.jsonl" "$3" "$1" "$2"; }

rm -rf "$work" && mkdir -p "$work"
if [[ $(gpus) -lt 1 ]]; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi lists none); these checks run on a GPU machine"
  exit $kSkip
fi

case $check in
  sim_vs_cuda)
    # fp32 on both: every step's loss within 1e-5 relative (reductions differ in order).
    train sim sim
    train cuda cuda
    within sim cuda 1e-5
    ;;
  bf16)
    # --dtype bf16 (Note [bf16 compute]): the tensor cores against the CPU's bf16 kernels, whose
    # sums differ in order only (a last-bit difference can move one later bf16 rounding, hence
    # bf16's tolerance), and two GPU runs give the same bits.
    train sim_bf16 sim --dtype bf16
    train cuda_bf16 cuda --dtype bf16
    train cuda_bf16_again cuda --dtype bf16
    within sim_bf16 cuda_bf16 1e-3
    cmp -s <(losses "$work/cuda_bf16.jsonl") <(losses "$work/cuda_bf16_again.jsonl") ||
      { echo "FAIL: two bf16 GPU runs gave different losses"; exit 1; }
    echo "PASS: two bf16 GPU runs bit-identical"
    ;;
  run_to_run)
    # No atomics in any reduction: two GPU runs give the same bits.
    train first cuda
    train second cuda
    if cmp -s <(losses "$work/first.jsonl") <(losses "$work/second.jsonl"); then
      echo "PASS: $(losses "$work/first.jsonl" | wc -l) losses bit-identical over two runs"
    else
      echo "FAIL: two GPU runs gave different losses"
      paste <(losses "$work/first.jsonl") <(losses "$work/second.jsonl")
      exit 1
    fi
    ;;
  nccl_dp2)
    # Two data-parallel ranks over NCCL, one GPU each (NCCL refuses two ranks on one GPU), must
    # give the single-rank losses within 1e-5 relative.
    need_two_gpus "NCCL dp2"
    train one cuda
    train_ranks dp2_none --dp 2 --shard none
    train_ranks dp2_all --dp 2 --shard all
    train_ranks dp2_split --dp 2 --shard all --split-ops 2
    for name in dp2_none dp2_all dp2_split; do within one "$name" 1e-5; done
    ;;
  nccl_tp2_pp2)
    # Two tensor-parallel ranks, then two pipeline stages, over NCCL groups (ncclCommSplit), one
    # GPU each: each within 1e-5 relative of one rank's losses.
    need_two_gpus "NCCL tp2/pp2"
    train one cuda
    train_ranks tp2 --tp 2
    train_ranks pp2 --pp 2
    for name in tp2 pp2; do within one "$name" 1e-5; done
    ;;
  *) echo "usage: $0 STRATA_BIN WORKDIR sim_vs_cuda|bf16|run_to_run|nccl_dp2|nccl_tp2_pp2" >&2; exit 2 ;;
esac
