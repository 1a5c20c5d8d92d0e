#include "engine/method/xrlinear/tree_rankers.h"

#include <linear.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/core/error.h"
#include "engine/core/splitmix64.h"

namespace xmc {
namespace {

void quiet(const char*) {}

std::vector<std::int32_t> merged(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  std::vector<std::int32_t> out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

/// Every training query as liblinear's feature_node row: its features (1-based ids), a constant-1 bias feature
/// F + 1, and the terminator.
struct RankerTraining::LiblinearRows {
  std::vector<feature_node> nodes;
  std::vector<feature_node*> rows;
  int num_features = 0;  ///< F + 1, the bias included
};

void check_ranker_options(const RankerOptions& options) {
  if (options.loss != "squared-hinge" && options.loss != "logistic")
    throw ConfigError("xrlinear.loss must be squared-hinge or logistic, got \"" + options.loss + "\"");
  if (!(options.cost > 0) || !std::isfinite(options.cost)) throw ConfigError("xrlinear.cost must be a positive number, got " + std::to_string(options.cost));
  if (!(options.tolerance > 0) || !std::isfinite(options.tolerance))
    throw ConfigError("xrlinear.tolerance must be a positive number, got " + std::to_string(options.tolerance));
  if (!(options.prune >= 0) || !std::isfinite(options.prune)) throw ConfigError("xrlinear.prune must be 0 or more, got " + std::to_string(options.prune));
}

TreeRankers empty_rankers(const LabelTree& tree) {
  TreeRankers out(static_cast<std::size_t>(tree.ranker_levels()));
  for (std::int64_t t = 0; t < tree.ranker_levels(); ++t) out[static_cast<std::size_t>(t)].resize(static_cast<std::size_t>(tree.nodes_at(t + 1)));
  return out;
}

RankerTraining::RankerTraining(const LabelTree& tree, const CsrMatrix& features, const CsrMatrix& labels)
    : tree_(tree), features_(features), rows_(std::make_unique<LiblinearRows>()) {
  if (features.rows != labels.rows)
    throw Error("xrlinear: " + std::to_string(features.rows) + " feature rows for " + std::to_string(labels.rows) + " label rows");
  check_label_tree(tree, labels.cols);
  if (features.cols >= INT32_MAX - 1) throw Error("xrlinear: too many features for liblinear's int ids");
  set_print_string_function(quiet);

  // liblinear's rows, one allocation.
  rows_->num_features = static_cast<int>(features.cols) + 1;
  rows_->nodes.reserve(static_cast<std::size_t>(features.nnz() + 2 * features.rows));
  std::vector<std::int64_t> starts;
  for (std::int64_t r = 0; r < features.rows; ++r) {
    starts.push_back(static_cast<std::int64_t>(rows_->nodes.size()));
    const auto cols = features.row_indices(r);
    const auto vals = features.row_values(r);
    for (std::size_t i = 0; i < cols.size(); ++i) rows_->nodes.push_back({cols[i] + 1, vals[i]});
    rows_->nodes.push_back({rows_->num_features, 1.0});
    rows_->nodes.push_back({-1, 0.0});
  }
  for (const std::int64_t s : starts) rows_->rows.push_back(rows_->nodes.data() + s);

  // The queries under each node, from the labels up: a label's are its positives, a cluster's the union of its children's.
  const std::int64_t levels = tree.ranker_levels();
  node_rows_.resize(static_cast<std::size_t>(levels) + 1);
  std::vector<std::int64_t> position_of(static_cast<std::size_t>(labels.cols));
  for (std::size_t p = 0; p < tree.labels.size(); ++p) position_of[static_cast<std::size_t>(tree.labels[p])] = static_cast<std::int64_t>(p);
  auto& last = node_rows_[static_cast<std::size_t>(levels)];
  last.resize(static_cast<std::size_t>(labels.cols));
  for (std::int64_t r = 0; r < labels.rows; ++r)
    for (const std::int32_t l : labels.row_indices(r)) last[static_cast<std::size_t>(position_of[static_cast<std::size_t>(l)])].push_back(static_cast<std::int32_t>(r));
  for (std::int64_t t = levels - 1; t >= 1; --t) {
    const auto& offsets = tree.child_offsets[static_cast<std::size_t>(t)];
    const auto& below = node_rows_[static_cast<std::size_t>(t) + 1];
    auto& here = node_rows_[static_cast<std::size_t>(t)];
    here.resize(offsets.size() - 1);
    for (std::size_t j = 0; j + 1 < offsets.size(); ++j)
      for (std::int64_t c = offsets[j]; c < offsets[j + 1]; ++c) here[j] = merged(here[j], below[static_cast<std::size_t>(c)]);
  }
  // The root: every training query, those without labels as negatives of its children.
  node_rows_[0].assign(1, std::vector<std::int32_t>(static_cast<std::size_t>(features.rows)));
  for (std::int64_t r = 0; r < features.rows; ++r) node_rows_[0][0][static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r);

  unit_start_.push_back(0);
  for (std::int64_t t = 0; t < levels; ++t) unit_start_.push_back(unit_start_.back() + tree.nodes_at(t));
}

RankerTraining::~RankerTraining() = default;

std::int64_t RankerTraining::num_units() const { return unit_start_.back(); }

RankerUnit RankerTraining::unit(std::int64_t index) const {
  if (index < 0 || index >= num_units())
    throw Error("xrlinear: training unit " + std::to_string(index) + " is out of range (0 .. " + std::to_string(num_units() - 1) + ")");
  const auto level = static_cast<std::int64_t>(std::upper_bound(unit_start_.begin(), unit_start_.end(), index) - unit_start_.begin()) - 1;
  return {level, index - unit_start_[static_cast<std::size_t>(level)]};
}

std::int64_t RankerTraining::unit_cost(std::int64_t index) const {
  const RankerUnit u = unit(index);
  const auto& offsets = tree_.child_offsets[static_cast<std::size_t>(u.level)];
  const auto rows = static_cast<std::int64_t>(node_rows_[static_cast<std::size_t>(u.level)][static_cast<std::size_t>(u.parent)].size());
  return std::max<std::int64_t>(1, rows) * (offsets[static_cast<std::size_t>(u.parent) + 1] - offsets[static_cast<std::size_t>(u.parent)]);
}

double RankerTraining::train(std::int64_t index, const RankerOptions& options, TreeRankers& rankers) const {
  const RankerUnit u = unit(index);
  const auto& offsets = tree_.child_offsets[static_cast<std::size_t>(u.level)];
  const auto& reached = node_rows_[static_cast<std::size_t>(u.level)][static_cast<std::size_t>(u.parent)];
  const auto& below = node_rows_[static_cast<std::size_t>(u.level) + 1];
  auto& level_rankers = rankers.at(static_cast<std::size_t>(u.level));

  std::vector<feature_node*> x;
  x.reserve(reached.size());
  for (const std::int32_t r : reached) x.push_back(rows_->rows[static_cast<std::size_t>(r)]);
  std::vector<double> y(reached.size());
  parameter param{};
  param.solver_type = options.loss == "logistic" ? L2R_LR_DUAL : L2R_L2LOSS_SVC_DUAL;
  param.eps = options.tolerance;
  param.C = options.cost;
  problem prob{};
  prob.l = static_cast<int>(reached.size());
  prob.n = rows_->num_features;
  prob.y = y.data();
  prob.x = x.data();
  prob.bias = -1;  // the bias is feature F + 1 of every row

  double loss_sum = 0;
  std::int64_t loss_terms = 0;
  std::vector<float> dense(static_cast<std::size_t>(features_.cols), 0.0F);
  for (std::int64_t c = offsets[static_cast<std::size_t>(u.parent)]; c < offsets[static_cast<std::size_t>(u.parent) + 1]; ++c) {
    const auto& positives = below[static_cast<std::size_t>(c)];
    SparseRanker& ranker = level_rankers.at(static_cast<std::size_t>(c));
    ranker = SparseRanker{};
    // A child that every query of its parent reaches, or none: its score is a constant.
    if (positives.empty() || positives.size() == reached.size()) {
      ranker.bias = positives.empty() ? -1.0F : 1.0F;
      continue;
    }
    for (std::size_t i = 0; i < reached.size(); ++i) y[i] = std::binary_search(positives.begin(), positives.end(), reached[i]) ? 1.0 : -1.0;
    std::srand(static_cast<unsigned>(splitmix64_mix(options.seed ^ (kSplitmix64Increment * (static_cast<std::uint64_t>(u.level) + 1))) ^
                                     static_cast<std::uint64_t>(c)));
    model* trained = ::train(&prob, &param);
    if (trained == nullptr) throw Error("xrlinear: liblinear could not train the ranker of node " + std::to_string(c) + " of level " + std::to_string(u.level + 1));
    // The decision value is for model->label[0]; make it the positive class's.
    const double sign = trained->label[0] == 1 ? 1.0 : -1.0;
    for (int f = 0; f + 1 < rows_->num_features; ++f) {
      const double w = sign * trained->w[f];
      if (std::abs(w) >= options.prune && w != 0) {
        ranker.features.push_back(f);
        ranker.weights.push_back(static_cast<float>(w));
      }
    }
    ranker.bias = static_cast<float>(sign * trained->w[rows_->num_features - 1]);
    free_and_destroy_model(&trained);
    // Training loss of the kept (pruned) weights, through a dense copy of them: each row costs its own non-zeros.
    for (std::size_t k = 0; k < ranker.features.size(); ++k) dense[static_cast<std::size_t>(ranker.features[k])] = ranker.weights[k];
    for (std::size_t i = 0; i < reached.size(); ++i) {
      const auto row = static_cast<std::int64_t>(reached[i]);
      const auto cols = features_.row_indices(row);
      const auto vals = features_.row_values(row);
      double z = ranker.bias;
      for (std::size_t b = 0; b < cols.size(); ++b) z += dense[static_cast<std::size_t>(cols[b])] * vals[b];
      const double margin = y[i] * z;
      loss_sum += options.loss == "logistic" ? (margin > 0 ? std::log1p(std::exp(-margin)) : std::log1p(std::exp(margin)) - margin)
                                               : std::pow(std::max(0.0, 1.0 - margin), 2);
    }
    for (const std::int32_t f : ranker.features) dense[static_cast<std::size_t>(f)] = 0;
    loss_terms += static_cast<std::int64_t>(reached.size());
  }
  return loss_terms > 0 ? loss_sum / static_cast<double>(loss_terms) : 0.0;
}

std::int64_t ranker_unit_count(const LabelTree& tree) {
  std::int64_t units = 0;
  for (std::int64_t level = 0; level < tree.ranker_levels(); ++level) units += tree.nodes_at(level);
  return units;
}

}  // namespace xmc
