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
