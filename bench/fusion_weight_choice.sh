#!/usr/bin/env bash
# The fusion weight of xrlinear with a dense run, fixed against chosen on held-out training queries
# (`xrlinear.fusion_weight_from: held-out`). Per set and seed: a unidec preset run holding out 5 % of the training
# queries (`unidec.concat_holdout=0.05`, where it also chooses its concat weight), then two xrlinear runs fused with
# it: the fixed default weight (0.95, rankers on every training query) and the weight chosen on the unidec run's
# held-out queries (the rankers leave them out too). Prints one JSON line per run, then a markdown table of mean ±
# sd over seeds of P@1/3/5 and PSP@1/5 for the dense run, the tree, and both fusions, with the chosen weights.
# Usage: bench/fusion_weight_choice.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
# $XMC_BENCH_DIR, default /tmp/xmc-fusion-weight; sets: $XMC_SETS, default "bibtex delicious", also wordnet-direct
# and synthetic-30k, which train the unidec-bow-wordnet preset; threads 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-fusion-weight}
sets=(${XMC_SETS:-bibtex delicious})
db="$work/runs.sqlite"
results="$work/results.jsonl"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "the sqlite3 command reads the chosen weights: apt-get install sqlite3" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
for set in "${sets[@]}"; do
  case $set in
    bibtex | delicious) demo_mulan "$set" ;;
    wordnet-direct)
      [ -f "$work/$set/dataset.json" ] || "$xmc" dataset build wordnet --out "$work/$set" --labels direct --min-depth 3 >/dev/null ;;
    synthetic-30k)
      [ -f "$work/$set/dataset.json" ] ||
        "$xmc" dataset build synthetic --labels 30000 --train 44000 --test 16000 --labels-per-query 5 --seed 1 --out "$work/$set" >/dev/null ;;
    *) echo "unknown set $set (bibtex, delicious, wordnet-direct, synthetic-30k)" >&2; exit 1 ;;
  esac
done
preset() { case $1 in bibtex | delicious) echo "$here/datasets/configs/unidec-bow-$1.json" ;; *) echo "$here/datasets/configs/unidec-bow-wordnet.json" ;; esac; }

train() { "$xmc" train --db "$db" --set threads=2 --set checkpoint.every=0 --json "$@" 2>/dev/null | tail -1; }
chosen() { sqlite3 "$db" "select value from scalars where run=$1 and key='chosen/xrlinear.fusion_weight' order by step desc limit 1"; }
for set in "${sets[@]}"; do
  for seed in "${seeds[@]}"; do
    dense=$(train --config "$(preset "$set")" --set dataset="$work/$set" --set seed="$seed" --set unidec.concat_holdout=0.05)
    id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$dense")
    fixed=$(train --set method=xrlinear --set dataset="$work/$set" --set seed="$seed" --set xrlinear.dense_run="$id")
    held=$(train --set method=xrlinear --set dataset="$work/$set" --set seed="$seed" --set xrlinear.dense_run="$id" \
           --set xrlinear.fusion_weight_from=held-out)
    weight=$(chosen "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$held")")
    python3 - "$set" "$seed" "$dense" "$fixed" "$held" "$weight" >>"$results" <<'PY'
import json, sys
name, seed, dense, fixed, held, weight = sys.argv[1], int(sys.argv[2]), *map(json.loads, sys.argv[3:6]), float(sys.argv[6])
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@5"]
rows = {"unidec preset, 5 % held out (concat)": dense, "xrlinear (tree)": fixed["modes"]["tree"],
        "fused, weight 0.95": fixed["modes"]["fused"], "fused, weight chosen on held-out queries": held["modes"]["fused"]}
for run, m in rows.items():
    out = {"set": name, "seed": seed, "run": run, **{k: 100 * m[k] for k in keys}}
    if run.startswith("fused, weight chosen"): out["weight"] = weight
    print(json.dumps(out))
PY
    tail -4 "$results"
  done
done

python3 - "$results" "${sets[@]}" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@5"]
print("| set | run | " + " | ".join(keys) + " | chosen weights |")
print("|---" * (len(keys) + 3) + "|")
for name in sys.argv[2:]:
    runs = [r for r in rows if r["set"] == name]
    for run in dict.fromkeys(r["run"] for r in runs):
        group = [r for r in runs if r["run"] == run]
        cells = [f"{st.mean(r[k] for r in group):.2f} ± {st.stdev(r[k] for r in group) if len(group) > 1 else 0:.2f}" for k in keys]
        weights = ", ".join(f"{r['weight']:.2f}" for r in group if "weight" in r)
        print(f"| {name} | {run} | " + " | ".join(cells) + f" | {weights} |")
PY
