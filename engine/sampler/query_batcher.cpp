#include "engine/sampler/query_batcher.h"

#include <algorithm>
#include <sstream>

#include "engine/core/error.h"

namespace xmc {

QueryBatcher::QueryBatcher(std::unique_ptr<BatchOrder> order, std::int64_t batch_size, std::vector<std::int64_t> queries, std::uint64_t seed)
    : order_(std::move(order)), batch_size_(batch_size), queries_(std::move(queries)), rng_(seed) {
  if (queries_.empty()) throw ConfigError("no training query has a label: nothing to train on");
}

bool QueryBatcher::needs_embeddings(std::int64_t epoch) const { return order_->needs_embeddings(epoch, static_cast<std::int64_t>(queries_.size())); }

std::string QueryBatcher::refresh_phase(std::int64_t epoch) const { return order_->refresh_phase(epoch, static_cast<std::int64_t>(queries_.size())); }

std::vector<std::vector<std::int64_t>> QueryBatcher::epoch_batches(std::int64_t epoch, const torch::Tensor& embeddings,
                                                                   Progress* progress) {
  return cut_into_batches(order_->order(epoch, queries_, embeddings, rng_, progress), batch_size_);
}

std::vector<std::vector<std::int64_t>> cut_into_batches(const std::vector<std::int64_t>& order, std::int64_t batch_size) {
  const auto size = static_cast<std::size_t>(std::max<std::int64_t>(batch_size, 1));
  std::vector<std::vector<std::int64_t>> batches;
  for (std::size_t start = 0; start < order.size(); start += size) {
    const auto end = std::min(order.size(), start + size);
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start), order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  // A tiny last batch has almost no in-batch negatives: merge it into the previous one.
  if (batches.size() > 1 && static_cast<std::int64_t>(batches.back().size()) < batch_size / 4) {
    auto last = std::move(batches.back());
    batches.pop_back();
    batches.back().insert(batches.back().end(), last.begin(), last.end());
  }
  return batches;
}

std::string QueryBatcher::save_state() const {
  std::ostringstream out;
  out << rng_ << '\n';
  order_->save_state(out);
  return out.str();
}

void QueryBatcher::load_state(const std::string& state) {
  std::istringstream in(state);
  in >> rng_;
  if (!in) throw Error("checkpoint: the sampler state is corrupt or belongs to another run's dataset");
  order_->load_state(in, queries_);
}

std::int64_t batch_count(std::int64_t queries, std::int64_t batch_size) {
  if (queries <= 0) return 0;
  batch_size = std::max<std::int64_t>(batch_size, 1);
  std::int64_t batches = (queries + batch_size - 1) / batch_size;
  if (batches > 1 && queries - (batches - 1) * batch_size < batch_size / 4) --batches;
  return batches;
}

}  // namespace xmc
