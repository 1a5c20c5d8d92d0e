#!/usr/bin/env bash
# `xmc train` against the plain PyTorch-Python reference on the same job (bench/train_vs_pytorch.json: bow
# encoder d = 128 over words seen twice, in-batch negatives, decoupled softmax, τ 0.05, batch 512, constant lr 3e-3
# (no warm-up, no decay, no clipping, no dropout: the script has none), 6 epochs, 2 threads,
# then P@1/P@5 over the whole test set with the filter pairs removed), alternated A B A B on one machine.
# Prints per dataset the median whole-process wall times, their ratio (target ≤ 0.5) and both P@1 (target:
# xmc ≥ reference − 0.005), then xmc's training step throughput and its evaluation time from the run's
# scalars, and the evaluation bench (a 16k × 30k evaluation against its bare products).
#
# Needs the reference script (REFERENCE, default ../shared/reference/pytorch_dexml.py) and Debian's
# python3-torch for it (apt-get install python3-torch); it is never a dependency of the product.
# Usage: bench/train_vs_pytorch.sh [build_dir] [rounds]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
rounds=${2:-2}
xmc="$build/app/xmc"
reference=${REFERENCE:-$here/../shared/reference/pytorch_dexml.py}
python=${PYTHON:-/usr/bin/python3}
work=${XMC_BENCH_DIR:-$here/datasets/demo}
db=$(mktemp -d)/bench.sqlite
job="$here/bench/train_vs_pytorch.json"
epochs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['epochs'])" "$job")

[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }
[ -f "$reference" ] || { echo "reference script not found: $reference (set REFERENCE)" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "$python cannot import torch: apt-get install python3-torch" >&2; exit 1; }

wordnet="$work/wordnet-60k"
delicious="$work/delicious"
source "$here/bench/demo_datasets.sh"
demo_wordnet wordnet-60k 60000
demo_mulan delicious

now() { date +%s.%N; }
median() { python3 -c "import statistics,sys; print('%.1f' % statistics.median(map(float, sys.argv[1:])))" "$@"; }

bench_dataset() {  # bench_dataset NAME DIR
  local name=$1 dir=$2 ref_times=() xmc_times=() ref_p1="" xmc_p1="" run_id="" t0 out
  for ((r = 1; r <= rounds; ++r)); do
    t0=$(now)
    out=$("$python" "$reference" "$dir" "$epochs" inbatch decoupled | tail -1)   # "inbatch decoupled (P@1, P@5) s"
    ref_times+=("$(python3 -c "print($(now) - $t0)")")
    ref_p1=$(echo "$out" | sed -E 's/.*\(([0-9.]+), .*/\1/')
    t0=$(now)
    out=$("$xmc" train --config "$job" --set dataset="$dir" --db "$db" --json 2>/dev/null | tail -1)
    xmc_times+=("$(python3 -c "print($(now) - $t0)")")
    xmc_p1=$(python3 -c "import json,sys; print('%.4f' % json.loads(sys.argv[1])['P@1'])" "$out")
    run_id=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$out")
  done
  local ref_wall xmc_wall
  ref_wall=$(median "${ref_times[@]}")
  xmc_wall=$(median "${xmc_times[@]}")
  python3 - "$db" "$run_id" "$name" "$ref_wall" "$xmc_wall" "$ref_p1" "$xmc_p1" <<'PY'
import sqlite3, sys
db, run, name, ref_wall, xmc_wall, ref_p1, xmc_p1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], *map(float, sys.argv[4:])
con = sqlite3.connect(db)
def values(key): return [r[0] for r in con.execute("select value from scalars where run=? and key=?", (run, key))]
rates, evals = values("epoch_queries_per_s"), values("eval_seconds")
print(f"| {name} | {ref_wall:.1f} | {xmc_wall:.1f} | **{xmc_wall / ref_wall:.2f}** | {ref_p1:.4f} | {xmc_p1:.4f} | "
      f"{sum(rates) / max(1, len(rates)):.0f} | {evals[-1] if evals else float('nan'):.1f} |")
PY
}

echo "median of $rounds alternated rounds each, whole-process wall seconds"
echo "| dataset | reference s | xmc s | xmc / reference | reference P@1 | xmc P@1 | xmc step queries/s | xmc evaluation s |"
echo "|---|---|---|---|---|---|---|---|"
bench_dataset "WordNet, --max-items 60000" "$wordnet"
bench_dataset "Delicious (mulan)" "$delicious"
[ -x "$build/bench/bench_evaluation" ] && "$build/bench/bench_evaluation"
