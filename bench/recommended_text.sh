#!/usr/bin/env bash
# datasets/configs/recommended-text.json against xrlinear's defaults, side by side on the same threads, per seed:
# Bibtex and Delicious (mulan), WordNet-direct (`xmc dataset build wordnet --labels direct --min-depth 3`) and a
# synthetic set of the LF kind (30k labels, 44k training and 16k test queries, ~5 labels a query). Prints one
# JSON line per run, then a markdown table of mean ± sd over seeds: P@1/3/5, PSP@1/3/5, training seconds (from
# the run's log: loading to the start of the final evaluation) and wall seconds (the whole process).
# Usage: bench/recommended_text.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
# $XMC_BENCH_DIR, default /tmp/xmc-recommended; threads: $XMC_THREADS, default 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-recommended}
threads=${XMC_THREADS:-2}
db="$work/runs.sqlite"
results="$work/results.jsonl"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
demo_mulan bibtex
demo_mulan delicious
[ -f "$work/wordnet-direct/dataset.json" ] || "$xmc" dataset build wordnet --out "$work/wordnet-direct" --labels direct --min-depth 3 >/dev/null
[ -f "$work/synthetic-30k/dataset.json" ] ||
  "$xmc" dataset build synthetic --labels 30000 --train 44000 --test 16000 --labels-per-query 5 --seed 1 --out "$work/synthetic-30k" >/dev/null

# run SET MODEL SEED [--config FILE | --set ...]: trains, prints one JSON line of metrics and seconds
run() {
  local set=$1 model=$2 seed=$3
  shift 3
  local start end line
  start=$(date +%s.%N)
  line=$("$xmc" train --db "$db" "$@" --set dataset="$work/$set" --set seed="$seed" --set threads="$threads" --set checkpoint.every=0 \
         --json 2>/dev/null | tail -1)
  end=$(date +%s.%N)
  python3 - "$set" "$model" "$seed" "$line" "$start" "$end" "$xmc" "$db" <<'PY'
import json, subprocess, sys
name, model, seed, line, start, end, xmc, db = sys.argv[1:]
j = json.loads(line)
log = json.loads(subprocess.run([xmc, "runs", "--db", db, "show", str(j["run_id"])], capture_output=True, text=True, check=True).stdout)["log"]
evaluating = [e["time"] for e in log if e["message"] == "evaluating"]
train = (evaluating[-1] if evaluating else log[-1]["time"]) - log[0]["time"]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5"]
print(json.dumps({"set": name, "model": model, "seed": int(seed), "train_s": round(train, 2), "wall_s": round(float(end) - float(start), 2),
                  **{k: round(100 * j[k], 2) for k in keys}}))
PY
}

for set in bibtex delicious wordnet-direct synthetic-30k; do
  for seed in "${seeds[@]}"; do
    run "$set" "xrlinear (defaults)" "$seed" --set method=xrlinear | tee -a "$results"
    run "$set" "recommended-text.json" "$seed" --config "$here/datasets/configs/recommended-text.json" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5", "train_s", "wall_s"]
print("| set | model | seeds | " + " | ".join(keys) + " |")
print("|---|---|---|" + "---|" * len(keys))
for name in dict.fromkeys(r["set"] for r in rows):
    for model in dict.fromkeys(r["model"] for r in rows if r["set"] == name):
        mine = [r for r in rows if r["set"] == name and r["model"] == model]
        def cell(k):
            values = [r[k] for r in mine]
            return "%.2f ± %.2f" % (statistics.mean(values), statistics.stdev(values)) if len(values) > 1 else "%.2f" % values[0]
        print("| %s | %s | %d | %s |" % (name, model, len(mine), " | ".join(cell(k) for k in keys)))
PY
