#!/usr/bin/env bash
# Training comparisons at equal epochs (issue figures), run with the built `xmc`:
#   clustered vs random batches (NGAME's claim) and decoupled softmax vs softmax (DEXML's Table 11 direction)
#   on the WordNet demo set and on mulan Delicious. Prints a markdown table; runs land in $DB.
# Usage: bench/compare_methods.sh [build_dir] [epochs]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
epochs=${2:-10}
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-$here/datasets/demo}
db=${DB:-$work/bench-runs.sqlite}
wordnet="$work/wordnet-20k"
delicious="$work/delicious"

source "$here/bench/demo_datasets.sh"
demo_wordnet wordnet-20k 20000
[ ! -d "$here/../shared/datasets/mulan/delicious" ] || demo_mulan delicious

metric() {  # metric JSON KEY -> percent with 2 decimals
  python3 -c "import json,sys; print('%.2f' % (100*json.loads(sys.argv[1])[sys.argv[2]]))" "$1" "$2"
}
rate() {  # mean epoch_queries_per_s of a run
  "$xmc" runs --db "$db" show "$1" --json >/dev/null
  python3 - "$db" "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = [r[0] for r in con.execute("select value from scalars where run=? and key='epoch_queries_per_s'", (int(sys.argv[2]),))]
print('%.0f' % (sum(rows) / len(rows)) if rows else 'n/a')
PY
}

train() {  # train NAME DATASET SETTINGS... -> prints a table row
  local name=$1 data=$2
  shift 2
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  local out
  out=$("$xmc" train --db "$db" --set dataset="$data" --set epochs="$epochs" --set eval.every=0 \
        --set name="$name" "${sets[@]}" --json 2>/dev/null | tail -n 1)
  local id
  id=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$out")
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(basename "$data")" "$(metric "$out" P@1)" "$(metric "$out" P@5)" \
    "$(metric "$out" PSP@5)" "$(rate "$id")" "$id"
}

echo "| run | dataset | P@1 | P@5 | PSP@5 | queries/s | run id |"
echo "|---|---|---|---|---|---|---|"
only=${ONLY:-all}  # all | wordnet | delicious
common=(method=dexml encoder.type=bow encoder.dim=256 batch_size=256 lr=0.005 seed=1)
if [ "$only" != delicious ]; then
train "dexml decoupled softmax, random batches" "$wordnet" "${common[@]}" loss=decoupled_softmax sampler.type=random
train "dexml softmax, random batches" "$wordnet" "${common[@]}" loss=softmax sampler.type=random
train "dexml decoupled softmax, clustered batches" "$wordnet" "${common[@]}" loss=decoupled_softmax sampler.type=cluster sampler.cluster_size=16
ngame=(method=ngame loss=triplet encoder.type=bow encoder.dim=256 batch_size=256 lr=0.005 seed=1 ngame.m4_epochs=0)
train "ngame M1 triplet, random batches" "$wordnet" "${ngame[@]}" sampler.type=random
train "ngame M1 triplet, clustered batches" "$wordnet" "${ngame[@]}" sampler.type=cluster sampler.cluster_size=16
fi
if [ "$only" != wordnet ] && [ -f "$delicious/dataset.json" ]; then
  train "dexml decoupled softmax" "$delicious" "${common[@]}" loss=decoupled_softmax
  train "dexml softmax" "$delicious" "${common[@]}" loss=softmax
fi
