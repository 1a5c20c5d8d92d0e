#!/usr/bin/env bash
# Every method trained end to end through `xmc train` on the demo WordNet, once with device cuda and once with
# device cpu (same config, same seed), printing one JSON line per run: method, device, whole-process seconds,
# P@1 and P@5 of the run's primary mode. The two devices should agree to within a couple of P@1 points (their
# kernels differ, so not to the bit); a large gap means the CUDA path computes something else.
# Runs: dexml (bow), ngame (bow, clustered batches), unidec (bow, hard negatives; then its shortlists found by the
# inverted file in bfloat16 and float32 and by HNSW, and evaluated through an inverted file), dexml with hard
# negatives from an inverted file, the decoder encoder (tiny
# random Qwen2 with LoRA, bf16 autocast; on GPUs only), irene on a zero-shot split over a unidec base run, and
# (GPUs only, when bench/random_bert is built) image fusion on the two-view synthetic set of bench/images_two_views.sh:
# a random BERT text only and with early fusion, the random Qwen2-shaped decoder with early fusion in bf16.
# Needs datasets/demo/wordnet-20k (packaging/setup.sh demo) and, for the decoder, datasets/tokenizers/qwen3.
# Usage: bench/gpu/methods_on_gpu.sh [build_dir] [devices...]   (default: build-cuda, devices cuda cpu)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$here/build-cuda}
shift $(( $# > 0 ? 1 : 0 ))
devices=("$@")
[ ${#devices[@]} -gt 0 ] || devices=(cuda cpu)
xmc="$build/app/xmc"
data="$here/datasets/demo/wordnet-20k"
[ -x "$xmc" ] || { echo "no $xmc: build first" >&2; exit 1; }
[ -f "$data/dataset.json" ] || { echo "no $data: run packaging/setup.sh demo" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$here"

train() {  # label device args... : prints {"run":label,"device":...,"seconds":...,"P@1":...,"P@5":...}
  local label=$1 device=$2; shift 2
  local start end line
  start=$(date +%s.%N)
  if ! line=$("$xmc" train --db "$work/$device.sqlite" --json --set device="$device" "$@" 2>"$work/err" | tail -1); then
    echo "{\"run\":\"$label\",\"device\":\"$device\",\"error\":$(tail -3 "$work/err" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}"
    return 0
  fi
  end=$(date +%s.%N)
  python3 - "$label" "$device" "$start" "$end" "$line" <<'PY'
import json, sys
label, device, start, end, line = sys.argv[1:]
result = json.loads(line)
metrics = result.get("zero_shot", result)  # irene reports per setting
print(json.dumps({"run": label, "device": device, "seconds": round(float(end) - float(start), 1),
                  "P@1": round(100 * metrics["P@1"], 2), "P@5": round(100 * metrics["P@5"], 2),
                  "run_id": result.get("run_id")}))
PY
}

[ -f "$work/zs/dataset.json" ] || "$xmc" dataset split-zeroshot --in "$data" --out "$work/zs" --novel-frac 0.1 --val-frac 0.02 --seed 0 >/dev/null
for device in "${devices[@]}"; do
  train dexml "$device" --config datasets/configs/dexml-bow-wordnet.json --set epochs=3
  train ngame "$device" --config datasets/configs/ngame-bow-wordnet.json --set epochs=3 --set ngame.m4_epochs=1 --set sampler.grow_at=[]
  train unidec "$device" --config datasets/configs/unidec-bow-wordnet.json --set epochs=3 --set eval.every=0
  # The shortlist refreshes' and the evaluation's other searches, with embeddings made on the device and searched on
  # the CPU (the refresh's index, the inverted file) or where the labels lie (the sampled queries' exact lists).
  for search in "ivf bfloat16" "ivf float32" hnsw; do
    set -- $search
    train "unidec-hard-$1${2:+-$2}" "$device" --config datasets/configs/unidec-bow-wordnet.json --set epochs=3 --set eval.every=0 \
          --set hard.search="$1" ${2:+--set hard.precision=$2} --set hard.max_probe=256
  done
  train unidec-eval-ivf "$device" --config datasets/configs/unidec-bow-wordnet.json --set epochs=3 --set eval.every=1 --set eval.index=ivf
  train dexml-hard-ivf "$device" --config datasets/configs/dexml-bow-wordnet.json --set epochs=3 --set negatives=hard --set hard.search=ivf
  if [ "$device" != cpu ] && [ -d datasets/tokenizers/qwen3 ]; then  # ~100 s a CPU core: GPU only
    train decoder-bf16 "$device" --config datasets/configs/vixml-decoder-wordnet.json --set encoder.precision=bf16
  fi
  base=$("$xmc" train --db "$work/$device.sqlite" --json --set device="$device" --config datasets/configs/unidec-bow-wordnet.json \
         --set dataset="$work/zs" --set unidec.label_bias=none --set unidec.concat_weight=0.5 --set epochs=3 --set eval.every=0 \
         2>/dev/null | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])') || base=""
  if [ -n "$base" ]; then
    train irene-zero-shot "$device" --set method=irene --set irene.base_run="$base" --set dataset="$work/zs" --set epochs=2 \
          --set lr=0.00003 --set batch_size=64 --set eval.every=0 --set irene.generator=weighted_sum
  else
    echo "{\"run\":\"irene-zero-shot\",\"device\":\"$device\",\"error\":\"the unidec base run failed\"}"
  fi
done

# Images on the GPU: the set, encoders and settings of bench/images_two_views.sh (seed 1), whose CPU figures are in
# bench/RESULTS.md; here the batch's images are staged to the device and projected there.
if [ -x "$build/bench/random_bert" ] && [ -d datasets/tokenizers/qwen3 ]; then
  for device in "${devices[@]}"; do
    [ "$device" != cpu ] || continue
    "$xmc" dataset build synthetic --labels 2000 --train 20000 --test 4000 --labels-per-query 1.5 --query-words 4 \
      --image-dim 64 --seed 7 --out "$work/two-views" >/dev/null
    "$build/bench/random_bert" --dataset "$work/two-views" --out "$work/bert" --layers 2 --hidden 128 --heads 4 >/dev/null
    mkdir -p "$work/decoder"
    cat >"$work/decoder/config.json" <<'JSON'
{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936, "hidden_size": 64, "intermediate_size": 128,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
 "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu", "use_sliding_window": false}
JSON
    common=(--set dataset="$work/two-views" --set method=dexml --set loss=decoupled_softmax --set negatives=inbatch
            --set temperature=0.05 --set batch_size=256 --set tsne.every=0 --set eval.every=0 --set 'eval.k=[1,3,5]'
            --set encoder.dim=128 --set encoder.max_len=16 --set epochs=4 --set lr=0.001 --set seed=1)
    bert=(--set encoder.type=bert --set encoder.path="$work/bert" --set encoder.dropout=0)
    train images-bert-text "$device" "${common[@]}" "${bert[@]}" --set images.max=0
    train images-bert-early "$device" "${common[@]}" "${bert[@]}" --set images.max=3 --set images.fusion=early
    train images-decoder-early-bf16 "$device" "${common[@]}" --set encoder.type=decoder --set encoder.path="$work/decoder" \
          --set encoder.tokenizer=datasets/tokenizers/qwen3 --set encoder.lora.rank=0 --set encoder.template="{text}" \
          --set encoder.precision=bf16 --set images.max=3 --set images.fusion=early
  done
fi
