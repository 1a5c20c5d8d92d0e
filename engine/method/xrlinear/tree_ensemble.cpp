#include "engine/method/xrlinear/tree_ensemble.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace xmc {

TreeEnsembleSearch::TreeEnsembleSearch(const std::vector<TreeModel>& trees, const BeamSearchOptions& options, std::int64_t num_features) {
  if (trees.empty()) throw Error("xrlinear: an ensemble of no trees");
  searches_.reserve(trees.size());
  for (const TreeModel& model : trees) {
    if (model.tree.labels.size() != trees.front().tree.labels.size())
      throw Error("xrlinear: the trees of an ensemble rank " + std::to_string(trees.front().tree.labels.size()) + " and " +
                  std::to_string(model.tree.labels.size()) + " labels");
    searches_.emplace_back(model.tree, model.rankers, options, num_features);
  }
}

void TreeEnsembleSearch::rank(const CsrMatrix& queries, std::int64_t begin, std::int64_t end, std::int64_t top, std::int64_t* labels,
                              float* scores) const {
  if (searches_.size() == 1) {
    searches_.front().rank(queries, begin, end, top, labels, scores);
    return;
  }
  // Every tree's beam over the whole block first: a beam search sets up per call, not per row.
  const std::int64_t n = end - begin;
  std::vector<std::vector<std::int64_t>> beam_labels(searches_.size(), std::vector<std::int64_t>(static_cast<std::size_t>(n * top)));
  std::vector<float> beam_scores(static_cast<std::size_t>(n * top));
  for (std::size_t t = 0; t < searches_.size(); ++t) searches_[t].rank(queries, begin, end, top, beam_labels[t].data(), beam_scores.data());
  std::vector<std::int64_t> candidates;
  struct Scored {
    std::int64_t label;
    float score;
  };
  std::vector<Scored> scored;
  std::vector<float> dense;
  for (std::int64_t row = begin; row < end; ++row) {
    candidates.clear();
    for (const auto& tree_labels : beam_labels)
      for (std::int64_t j = 0; j < top; ++j) {
        const std::int64_t label = tree_labels[static_cast<std::size_t>((row - begin) * top + j)];
        if (label >= 0) candidates.push_back(label);
      }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    const std::vector<float> mean = path_scores(queries, row, candidates, &dense);
    scored.clear();
    for (std::size_t i = 0; i < candidates.size(); ++i) scored.push_back({candidates[i], mean[i]});
    const auto kept = std::min<std::size_t>(scored.size(), static_cast<std::size_t>(top));
    std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(kept), scored.end(),
                      [](const Scored& a, const Scored& b) { return a.score != b.score ? a.score > b.score : a.label < b.label; });
    std::int64_t* row_labels = labels + (row - begin) * top;
    float* row_scores = scores + (row - begin) * top;
    for (std::int64_t j = 0; j < top; ++j) {
      const bool found = static_cast<std::size_t>(j) < kept;
      row_labels[j] = found ? scored[static_cast<std::size_t>(j)].label : -1;
      row_scores[j] = found ? scored[static_cast<std::size_t>(j)].score : 0.0f;
    }
  }
}

std::vector<float> TreeEnsembleSearch::path_scores(const CsrMatrix& queries, std::int64_t row, std::span<const std::int64_t> labels,
                                                   std::vector<float>* dense) const {
  if (searches_.size() == 1) return searches_.front().path_scores(queries, row, labels, dense);
  std::vector<double> sum(labels.size(), 0.0);
  for (const BeamSearch& search : searches_) {
    const std::vector<float> one = search.path_scores(queries, row, labels, dense);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += one[i];
  }
  std::vector<float> out(labels.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(sum[i] / static_cast<double>(searches_.size()));
  return out;
}

}  // namespace xmc
