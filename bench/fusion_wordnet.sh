#!/usr/bin/env bash
# Dense and sparse together on WordNet-direct (`xmc dataset build wordnet --labels direct --min-depth 3`), per
# seed: a unidec-bow-wordnet run, then xrlinear (bigrams) fused with it (`xrlinear.dense_run`), whose run also
# reports the tree alone (mode "tree"). Prints one markdown row per run and seed, then mean ± sd over seeds of
# P@1/3/5 and PSP@1/3/5, and each run's wall time.
# Usage: bench/fusion_wordnet.sh [build_dir] [seeds...]   (default: build, seeds 1 2 3; data and store in
# $XMC_BENCH_DIR, default /tmp/xmc-fusion)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-fusion}
data="$work/wn-direct"
db="$work/runs.sqlite"
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
[ -f "$data/dataset.json" ] || "$xmc" dataset build wordnet --out "$data" --labels direct --min-depth 3 >/dev/null
results="$work/results.jsonl"
for seed in "${seeds[@]}"; do
  start=$(date +%s.%N)
  dense=$("$xmc" train --db "$db" --config "$here/datasets/configs/unidec-bow-wordnet.json" --set dataset="$data" --set seed="$seed" \
          --set threads=2 --json 2>/dev/null | tail -1)
  middle=$(date +%s.%N)
  id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$dense")
  fused=$("$xmc" train --db "$db" --set method=xrlinear --set dataset="$data" --set xrlinear.ngrams=2 --set xrlinear.dense_run="$id" \
          --set seed="$seed" --set threads=2 --json 2>/dev/null | tail -1)
  end=$(date +%s.%N)
  python3 - "$seed" "$dense" "$fused" "$start" "$middle" "$end" >>"$results" <<'PY'
import json, sys
seed, dense, fused = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
start, middle, end = map(float, sys.argv[4:])
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5"]
rows = {"unidec-bow-wordnet (concat)": (dense, middle - start), "xrlinear bigrams (tree)": (fused["modes"]["tree"], end - middle),
        "xrlinear fused with the unidec run": (fused["modes"]["fused"], end - start)}
for name, (m, seconds) in rows.items():
    print(json.dumps({"seed": int(seed), "run": name, "seconds": round(seconds, 1), **{k: 100 * m[k] for k in keys}}))
PY
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
keys = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5"]
print("| run | seeds | " + " | ".join(keys) + " | wall s |")
print("|---|---|" + "---|" * (len(keys) + 1))
for name in dict.fromkeys(r["run"] for r in rows):
    mine = [r for r in rows if r["run"] == name]
    def cell(k):
        values = [r[k] for r in mine]
        return "%.2f ± %.2f" % (statistics.mean(values), statistics.stdev(values)) if len(values) > 1 else "%.2f" % values[0]
    print("| %s | %d | %s | %s |" % (name, len(mine), " | ".join(cell(k) for k in keys), cell("seconds")))
PY
