#!/usr/bin/env bash
# UniDEC's speed targets, on one machine, whole processes:
#   1. `xmc train` with method=unidec against the same method written plainly in PyTorch-Python
#      (bench/reference/pytorch_unidec.py) on the same job (bench/unidec_vs_pytorch.json: bow d = 128, random
#      batches of 512, β 3, η 6 from top-100 shortlists refreshed every 5 epochs, symmetric SupCon on both
#      heads, 6 epochs, 2 threads, concat inference), alternated A B A B. Target: wall time ≤ 0.5×.
#   2. The PSL overhead: seconds per epoch of UniDEC against DEXML in-batch (bench/train_vs_pytorch.json) at the
#      same batch size, from the runs' step times (epochs 1 and later; the time between epochs, shortlist
#      refreshes included, counts). Target: ≤ 1.3×, measured where both score the same labels: UniDEC with one
#      sampled positive per query and no hard negatives (the pool DEXML's in-batch step scores), median over the
#      rounds of each round's ratio. The job above (β 3, η 6) is printed too: its pool holds ~15× the labels.
# Needs Debian's python3-torch for the reference (never a dependency of the product).
# Usage: bench/unidec_vs_pytorch.sh [build_dir] [rounds] [dataset...]   (default: WordNet-60k and Delicious)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
rounds=${2:-1}
shift $(( $# >= 2 ? 2 : $# ))
xmc="$build/app/xmc"
reference="$here/bench/reference/pytorch_unidec.py"
python=${PYTHON:-/usr/bin/python3}
work=${XMC_BENCH_DIR:-$here/datasets/demo}
db=$(mktemp -d)/bench.sqlite
job="$here/bench/unidec_vs_pytorch.json"
dexml_job="$here/bench/train_vs_pytorch.json"
epochs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['epochs'])" "$job")

[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "$python cannot import torch: apt-get install python3-torch" >&2; exit 1; }

datasets=("$@")
if [ ${#datasets[@]} -eq 0 ]; then
  wordnet="$work/wordnet-60k"
  delicious="$work/delicious"
  source "$here/bench/demo_datasets.sh"
  demo_wordnet wordnet-60k 60000
  demo_mulan delicious
  datasets=("$wordnet" "$delicious")
fi

now() { date +%s.%N; }
median() { python3 -c "import statistics,sys; print('%.1f' % statistics.median(map(float, sys.argv[1:])))" "$@"; }
# Seconds per epoch of a run: mean gap between the last steps of consecutive epochs, from epoch 1 on.
epoch_seconds() {
  python3 - "$db" "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1]); run = int(sys.argv[2])
ends = {}
for epoch, t in con.execute("select epoch, wall_time from scalars where run=? and key='loss' order by step", (run,)):
    ends[int(epoch - 1e-9)] = t
e = sorted(ends)
gaps = [ends[b] - ends[a] for a, b in zip(e, e[1:])]
print('%.2f' % (sum(gaps) / len(gaps)))
PY
}

run_id() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['run_id'])" "$1"; }

echo "| dataset | reference s | xmc s | xmc / reference | reference P@1 / P@5 | xmc concat P@1 / P@5 | unidec s/epoch | dexml in-batch s/epoch | ratio | unidec equal pool s/epoch | PSL overhead |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for dir in "${datasets[@]}"; do
  ref_times=() xmc_times=() equal_ratios=() equal_epochs=()
  for ((r = 1; r <= rounds; ++r)); do
    t0=$(now)
    ref_out=$("$python" "$reference" "$dir" "$epochs" | tail -1)   # "unidec (P@1, P@5) s"
    ref_times+=("$(python3 -c "print($(now) - $t0)")")
    t0=$(now)
    xmc_out=$("$xmc" train --config "$job" --set dataset="$dir" --db "$db" --json 2>/dev/null | tail -1)
    xmc_times+=("$(python3 -c "print($(now) - $t0)")")
    dexml_out=$("$xmc" train --config "$dexml_job" --set dataset="$dir" --db "$db" --json 2>/dev/null | tail -1)
    equal_out=$("$xmc" train --config "$job" --set dataset="$dir" --set negatives=inbatch --set psl.positives=1 --db "$db" --json 2>/dev/null | tail -1)
    equal_epochs+=("$(epoch_seconds "$(run_id "$equal_out")")")
    equal_ratios+=("$(python3 -c "import sys; print(float(sys.argv[1]) / float(sys.argv[2]))" "${equal_epochs[-1]}" "$(epoch_seconds "$(run_id "$dexml_out")")")")
  done
  ref_scores=$(echo "$ref_out" | sed -E 's/.*\(([0-9.]+), ([0-9.]+)\).*/\1 \/ \2/')
  xmc_scores=$(python3 -c "import json,sys; j=json.loads(sys.argv[1]); print('%.4f / %.4f' % (j['P@1'], j['P@5']))" "$xmc_out")
  ref_wall=$(median "${ref_times[@]}")
  xmc_wall=$(median "${xmc_times[@]}")
  u=$(epoch_seconds "$(run_id "$xmc_out")")
  d=$(epoch_seconds "$(run_id "$dexml_out")")
  python3 -c "
import statistics, sys
name, rw, xw, rs, xs, u, d, equal, ratios = sys.argv[1:]
equal = statistics.median(map(float, equal.split()))
ratios = sorted(map(float, ratios.split()))
spread = ' (%.2f–%.2f)' % (ratios[0], ratios[-1]) if len(ratios) > 1 else ''
print('| %s | %s | %s | **%.2f** | %s | %s | %s | %s | %.2f | %.2f | **%.2f**%s |' % (name, rw, xw, float(xw) / float(rw), rs, xs, u, d, float(u) / float(d),
                                                                       equal, statistics.median(ratios), spread))
" "$(basename "$dir")" "$ref_wall" "$xmc_wall" "$ref_scores" "$xmc_scores" "$u" "$d" "${equal_epochs[*]}" "${equal_ratios[*]}"
done
