#include "engine/index/index_kind.h"
#include "engine/index/exact_index.h"

#include <algorithm>
#include <istream>
#include <limits>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/index/exact_search.h"

namespace xmc {

struct ExactIndex::Impl {
  ExactIndexOptions options;
  torch::Device device{torch::kCPU};
  std::vector<float> data;              // ntotal × dim, row-major (host copy, grows with add)
  mutable std::mutex device_mutex;      // guards device_keys
  mutable torch::Tensor device_keys;    // copy of `data` on a non-CPU device, made on first search
};

ExactIndex::ExactIndex(std::int64_t dim, ExactIndexOptions options) : Index(dim), impl_(std::make_unique<Impl>()) {
  if (dim <= 0) throw ConfigError("ExactIndex: dim must be > 0, got " + std::to_string(dim));
  try {
    impl_->device = torch::Device(options.device);
  } catch (const std::exception&) {
    throw ConfigError("ExactIndex: unknown device '" + options.device + "'");
  }
  impl_->options = std::move(options);
}

ExactIndex::~ExactIndex() = default;

void ExactIndex::reserve(std::int64_t n) {
  if (n > ntotal_) impl_->data.reserve(static_cast<std::size_t>(n * dim_));
}

void ExactIndex::add(std::int64_t n, const float* x) {
  if (n < 0 || (n > 0 && x == nullptr)) throw ConfigError("ExactIndex::add: bad n or null x");
  impl_->data.insert(impl_->data.end(), x, x + n * dim_);
  ntotal_ += n;
  std::lock_guard lock(impl_->device_mutex);
  impl_->device_keys = torch::Tensor();
}

void ExactIndex::search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const {
  if (n < 0 || k < 0 || (n > 0 && x == nullptr)) throw ConfigError("ExactIndex::search: bad n, k or null x");
  if (n == 0 || k == 0) return;
  const std::int64_t found = std::min(k, ntotal_);
  if (found > 0) {
    torch::Tensor keys = torch::from_blob(impl_->data.data(), {ntotal_, dim_}, torch::kFloat);
    torch::Tensor queries = torch::from_blob(const_cast<float*>(x), {n, dim_}, torch::kFloat);
    if (!impl_->device.is_cpu()) {
      {
        std::lock_guard lock(impl_->device_mutex);
        if (!impl_->device_keys.defined()) impl_->device_keys = keys.to(impl_->device);
        keys = impl_->device_keys;
      }
      queries = queries.to(impl_->device);
    }
    const auto top = exact_top_k(queries, keys, found,
                                 {.query_chunk = impl_->options.query_chunk, .key_chunk = impl_->options.key_chunk});
    const auto top_scores = top.scores.to(torch::kCPU).contiguous();
    const auto top_labels = top.indices.to(torch::kCPU).contiguous();
    // Rows of k outputs; exact_top_k returned `found` columns.
    torch::from_blob(scores, {n, k}, torch::kFloat).narrow(1, 0, found).copy_(top_scores);
    torch::from_blob(labels, {n, k}, torch::kInt64).narrow(1, 0, found).copy_(top_labels);
  }
  if (found < k) {
    torch::from_blob(scores, {n, k}, torch::kFloat).narrow(1, found, k - found).fill_(-std::numeric_limits<float>::infinity());
    torch::from_blob(labels, {n, k}, torch::kInt64).narrow(1, found, k - found).fill_(-1);
  }
}

void ExactIndex::reset() {
  impl_->data.clear();
  impl_->data.shrink_to_fit();
  ntotal_ = 0;
  std::lock_guard lock(impl_->device_mutex);
  impl_->device_keys = torch::Tensor();
}

void ExactIndex::write(std::ostream& out) const { write_raw_vectors(out, impl_->data); }

std::unique_ptr<ExactIndex> ExactIndex::read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, ExactIndexOptions options) {
  std::vector<float> vectors = read_raw_vectors(in, bytes, dim, ntotal, "an exact index");
  auto index = std::make_unique<ExactIndex>(dim, std::move(options));
  index->impl_->data = std::move(vectors);
  index->ntotal_ = ntotal;
  return index;
}

IndexKind exact_index_kind() {
  return {.name = "exact",
          .syntax = "exact",
          .help = "brute-force inner products over every label",
          .parse = [](const std::string& spec, std::optional<std::string_view> parameters) -> IndexRecipe {
            if (parameters) refuse_index_spec(spec, "gives parameters; exact takes none");
            return {.make = [](std::int64_t dim) -> std::unique_ptr<Index> { return std::make_unique<ExactIndex>(dim); },
                    .made_by = [](const Index& index) { return dynamic_cast<const ExactIndex*>(&index) != nullptr; },
                    .read = [](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
                      return ExactIndex::read(payload, header.payload_bytes, header.dim, header.ntotal);
                    }};
          }};
}

}  // namespace xmc
