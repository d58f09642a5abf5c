#!/usr/bin/env bash
# Training throughput, Strata vs PyTorch, same model, batch and thread budget, in one run:
#   - strata bench step: tokens/s and the step's GFLOP/s against sgemm peak (measured in the
#     same process, same thread count);
#   - bench/torch_step.py: PyTorch at its best thread split on this machine.
# Prints one JSON object: both rates, strata/torch ratio, gemm fraction, and the targets.
# Usage: bench/step_vs_torch.sh [--model small|tiny|llama-small|llama-tiny] [--batch 8] [--seq 256] [--threads 2] [--steps 5]
#                              [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."
model=small batch=8 seq=256 threads=2 steps=5 rounds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --seq) seq=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "step_vs_torch.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "step_vs_torch.sh: --rounds must be positive" >&2; exit 2; }
strata=${STRATA_BIN:-build/tools/strata}
[[ -x "$strata" ]] || { echo "step_vs_torch.sh: $strata not built; run tools/build.sh" >&2; exit 1; }
case "$model" in
  small) shape=(--n-layer 6 --n-head 6 --n-embd 384 --vocab 256) ;;
  tiny) shape=(--n-layer 2 --n-head 2 --n-embd 32 --vocab 256) ;;
  llama-small) shape=(--arch llama --n-layer 6 --n-head 6 --n-kv-head 2 --n-embd 384 --ffn-dim 1024
                      --vocab 256) ;;
  llama-tiny) shape=(--arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --n-embd 64 --ffn-dim 128
                     --vocab 256) ;;
  *) echo "step_vs_torch.sh: only --model small, tiny, llama-small or llama-tiny have a torch" \
          "twin here" >&2; exit 2 ;;
esac
# The ratio is noisy on this shared machine (PyTorch's rate alone moved 1594 -> 1874 between two
# runs): --rounds rounds alternate the two, and the round with the median ratio is reported with
# every round's ratio beside it.
rounds_json=()
for ((r = 0; r < rounds; ++r)); do
  s=$("$strata" bench step --model "$model" --batch "$batch" --seq "$seq" --threads "$threads" \
        --steps "$steps")
  t=$(/usr/bin/python3 bench/torch_step.py "${shape[@]}" --seq "$seq" --batch "$batch" \
        --threads "$threads" --steps "$steps")
  rounds_json+=("{\"strata\": $s, \"torch\": $t}")
done
/usr/bin/python3 - "${rounds_json[@]}" <<'PY'
import json, sys
rounds = [json.loads(a) for a in sys.argv[1:]]
for r in rounds:
    r["ratio"] = r["strata"]["tokens_per_s"] / r["torch"]["tokens_per_s"]
ordered = sorted(rounds, key=lambda r: r["ratio"])
med = ordered[len(ordered) // 2]
s, t = med["strata"], med["torch"]
out = {"bench": "step_vs_torch", "model": s["model"], "arch": s.get("arch", "gpt2"), "batch": s["batch"], "seq": s["seq"],
       "threads": s["threads"], "rounds": len(rounds),
       "strata_tokens_per_s": s["tokens_per_s"],
       "torch_tokens_per_s": t["tokens_per_s"], "torch_best_setting": t["best_setting"],
       "torch_ratio": med["ratio"],
       "torch_ratio_target": 1.3 if s.get("arch") == "llama" else 1.2,
       "torch_ratio_rounds": [r["ratio"] for r in rounds],
       "gflops": s["gflops"], "gemm_peak_gflops": s["gemm_peak_gflops"],
       "gemm_fraction": s["gemm_fraction"], "gemm_fraction_target": 0.6,
       "gemm_fraction_rounds": [r["strata"]["gemm_fraction"] for r in rounds]}
print(json.dumps(out))
PY
