#include "engine/sampler/label_pool.h"

#include <unordered_map>

#include "engine/sampler/query_batcher.h"

namespace xmc {

torch::Tensor positive_mask(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::span<const std::int64_t> pool) {
  std::unordered_map<std::int64_t, std::int64_t> column;
  column.reserve(pool.size() * 2);
  for (std::size_t j = 0; j < pool.size(); ++j) column.emplace(pool[j], static_cast<std::int64_t>(j));
  const auto b = static_cast<std::int64_t>(batch.size());
  const auto p = static_cast<std::int64_t>(pool.size());
  torch::Tensor mask = torch::zeros({b, p}, torch::kBool);
  auto* m = mask.data_ptr<bool>();
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int32_t label : labels.row_indices(batch[static_cast<std::size_t>(i)]))
      if (auto it = column.find(label); it != column.end()) m[i * p + it->second] = true;
  return mask;
}

LabelPool build_label_pool(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::mt19937_64& rng,
                           const LabelPoolOptions& options, const torch::Tensor& shortlist) {
  LabelPool pool;
  if (options.all_labels) {
    pool.labels.resize(static_cast<std::size_t>(labels.cols));
    for (std::int64_t l = 0; l < labels.cols; ++l) pool.labels[static_cast<std::size_t>(l)] = l;
  } else {
    std::unordered_map<std::int64_t, bool> seen;
    auto add = [&](std::int64_t label) {
      if (seen.emplace(label, true).second) pool.labels.push_back(label);
    };
    for (std::int64_t q : batch) {
      const auto row = labels.row_indices(q);
      if (row.empty()) continue;
      if (options.all_positives) {
        for (auto l : row) add(l);
      } else {
        add(row[static_cast<std::size_t>(uniform_index(rng, static_cast<std::int64_t>(row.size())))]);
      }
    }
    if (options.hard_per_query > 0 && shortlist.defined()) {
      const std::int64_t s = shortlist.size(1);
      // int32 ids (hard_negative_shortlist's); int64 ones as older checkpoints hold them.
      const bool narrow_ids = shortlist.scalar_type() == torch::kInt32;
      const auto* ids32 = narrow_ids ? shortlist.data_ptr<std::int32_t>() : nullptr;
      const auto* ids64 = narrow_ids ? nullptr : shortlist.data_ptr<std::int64_t>();
      const auto candidate = [&](std::int64_t at) { return narrow_ids ? static_cast<std::int64_t>(ids32[at]) : ids64[at]; };
      std::vector<std::int64_t> slots(static_cast<std::size_t>(s));
      for (std::int64_t q : batch) {
        // m distinct shortlist entries by a partial Fisher-Yates shuffle.
        for (std::int64_t k = 0; k < s; ++k) slots[static_cast<std::size_t>(k)] = k;
        const std::int64_t m = std::min(options.hard_per_query, s);
        for (std::int64_t k = 0; k < m; ++k) {
          const std::int64_t pick = k + uniform_index(rng, s - k);
          std::swap(slots[static_cast<std::size_t>(k)], slots[static_cast<std::size_t>(pick)]);
          const std::int64_t label = candidate(q * s + slots[static_cast<std::size_t>(k)]);
          if (label >= 0) add(label);
        }
      }
    }
  }
  pool.positive_mask = positive_mask(labels, batch, pool.labels);
  return pool;
}

}  // namespace xmc
