#include "engine/sampler/psl_batch.h"

#include <ATen/CPUGeneratorImpl.h>

namespace xmc {
namespace {

/// A CPU generator seeded from the label-pool stream: the pool's random draws are tensor ops, and the run
/// stays reproducible (and resumable) through the one saved stream.
at::Generator generator_from(std::mt19937_64& rng) { return at::detail::createCPUGenerator(rng()); }

/// Every positive of the batch's queries, flattened: (position in the batch, label id).
struct BatchPositives {
  torch::Tensor rows;    ///< [n] int64
  torch::Tensor labels;  ///< [n] int64
  torch::Tensor counts;  ///< [B] int64, positives per query
};

BatchPositives batch_positives(const CsrMatrix& labels, std::span<const std::int64_t> batch) {
  const auto b = static_cast<std::int64_t>(batch.size());
  BatchPositives out;
  out.counts = torch::empty({b}, torch::kInt64);
  auto* counts = out.counts.data_ptr<std::int64_t>();
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < b; ++i) total += counts[i] = labels.row_size(batch[static_cast<std::size_t>(i)]);
  torch::Tensor ids = torch::empty({total}, torch::kInt32);
  auto* out_ids = ids.data_ptr<std::int32_t>();
  for (std::int64_t i = 0; i < b; ++i) {
    const auto row = labels.row_indices(batch[static_cast<std::size_t>(i)]);
    out_ids = std::copy(row.begin(), row.end(), out_ids);
  }
  out.labels = ids.to(torch::kInt64);
  out.rows = torch::repeat_interleave(out.counts);
  return out;
}

/// Up to `beta` entries per row, uniformly without replacement: sort by (row, random key) and keep the first
/// `beta` of each row.
torch::Tensor sample_per_row(const BatchPositives& positives, std::int64_t beta, at::Generator& generator) {
  const std::int64_t n = positives.labels.size(0);
  if (n == 0) return positives.labels;
  const torch::Tensor keys = positives.rows.to(torch::kFloat64) * 2 + torch::rand({n}, generator, torch::kFloat64);
  const torch::Tensor order = keys.argsort();
  const torch::Tensor rows = positives.rows.index_select(0, order);
  const torch::Tensor row_start = positives.counts.cumsum(0) - positives.counts;
  const torch::Tensor rank = torch::arange(n, torch::kInt64) - row_start.index_select(0, rows);
  return positives.labels.index_select(0, order).masked_select(rank < beta);
}

}  // namespace

PslBatch build_psl_batch(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::mt19937_64& rng, const PslOptions& options,
                         const torch::Tensor& hard_negatives) {
  at::Generator generator = generator_from(rng);
  const BatchPositives positives = batch_positives(labels, batch);
  torch::Tensor pool;
  if (options.all_labels) {
    pool = torch::arange(labels.cols, torch::kInt64);
  } else {
    const torch::Tensor sampled = std::get<0>(torch::_unique(sample_per_row(positives, options.positives_per_query, generator), /*sorted=*/true));
    torch::Tensor negatives = torch::empty({0}, torch::kInt64);
    if (hard_negatives.defined() && hard_negatives.numel() > 0) {
      negatives = std::get<0>(torch::_unique(hard_negatives.reshape({-1}).to(torch::kInt64), /*sorted=*/true));
      negatives = negatives.masked_select((negatives >= 0).logical_and(torch::isin(negatives, sampled).logical_not()));
    }
    if (options.pool_size > 0 && sampled.size(0) + negatives.size(0) > options.pool_size) {
      const std::int64_t room = std::max<std::int64_t>(options.pool_size - sampled.size(0), 0);
      negatives = negatives.index_select(0, torch::randperm(negatives.size(0), generator, torch::kInt64).narrow(0, 0, room));
    }
    pool = torch::cat({sampled, negatives});
  }

  // P_i ∩ L_B: find each batch positive in the pool (searchsorted over the sorted pool).
  const std::int64_t p = pool.size(0);
  const auto b = static_cast<std::int64_t>(batch.size());
  torch::Tensor mask = torch::zeros({b, p}, torch::kBool);
  if (p > 0 && positives.labels.size(0) > 0) {
    const auto [sorted_pool, pool_order] = pool.sort();
    const torch::Tensor at = torch::searchsorted(sorted_pool, positives.labels).clamp_max(p - 1);
    const torch::Tensor found = sorted_pool.index_select(0, at).eq(positives.labels);
    const torch::Tensor columns = pool_order.index_select(0, at).masked_select(found);
    mask.index_put_({positives.rows.masked_select(found), columns}, torch::ones({columns.size(0)}, torch::kBool));
  }
  PslBatch out;
  out.kept = mask.any(/*dim=*/1).nonzero().reshape({-1});
  out.labels = pool;
  out.positive_mask = mask.index_select(0, out.kept);
  return out;
}

void HardNegativeWindow::refresh(const torch::Tensor& shortlist, std::int64_t epoch, std::mt19937_64& rng) {
  at::Generator generator = generator_from(rng);
  const torch::Tensor order = torch::rand(shortlist.sizes(), generator, torch::kFloat64).argsort(/*dim=*/1, /*descending=*/false);
  shuffled_ = shortlist.to(torch::kCPU).gather(1, order).contiguous();
  epoch_ = epoch;
}

torch::Tensor HardNegativeWindow::draw(std::span<const std::int64_t> batch, std::int64_t epoch, std::int64_t per_query) const {
  const auto b = static_cast<std::int64_t>(batch.size());
  const std::int64_t s = shuffled_.size(1);
  if (s == 0 || per_query <= 0) return torch::full({b, std::max<std::int64_t>(per_query, 0)}, -1, torch::kInt64);
  const std::int64_t offset = std::max<std::int64_t>(epoch - epoch_, 0) * per_query;
  const torch::Tensor columns = (torch::arange(per_query, torch::kInt64) + offset).remainder(s);
  const torch::Tensor rows = torch::from_blob(const_cast<std::int64_t*>(batch.data()), {b}, torch::kInt64);
  return shuffled_.index_select(0, rows).index_select(1, columns);
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
  shuffled_ = shuffled;
  epoch_ = epoch.item<std::int64_t>();
}

}  // namespace xmc
