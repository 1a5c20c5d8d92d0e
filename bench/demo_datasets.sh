# Sourced by the bench scripts: the datasets they train on, made in $work when missing.
# Needs $xmc (the built xmc), $work (where datasets go) and $here (the repository root).

# demo_mulan NAME: $work/NAME imported from ../shared/datasets/mulan/NAME (bibtex, delicious).
demo_mulan() {
  local src="$here/../shared/datasets/mulan/$1"
  [ -f "$work/$1/dataset.json" ] && return 0
  "$xmc" dataset import mulan --train "$src/$1-train.arff" --test "$src/$1-test.arff" --labels "$src/$1.xml" \
    --out "$work/$1" >/dev/null
}

# demo_wordnet FOLDER ITEMS: $work/FOLDER, a WordNet set of ITEMS synsets (seed 7).
demo_wordnet() {
  [ -f "$work/$1/dataset.json" ] && return 0
  "$xmc" dataset build wordnet --out "$work/$1" --max-items "$2" --seed 7 >/dev/null
}

# quality_sets: the sets the quality benches (xrlinear_choice.sh, recommended_dense.sh) train on, made in $work when
# missing, listed in the array `sets`: Bibtex, Delicious, WordNet-direct and WordNet with every ancestor (20k synsets
# each, seed 7), and Debian's packages with their debtags where this machine has apt. XMC_BENCH_SETS="a b" keeps those.
quality_sets() {
  demo_mulan bibtex
  demo_mulan delicious
  [ -f "$work/wordnet-direct/dataset.json" ] ||
    "$xmc" dataset build wordnet --out "$work/wordnet-direct" --max-items 20000 --labels direct --min-depth 3 --seed 7 >/dev/null
  [ -f "$work/wordnet-ancestors/dataset.json" ] ||
    "$xmc" dataset build wordnet --out "$work/wordnet-ancestors" --max-items 20000 --labels ancestors --min-depth 2 --seed 7 >/dev/null
  if command -v apt-cache >/dev/null && [ ! -f "$work/debian-tags/dataset.json" ]; then
    apt-cache dumpavail > "$work/packages.txt" && "$xmc" dataset build debian --packages "$work/packages.txt" --out "$work/debian-tags" --seed 7 >/dev/null
  fi
  sets=(bibtex delicious wordnet-direct wordnet-ancestors)
  if [ -f "$work/debian-tags/dataset.json" ]; then sets+=(debian-tags); fi
  if [ -n "${XMC_BENCH_SETS:-}" ]; then read -r -a sets <<< "$XMC_BENCH_SETS"; fi
}
