#!/usr/bin/env bash
# On a machine with a GPU and PyTorch: builds the engine against the LibTorch inside that PyTorch (CUDA,
# no GUI, no FAISS), runs the GPU tests and the CUDA path's benchmarks, and prints their JSON lines (also
# written to RESULTS, default bench/gpu/results.jsonl):
#   - one DEXML training step of a 6-layer, 768-d BERT-style encoder (random init), max_len 32, bf16, at batch
#     512 and 2048: queries/s and model-FLOPs utilisation (against PEAK_TFLOPS, default the dense bf16 peak
#     of the GPU by its name: 989 H100 SXM / H200, 756 H100 PCIe), against the same step written plainly in
#     PyTorch-Python (encoder_step_reference.py);
#   - one LoRA training step of a Qwen2.5-0.5B-shaped random decoder at 256 × 32 tokens, bf16: tokens/s and
#     model-FLOPs utilisation, against bench/reference/decoder_step.py on the same GPU;
#   - exact top-100 of 100k queries over 1M labels (d = 768) against the bare products;
#   - balanced clustering of 2M × 768 rows into clusters of 16;
#   - every method trained through `xmc train --set device=cuda` on the demo WordNet (methods_on_gpu.sh), when
#     datasets/demo/wordnet-20k travelled with the tree.
# The project's other libraries (nlohmann-json, SQLiteCpp, CLI11, utf8proc, hnswlib, zlib, GoogleTest) are
# taken from the machine, or from the .deb files that bench/gpu/stage_deps.sh put in .gpudeps/ (carried to a
# machine that has none): they are unpacked into a private prefix. SMALL=1 runs everything tiny on the CPU
# (a check of this script without a GPU); BENCH=0 stops after the tests.
# Usage: bench/gpu/run.sh [build_dir]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$here/build-cuda}
out=${RESULTS:-$here/bench/gpu/results.jsonl}
peak=${PEAK_TFLOPS:-0}
python=${PYTHON:-python3}
small=${SMALL:-0}
failed_tests=()

if [ "$small" = 1 ]; then
  [ -x "$build/bench/gpu_bench" ] || { echo "SMALL=1 uses an existing build: give its folder (e.g. build)" >&2; exit 1; }
  device=cpu; peak=0
  step_args="--layers 1 --hidden 64 --heads 4"; batches="16 32"; search_args="--queries 2000 --keys 20000 --dim 64"
  cluster_args="--rows 20000 --dim 32"
  decoder_args="--layers 2 --hidden 64 --heads 4 --kv-heads 2 --intermediate 128 --batch 8 --len 16"
else
  prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || { echo "this PyTorch sees no GPU" >&2; exit 1; }
  generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
  extra_flags=""
  extra_cmake=()
  if compgen -G "$here/.gpudeps/*.deb" >/dev/null; then
    deps=${XMC_GPU_DEPS_PREFIX:-/tmp/xmc-gpudeps}
    for deb in "$here"/.gpudeps/*.deb; do dpkg-deb -x "$deb" "$deps"; done
    # A link to an absolute path (libz.so -> /lib/.../libz.so.1.2.13) points at this machine's files: aim it
    # into the prefix, or drop it when the prefix lacks the target (the static library is found instead).
    find "$deps" -type l -lname '/*' | while read -r link; do
      target=$(readlink "$link")
      if [ -e "$deps$target" ]; then ln -sf "$deps$target" "$link"; else rm -f "$link"; fi
    done
    prefix="$prefix;$deps/usr"
    # liblinear and the reference BLAS it calls, linked statically: Debian picks its shared BLAS through
    # alternatives links that unpacking does not make, and that BLAS would pull in the Fortran runtime.
    extra_cmake+=(-DLIBLINEAR_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/liblinear.a"
                  -DBLAS_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/blas/libblas.a"
                  -DPNG_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libpng16.a" -DPNG_PNG_INCLUDE_DIR="$deps/usr/include"
                  -DJPEG_LIBRARY="$deps/usr/lib/x86_64-linux-gnu/libjpeg.a" -DJPEG_INCLUDE_DIR="$deps/usr/include")
    extra_flags="-isystem $deps/usr/include"  # hnswlib is headers found on the include path, no CMake package
    export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  cmake -S "$here" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_FLAGS="$extra_flags" -DXMC_BUILD_GUI=OFF -DXMC_WITH_FAISS=OFF "${extra_cmake[@]}" >/dev/null
  # Keep going past a failing file, so that one build shows every error a new LibTorch brings.
  keep_going=(); [ "$generator" = Ninja ] && keep_going=(-- -k 0)
  targets=${TARGETS:-xmc gpu_test gpu_bench random_bert model_test loss_test search_test}  # TARGETS=gpu_bench: the benchmark alone
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" --target $targets "${keep_going[@]}"
  device=cuda
  step_args=""; batches="512 2048"; search_args=""; cluster_args=""
  decoder_args="--batch 256 --len 32"  # the Qwen2.5-0.5B shape (gpu_bench's defaults)
  # A failing test is reported at the end; the benchmarks still run (a lent GPU is too rare to waste).
  for t in gpu_test model_test loss_test search_test; do [[ " $targets " == *" $t "* ]] || continue; "$build/tests/$t" --gtest_brief=1 || failed_tests+=("$t"); done
  "$python" -c 'import torch; print("{\"machine\":\"%s\",\"torch\":\"%s\",\"cuda\":\"%s\"}" % (torch.cuda.get_device_name(0), torch.__version__, torch.version.cuda))'
fi

if [ "${BENCH:-1}" = 0 ]; then  # BENCH=0: build and test only
  if [ ${#failed_tests[@]} -gt 0 ]; then echo "failed: ${failed_tests[*]}" >&2; exit 1; fi
  exit 0
fi
: >"$out"
run() { "$@" | tee -a "$out"; }
for b in $batches; do
  # shellcheck disable=SC2086
  run "$build/bench/gpu_bench" --device $device encoder-step --batch "$b" --peak-tflops "$peak" $step_args
  # shellcheck disable=SC2086
  run "$python" "$here/bench/gpu/encoder_step_reference.py" --device $device --batch "$b" $step_args
done
# shellcheck disable=SC2086
run "$build/bench/gpu_bench" --device $device decoder-step $decoder_args
# shellcheck disable=SC2086
run "$python" "$here/bench/reference/decoder_step.py" --device $device --precision bf16 --steps 10 $decoder_args
# shellcheck disable=SC2086
run "$build/bench/gpu_bench" --device $device search $search_args
# shellcheck disable=SC2086
run "$build/bench/gpu_bench" --device $device clustering $cluster_args
# Every method through `xmc train` on the GPU, when the demo data travelled with the tree (carry
# datasets/demo/wordnet-20k, and datasets/tokenizers/qwen3 for the decoder).
if [ "$small" != 1 ] && [ -f "$here/datasets/demo/wordnet-20k/dataset.json" ]; then
  "$here/bench/gpu/methods_on_gpu.sh" "$build" cuda | grep '^{' | tee -a "$out" || failed_tests+=("methods_on_gpu")
fi
# Where the encoder step's time goes (its kernels by total time), when the machine has Nsight Systems.
if [ "$small" != 1 ] && command -v nsys >/dev/null; then
  timeout 180 nsys profile -o "$out.encoder_step" --force-overwrite true --stats=true \
    "$build/bench/gpu_bench" --device cuda encoder-step --batch 512 > "$out.encoder_step.txt" 2>&1 || true
fi
# `xmc images embed` (ViT-B/16 shape, random weights) against the PyTorch transcription, both on the GPU.
if [ "$small" != 1 ]; then
  DEVICE=cuda PYTHON="$python" "$here/bench/images_embed.sh" "$build" 512 2 | tee -a "$out.images" || failed_tests+=("images_embed")
fi
echo "results: $out"
if [ ${#failed_tests[@]} -gt 0 ]; then echo "failed: ${failed_tests[*]}" >&2; exit 1; fi
