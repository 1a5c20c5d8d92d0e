#include "engine/index/ivf_index.h"

#include <cstring>
#include <istream>
#include <limits>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/index/clustered_search.h"
#include "engine/index/index_kind.h"

namespace xmc {

struct IvfIndex::Impl {
  IvfIndexOptions options;
  // ntotal × dim, row-major: in id order until the clusters are made, which regroup it in place (no second copy);
  // grouped() says which.
  std::vector<float> data;
  // Or the caller's rows, in id order, row i at borrowed + i·borrowed_stride (over_rows): then `data` is empty.
  const float* borrowed = nullptr;
  std::int64_t borrowed_stride = 0;
  std::shared_ptr<const void> borrowed_owner;
  mutable std::mutex clusters_mutex;              // guards clusters
  mutable std::optional<KeyClusters> clusters;    // made on the first search after an add

  bool grouped() const { return clusters && !data.empty() && clusters->grouped_keys() == data.data(); }
  const float* row(std::int64_t id, std::int64_t dim) const { return borrowed != nullptr ? borrowed + id * borrowed_stride : data.data() + id * dim; }

  /// Borrowed rows copied into `data` (before the index grows), the borrow let go.
  void own_rows(std::int64_t ntotal, std::int64_t dim) {
    if (borrowed == nullptr) return;
    clusters.reset();
    data.resize(static_cast<std::size_t>(ntotal * dim));
    for (std::int64_t i = 0; i < ntotal; ++i) std::memcpy(data.data() + i * dim, row(i, dim), static_cast<std::size_t>(dim) * sizeof(float));
    borrowed = nullptr;
    borrowed_owner.reset();
  }

  /// Drops the clusters, first putting grouped rows back in id order (the row at position p is key key_at[p]: each
  /// permutation cycle is walked once, one row carried along).
  void drop_clusters(std::int64_t dim) {
    if (grouped()) {
      const std::vector<std::int64_t>& key_at = clusters->key_at();
      const auto d = static_cast<std::size_t>(dim);
      const std::size_t row_bytes = d * sizeof(float);
      std::vector<float> carried(d), displaced(d);
      std::vector<bool> moved(key_at.size(), false);
      for (std::size_t start = 0; start < key_at.size(); ++start) {
        if (moved[start]) continue;
        std::memcpy(carried.data(), data.data() + start * d, row_bytes);
        for (std::size_t p = start;;) {
          moved[p] = true;
          const auto q = static_cast<std::size_t>(key_at[p]);
          if (q == start) {
            std::memcpy(data.data() + q * d, carried.data(), row_bytes);
            break;
          }
          std::memcpy(displaced.data(), data.data() + q * d, row_bytes);
          std::memcpy(data.data() + q * d, carried.data(), row_bytes);
          carried.swap(displaced);
          p = q;
        }
      }
    }
    clusters.reset();
  }
};

IvfIndex::IvfIndex(std::int64_t dim, IvfIndexOptions options) : Index(dim), impl_(std::make_unique<Impl>()) {
  if (dim <= 0) throw ConfigError("IvfIndex: dim must be > 0, got " + std::to_string(dim));
  if (options.probe < 1) throw ConfigError("IvfIndex: probe must be >= 1, got " + std::to_string(options.probe));
  if (options.cluster_size < 0) throw ConfigError("IvfIndex: cluster_size must be >= 0, got " + std::to_string(options.cluster_size));
  impl_->options = options;
}

std::unique_ptr<IvfIndex> IvfIndex::over_rows(std::int64_t dim, IvfIndexOptions options, std::int64_t n, const float* rows, std::int64_t row_stride,
                                               std::shared_ptr<const void> owner) {
  if (n < 0 || (n > 0 && (rows == nullptr || row_stride < dim)))
    throw ConfigError("IvfIndex::over_rows: bad n, null rows or a row stride shorter than dim");
  auto index = std::make_unique<IvfIndex>(dim, options);
  if (n == 0) return index;
  index->impl_->borrowed = rows;
  index->impl_->borrowed_stride = row_stride;
  index->impl_->borrowed_owner = std::move(owner);
  index->ntotal_ = n;
  return index;
}

IvfIndex::~IvfIndex() = default;

const IvfIndexOptions& IvfIndex::options() const { return impl_->options; }

void IvfIndex::set_probe(std::int64_t probe) {
  if (probe < 1) throw ConfigError("IvfIndex: probe must be >= 1, got " + std::to_string(probe));
  impl_->options.probe = probe;
}

std::int64_t IvfIndex::clusters() const { return ntotal_ == 0 ? 0 : current_clusters().clusters(); }

KeyClusters IvfIndex::current_clusters() const {
  std::lock_guard lock(impl_->clusters_mutex);
  if (!impl_->clusters) {
    if (impl_->borrowed != nullptr)
      impl_->clusters = KeyClusters::borrowing(
          torch::from_blob(const_cast<float*>(impl_->borrowed), {ntotal_, dim_}, {impl_->borrowed_stride, 1}, torch::kFloat), impl_->options.cluster_size);
    else  // the clusters take the rows over and regroup them in place (see Impl::data)
      impl_->clusters.emplace(torch::from_blob(impl_->data.data(), {ntotal_, dim_}, torch::kFloat), impl_->options.cluster_size);
  }
  return *impl_->clusters;  // shares the groups
}

void IvfIndex::reserve(std::int64_t n) {
  std::lock_guard lock(impl_->clusters_mutex);
  if (n <= ntotal_ || static_cast<std::size_t>(n * dim_) <= impl_->data.capacity()) return;
  impl_->drop_clusters(dim_);  // the clusters read the rows where they lie, which growing moves
  impl_->data.reserve(static_cast<std::size_t>(n * dim_));
  impl_->own_rows(ntotal_, dim_);  // borrowed rows copied in, into the room made
}

void IvfIndex::add(std::int64_t n, const float* x) {
  if (n < 0 || (n > 0 && x == nullptr)) throw ConfigError("IvfIndex::add: bad n or null x");
  std::lock_guard lock(impl_->clusters_mutex);
  impl_->drop_clusters(dim_);
  impl_->own_rows(ntotal_, dim_);
  impl_->data.insert(impl_->data.end(), x, x + n * dim_);
  ntotal_ += n;
}

void IvfIndex::search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const {
  if (n < 0 || k < 0 || (n > 0 && x == nullptr)) throw ConfigError("IvfIndex::search: bad n, k or null x");
  if (n == 0 || k == 0) return;
  auto all_scores = torch::from_blob(scores, {n, k}, torch::kFloat);
  auto all_labels = torch::from_blob(labels, {n, k}, torch::kInt64);
  all_scores.fill_(-std::numeric_limits<float>::infinity());
  all_labels.fill_(-1);
  if (ntotal_ == 0) return;
  const KeyClusters clusters = current_clusters();
  ClusteredSearchOptions search;
  search.probe = impl_->options.probe;
  const TopK top = clusters.search(torch::from_blob(const_cast<float*>(x), {n, dim_}, torch::kFloat), k, search);
  const std::int64_t found = top.indices.size(1);
  all_scores.narrow(1, 0, found).copy_(top.scores);
  all_labels.narrow(1, 0, found).copy_(top.indices);
}

void IvfIndex::reset() {
  std::lock_guard lock(impl_->clusters_mutex);
  impl_->clusters.reset();
  impl_->data.clear();
  impl_->data.shrink_to_fit();
  impl_->borrowed = nullptr;
  impl_->borrowed_owner.reset();
  ntotal_ = 0;
}

void IvfIndex::write(std::ostream& out) const {
  std::lock_guard lock(impl_->clusters_mutex);
  const auto row_bytes = static_cast<std::streamsize>(dim_ * static_cast<std::int64_t>(sizeof(float)));
  if (impl_->borrowed != nullptr) {  // the caller's rows, in id order
    for (std::int64_t id = 0; id < ntotal_; ++id) out.write(reinterpret_cast<const char*>(impl_->row(id, dim_)), row_bytes);
    return;
  }
  if (!impl_->grouped()) {
    write_raw_vectors(out, impl_->data);
    return;
  }
  // Searched since the last add: the rows lie in the clusters' order; they are written in id order.
  const std::vector<std::int64_t>& position_of = impl_->clusters->position_of();
  for (const std::int64_t position : position_of) out.write(reinterpret_cast<const char*>(impl_->data.data() + position * dim_), row_bytes);
}

std::unique_ptr<IvfIndex> IvfIndex::read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, IvfIndexOptions options) {
  std::vector<float> vectors = read_raw_vectors(in, bytes, dim, ntotal, "an IVF index");
  auto index = std::make_unique<IvfIndex>(dim, options);
  index->impl_->data = std::move(vectors);
  index->ntotal_ = ntotal;
  return index;
}

IndexKind ivf_index_kind() {
  return {.name = "ivf",
          .syntax = "ivf[:probe=64,size=N]",
          .help = "inverted file over spherical k-means clusters of about sqrt(labels) labels (size=N: N a cluster), approximate; "
                  "each query searches its probe nearest clusters",
          .parse = [](const std::string& spec, std::optional<std::string_view> parameters) -> IndexRecipe {
            IvfIndexOptions options;
            if (parameters) {
              parse_index_keys(spec, *parameters, [&](const std::string& key, std::int64_t value) {
                if (key == "probe") options.probe = value;
                else if (key == "size") options.cluster_size = value;
                else refuse_index_spec(spec, "has the unknown IVF key \"" + key + "\" (probe, size)");
              });
            }
            return {.make = [options](std::int64_t dim) -> std::unique_ptr<Index> { return std::make_unique<IvfIndex>(dim, options); },
                    .made_by = [](const Index& index) { return dynamic_cast<const IvfIndex*>(&index) != nullptr; },
                    .read = [options](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
                      return IvfIndex::read(payload, header.payload_bytes, header.dim, header.ntotal, options);
                    }};
          }};
}

}  // namespace xmc
