#!/usr/bin/env bash
# The bundled demo (what `packaging/setup.sh demo` runs after building), on the command line:
# dataset statistics, a short DEXML training run, label look-ups and the run store.
#   demo.sh BUILD_DIR DATASET_DIR
set -euo pipefail
build_dir=$1
data=$2
xmc="$build_dir/app/xmc"
db="${XMC_DB:-$(dirname "$data")/runs.sqlite}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

echo "== dataset: $data"
"$xmc" dataset info "$data"
echo
echo "== training DEXML (bag-of-words encoder, decoupled softmax, hard negatives from a refreshed shortlist) for 3 epochs; runs are kept in $db"
result=$("$xmc" train --config "$here/datasets/configs/dexml-bow-wordnet-hard.json" --set dataset="$data" \
         --set epochs=3 --db "$db" --json | tail -n 1)
run=$(printf '%s' "$result" | sed -n 's/.*"run_id":\([0-9]*\).*/\1/p')
echo
echo "== the trained run ($run) ranks hypernyms for new text"
for text in "golden retriever: an English breed having a long silky golden coat" \
            "espresso: strong black coffee brewed by forcing steam through finely ground beans"; do
  echo "-- $text"
  "$xmc" predict --db "$db" --run "$run" --text "$text" --top 5
done
echo
"$xmc" runs --db "$db" list
