#pragma once
// xrlinear.choose held-out: the run's settings chosen on training queries it holds out, never on a test split.
// Candidates are fit on the other training queries and rank the held-out ones, scored by the mean of
// P@1 + P@3 + P@5 (held_out_weight_choice.h):
//   n-grams  the tf-idf features of 1 .. longest words (one vectorizer of the longest; ngram_restriction.h)
//   trees    1 .. max_trees label trees: tree t + 1 is added to the t already fit, so each count costs one tree
//   knn      with neighbours, the tree's weight against their votes, over a grid (a query's candidates and scores
//            are made once and fused by every weight); another weight than the configured one only when it beats
//            it by more than one standard error of their paired per-query difference (measured: a weight chosen by
//            the best mean alone moved with the draw, 0.40 to 0.95 over three seeds of one set, and lost on test)
// within a budget of `budget` fits of the configured settings (xrlinear.trees trees of the first candidate's
// n-grams). A tree's cost is counted in such trees, scaled by its features' non-zeros (a bigram tree's rankers read
// about twice a unigram tree's): machine-independent, so a seed chooses the same on every machine and load. The first
// candidate (the fewest words, one tree) is always fit; the others in order of cost — the longer n-grams with one
// tree, then more trees of the better n-grams — while the next fits in what is left. Plain C++.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/method/xrlinear/tree_ensemble.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {

/// The rows a choice fits on and scores with, in the vectorizer's full feature space.
struct ChoiceRows {
  const CsrMatrix& features;           ///< the training queries that fit
  const CsrMatrix& labels;
  const CsrMatrix& held_out_features;  ///< the training queries held out
  const CsrMatrix& held_out_labels;
};

struct ChoiceOptions {
  XrlinearOptions configured;      ///< the run's own settings: the rankers, beam and fusion tops; trees, ngrams and
                                   ///< knn_weight are preferred on equal scores
  std::uint64_t seed = 0;          ///< tree t's seed is seed + t, as in the run
  std::vector<int> ngrams{1};      ///< n-gram lengths tried (each ≤ the vectorizer's)
  std::int64_t max_trees = 3;
  std::vector<double> knn_weights; ///< tried with xrlinear.knn > 0 (empty: no neighbours)
  double budget = 3;               ///< in fits of the configured settings (see above)
  int threads = 1;                 ///< for ranking the held-out queries (rankers train on one: liblinear's rand())
};

/// One scored candidate.
struct ChoiceCandidate {
  int ngrams = 1;
  std::int64_t trees = 1;
  double knn_weight = -1;  ///< -1 without neighbours
  double score = 0;        ///< mean P@1 + P@3 + P@5 over the held-out queries, in [0, 3]
  double seconds = 0;      ///< fitting its last tree
};

struct SettingsChoice {
  int ngrams = 1;
  std::int64_t trees = 1;
  double knn_weight = -1;
  double score = 0;
  std::vector<ChoiceCandidate> candidates;  ///< every one scored, in the order fit
  std::vector<std::string> left_out;        ///< what the budget left out, said as "2-grams, 3 trees (1.90 fits, 1.20 of 6.00 left)"
  std::vector<TreeModel> trees_fit;         ///< the chosen candidate's, fit without the held-out queries
  double seconds = 0;                       ///< the whole choice
  double fits = 0;                          ///< its cost in first-candidate tree fits
  double budget_fits = 0;
};

/// Chooses among the candidates of `options` on `rows`. `log` receives a line per candidate and the outcome.
/// Throws Cancelled when `progress` is cancelled, Error on empty held-out rows or an n-gram length the vectorizer lacks.
SettingsChoice choose_settings(const TfidfVectorizer& vectorizer, const ChoiceRows& rows, const ChoiceOptions& options, Progress& progress,
                               const std::function<void(const std::string&)>& log);

/// "1-grams, 2 trees, knn weight 0.85: 1.7321".
std::string describe(const ChoiceCandidate& candidate);

}  // namespace xmc
