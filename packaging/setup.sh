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
packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libtorch-dev libgloo-dev libfaiss-dev libomp-dev libopenblas0-pthread
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libhnswlib-dev libsqlitecpp-dev libsqlite3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  libutf8proc-dev zlib1g-dev libgtest-dev libbenchmark-dev
  xvfb xauth fonts-dejavu-core wordnet-base
  clang
)

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
  build) install_deps; build ;;
  # Every parser fuzzed for a bounded time first (a crash fails the command), then the suite.
  test) install_deps; build; "$here/packaging/fuzz.sh" "${XMC_FUZZ_SECONDS:-30}"; ctest --test-dir "$build_dir" -j "$jobs" --output-on-failure ;;
  demo) install_deps; build; run_demo ;;
  *) echo "usage: packaging/setup.sh deps|build|test|demo" >&2; exit 2 ;;
esac
