#pragma once
// Shaped synthetic datasets for measuring scale: label counts, query counts, labels per query, label popularity
// and text lengths like the Extreme Classification Repository's LF sets (short titles on both sides), at any
// size, from a seed, identical on every platform (own generator and arithmetic, no std distributions).
//   vocabulary  `vocabulary` made-up words ("dakoru"), word w drawn with probability ∝ 1/(w+1)^1.1
//   label       `label_words` words: the first a rarer "topic" word, the rest common ones
//   popularity  label l is a positive with probability ∝ 1/(rank(l)+1)^zipf, ranks a seeded permutation of ids
//   query       1 + a geometric number of labels (mean labels_per_query), distinct; text: for each label, its
//               topic word and one more of its words, then common filler words up to query_words, shuffled
// So a query shares words with each of its labels (the set is learnable) while common words are shared by
// many labels and queries (it is not trivial). Train and test rows come from the same process.
// With `topics` T > 0 labels also fall into T topics, as real ones do (titles of one kind of product share words,
// a query's labels are related): each topic has 4 words of its own from the middle of the vocabulary, a label
// carries 2 of its topic's words after its rare word, and each label of a query after the first is, with
// probability 1/2, drawn from the first one's topic (uniformly among its labels) instead of by popularity. Without
// topics a label's neighbours are scattered at random, which no clustered or graph index can exploit; with them
// the label embeddings have the neighbourhoods approximate search relies on.
// With image_dim m > 0 the set gets a second view, as image banks (images/*.npy, one image per item) that carry
// what the texts lack: labels come in twins that share their topic word, a query's text names only its labels'
// topic words (so the text cannot tell twins apart), and each label has a "look" of its own. An item's image is
// the tf-idf vector of its looks (a query: its labels'; a label: its own), plus one of 10 common noise looks,
// mapped to m numbers by a fixed random Gaussian projection and L2-normalised.
#include <cstdint>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct SyntheticBuildOptions {
  std::int64_t labels = 30000;
  std::int64_t train = 50000;
  std::int64_t test = 10000;
  double labels_per_query = 5.0;  ///< mean labels of a query (LF-AmazonTitles-131K: 2.3, -1.3M: 22)
  std::int64_t label_words = 6;
  std::int64_t query_words = 10;  ///< words of a query's text at least (more when its labels need them)
  std::int64_t vocabulary = 0;    ///< made-up words; 0 = max(2000, 2 × labels)
  double zipf = 0.7;              ///< label popularity exponent (0.7: the most popular of 1.3M labels in ~10 % of the queries)
  std::int64_t topics = 0;        ///< label topics (see above); 0 = none
  std::int64_t image_dim = 0;     ///< m of the second view's image banks; 0 = texts only
  std::uint64_t seed = 1;
};

/// Builds the dataset in memory (Dataset::dir left empty; save it with save_dataset). Throws ConfigError naming
/// the option for a value out of range, Cancelled when `progress` asks to stop.
Dataset build_synthetic_dataset(const SyntheticBuildOptions& options, Progress& progress = silent_progress());

}  // namespace xmc
