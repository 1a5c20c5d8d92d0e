#include "engine/sampler/query_batcher.h"

#include <algorithm>

#include <sstream>

#include "engine/core/error.h"
#include "engine/sampler/balanced_clustering.h"

namespace xmc {

QueryBatcher::QueryBatcher(QueryBatcherOptions options, std::vector<std::int64_t> queries, std::uint64_t seed)
    : options_(std::move(options)), queries_(std::move(queries)), rng_(seed) {
  if (queries_.empty()) throw ConfigError("no training query has a label: nothing to train on");
}

std::int64_t QueryBatcher::cluster_size_at(std::int64_t epoch) const {
  if (options_.type != "cluster" || epoch < options_.start_epoch) return 1;
  std::int64_t c = options_.cluster_size;
  for (auto e : options_.grow_at)
    if (epoch >= e) c *= 2;
  return std::min<std::int64_t>(c, static_cast<std::int64_t>(queries_.size()));
}

bool QueryBatcher::needs_embeddings(std::int64_t epoch) const {
  const std::int64_t c = cluster_size_at(epoch);
  if (c <= 1) return false;
  return clusters_.empty() || c != clusters_size_ || (epoch - options_.start_epoch) % options_.refresh_every == 0;
}

void QueryBatcher::shuffle(std::vector<std::int64_t>& v) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<std::size_t>(uniform_index(rng_, static_cast<std::int64_t>(i)))]);
}

std::vector<std::vector<std::int64_t>> QueryBatcher::epoch_batches(std::int64_t epoch, const torch::Tensor& embeddings,
                                                                   Progress* progress) {
  std::vector<std::int64_t> order;
  const std::int64_t c = cluster_size_at(epoch);
  if (c <= 1) {
    order = queries_;
    shuffle(order);
  } else {
    if (needs_embeddings(epoch)) {
      if (!embeddings.defined()) throw Error("clustered batches need the query embeddings of the last pass");
      auto index = torch::tensor(queries_, torch::kInt64).to(embeddings.device());
      auto local = balanced_clusters(embeddings.index_select(0, index), c, {.seed = rng_(), .progress = progress});
      clusters_.clear();
      for (auto& cluster : local) {
        for (auto& row : cluster) row = queries_[static_cast<std::size_t>(row)];
        clusters_.push_back(std::move(cluster));
      }
      clusters_size_ = c;
    }
    // Shuffle whole clusters, and queries inside each, then concatenate.
    std::vector<std::int64_t> cluster_order(clusters_.size());
    for (std::size_t i = 0; i < cluster_order.size(); ++i) cluster_order[i] = static_cast<std::int64_t>(i);
    shuffle(cluster_order);
    for (auto ci : cluster_order) {
      auto members = clusters_[static_cast<std::size_t>(ci)];
      shuffle(members);
      order.insert(order.end(), members.begin(), members.end());
    }
  }
  return cut_into_batches(order, options_.batch_size);
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
  out << rng_ << '\n' << clusters_size_ << ' ' << clusters_.size() << '\n';
  for (const auto& c : clusters_) {
    out << c.size();
    for (auto r : c) out << ' ' << r;
    out << '\n';
  }
  return out.str();
}

void QueryBatcher::load_state(const std::string& state) {
  // The state comes from a checkpoint file: sizes and rows are checked against this batcher's queries
  // before anything is allocated or used (a damaged or foreign checkpoint must not crash the resume).
  const auto corrupt = [] { return Error("checkpoint: the sampler state is corrupt or belongs to another run's dataset"); };
  const std::int64_t max_row = queries_.empty() ? -1 : *std::max_element(queries_.begin(), queries_.end());
  std::istringstream in(state);
  std::size_t n = 0;
  in >> rng_ >> clusters_size_ >> n;
  if (!in || n > queries_.size()) throw corrupt();
  clusters_.assign(n, {});
  for (auto& c : clusters_) {
    std::size_t size = 0;
    in >> size;
    if (!in || size > queries_.size()) throw corrupt();
    c.resize(size);
    for (auto& r : c) {
      in >> r;
      if (!in || r < 0 || r > max_row) throw corrupt();
    }
  }
}

std::int64_t batch_count(std::int64_t queries, std::int64_t batch_size) {
  if (queries <= 0) return 0;
  batch_size = std::max<std::int64_t>(batch_size, 1);
  std::int64_t batches = (queries + batch_size - 1) / batch_size;
  if (batches > 1 && queries - (batches - 1) * batch_size < batch_size / 4) --batches;
  return batches;
}

}  // namespace xmc
