// The "cluster" batch order (NGAME): balanced 2-means clusters of the current query embeddings, shuffled,
// concatenated and cut into batches, so that each query's in-batch negatives are hard. The cluster size follows
// a curriculum: 1 (random) before `start_epoch`, then C, doubling at each `grow_at` epoch; clusters are
// recomputed every `refresh_every` epochs from the embeddings of the last pass.
#include <algorithm>
#include <istream>
#include <ostream>

#include "engine/config/component_config.h"
#include "engine/core/error.h"
#include "engine/sampler/balanced_clustering.h"
#include "engine/sampler/batch_order.h"
#include "engine/sampler/cluster_batch_options.h"

namespace xmc {
namespace {

class ClusterBatchOrder final : public BatchOrder {
 public:
  explicit ClusterBatchOrder(ClusterBatchOptions options) : options_(std::move(options)) {}

  bool needs_embeddings(std::int64_t epoch, std::int64_t num_queries) const override {
    const std::int64_t c = size_at(epoch, num_queries);
    return c > 1 && (clusters_.empty() || c != clusters_size_ || (epoch - options_.start_epoch) % options_.refresh_every == 0);
  }

  std::string refresh_phase(std::int64_t epoch, std::int64_t num_queries) const override {
    return "clustering queries (C = " + std::to_string(size_at(epoch, num_queries)) + ")";
  }

  std::vector<std::int64_t> order(std::int64_t epoch, const std::vector<std::int64_t>& queries, const torch::Tensor& embeddings,
                                  std::mt19937_64& rng, Progress* progress) override {
    const auto num_queries = static_cast<std::int64_t>(queries.size());
    const std::int64_t c = size_at(epoch, num_queries);
    std::vector<std::int64_t> out;
    if (c <= 1) {
      out = queries;
      shuffle_rows(out, rng);
      return out;
    }
    if (needs_embeddings(epoch, num_queries)) {
      if (!embeddings.defined()) throw Error("clustered batches need the query embeddings of the last pass");
      // Every training query in order (the usual case) is clustered in place: no copy of the embeddings.
      bool every_row = num_queries == embeddings.size(0);
      for (std::int64_t i = 0; every_row && i < num_queries; ++i) every_row = queries[static_cast<std::size_t>(i)] == i;
      const auto rows = every_row ? embeddings : embeddings.index_select(0, torch::tensor(queries, torch::kInt64).to(embeddings.device()));
      auto local = balanced_clusters(rows, c, {.seed = rng(), .progress = progress});
      clusters_.clear();
      for (auto& cluster : local) {
        for (auto& row : cluster) row = queries[static_cast<std::size_t>(row)];
        clusters_.push_back(std::move(cluster));
      }
      clusters_size_ = c;
    }
    // Shuffle whole clusters, and queries inside each, then concatenate.
    std::vector<std::int64_t> cluster_order(clusters_.size());
    for (std::size_t i = 0; i < cluster_order.size(); ++i) cluster_order[i] = static_cast<std::int64_t>(i);
    shuffle_rows(cluster_order, rng);
    for (auto ci : cluster_order) {
      auto members = clusters_[static_cast<std::size_t>(ci)];
      shuffle_rows(members, rng);
      out.insert(out.end(), members.begin(), members.end());
    }
    return out;
  }

  void save_state(std::ostream& out) const override {
    out << clusters_size_ << ' ' << clusters_.size() << '\n';
    for (const auto& c : clusters_) {
      out << c.size();
      for (auto r : c) out << ' ' << r;
      out << '\n';
    }
  }

  void load_state(std::istream& in, const std::vector<std::int64_t>& queries) override {
    // The state comes from a checkpoint file: sizes and rows are checked against the batcher's queries
    // before anything is allocated or used (a damaged or foreign checkpoint must not crash the resume).
    const auto corrupt = [] { return Error("checkpoint: the sampler state is corrupt or belongs to another run's dataset"); };
    const std::int64_t max_row = queries.empty() ? -1 : *std::max_element(queries.begin(), queries.end());
    clusters_.clear();
    clusters_size_ = 0;
    in >> std::ws;
    if (in.eof()) return;  // a checkpoint of an order without state: no clusters yet
    std::size_t n = 0;
    in >> clusters_size_ >> n;
    if (!in || n > queries.size()) throw corrupt();
    clusters_.assign(n, {});
    for (auto& c : clusters_) {
      std::size_t size = 0;
      in >> size;
      if (!in || size > queries.size()) throw corrupt();
      c.resize(size);
      for (auto& r : c) {
        in >> r;
        if (!in || r < 0 || r > max_row) throw corrupt();
      }
    }
  }

 private:
  /// The cluster size in force at `epoch`: 1 (random batches) before start_epoch, never more than the queries.
  std::int64_t size_at(std::int64_t epoch, std::int64_t num_queries) const {
    return epoch < options_.start_epoch ? 1 : std::min(cluster_size_at(options_, epoch), num_queries);
  }

  ClusterBatchOptions options_;
  std::vector<std::vector<std::int64_t>> clusters_;
  std::int64_t clusters_size_ = 0;  ///< C the clusters were made with
};

}  // namespace

std::unique_ptr<BatchOrder> make_cluster_batch_order(const ComponentConfig& config) {
  return std::make_unique<ClusterBatchOrder>(config.get<ClusterBatchOptions>());
}

}  // namespace xmc
