#!/usr/bin/env bash
# The cost of one training epoch as the label count grows: synthetic sets of the LF kind (`xmc dataset build
# synthetic ... --topics`, 22 labels a query at 1.3M labels as LF-AmazonTitles-1.3M, fewer below) with training
# queries scaled with the labels, and the bow presets of dexml (in-batch), ngame (clustered batches) and unidec
# (hard-negative shortlists, refreshed before the epoch) trained for one epoch, with an evaluation at its end.
# Each run's own log gives the seconds of each phase; /usr/bin/time gives the whole process and its peak RSS.
# Prints one JSON line a run (also appended to $work/results.jsonl) and the command that reproduces it.
# Usage: bench/cost_curve.sh [build_dir] [sizes...]   sizes: 30k 130k 1.3m (default 30k 130k); methods: $XMC_METHODS
# (default "dexml ngame unidec"); data and store in $XMC_BENCH_DIR (default /tmp/xmc-cost); threads $XMC_THREADS (2);
# training queries per label $XMC_TRAIN_PER_LABEL (default 1.73, LF-AmazonTitles-1.3M's 2.25M / 1.3M).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
shift $(( $# > 0 ? 1 : 0 ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(30k 130k)
xmc="$build/app/xmc"
work=${XMC_BENCH_DIR:-/tmp/xmc-cost}
threads=${XMC_THREADS:-2}
methods=${XMC_METHODS:-"dexml ngame unidec"}
per_label=${XMC_TRAIN_PER_LABEL:-1.73}
mkdir -p "$work"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }

for size in "${sizes[@]}"; do
  case $size in
    30k) labels=30000 per_query=5 topics=500 ;;
    130k) labels=130000 per_query=5 topics=2000 ;;
    1.3m) labels=1300000 per_query=22 topics=20000 ;;
    *) echo "unknown size $size (30k, 130k, 1.3m)" >&2; exit 1 ;;
  esac
  train=$(python3 -c "print(round($labels * $per_label))")
  test=20000
  data="$work/synthetic-$size-$train"
  [ -f "$data/dataset.json" ] || "$xmc" dataset build synthetic --labels "$labels" --train "$train" --test "$test" \
    --labels-per-query "$per_query" --topics "$topics" --seed 1 --out "$data" >/dev/null
  for method in $methods; do
    config="$here/datasets/configs/$method-bow-wordnet.json"
    db="$work/$method-$size.sqlite"
    rm -f "$db"
    log="$work/$method-$size.log"
    command=("$xmc" train --db "$db" --config "$config" --set dataset="$data" --set epochs=1 --set threads="$threads"
             --set checkpoint.every=0 --set tsne.every=0 --set eval.every=1)
    # ngame's preset clusters from its second epoch (sampler.start_epoch 1): here its one epoch is clustered.
    [ "$method" = ngame ] && command+=(--set sampler.start_epoch=0 --set ngame.m4_epochs=0)
    /usr/bin/time -v "${command[@]}" > "$log" 2>&1
    python3 - "$method" "$size" "$labels" "$train" "$log" "${command[*]}" <<'PY' | tee -a "$work/results.jsonl"
import json, re, sys
method, size, labels, train, log, command = sys.argv[1:]
text = open(log, errors="replace").read()
def seconds(s):  # "1m36s", "2s", "1h02m"
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)([hms])", s):
        total += float(value) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total
def took(pattern):
    return sum(seconds(m) for m in re.findall(pattern + r"[^\n]*? took (\S+)", text))
row = {
    "method": method, "size": size, "labels": int(labels), "train_queries": int(train),
    "epoch_s": took(r"\n(?:M1 )?epoch 1/1 100%"),
    "shortlist_refresh_s": took(r"\nhard-negative shortlists \(") + took(r"\nhard-negative index: encoding"),
    "clustering_s": took(r"\nbalanced clustering") + took(r"\nencoding training queries for clustering"),
    "evaluation_s": took(r"\nevaluation: "),
    "wall_s": sum(float(p) * 60 ** i for i, p in enumerate(reversed(
        re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1).split(":")))),
    "peak_rss_gb": round(int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024 / 1024, 2),
    "recall": [l for l in text.splitlines() if "recall@" in l],
    "P@1": (re.findall(r"completed \([^)]*\): P@1 ([\d.]+)", text) or [None])[-1],
    "command": command,
}
print(json.dumps(row))
PY
  done
done
