#include "engine/data/holdout_split.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/portable_random.h"
#include "engine/data/csr_rows.h"

namespace xmc {
namespace {

template <typename T>
std::vector<T> items_of(const std::vector<T>& items, const std::vector<std::int64_t>& rows) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (const std::int64_t r : rows) out.push_back(items[static_cast<std::size_t>(r)]);
  return out;
}

}  // namespace

Dataset holdout_split(const Dataset& d, const HoldoutSplitOptions& options) {
  if (!(options.fraction > 0.0 && options.fraction < 1.0))
    throw ConfigError("--fraction must be between 0 and 1 (exclusive), got " + std::to_string(options.fraction));
  const std::int64_t n = d.num_train();
  const auto held = static_cast<std::int64_t>(std::llround(options.fraction * static_cast<double>(n)));
  if (held < 1 || held >= n)
    throw ConfigError("--fraction " + std::to_string(options.fraction) + " of " + std::to_string(n) + " training queries holds out " +
                      std::to_string(held) + ": both splits need at least one query");
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(options.seed);
  shuffle_rows(order, rng);
  std::vector<std::int64_t> test(order.end() - held, order.end());
  std::vector<std::int64_t> train(order.begin(), order.end() - held);
  std::sort(test.begin(), test.end());
  std::sort(train.begin(), train.end());

  Dataset out;
  out.meta = d.meta;
  out.meta.name = d.meta.name + " (dev: " + std::to_string(held) + " of its training queries held out, seed " + std::to_string(options.seed) + ")";
  out.meta.source = "held-out split of " + (d.meta.source.empty() ? d.dir.string() : d.meta.source);
  out.train_text = items_of(d.train_text, train);
  out.test_text = items_of(d.train_text, test);
  out.label_text = d.label_text;
  out.train_labels = csr_rows(d.train_labels, train);
  out.test_labels = csr_rows(d.train_labels, test);
  if (d.train_features) {
    out.train_features = csr_rows(*d.train_features, train);
    out.test_features = csr_rows(*d.train_features, test);
  }
  if (d.train_images) {
    out.train_images = std::make_shared<const ImageBank>(d.train_images->subset(train));
    out.test_images = std::make_shared<const ImageBank>(d.train_images->subset(test));
  }
  out.label_images = d.label_images;
  return out;
}

}  // namespace xmc
