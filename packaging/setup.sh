#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (run as root, or with sudo available):
#   packaging/setup.sh deps    install the Debian packages the project builds against
#   packaging/setup.sh build   deps + configure and build (Release, Ninja, ccache)
#   packaging/setup.sh test    build + run the whole test suite (ctest -j2)
#   packaging/setup.sh demo    build + build the bundled demo dataset + run the demo
# Every step is idempotent: a second run only does what is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${XMC_BUILD_DIR:-$here/build}
jobs=${XMC_JOBS:-2}

packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libtorch-dev libfaiss-dev libomp-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libhnswlib-dev libsqlitecpp-dev libsqlite3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  libutf8proc-dev zlib1g-dev libgtest-dev libbenchmark-dev
  xvfb xauth wordnet-base
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
  local data
  data=$(demo_data | tail -n 1)
  "$build_dir/app/xmc" dataset info "$data"
  "$here/packaging/demo.sh" "$build_dir" "$data"
}

case "${1:-}" in
  deps) install_deps ;;
  build) install_deps; build ;;
  test) install_deps; build; ctest --test-dir "$build_dir" -j "$jobs" --output-on-failure ;;
  demo) install_deps; build; run_demo ;;
  *) echo "usage: packaging/setup.sh deps|build|test|demo" >&2; exit 2 ;;
esac
