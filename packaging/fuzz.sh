#!/usr/bin/env bash
# Builds the parser fuzz targets (tests/fuzz: libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer,
# clang) in build-fuzz/ and runs each for SECONDS (default 30) from its seed corpus in tests/fuzz/corpus/.
# A crash, a sanitizer report, a leak, an input that runs past 10 s or takes 2 GB fails the script and leaves the
# input that did it in build-fuzz/findings/. Without clang++ it says so and does nothing.
# The random seed is fixed (XMC_FUZZ_SEED, default 1) so that a run from a clean tree explores the same inputs
# on every machine: the suite's gate repeats what was checked here rather than drawing new ones. For a search
# of new inputs give XMC_FUZZ_SEED=0 (a seed from the clock) and a longer time: packaging/fuzz.sh 600.
# Usage: packaging/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-30}
shift $(( $# > 0 ? 1 : 0 ))
build=${XMC_FUZZ_BUILD_DIR:-$here/build-fuzz}
jobs=${XMC_JOBS:-2}
seed=${XMC_FUZZ_SEED:-1}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ is not installed: parser fuzzing skipped (apt-get install clang)"
  exit 0
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DXMC_FUZZ=ON \
    -DXMC_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" _fuzz.cpp)"); done
fi
mkdir -p "$build/findings"
failed=()
for t in "${targets[@]}"; do
  work="$build/corpus/$t"   # inputs found here grow this copy, never the seeds in the repository
  mkdir -p "$work"
  log="$build/findings/$t.log"
  if "$build/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -seed="$seed" -print_final_stats=1 \
       -artifact_prefix="$build/findings/$t-" "$work" "$here/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $t clean after ${runs:-?} executions in ${seconds} s"
  else
    echo "fuzz: $t FAILED (see $log):"
    grep -E "ERROR|SUMMARY|Test unit written|deadly signal|uncaught" "$log" | head -5 | sed 's/^/  /'
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
