#!/usr/bin/env bash
# IRENE's targets, in the style of the IRENE paper's Table 2: on zero-shot splits of WordNet (60k items) and
# Delicious, a unidec base run, then irene with the weighted-sum and the transformer generator on it. Prints
# markdown: zero-shot (novel labels only, test rows with a novel positive) and generalized (all labels, all
# test rows) P@1, P@5, R@10, R@100 of each generator beside the base run's own novel-label vectors, the base
# run's own P@1 (its clf mode, all labels), and the cost of adding labels at run time.
# Usage: bench/irene_zero_shot.sh [build_dir] [delicious] [wordnet-60k]   (both by default; datasets are made in
# $XMC_BENCH_DIR, default datasets/demo)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(delicious wordnet-60k)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-$here/datasets/demo}
db=$(mktemp -d)/irene.sqlite
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
demo_wordnet wordnet-60k 60000
demo_mulan delicious
split() {  # name val_frac
  [ -f "$work/$1-zs/dataset.json" ] || "$xmc" dataset split-zeroshot --in "$work/$1" --out "$work/$1-zs" --novel-frac 0.1 --val-frac "$2" --seed 0 >/dev/null
}
split wordnet-60k 0.02
split delicious 0.05
json() { "$xmc" train --db "$db" --json "$@" 2>/dev/null | tail -1; }

table() {  # name preset
  local data="$work/$1-zs" base ws tf
  # The base: the preset without a label bias (the generator's heads divide d = 256) and with the plain concat.
  base=$(json --config "$here/datasets/configs/$2" --set dataset="$data" --set unidec.label_bias=none --set unidec.concat_weight=0.5 \
         --set eval.every=0 --set eval.k=[1,5,10,100])
  local id
  id=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$base")
  local irene=(--set method=irene --set irene.base_run="$id" --set dataset="$data" --set epochs=5 --set lr=0.00003 --set batch_size=64
               --set eval.every=0 --set eval.k=[1,5,10,100])
  ws=$(json "${irene[@]}" --set irene.generator=weighted_sum)
  tf=$(json "${irene[@]}" --set irene.generator=transformer)
  python3 - "$1" "$base" "$ws" "$tf" <<'PY'
import json, sys
name, base, ws, tf = sys.argv[1], *(json.loads(a) for a in sys.argv[2:])
def cells(m): return " | ".join("%.2f" % (100 * m[k]) for k in ("P@1", "P@5", "R@10", "R@100"))
print("\n### %s (base run: unidec, its own P@1 over all labels %.2f)\n" % (name, 100 * base["modes"]["clf"]["P@1"]))
print("| setting | vectors of novel labels | P@1 | P@5 | R@10 | R@100 |")
print("|---|---|---|---|---|---|")
for setting in ("zero_shot", "generalized"):
    print("| %s | base run's own | %s |" % (setting, cells(ws[setting + "_base"])))
    print("| %s | irene weighted sum | %s |" % (setting, cells(ws[setting])))
    print("| %s | irene transformer | %s |" % (setting, cells(tf[setting])))
PY
  echo
  echo "adding labels at run time (irene run $(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$ws")):"
  "$build/bench/bench_label_synthesis" "$db" "$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$ws")" 200 10000
}
echo "## IRENE: zero-shot splits (10 % novel labels), unidec base runs"
for s in "${sets[@]}"; do
  case $s in
    delicious) table delicious unidec-bow-delicious.json ;;
    wordnet-60k) table wordnet-60k unidec-bow-wordnet.json ;;
    *) echo "unknown set $s (delicious, wordnet-60k)" >&2; exit 2 ;;
  esac
done
