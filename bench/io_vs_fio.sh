#!/usr/bin/env bash
# Strata's IoEngine vs fio, side by side in one run, on the same disk, file size, block size and
# queue depth. Prints per pattern the throughput of each and the ratio Strata/fio, then the NVMe
# store's commit latency.
#
#   bench/io_vs_fio.sh DIR [SIZE=4G] [BLOCK=1M] [DEPTH=16]
#   env: STRATA=path/to/strata (default: build/tools/strata), ROUNDS=2 (fio and strata alternate;
#        each pattern's figure is the mean over rounds), PATTERNS=write,read,randwrite,randread
#
# fio runs with ioengine=io_uring, direct=1, fixedbufs=1, registerfiles=1 (what Strata uses),
# one job per pattern in sequence (stonewall), each over the whole file. Both tools write a file
# before reading it, so reads hit the disk rather than unwritten extents.
set -euo pipefail

DIR=${1:?usage: bench/io_vs_fio.sh DIR [SIZE] [BLOCK] [DEPTH]}
SIZE=${2:-4G}
BLOCK=${3:-1M}
DEPTH=${4:-16}
ROUNDS=${ROUNDS:-2}
PATTERNS=${PATTERNS:-write,read,randwrite,randread}
HERE=$(cd "$(dirname "$0")/.." && pwd)
STRATA=${STRATA:-$HERE/build/tools/strata}
PY=/usr/bin/python3

command -v fio >/dev/null || { echo "io_vs_fio: fio is not installed (apt-get install fio)" >&2; exit 1; }
[ -x "$STRATA" ] || { echo "io_vs_fio: $STRATA is not built; set STRATA=path/to/strata" >&2; exit 1; }
[ -d "$DIR" ] || { echo "io_vs_fio: $DIR is not a directory" >&2; exit 1; }

WORK=$(mktemp -d "$DIR/io_vs_fio.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

run_fio() {  # $1: output json
  local args=(--output-format=json --filename="$WORK/fio.dat" --size="$SIZE" --bs="$BLOCK"
              --iodepth="$DEPTH" --ioengine=io_uring --direct=1 --fixedbufs=1 --registerfiles=1
              --numjobs=1 --group_reporting=0)
  local first=1
  for p in ${PATTERNS//,/ }; do
    if [ "$first" = 1 ] && [[ "$p" != *write* ]]; then
      args+=(--name=layout --rw=write --stonewall)  # reads need written blocks
    fi
    first=0
    args+=(--name="$p" --rw="$p" --stonewall)
  done
  fio "${args[@]}" > "$1"
  rm -f "$WORK/fio.dat"
}

run_strata() {  # $1: output json lines; commit latency only in the last round
  local commits=$2
  "$STRATA" bench io --dir "$WORK" --size "$SIZE" --block "$BLOCK" --depth "$DEPTH" \
    --rw "$PATTERNS" --commits "$commits" --json > "$1"
}

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: fio" >&2
  run_fio "$WORK/fio.$r.json"
  echo "round $r/$ROUNDS: strata" >&2
  run_strata "$WORK/strata.$r.jsonl" $([ "$r" = "$ROUNDS" ] && echo 200 || echo 0)
done

"$PY" - "$WORK" "$ROUNDS" "$PATTERNS" "$SIZE" "$BLOCK" "$DEPTH" <<'PYEOF'
import json, sys
work, rounds, patterns, size, block, depth = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), *sys.argv[4:]
fio, strata, commit = {}, {}, None
for r in range(1, rounds + 1):
    for job in json.load(open(f"{work}/fio.{r}.json"))["jobs"]:
        name = job["jobname"]
        if name == "layout":
            continue
        bw = job["write" if "write" in name else "read"]["bw_bytes"]
        fio.setdefault(name, []).append(bw)
    for line in open(f"{work}/strata.{r}.jsonl"):
        j = json.loads(line)
        if j["rw"] == "commit":
            commit = j
        else:
            strata.setdefault(j["rw"], []).append(j["bytes_per_s"])
mean = lambda v: sum(v) / len(v)
target = {"write": 0.95, "read": 0.95, "randwrite": 0.90, "randread": 0.90}
print(f"# Strata IoEngine vs fio: size {size}, block {block}, depth {depth}, mean of {rounds} rounds")
print(f"{'pattern':<10} {'strata MiB/s':>13} {'fio MiB/s':>10} {'ratio':>6} {'target':>7}")
for p in patterns:
    s, f = mean(strata[p]), mean(fio[p])
    ratio = s / f
    mark = "ok" if ratio >= target[p] else "BELOW"
    print(f"{p:<10} {s / 2**20:13.1f} {f / 2**20:10.1f} {ratio:6.3f} {'>=' + str(target[p]):>7} {mark}")
if commit:
    print(f"commit ({commit['commits']} commits of {commit['pages_per_commit']} pages of "
          f"{commit['page_bytes']} B): sync WriteBatch p50 {commit['catalog_p50_us']:.0f} us, "
          f"p99 {commit['catalog_p99_us']:.0f} us; whole commit (writes + fdatasync + batch) "
          f"p50 {commit['commit_p50_us']:.0f} us, p99 {commit['commit_p99_us']:.0f} us")
PYEOF
