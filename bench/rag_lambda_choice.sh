#!/usr/bin/env bash
# RAG's λ configured (0.9, the paper's) against chosen on held-out training queries (rag.lambda_from: held-out), on the
# dense half of the recommended recipe (datasets/configs/recommended-text-dense.json: dexml bow from GloVe, 8 % of the
# training queries held out) with rag.use on, per set and seed. The two runs of a seed train alike (the same held-out
# rows, the same steps): only mode rag's λ differs. Prints one JSON line per run (mode emb's and mode rag's metrics,
# the λ used), then a markdown table of mean ± sd.
# Usage: bench/rag_lambda_choice.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
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
db="$work/rag-lambda.sqlite"
results="$work/rag-lambda-results.jsonl"
vectors="$here/datasets/word-vectors/glove-100d.txt"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
[ -f "$vectors" ] || { echo "no $vectors: run packaging/setup.sh word-vectors first" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
quality_sets
: > "$results"
for set in "${sets[@]}"; do
  for seed in "${seeds[@]}"; do
    for from in config held-out; do
      line=$("$xmc" train --db "$db" --config "$here/datasets/configs/recommended-text-dense.json" --set dataset="$work/$set" --set seed="$seed" \
        --set threads="$threads" --set checkpoint.every=0 --set rag.use=on --set rag.lambda_from="$from" --json 2>/dev/null | tail -1)
      python3 - "$set" "$seed" "$from" "$line" "$xmc" "$db" <<'PY' | tee -a "$results"
import json, subprocess, sys
set_, seed, from_, line, xmc, db = sys.argv[1:]
run = json.loads(line)
shown = json.loads(subprocess.run([xmc, "runs", "--db", db, "show", str(run["run_id"]), "--json"], capture_output=True, text=True).stdout.splitlines()[-1])
chosen = shown.get("chosen_settings", {}).get("rag.lambda", {}).get("value", 0.9)
out = {"set": set_, "seed": int(seed), "lambda_from": from_, "lambda": chosen}
for mode in ("emb", "rag"):
    for k in ("P@1", "P@5", "PSP@5"):
        out[f"{mode}/{k}"] = round(100 * run["modes"][mode if mode != "emb" else "embedding"][k], 2)
print(json.dumps(out))
PY
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| set | λ | emb P@1 | rag P@1 | rag P@5 | rag PSP@5 | λ per seed |")
print("|---|---|---|---|---|---|---|")
def ms(v): return f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
for set_ in dict.fromkeys(r["set"] for r in rows):
    for from_ in ("config", "held-out"):
        g = [r for r in rows if r["set"] == set_ and r["lambda_from"] == from_]
        print(f"| {set_} | {'0.9' if from_ == 'config' else 'chosen'} | {ms([r['emb/P@1'] for r in g])} | {ms([r['rag/P@1'] for r in g])} | "
              f"{ms([r['rag/P@5'] for r in g])} | {ms([r['rag/PSP@5'] for r in g])} | {', '.join(str(r['lambda']) for r in g)} |")
PY
