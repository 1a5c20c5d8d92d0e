#include "engine/method/xrlinear/beam_search.h"

#include <algorithm>
#include <bit>
#include <span>
#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace xmc {
namespace {

struct Candidate {
  std::int64_t node = 0;
  float score = 0;
};

/// Best first; equal scores: the lower node first, so results do not depend on the order of evaluation.
bool better(const Candidate& a, const Candidate& b) { return a.score != b.score ? a.score > b.score : a.node < b.node; }

/// w·x + b of `ranker` for a query given both ways: its non-zeros (`cols`, `vals`) and its dense copy `dense`. A short
/// query looks its few features up in the ranker's (sorted) weights; a long one, or a ranker with few weights,
/// reads the weights against the dense copy. Either sums the same products.
double margin(const SparseRanker& ranker, std::span<const std::int32_t> cols, std::span<const float> vals, const std::vector<float>& dense) {
  double z = ranker.bias;
  const std::size_t nnz = ranker.features.size();
  if (cols.size() * static_cast<std::size_t>(std::bit_width(nnz)) < nnz) {
    auto from = ranker.features.begin();
    for (std::size_t i = 0; i < cols.size(); ++i) {
      from = std::lower_bound(from, ranker.features.end(), cols[i]);
      if (from == ranker.features.end()) break;
      if (*from == cols[i]) z += ranker.weights[static_cast<std::size_t>(from - ranker.features.begin())] * vals[i];
    }
  } else {
    for (std::size_t k = 0; k < nnz; ++k) z += ranker.weights[k] * dense[static_cast<std::size_t>(ranker.features[k])];
  }
  return z;
}

void keep_best(std::vector<Candidate>& candidates, std::int64_t count) {
  if (static_cast<std::int64_t>(candidates.size()) > count) {
    std::partial_sort(candidates.begin(), candidates.begin() + count, candidates.end(), better);
    candidates.resize(static_cast<std::size_t>(count));
  } else {
    std::sort(candidates.begin(), candidates.end(), better);
  }
}

}  // namespace

void check_beam_search_options(const BeamSearchOptions& options) {
  if (options.beam < 1) throw ConfigError("xrlinear.beam must be at least 1, got " + std::to_string(options.beam));
  if (options.transform != "l3-hinge" && options.transform != "sigmoid")
    throw ConfigError("xrlinear.transform must be l3-hinge or sigmoid, got \"" + options.transform + "\"");
}

BeamSearch::BeamSearch(const LabelTree& tree, const TreeRankers& rankers, BeamSearchOptions options, std::int64_t num_features)
    : tree_(tree), rankers_(rankers), options_(std::move(options)), num_features_(num_features) {
  check_beam_search_options(options_);
  if (static_cast<std::int64_t>(rankers.size()) != tree.ranker_levels()) throw Error("xrlinear: the rankers do not have one level per tree level");
  parents_.resize(static_cast<std::size_t>(tree.ranker_levels()));
  for (std::int64_t t = 0; t < tree.ranker_levels(); ++t) {
    const auto& offsets = tree.child_offsets[static_cast<std::size_t>(t)];
    auto& up = parents_[static_cast<std::size_t>(t)];
    up.resize(static_cast<std::size_t>(offsets.back()));
    for (std::size_t p = 0; p + 1 < offsets.size(); ++p)
      for (std::int64_t c = offsets[p]; c < offsets[p + 1]; ++c) up[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(p);
  }
  position_of_.assign(tree.labels.size(), -1);
  for (std::size_t p = 0; p < tree.labels.size(); ++p) position_of_.at(static_cast<std::size_t>(tree.labels[p])) = static_cast<std::int64_t>(p);
}

double BeamSearch::transformed(double z) const {
  return options_.transform == "l3-hinge" ? std::exp(-std::pow(std::max(0.0, 1.0 - z), 3)) : 1.0 / (1.0 + std::exp(-z));
}

std::vector<float> BeamSearch::path_scores(const CsrMatrix& queries, std::int64_t row, std::span<const std::int64_t> labels,
                                           std::vector<float>* dense_buffer) const {
  if (queries.cols != num_features_)
    throw Error("xrlinear: queries have " + std::to_string(queries.cols) + " features, the rankers " + std::to_string(num_features_));
  if (row < 0 || row >= queries.rows) throw Error("xrlinear: query row " + std::to_string(row) + " is outside the " + std::to_string(queries.rows) + " rows");
  // Level by level from the labels up, each node's transformed margin computed once however many of the labels
  // lie under it (candidates of one query share most of their ancestors).
  std::vector<double> score(labels.size(), 1.0);
  std::vector<std::pair<std::int64_t, std::size_t>> at;  // (node at the current level, index into labels)
  at.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::int64_t label = labels[i];
    if (label < 0 || label >= static_cast<std::int64_t>(position_of_.size()))
      throw Error("xrlinear: label " + std::to_string(label) + " is outside the tree's " + std::to_string(position_of_.size()) + " labels");
    at.emplace_back(position_of_[static_cast<std::size_t>(label)], i);
  }
  std::vector<float> own;
  std::vector<float>& dense = dense_buffer != nullptr ? *dense_buffer : own;
  dense.resize(static_cast<std::size_t>(num_features_), 0.0F);
  const auto cols = queries.row_indices(row);
  const auto vals = queries.row_values(row);
  for (std::size_t i = 0; i < cols.size(); ++i) dense[static_cast<std::size_t>(cols[i])] = vals[i];
  for (std::int64_t t = tree_.ranker_levels() - 1; t >= 0; --t) {
    std::sort(at.begin(), at.end());
    const auto& level = rankers_[static_cast<std::size_t>(t)];
    const auto& parents = parents_[static_cast<std::size_t>(t)];
    for (std::size_t first = 0; first < at.size();) {
      const std::int64_t node = at[first].first;
      const double p = transformed(margin(level[static_cast<std::size_t>(node)], cols, vals, dense));
      std::size_t last = first;
      for (; last < at.size() && at[last].first == node; ++last) {
        score[at[last].second] *= p;
        at[last].first = parents[static_cast<std::size_t>(node)];
      }
      first = last;
    }
  }
  for (std::size_t i = 0; i < cols.size(); ++i) dense[static_cast<std::size_t>(cols[i])] = 0.0F;
  return std::vector<float>(score.begin(), score.end());
}

void BeamSearch::rank(const CsrMatrix& queries, std::int64_t begin, std::int64_t end, std::int64_t top, std::int64_t* labels, float* scores) const {
  if (queries.cols != num_features_)
    throw Error("xrlinear: queries have " + std::to_string(queries.cols) + " features, the rankers " + std::to_string(num_features_));
  std::vector<float> dense(static_cast<std::size_t>(num_features_), 0.0F);
  std::vector<Candidate> beam;
  std::vector<Candidate> next;
  const std::int64_t levels = tree_.ranker_levels();
  for (std::int64_t row = begin; row < end; ++row) {
    const auto cols = queries.row_indices(row);
    const auto vals = queries.row_values(row);
    for (std::size_t i = 0; i < cols.size(); ++i) dense[static_cast<std::size_t>(cols[i])] = vals[i];
    beam.assign(1, Candidate{0, 1.0F});
    for (std::int64_t t = 0; t < levels; ++t) {
      const auto& offsets = tree_.child_offsets[static_cast<std::size_t>(t)];
      const auto& level = rankers_[static_cast<std::size_t>(t)];
      next.clear();
      for (const Candidate& parent : beam) {
        for (std::int64_t c = offsets[static_cast<std::size_t>(parent.node)]; c < offsets[static_cast<std::size_t>(parent.node) + 1]; ++c) {
          const double p = transformed(margin(level[static_cast<std::size_t>(c)], cols, vals, dense));
          next.push_back({c, static_cast<float>(parent.score * p)});
        }
      }
      keep_best(next, t + 1 == levels ? top : options_.beam);
      std::swap(beam, next);
    }
    for (std::size_t i = 0; i < cols.size(); ++i) dense[static_cast<std::size_t>(cols[i])] = 0.0F;
    const std::int64_t out = row - begin;
    for (std::int64_t j = 0; j < top; ++j) {
      const bool has = j < static_cast<std::int64_t>(beam.size());
      labels[out * top + j] = has ? tree_.labels[static_cast<std::size_t>(beam[static_cast<std::size_t>(j)].node)] : -1;
      scores[out * top + j] = has ? beam[static_cast<std::size_t>(j)].score : 0.0F;
    }
  }
}

}  // namespace xmc
