#!/usr/bin/env bash
# A decoder-encoder training step with LoRA (build/bench/bench_decoder_step) against the same step in plain
# PyTorch (bench/reference/decoder_step.py, Debian's python3-torch), same shapes and threads, alternated
# A B A B; then the peak RSS of one step of a Qwen2.5-0.5B-shaped random model at 32 × 32 tokens with and
# without activation checkpointing (and with the frozen base held in bf16).
# Usage: bench/decoder_step.sh [build_dir] [rounds]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
rounds=${2:-3}
bench="$build/bench/bench_decoder_step"
python=${PYTHON:-/usr/bin/python3}
[ -x "$bench" ] || { echo "no $bench: build first (cmake --build build)" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "$python cannot import torch: apt-get install python3-torch" >&2; exit 1; }

small="--layers 4 --hidden 256 --heads 4 --kv-heads 2 --intermediate 768 --batch 32 --len 32 --steps 15 --threads 2"
echo "== step of a 4-layer 256-d decoder, LoRA r 16 on every projection, 32 x 32 tokens, 2 threads"
for ((r = 0; r < rounds; ++r)); do
  "$bench" $small
  "$python" "$here/bench/reference/decoder_step.py" $small
  OMP_WAIT_POLICY=PASSIVE "$python" "$here/bench/reference/decoder_step.py" $small | sed 's/"impl": "pytorch"/"impl": "pytorch, OMP_WAIT_POLICY=PASSIVE"/'
done

shape="--layers 24 --hidden 896 --heads 14 --kv-heads 2 --intermediate 4864 --batch 32 --len 32 --steps 1 --threads 2"
echo "== one step of a Qwen2.5-0.5B-shaped random model (24 layers, 896 hidden, 14 heads, 2 KV heads), 32 x 32 tokens"
"$bench" $shape
"$bench" $shape --checkpointing
"$bench" $shape --checkpointing --base-dtype bf16
