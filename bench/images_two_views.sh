#!/usr/bin/env bash
# Image fusion where the images carry what the texts lack. A two-view synthetic set (`xmc dataset build synthetic
# --image-dim 64`): labels come in twins that share their topic word, a query's text names only its labels'
# topics, and each item's "image" is a fixed random projection of the tf-idf of its labels' own looks. Text alone
# cannot tell twins apart; the images can. Trained per encoder (a random 2-layer BERT, a random 2-layer Qwen2-shaped
# decoder with Qwen3's tokenizer) three ways: text only (images.max=0), late fusion (mean projected image added to the
# pooled text vector), early fusion (ViXML: image tokens inside the sequence). DEXML, in-batch decoupled softmax,
# the same seeds for all. Prints P@1, P@5, PSP@5 as mean ± sd over the seeds and each fusion's P@1 gain over text only.
# Then the cost of early fusion per step at max_len 32, with a random bank of 3 images of 768 numbers per item, on
# wordnet-20k (word and gloss on both sides, ~16 words) and on a synthetic set whose texts all exceed max_len:
# text only vs early fusion, the same steps alternated (median samples/s from the runs' scalars).
# Usage: bench/images_two_views.sh [build_dir] [seeds]     (STEP_COST_ONLY=1: the step cost alone)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
seeds=${2:-3}
xmc="$build/app/xmc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/bench.sqlite"
[ -x "$xmc" ] || { echo "no $xmc: build first (cmake --build build)" >&2; exit 1; }
[ -x "$build/bench/random_bert" ] || { echo "no $build/bench/random_bert: cmake --build build --target random_bert" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "the sqlite3 command reads the runs' results: apt-get install sqlite3" >&2; exit 1; }
tokenizer="$here/datasets/tokenizers/qwen3"
[ -f "$tokenizer/tokenizer.json" ] || { echo "no $tokenizer/tokenizer.json: packaging/setup.sh build installs it" >&2; exit 1; }

"$xmc" dataset build synthetic --labels 2000 --train 20000 --test 4000 --labels-per-query 1.5 --query-words 4 --image-dim 64 \
  --seed 7 --out "$tmp/two-views" >/dev/null
"$build/bench/random_bert" --dataset "$tmp/two-views" --out "$tmp/bert" --layers 2 --hidden 128 --heads 4 >/dev/null
mkdir -p "$tmp/decoder"
cat >"$tmp/decoder/config.json" <<'JSON'
{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936, "hidden_size": 64, "intermediate_size": 128,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
 "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu", "use_sliding_window": false}
JSON

metric() { sqlite3 "$db" "select printf('%.2f', 100*value) from evaluations where run=$1 and metric='$2' order by step desc limit 1"; }
last_run() { sqlite3 "$db" "select max(id) from runs"; }
stats() { python3 -c "import statistics as s,sys; v=[float(x) for x in sys.argv[1:]]; print('%.2f ± %.2f' % (s.mean(v), s.stdev(v) if len(v) > 1 else 0))" "$@"; }
mean() { python3 -c "import statistics as s,sys; print('%.2f' % s.mean(float(x) for x in sys.argv[1:]))" "$@"; }

common=(--set dataset="$tmp/two-views" --set method=dexml --set loss=decoupled_softmax --set negatives=inbatch --set temperature=0.05
        --set batch_size=256 --set tsne.every=0 --set eval.every=0 --set 'eval.k=[1,3,5]' --set encoder.dim=128 --set encoder.max_len=16)
bert=(--set encoder.type=bert --set encoder.path="$tmp/bert" --set encoder.dropout=0 --set epochs=4 --set lr=0.001)
decoder=(--set encoder.type=decoder --set encoder.path="$tmp/decoder" --set encoder.tokenizer="$tokenizer" --set encoder.lora.rank=0
         --set encoder.template="{text}" --set epochs=4 --set lr=0.001)

if [ "${STEP_COST_ONLY:-0}" = 0 ]; then
echo "machine: $(nproc) cores; $(date -u +%F); two-view synthetic set: 2000 labels (1000 twin pairs), 20000 train, 4000 test, m = 64"
printf '%-8s %-22s %-16s %-16s %-16s %s\n' encoder fusion P@1 P@5 PSP@5 "P@1 gain"
for encoder in bert decoder; do
  for fusion in text late early; do
    p1=() p5=() psp5=()
    for ((seed = 1; seed <= seeds; ++seed)); do
      case $fusion in
        text) images=(--set images.max=0) ;;
        *) images=(--set images.max=3 --set images.fusion=$fusion) ;;
      esac
      if [ $encoder = bert ]; then args=("${bert[@]}"); else args=("${decoder[@]}"); fi
      "$xmc" train --db "$db" "${common[@]}" "${args[@]}" "${images[@]}" --set seed=$seed >"$tmp/train.log" 2>&1 ||
        { cat "$tmp/train.log" >&2; exit 1; }
      run=$(last_run)
      p1+=("$(metric "$run" P@1)"); p5+=("$(metric "$run" P@5)"); psp5+=("$(metric "$run" PSP@5)")
    done
    [ $fusion = text ] && text_p1=$(mean "${p1[@]}")
    gain=$(python3 -c "print('%+.2f' % ($(mean "${p1[@]}") - $text_p1))")
    label=$fusion; [ $fusion = text ] && label="text only"; [ $fusion = late ] && label="late (pooled vectors)"; [ $fusion = early ] && label="early (ViXML)"
    printf '%-8s %-22s %-16s %-16s %-16s %s\n' $encoder "$label" "$(stats "${p1[@]}")" "$(stats "${p5[@]}")" "$(stats "${psp5[@]}")" "$gain"
  done
done
fi

# The cost of early fusion per step at max_len 32 with 3 images of 768 numbers per item, on two sets: wordnet-20k
# (queries and labels are a word and its gloss, ~16 words; a batch pads to its longest text, which often reaches
# max_len) and a synthetic set whose queries and labels all have 40 words, so every sequence is 32 tokens.
add_random_bank() {
  /usr/bin/python3 - "$1" <<'PY'
import os, sys, numpy as np
d = sys.argv[1]; os.makedirs(f"{d}/images", exist_ok=True)
rng = np.random.default_rng(0)
for split, text in (("trn", "trn.raw.txt"), ("tst", "tst.raw.txt"), ("lbl", "lbl.raw.txt")):
    rows = sum(1 for _ in open(f"{d}/{text}", encoding="utf-8"))
    np.save(f"{d}/images/{split}.npy", rng.standard_normal((rows, 3, 768), dtype=np.float32))
PY
}
rate() { sqlite3 "$db" "select value from scalars where run=$1 and key='samples_per_s' order by step" | python3 -c "import statistics,sys; v=[float(x) for x in sys.stdin][3:]; print('%.1f' % statistics.median(v))"; }
step_cost() {  # dataset folder, its description
  local set=$1 what=$2
  "$build/bench/random_bert" --dataset "$set" --out "$set.bert" --layers 2 --hidden 256 --heads 4 >/dev/null
  local text_rates=() early_rates=() round images
  for round in 1 2; do
    for images in 0 3; do
      "$xmc" train --db "$db" --set dataset="$set" --set method=dexml --set loss=decoupled_softmax --set negatives=inbatch \
        --set encoder.type=bert --set encoder.path="$set.bert" --set encoder.max_len=32 --set batch_size=128 --set epochs=1 --set max_steps=25 \
        --set tsne.every=0 --set eval.every=0 --set images.max=$images >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log" >&2; exit 1; }
      if [ $images = 0 ]; then text_rates+=("$(rate "$(last_run)")"); else early_rates+=("$(rate "$(last_run)")"); fi
    done
  done
  local t e
  t=$(mean "${text_rates[@]}"); e=$(mean "${early_rates[@]}")
  echo "step cost, $what; bert 2 x 256, max_len 32, batch 128, 3 images of 768 per item: text only $t queries/s, early fusion $e queries/s," \
       "time per step early/text $(python3 -c "print('%.3f' % ($t / $e))") (target <= 1.15)"
}
source "$here/bench/demo_datasets.sh"
work=${XMC_BENCH_DIR:-$here/datasets/demo}
demo_wordnet wordnet-20k 20000
cp -r "$work/wordnet-20k" "$tmp/wn-images"
add_random_bank "$tmp/wn-images"
step_cost "$tmp/wn-images" "wordnet-20k (word and gloss, ~16 words)"
"$xmc" dataset build synthetic --labels 20000 --train 40000 --test 2000 --query-words 40 --label-words 40 --seed 7 --out "$tmp/long-texts" >/dev/null
add_random_bank "$tmp/long-texts"
step_cost "$tmp/long-texts" "synthetic, queries and labels of 40 words (every sequence at max_len)"
