#!/usr/bin/env bash
# xrlinear.choose held-out (datasets/configs/recommended-text.json) against the same config with its settings as
# written, unigrams and bigrams, side by side on the same threads, per seed: Bibtex and Delicious (mulan),
# WordNet-direct and a WordNet taxonomy whose labels are every ancestor (20k synsets each), Debian's packages with
# their debtags (`xmc dataset build debian` from `apt-cache dumpavail`, where apt is there), and optionally the
# synthetic LF-kind set (XMC_CHOICE_SYNTHETIC=1: 30k labels, 44k training queries). The choice sees only the
# training queries it holds out; the test split is read by the final evaluation alone. Prints one JSON line per
# run (metrics, seconds, the settings chosen), then a markdown table of mean ± sd over seeds.
# Usage: bench/xrlinear_choice.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
# $XMC_BENCH_DIR, default /tmp/xmc-choice; threads: $XMC_THREADS, default 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-choice}
threads=${XMC_THREADS:-2}
db="$work/runs.sqlite"
results="$work/results.jsonl"
config="$here/datasets/configs/recommended-text.json"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
quality_sets
if [ "${XMC_CHOICE_SYNTHETIC:-0}" = 1 ]; then
  [ -f "$work/synthetic-30k/dataset.json" ] ||
    "$xmc" dataset build synthetic --labels 30000 --train 44000 --test 16000 --labels-per-query 5 --seed 1 --out "$work/synthetic-30k" >/dev/null
  sets+=(synthetic-30k)
fi

# run SET MODEL SEED [--set ...]: trains the config, prints one JSON line of metrics, seconds and chosen settings
run() {
  local set=$1 model=$2 seed=$3
  shift 3
  local start end line
  start=$(date +%s.%N)
  line=$("$xmc" train --db "$db" --config "$config" "$@" --set dataset="$work/$set" --set seed="$seed" --set threads="$threads" \
         --set checkpoint.every=0 --json 2>/dev/null | tail -1)
  end=$(date +%s.%N)
  python3 - "$set" "$model" "$seed" "$line" "$start" "$end" "$xmc" "$db" <<'PY'
import json, subprocess, sys
name, model, seed, line, start, end, xmc, db = sys.argv[1:]
j = json.loads(line)
shown = json.loads(subprocess.run([xmc, "runs", "--db", db, "show", str(j["run_id"])], capture_output=True, text=True, check=True).stdout)
chosen = {k.removeprefix("xrlinear."): v["value"] for k, v in shown.get("chosen_settings", {}).items()}
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5"]
print(json.dumps({"set": name, "model": model, "seed": int(seed), "wall_s": round(float(end) - float(start), 2),
                  **{k: round(100 * j[k], 2) for k in keys}, "chosen": chosen}))
PY
}

for set in "${sets[@]}"; do
  for seed in "${seeds[@]}"; do
    run "$set" "unigrams" "$seed" --set xrlinear.choose=none --set xrlinear.ngrams=1 | tee -a "$results"
    run "$set" "bigrams" "$seed" --set xrlinear.choose=none --set xrlinear.ngrams=2 | tee -a "$results"
    run "$set" "chosen on held-out" "$seed" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@5", "wall_s"]
print("| set | config | seeds | " + " | ".join(keys) + " | chosen (n-grams, trees, knn weight) per seed |")
print("|---|---|---|" + "---|" * (len(keys) + 1))
for name in dict.fromkeys(r["set"] for r in rows):
    for model in dict.fromkeys(r["model"] for r in rows if r["set"] == name):
        mine = [r for r in rows if r["set"] == name and r["model"] == model]
        def cell(k):
            values = [r[k] for r in mine]
            return "%.2f ± %.2f" % (statistics.mean(values), statistics.stdev(values)) if len(values) > 1 else "%.2f" % values[0]
        chosen = "; ".join("%g, %g, %g" % (c.get("ngrams", 0), c.get("trees", 0), c.get("knn_weight", -1)) for c in (r["chosen"] for r in mine) if c)
        print("| %s | %s | %d | %s | %s |" % (name, model, len(mine), " | ".join(cell(k) for k in keys), chosen or "as written"))
PY
