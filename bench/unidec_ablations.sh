#!/usr/bin/env bash
# UniDEC's quality targets, as tables in the paper's ablation style (markdown on stdout):
#   1. The presets against published results on the Extreme Classification Repository's Bibtex and Delicious
#      splits (SLEEC paper, NeurIPS 2015, Table 2), mean and spread over seeds.
#   2. Ablations on WordNet (60k items) and Bibtex, one change at a time from the preset: every inference
#      mode of one run (concat, de, clf); without hard negatives; SupCon instead of decoupled softmax;
#      β ∈ {1, 3, 5}; one direction (q→l) instead of the symmetric loss; the concat weight of the paper (0.5).
# Usage: bench/unidec_ablations.sh [build_dir] [seeds]      (default: build, 3 seeds for the published table)
# Datasets are built or imported into $XMC_BENCH_DIR (default datasets/demo) when missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
seeds=${2:-3}
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-$here/datasets/demo}
db=$(mktemp -d)/ablations.sqlite
[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }

source "$here/bench/demo_datasets.sh"
demo_mulan bibtex
demo_mulan delicious
demo_wordnet wordnet-60k 60000

# train CONFIG DATASET [KEY=VALUE...] -> the --json line of the run
train() {
  local config=$1 dataset=$2
  shift 2
  local sets=(--set "dataset=$dataset" --set eval.every=0 --set checkpoint.every=0 --set tsne.every=0)
  for kv in "$@"; do sets+=(--set "$kv"); done
  "$xmc" train --config "$here/datasets/configs/$config" --db "$db" --json "${sets[@]}" 2>/dev/null | tail -1
}

# row LABEL JSON [MODE] -> "| label | P@1 | P@3 | P@5 |" (in %) for the primary or the named mode
row() {
  python3 - "$@" <<'PY'
import json, sys
label, line = sys.argv[1], sys.argv[2]
j = json.loads(line)
m = j["modes"][sys.argv[3]] if len(sys.argv) > 3 else j
print("| %s | %.2f | %.2f | %.2f |" % (label, 100 * m["P@1"], 100 * m["P@3"], 100 * m["P@5"]))
PY
}

published() {  # dataset config
  local name=$1 config=$2 lines=()
  for ((s = 1; s <= seeds; ++s)); do lines+=("$(train "$config" "$work/$name" seed=$s)"); done
  python3 - "$name" "${lines[@]}" <<'PY'
import json, statistics, sys
name, runs = sys.argv[1], [json.loads(l) for l in sys.argv[2:]]
def cell(mode, k):
    v = [100 * (r if mode == "concat" else r["modes"][mode])["P@%d" % k] for r in runs]
    return "%.2f ± %.2f" % (statistics.mean(v), statistics.pstdev(v))
for mode in ("concat", "de", "clf"):
    print("| %s | unidec %s (%d seeds) | %s | %s | %s |" % (name, mode, len(runs), cell(mode, 1), cell(mode, 3), cell(mode, 5)))
PY
}

echo "## UniDEC presets against published results (P@1 / P@3 / P@5, %)"
echo
echo "| dataset | method | P@1 | P@3 | P@5 |"
echo "|---|---|---|---|---|"
echo "| bibtex | 1-vs-All (published) | 62.62 | 39.09 | 28.79 |"
echo "| bibtex | FastXML (published) | 63.42 | 39.23 | 28.86 |"
echo "| bibtex | SLEEC (published) | 65.08 | 39.64 | 28.87 |"
published bibtex unidec-bow-bibtex.json
echo "| delicious | 1-vs-All (published) | 65.01 | 58.88 | 53.28 |"
echo "| delicious | SLEEC (published) | 67.59 | 61.38 | 56.56 |"
echo "| delicious | FastXML (published) | 69.61 | 64.12 | 59.27 |"
published delicious unidec-bow-delicious.json

ablations() {  # dataset config
  local name=$1 config=$2 base
  echo
  echo "## Ablations on $name (one change from the preset, seed 1; P@1 / P@3 / P@5, %)"
  echo
  echo "| variant | P@1 | P@3 | P@5 |"
  echo "|---|---|---|---|"
  base=$(train "$config" "$work/$name")
  row "preset: concat" "$base" concat
  row "preset: de only" "$base" de
  row "preset: clf only" "$base" clf
  row "concat weight 0.5 (the paper's plain sum)" "$(train "$config" "$work/$name" unidec.concat_weight=0.5)"
  row "no hard negatives (pool = sampled positives)" "$(train "$config" "$work/$name" negatives=inbatch)"
  row "SupCon instead of decoupled softmax" "$(train "$config" "$work/$name" loss=supcon)"
  row "β = 1" "$(train "$config" "$work/$name" psl.positives=1)"
  row "β = 5" "$(train "$config" "$work/$name" psl.positives=5)"
  row "one direction (q→l only)" "$(train "$config" "$work/$name" psl.directions=query_to_label)"
}
ablations bibtex unidec-bow-bibtex.json
ablations wordnet-60k unidec-bow-wordnet.json
