#include "engine/sampler/psl_batch.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"

namespace xmc {
namespace {

/// A CPU generator seeded from the label-pool stream: the pool's random draws are tensor ops, and the run
/// stays reproducible (and resumable) through the one saved stream.
at::Generator generator_from(std::mt19937_64& rng) { return at::detail::createCPUGenerator(rng()); }

/// The batch's positives, flattened: row i's labels are ids[offsets[i], offsets[i + 1]).
struct BatchPositives {
  std::vector<std::int64_t> offsets;  ///< [B + 1]
  std::vector<std::int64_t> ids;      ///< label ids
};

BatchPositives batch_positives(const CsrMatrix& labels, std::span<const std::int64_t> batch) {
  BatchPositives out;
  std::size_t total = 0;
  for (const std::int64_t q : batch) total += static_cast<std::size_t>(labels.row_size(q));
  out.ids.reserve(total);
  out.offsets.reserve(batch.size() + 1);
  out.offsets.push_back(0);
  for (const std::int64_t q : batch) {
    const auto row = labels.row_indices(q);
    out.ids.insert(out.ids.end(), row.begin(), row.end());
    out.offsets.push_back(static_cast<std::int64_t>(out.ids.size()));
  }
  return out;
}

/// Up to `beta` positives per row, uniformly without replacement: each positive gets a uniform key (one draw
/// for the batch), and each row keeps its `beta` smallest. Returned ascending and distinct.
std::vector<std::int64_t> sample_per_row(const BatchPositives& positives, std::int64_t beta, at::Generator& generator) {
  const auto n = static_cast<std::int64_t>(positives.ids.size());
  if (n == 0) return {};
  const torch::Tensor keys = torch::rand({n}, generator, torch::kFloat64);
  const double* key = keys.data_ptr<double>();
  std::vector<std::int64_t> sampled, order;
  for (std::size_t i = 0; i + 1 < positives.offsets.size(); ++i) {
    const std::int64_t begin = positives.offsets[i], end = positives.offsets[i + 1];
    if (end - begin <= beta) {
      sampled.insert(sampled.end(), positives.ids.begin() + begin, positives.ids.begin() + end);
      continue;
    }
    order.resize(static_cast<std::size_t>(end - begin));
    std::iota(order.begin(), order.end(), begin);
    std::nth_element(order.begin(), order.begin() + beta, order.end(), [key](std::int64_t a, std::int64_t b) { return key[a] < key[b]; });
    for (std::int64_t k = 0; k < beta; ++k) sampled.push_back(positives.ids[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])]);
  }
  std::sort(sampled.begin(), sampled.end());
  sampled.erase(std::unique(sampled.begin(), sampled.end()), sampled.end());
  return sampled;
}

/// The distinct valid (>= 0) hard negatives that are not sampled positives, ascending.
std::vector<std::int64_t> pool_negatives(const torch::Tensor& hard_negatives, const std::vector<std::int64_t>& sampled) {
  if (!hard_negatives.defined() || hard_negatives.numel() == 0) return {};
  const torch::Tensor flat = hard_negatives.reshape({-1}).to(torch::kCPU, torch::kInt64).contiguous();
  const std::int64_t* ids = flat.data_ptr<std::int64_t>();
  std::vector<std::int64_t> candidates;
  candidates.reserve(static_cast<std::size_t>(flat.numel()));
  for (std::int64_t k = 0; k < flat.numel(); ++k)
    if (ids[k] >= 0) candidates.push_back(ids[k]);
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<std::int64_t> out;
  std::set_difference(candidates.begin(), candidates.end(), sampled.begin(), sampled.end(), std::back_inserter(out));
  return out;
}

/// Each pool label's column, by label id, in a table kept per thread across batches (one entry per label,
/// -1 off the pool): a positive's column is one load, where a search of the pool cost a dozen comparisons per
/// positive (Delicious: ~19 positives a query). Only the pool's entries are written, and reset on destruction.
class PoolColumns {
 public:
  PoolColumns(const std::vector<std::int64_t>& pool, std::int64_t num_labels) : pool_(pool) {
    std::int64_t size = num_labels;
    for (const std::int64_t label : pool) size = std::max(size, label + 1);
    if (static_cast<std::int64_t>(table().size()) < size) table().resize(static_cast<std::size_t>(size), -1);
    for (std::size_t j = 0; j < pool.size(); ++j) table()[static_cast<std::size_t>(pool[j])] = static_cast<std::int32_t>(j);
  }
  ~PoolColumns() {
    for (const std::int64_t label : pool_) table()[static_cast<std::size_t>(label)] = -1;
  }
  PoolColumns(const PoolColumns&) = delete;
  PoolColumns& operator=(const PoolColumns&) = delete;

  /// The column of `label` in the pool, or -1.
  std::int64_t of(std::int64_t label) const {
    return label < static_cast<std::int64_t>(table().size()) ? table()[static_cast<std::size_t>(label)] : -1;
  }

 private:
  static std::vector<std::int32_t>& table() {
    thread_local std::vector<std::int32_t> columns;  // a pool's columns fit: it is a [B x P] mask's width
    return columns;
  }
  const std::vector<std::int64_t>& pool_;
};

torch::Tensor int64_tensor(const std::vector<std::int64_t>& values) {
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(values.size())}, torch::kInt64);
  std::copy(values.begin(), values.end(), out.data_ptr<std::int64_t>());
  return out;
}

}  // namespace

// Linear passes over the batch's positives on the host, where the pool is built whatever the device: a
// handful of small tensor ops per step costs more in dispatch than these loops do in work (0.94 ms against
// 0.33 ms for 512 WordNet queries).
PslBatch build_psl_batch(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::mt19937_64& rng, const PslPoolOptions& options,
                         const torch::Tensor& hard_negatives) {
  at::Generator generator = generator_from(rng);
  const BatchPositives positives = batch_positives(labels, batch);
  // The pool as two ascending, disjoint runs: sampled positives [0, sampled_count), then negatives.
  std::vector<std::int64_t> pool;
  std::size_t sampled_count = 0;
  if (options.all_labels) {
    pool.resize(static_cast<std::size_t>(labels.cols));
    std::iota(pool.begin(), pool.end(), std::int64_t{0});
    sampled_count = pool.size();
  } else {
    pool = sample_per_row(positives, options.positives_per_query, generator);
    sampled_count = pool.size();
    std::vector<std::int64_t> negatives = pool_negatives(hard_negatives, pool);
    const auto pooled = static_cast<std::int64_t>(pool.size() + negatives.size());
    if (options.pool_size > 0 && pooled > options.pool_size) {
      const std::int64_t room = std::max<std::int64_t>(options.pool_size - static_cast<std::int64_t>(sampled_count), 0);
      const torch::Tensor order = torch::randperm(static_cast<std::int64_t>(negatives.size()), generator, torch::kInt64);
      const std::int64_t* chosen = order.data_ptr<std::int64_t>();
      std::vector<std::int64_t> kept_negatives(static_cast<std::size_t>(room));
      for (std::int64_t k = 0; k < room; ++k) kept_negatives[static_cast<std::size_t>(k)] = negatives[static_cast<std::size_t>(chosen[k])];
      negatives = std::move(kept_negatives);
    }
    pool.insert(pool.end(), negatives.begin(), negatives.end());
  }

  // P_i ∩ L_B: each positive's column, looked up in a label → column table.
  const auto p = static_cast<std::int64_t>(pool.size());
  const PoolColumns pool_columns(pool, labels.cols);
  std::vector<std::int64_t> columns(positives.ids.size());
  std::vector<std::int64_t> kept;
  for (std::size_t i = 0; i + 1 < positives.offsets.size(); ++i) {
    bool any = false;
    for (std::int64_t k = positives.offsets[i]; k < positives.offsets[i + 1]; ++k) {
      columns[static_cast<std::size_t>(k)] = pool_columns.of(positives.ids[static_cast<std::size_t>(k)]);
      any = any || columns[static_cast<std::size_t>(k)] >= 0;
    }
    if (any) kept.push_back(static_cast<std::int64_t>(i));
  }
  PslBatch out;
  out.positive_mask = torch::zeros({static_cast<std::int64_t>(kept.size()), p}, torch::kBool);
  bool* mask = out.positive_mask.data_ptr<bool>();
  std::vector<std::int64_t> pair_rows, pair_columns;
  for (std::size_t r = 0; r < kept.size(); ++r) {
    const auto i = static_cast<std::size_t>(kept[r]);
    const std::size_t first = pair_columns.size();
    for (std::int64_t k = positives.offsets[i]; k < positives.offsets[i + 1]; ++k)
      if (const std::int64_t c = columns[static_cast<std::size_t>(k)]; c >= 0 && !mask[static_cast<std::int64_t>(r) * p + c]) {
        mask[static_cast<std::int64_t>(r) * p + c] = true;
        pair_columns.push_back(c);
      }
    std::sort(pair_columns.begin() + static_cast<std::ptrdiff_t>(first), pair_columns.end());
    pair_rows.resize(pair_columns.size(), static_cast<std::int64_t>(r));
  }
  out.pair_rows = int64_tensor(pair_rows);
  out.pair_columns = int64_tensor(pair_columns);
  out.kept = int64_tensor(kept);
  out.labels = int64_tensor(pool);
  return out;
}

void HardNegativeWindow::refresh(torch::Tensor shortlist, std::int64_t epoch, std::mt19937_64& rng) {
  shuffled_ = torch::Tensor();  // the old window is not needed to make the new one
  at::Generator generator = generator_from(rng);
  const torch::Tensor rows = shortlist.to(torch::kCPU);
  shortlist.reset();
  const std::int64_t n = rows.size(0), s = rows.size(1);
  // Label ids as int32 (a label count is far below 2^31): half the memory of an int64 shortlist, which the window
  // outlives by a whole refresh period (0.9 GB instead of 1.8 at 2.25M queries x 100). An int32 shortlist handed
  // over (no other handle on it) is shuffled where it lies: a second one would be held beside it (0.9 GB more).
  const bool handed_over = rows.scalar_type() == torch::kInt32 && rows.is_contiguous() && rows.use_count() == 1 && rows.storage().use_count() == 1;
  torch::Tensor shuffled = handed_over ? rows : torch::empty({n, s}, torch::kInt32);
  // Slice by slice of rows: the draws come in the order one [N x S] draw makes them (row after row), and the
  // sort's temporaries (about five float64 or int64 arrays) take a slice that fits the memory budget's share, not
  // N x S (1.8 GB each at 2.25M queries x 100).
  const std::int64_t slice = std::max<std::int64_t>(64, memory_budget_part(memory_share::kWindowShuffle) / (40 * std::max<std::int64_t>(s, 1)));
  for (std::int64_t first = 0; first < n; first += slice) {
    const std::int64_t count = std::min(slice, n - first);
    const torch::Tensor order = torch::rand({count, s}, generator, torch::kFloat64).argsort(/*dim=*/1, /*descending=*/false);
    shuffled.narrow(0, first, count).copy_(rows.narrow(0, first, count).gather(1, order));
  }
  shuffled_ = shuffled;
  epoch_ = epoch;
}

torch::Tensor HardNegativeWindow::draw(std::span<const std::int64_t> batch, std::int64_t epoch, std::int64_t per_query) const {
  const auto b = static_cast<std::int64_t>(batch.size());
  const std::int64_t s = shuffled_.size(1);
  if (s == 0 || per_query <= 0) return torch::full({b, std::max<std::int64_t>(per_query, 0)}, -1, torch::kInt64);
  const std::int64_t offset = std::max<std::int64_t>(epoch - epoch_, 0) * per_query;
  const torch::Tensor columns = (torch::arange(per_query, torch::kInt64) + offset).remainder(s);
  const torch::Tensor rows = torch::from_blob(const_cast<std::int64_t*>(batch.data()), {b}, torch::kInt64);
  return shuffled_.index_select(0, rows).index_select(1, columns).to(torch::kInt64);
}

void HardNegativeWindow::save(torch::serialize::OutputArchive& archive, const std::string& prefix) const {
  archive.write(prefix + "_epoch", torch::tensor({epoch_}, torch::kInt64));
  if (shuffled_.defined()) archive.write(prefix + "_shuffled", shuffled_);
}

void HardNegativeWindow::load(torch::serialize::InputArchive& archive, const std::string& prefix) {
  torch::Tensor epoch;
  shuffled_ = torch::Tensor();
  epoch_ = -1;
  if (!archive.try_read(prefix + "_epoch", epoch)) return;
  torch::Tensor shuffled;
  if (!archive.try_read(prefix + "_shuffled", shuffled)) return;  // saved before the first refresh
  if (shuffled.dim() != 2 || (shuffled.scalar_type() != torch::kInt32 && shuffled.scalar_type() != torch::kInt64))
    throw Error("checkpoint: " + prefix + "_shuffled is not a matrix of label ids");
  // Checkpoints written before the window held int32 hold int64 ids: the same ids.
  if (shuffled.numel() > 0 && (shuffled.min().item<std::int64_t>() < -1 || shuffled.max().item<std::int64_t>() > std::numeric_limits<std::int32_t>::max()))
    throw Error("checkpoint: " + prefix + "_shuffled holds a label id outside [-1, 2^31)");
  shuffled_ = shuffled.to(torch::kInt32).contiguous();
  epoch_ = epoch.item<std::int64_t>();
}

}  // namespace xmc
