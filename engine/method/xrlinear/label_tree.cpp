#include "engine/method/xrlinear/label_tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/core/splitmix64.h"
#include "engine/method/xrlinear/sparse_accumulator.h"

namespace xmc {
namespace {

struct Halves {
  std::vector<std::int32_t> first, second;  ///< c0's labels and c1's, ascending
};

/// One balanced 2-means split of `ids` (ascending label ids).
Halves split(const CsrMatrix& vectors, const std::vector<std::int32_t>& ids, std::int64_t iterations, std::uint64_t seed,
             SparseAccumulator& c0, SparseAccumulator& c1) {
  const auto n = static_cast<std::int64_t>(ids.size());
  const std::int64_t h = n / 2;
  Halves out;
  if (n < 2) {
    out.first = ids;
    return out;
  }
  std::mt19937_64 rng(seed);
  const auto a = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
  auto b = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n - 1));
  if (b >= a) ++b;
  c0.clear();
  c1.clear();
  c0.add(vectors.row_indices(ids[static_cast<std::size_t>(a)]), vectors.row_values(ids[static_cast<std::size_t>(a)]));
  c1.add(vectors.row_indices(ids[static_cast<std::size_t>(b)]), vectors.row_values(ids[static_cast<std::size_t>(b)]));

  std::vector<double> score(static_cast<std::size_t>(n));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::vector<char> in_c1(static_cast<std::size_t>(n), 0), previous;
  for (std::int64_t it = 0; it < iterations; ++it) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t label = ids[static_cast<std::size_t>(i)];
      score[static_cast<std::size_t>(i)] = c1.dot(vectors.row_indices(label), vectors.row_values(label)) -
                                           c0.dot(vectors.row_indices(label), vectors.row_values(label));
    }
    std::iota(order.begin(), order.end(), 0);
    // Stable: equal scores keep id order, so the lower label id goes to c1 first.
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) { return score[static_cast<std::size_t>(x)] > score[static_cast<std::size_t>(y)]; });
    std::fill(in_c1.begin(), in_c1.end(), 0);
    for (std::int64_t r = 0; r < h; ++r) in_c1[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] = 1;
    if (in_c1 == previous) break;  // a fixed point: nothing moves any more
    previous = in_c1;
    if (it + 1 == iterations) break;
    c0.clear();
    c1.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t label = ids[static_cast<std::size_t>(i)];
      (in_c1[static_cast<std::size_t>(i)] ? c1 : c0).add(vectors.row_indices(label), vectors.row_values(label));
    }
    c0.normalize();
    c1.normalize();
  }
  for (std::int64_t i = 0; i < n; ++i) (in_c1[static_cast<std::size_t>(i)] ? out.second : out.first).push_back(ids[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace

LabelTree build_label_tree(const CsrMatrix& label_vectors, const LabelTreeOptions& options, Progress& progress) {
  if (options.branching < 2 || (options.branching & (options.branching - 1)) != 0)
    throw ConfigError("xrlinear.branching must be a power of two from 2 up, got " + std::to_string(options.branching));
  if (options.max_leaf < 1) throw ConfigError("xrlinear.max_leaf must be at least 1, got " + std::to_string(options.max_leaf));
  if (options.iterations < 1) throw ConfigError("xrlinear.kmeans_iterations must be at least 1, got " + std::to_string(options.iterations));
  const std::int64_t num_labels = label_vectors.rows;
  // Binary depth: the fewest halvings that bring every cluster to max_leaf labels or fewer.
  std::int64_t depth = 0;
  while ((num_labels + (std::int64_t{1} << depth) - 1) >> depth > options.max_leaf) ++depth;
  std::int64_t bits = 0;
  while ((std::int64_t{1} << bits) < options.branching) ++bits;
  // The binary depths kept as levels: the first takes the remainder, then `bits` each, the last is `depth`.
  std::vector<std::int64_t> kept;
  for (std::int64_t d = depth == 0 ? 0 : (depth - 1) % bits + 1; d <= depth && depth > 0; d += bits) kept.push_back(d);

  std::vector<std::vector<std::int32_t>> groups(1);
  groups[0].resize(static_cast<std::size_t>(num_labels));
  std::iota(groups[0].begin(), groups[0].end(), 0);
  SparseAccumulator c0(label_vectors.cols), c1(label_vectors.cols);
  LabelTree tree;
  std::int64_t previous_depth = 0;
  progress.start("clustering labels", depth);
  for (std::int64_t d = 1; d <= depth; ++d) {
    std::vector<std::vector<std::int32_t>> next;
    next.reserve(groups.size() * 2);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (progress.cancelled()) throw Cancelled();
      const std::uint64_t node_seed = splitmix64_mix(options.seed + kSplitmix64Increment * ((std::uint64_t{1} << d) + g));
      Halves halves = split(label_vectors, groups[g], options.iterations, node_seed, c0, c1);
      next.push_back(std::move(halves.first));
      next.push_back(std::move(halves.second));
    }
    groups = std::move(next);
    if (std::find(kept.begin(), kept.end(), d) != kept.end()) {
      const std::int64_t parents = std::int64_t{1} << previous_depth;
      const std::int64_t per_parent = std::int64_t{1} << (d - previous_depth);
      std::vector<std::int64_t> offsets(static_cast<std::size_t>(parents) + 1);
      for (std::int64_t p = 0; p <= parents; ++p) offsets[static_cast<std::size_t>(p)] = p * per_parent;
      tree.child_offsets.push_back(std::move(offsets));
      previous_depth = d;
    }
    progress.update(d);
  }
  progress.finish();
  // The last level: each leaf cluster's labels, ascending.
  std::vector<std::int64_t> offsets{0};
  for (const auto& group : groups) {
    tree.labels.insert(tree.labels.end(), group.begin(), group.end());
    offsets.push_back(static_cast<std::int64_t>(tree.labels.size()));
  }
  tree.child_offsets.push_back(std::move(offsets));
  return tree;
}

void check_label_tree(const LabelTree& tree, std::int64_t num_labels) {
  if (tree.child_offsets.empty()) throw Error("label tree: it has no levels");
  std::int64_t nodes = 1;
  for (std::size_t t = 0; t < tree.child_offsets.size(); ++t) {
    const auto& offsets = tree.child_offsets[t];
    if (static_cast<std::int64_t>(offsets.size()) != nodes + 1 || offsets.front() != 0)
      throw Error("label tree: level " + std::to_string(t) + " has " + std::to_string(offsets.size()) + " child offsets for " +
                  std::to_string(nodes) + " nodes");
    if (!std::is_sorted(offsets.begin(), offsets.end())) throw Error("label tree: the child offsets of level " + std::to_string(t) + " decrease");
    nodes = offsets.back();
  }
  if (nodes != num_labels || static_cast<std::int64_t>(tree.labels.size()) != num_labels)
    throw Error("label tree: its last level has " + std::to_string(nodes) + " positions for " + std::to_string(num_labels) + " labels");
  std::vector<char> seen(static_cast<std::size_t>(num_labels), 0);
  for (const std::int32_t label : tree.labels) {
    if (label < 0 || label >= num_labels || seen[static_cast<std::size_t>(label)])
      throw Error("label tree: label " + std::to_string(label) + " is out of range or appears twice");
    seen[static_cast<std::size_t>(label)] = 1;
  }
}

}  // namespace xmc
