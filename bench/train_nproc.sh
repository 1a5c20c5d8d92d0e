#!/usr/bin/env bash
# Data-parallel training on this machine: `xmc train --nproc 2` against one process, same job and same global
# batch, alternated A B A B. Two encoders, because the ratio depends on what a step spends its time on:
#   bow   the WordNet-20k DEXML preset (datasets/configs/dexml-bow-wordnet.json, 10 epochs): a 37k-word
#         embedding table whose optimiser update, clipping and gradient handling are per-table work every
#         process repeats;
#   bert  a random-init 2-layer, 128-d BERT (bench/random_bert) on the same data, max_len 32, 20 steps:
#         compute-bound, the per-table work is small.
# Prints per encoder and process count the median training throughput (queries/s over the steps, from the
# run's scalars), the time per global batch relative to one process (target ≤ 1.2), and for bow the final
# P@1 of each (target: within 0.5 points).
# Usage: bench/train_nproc.sh [build_dir] [rounds]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
rounds=${2:-2}
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-$here/datasets/demo}
tmp=$(mktemp -d)
db="$tmp/bench.sqlite"
[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "the sqlite3 command reads the runs' scalars: apt-get install sqlite3" >&2; exit 1; }
[ -x "$build/bench/random_bert" ] || { echo "no $build/bench/random_bert: build it (cmake --build build --target random_bert)" >&2; exit 1; }
source "$here/bench/demo_datasets.sh"
demo_wordnet wordnet-20k 20000
"$build/bench/random_bert" --dataset "$work/wordnet-20k" --out "$tmp/bert" --layers 2 --hidden 128 --heads 4 >/dev/null

median() { python3 -c "import statistics,sys; print('%.1f' % statistics.median(map(float, sys.argv[1:])))" "$@"; }
last_run() { sqlite3 "$db" "select max(id) from runs"; }
throughput() { sqlite3 "$db" "select avg(value) from (select value from scalars where run=$1 and key='samples_per_s' order by step limit -1 offset 3)"; }
p_at_1() { sqlite3 "$db" "select printf('%.2f', 100*value) from evaluations where run=$1 and metric='P@1' order by step desc limit 1"; }

bench_encoder() {  # bench_encoder NAME ARGS...
  local name=$1; shift
  local one=() two=() p1_one="" p1_two=""
  for ((r = 1; r <= rounds; ++r)); do
    for n in 1 2; do
      "$xmc" train --db "$db" --config "$here/datasets/configs/dexml-bow-wordnet.json" --set dataset="$work/wordnet-20k" \
        --set tsne.every=0 "$@" --nproc $n >/dev/null 2>&1
      local run; run=$(last_run)
      if [ $n = 1 ]; then one+=("$(throughput "$run")"); p1_one=$(p_at_1 "$run"); else two+=("$(throughput "$run")"); p1_two=$(p_at_1 "$run"); fi
    done
  done
  local m1 m2; m1=$(median "${one[@]}"); m2=$(median "${two[@]}")
  printf '%-5s 1 process: %8s queries/s   2 processes: %8s queries/s   time per global batch 2/1: %s   P@1 %s / %s\n' \
    "$name" "$m1" "$m2" "$(python3 -c "print('%.2f' % ($m1 / $m2))")" "$p1_one" "$p1_two"
}

echo "machine: $(nproc) cores; $(date -u +%F)"
bench_encoder bow
bench_encoder bert --set encoder.type=bert --set encoder.path="$tmp/bert" --set encoder.max_len=32 --set epochs=1 --set max_steps=20 --set lr=1e-4
rm -rf "$tmp"
