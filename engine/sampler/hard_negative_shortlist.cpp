#include "engine/sampler/hard_negative_shortlist.h"

#include <algorithm>

#include "engine/index/exact_search.h"

namespace xmc {

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size) {
  const std::int64_t n = queries.size(0);
  std::int64_t max_positives = 0;
  for (std::int64_t r = 0; r < positives.rows; ++r) max_positives = std::max(max_positives, positives.row_size(r));
  const std::int64_t k = std::min(labels.size(0), size + max_positives);
  torch::Tensor shortlist = torch::full({n, size}, -1, torch::kInt64);
  auto* out = shortlist.data_ptr<std::int64_t>();
  constexpr std::int64_t kChunk = 8192;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t rows = std::min(kChunk, n - start);
    torch::Tensor ids = exact_top_k(queries.narrow(0, start, rows), labels, k).indices.to(torch::kCPU).contiguous();
    const auto* in = ids.data_ptr<std::int64_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto own = positives.row_indices(start + r);
      std::int64_t kept = 0;
      for (std::int64_t j = 0; j < k && kept < size; ++j) {
        const auto label = in[r * k + j];
        if (std::binary_search(own.begin(), own.end(), static_cast<std::int32_t>(label))) continue;
        out[(start + r) * size + kept++] = label;
      }
    }
  }
  return shortlist;
}

}  // namespace xmc
