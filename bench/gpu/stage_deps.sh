#!/usr/bin/env bash
# A GPU machine lent for benchmarks has CUDA, PyTorch, CMake and ninja but none of the project's other
# libraries, and reaches no package archive. This downloads (here, from Debian's archive) the .deb files of
# the libraries a GUI-less, FAISS-less build needs into .gpudeps/ at the repository's root (ignored by git);
# carry that folder to the GPU machine and bench/gpu/run.sh unpacks them into a private prefix (never into
# /) and builds against it. Their libraries are built for glibc 2.36, so they load on any newer one.
# Usage: bench/gpu/stage_deps.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
folder="$here/.gpudeps"
packages=(zlib1g-dev nlohmann-json3-dev libsqlitecpp-dev libsqlite3-dev libsqlite3-0 libcli11-dev libutf8proc-dev libutf8proc2
          libhnswlib-dev libgtest-dev liblinear-dev libblas-dev libpng-dev libjpeg62-turbo-dev)
mkdir -p "$folder"
rm -f "$folder"/*.deb
# A folder that the _apt user cannot write to makes apt download as root with a warning: harmless.
(cd "$folder" && apt-get download -q "${packages[@]}" 2>&1 | grep -v "unsandboxed as root" || true)
count=$(find "$folder" -name '*.deb' | wc -l)
[ "$count" -eq "${#packages[@]}" ] || { echo "downloaded $count of ${#packages[@]} packages into $folder" >&2; exit 1; }
echo "$count packages ($(du -sh "$folder" | cut -f1)) in $folder: carry .gpudeps to the GPU machine with the run"
