#!/usr/bin/env bash
# The recommended text recipe with its dense half, against the recommended config alone, per seed: first
# datasets/configs/recommended-text-dense.json (dexml bow from GloVe, 8 % of the training queries held out), then
# recommended-text.json with xrlinear.dense_run set to it (tree, neighbours and the dense run fused, every weight chosen
# on held-out training queries). Sets as bench/xrlinear_choice.sh. Prints one JSON line per recipe and seed (metrics,
# the whole processes' seconds, the dense half's and the chosen settings), then a markdown table of mean ± sd.
# Usage: bench/recommended_dense.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
# $XMC_BENCH_DIR, default /tmp/xmc-choice; threads: $XMC_THREADS, default 2; needs packaging/setup.sh word-vectors)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-choice}
threads=${XMC_THREADS:-2}
db="$work/dense.sqlite"
results="$work/dense-results.jsonl"
vectors="$here/datasets/word-vectors/glove-100d.txt"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
[ -f "$vectors" ] || { echo "no $vectors: run packaging/setup.sh word-vectors first" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
quality_sets

# train SET SEED CONFIG [--set ...]: the run's final JSON line
train() {
  local set=$1 seed=$2 config=$3
  shift 3
  "$xmc" train --db "$db" --config "$here/datasets/configs/$config" "$@" --set dataset="$work/$set" --set seed="$seed" --set threads="$threads" \
    --set checkpoint.every=0 --json 2>/dev/null | tail -1
}

# report SET MODEL SEED SECONDS JSON [DENSE_JSON]
report() {
  python3 - "$@" "$xmc" "$db" <<'PY'
import json, subprocess, sys
args = sys.argv[1:]
xmc, db = args[-2], args[-1]
name, model, seed, seconds, line = args[:5]
dense = json.loads(args[5]) if len(args) > 7 else None
j = json.loads(line)
shown = json.loads(subprocess.run([xmc, "runs", "--db", db, "show", str(j["run_id"])], capture_output=True, text=True, check=True).stdout)
chosen = {k.removeprefix("xrlinear."): v["value"] for k, v in shown.get("chosen_settings", {}).items()}
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5"]
out = {"set": name, "model": model, "seed": int(seed), "wall_s": round(float(seconds), 2), **{k: round(100 * j[k], 2) for k in keys}, "chosen": chosen}
if dense:
    out["dense_P@1"] = round(100 * dense["P@1"], 2)
print(json.dumps(out))
PY
}

for set in "${sets[@]}"; do
  for seed in "${seeds[@]}"; do
    start=$(date +%s.%N)
    alone=$(train "$set" "$seed" recommended-text.json)
    middle=$(date +%s.%N)
    report "$set" "recommended-text" "$seed" "$(echo "$middle - $start" | bc)" "$alone" | tee -a "$results"
    start=$(date +%s.%N)
    dense=$(train "$set" "$seed" recommended-text-dense.json --set encoder.path="$vectors")
    dense_id=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["run_id"])' "$dense")
    fused=$(train "$set" "$seed" recommended-text.json --set xrlinear.dense_run="$dense_id")
    end=$(date +%s.%N)
    report "$set" "recommended-text-dense, then fused" "$seed" "$(echo "$end - $start" | bc)" "$fused" "$dense" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@5", "wall_s"]
print("| set | recipe | seeds | " + " | ".join(keys) + " | chosen per seed |")
print("|---|---|---|" + "---|" * (len(keys) + 1))
for name in dict.fromkeys(r["set"] for r in rows):
    for model in dict.fromkeys(r["model"] for r in rows if r["set"] == name):
        mine = [r for r in rows if r["set"] == name and r["model"] == model]
        def cell(k):
            values = [r[k] for r in mine]
            return "%.2f ± %.2f" % (statistics.mean(values), statistics.stdev(values)) if len(values) > 1 else "%.2f" % values[0]
        chosen = "; ".join(", ".join("%s %g" % (k, v) for k, v in sorted(r["chosen"].items())) for r in mine)
        print("| %s | %s | %d | %s | %s |" % (name, model, len(mine), " | ".join(cell(k) for k in keys), chosen))
PY
