#!/usr/bin/env bash
# The bundled demo: what `packaging/setup.sh demo` runs after building.
#   demo.sh BUILD_DIR DATASET_DIR
set -euo pipefail
build_dir=$1
data=$2
xmc="$build_dir/app/xmc"
work="${XMC_DEMO_DIR:-$(dirname "$data")}"
mkdir -p "$work"
echo "== dataset: $data"
"$xmc" dataset info "$data"
