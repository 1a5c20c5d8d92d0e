#pragma once
// Builds the bundled demo dataset from Debian's `wordnet-base` (WordNet 3.0, /usr/share/wordnet/data.noun):
// a taxonomy-completion task with text on both sides.
//   item  = a noun synset that has at least one hypernym (so the root `entity` is not an item)
//   query = "lemma1, lemma2: gloss" of the synset
//   labels = all its hypernym ancestors, following `@` and `@i` pointers transitively (labels "ancestors"),
//            or its direct hypernyms only (labels "direct")
//   label text = "lemma1, lemma2: gloss" of the ancestor synset
// Items are sampled (optionally) and split train/test with a seeded, platform-independent shuffle; the
// label set is the ancestors of the train items (ordered by synset offset), test rows keep only those.
// Depth of a synset = the fewest hypernym steps from it to a synset without hypernyms (`entity` has depth 0).
// With min_depth d, synsets shallower than d are never labels: with ancestors, the root is otherwise a label
// of every item and P@1 says nothing. Items left with no label are left out (before sampling).
// A test item whose own synset is a label has a label text equal to its query text: such reciprocal
// (row, label) pairs go into Dataset::test_filter (the XC `filter_labels_test.txt` convention).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct WordnetBuildOptions {
  std::filesystem::path data_noun = "/usr/share/wordnet/data.noun";  ///< WordNet 3.0 noun data file
  std::int64_t max_items = 0;  ///< 0 = all noun synsets that have at least one hypernym
  std::uint64_t seed = 7;      ///< sampling and split seed
  double train_fraction = 0.7;
  std::string labels = "ancestors";  ///< "ancestors" (transitive hypernyms) or "direct" (direct hypernyms)
  std::int64_t min_depth = 0;        ///< synsets shallower than this are not labels
};

/// Parses `options.data_noun` (wndb(5) format) and builds the dataset in memory (Dataset::dir is left
/// empty; save it with save_dataset). Throws InputError naming file and line for a malformed data file
/// or a missing one, ConfigError for a bad option, Cancelled when `progress` asks to stop.
Dataset build_wordnet_dataset(const WordnetBuildOptions& options, Progress& progress = silent_progress());

/// The text of a synset as queries and labels show it: "lemma1, lemma2: gloss" (underscores of the
/// lemmas become spaces; just the lemmas when the gloss is empty).
std::string wordnet_synset_text(const std::vector<std::string_view>& lemmas, std::string_view gloss);

}  // namespace xmc
