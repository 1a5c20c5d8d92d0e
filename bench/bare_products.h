#pragma once
// The baseline the search benches compare against: exactly the products exact_top_k computes, in the
// same chunks, and nothing else. Returns a value read from every chunk so that no product is skipped.
#include <torch/torch.h>

#include <algorithm>

#include "engine/index/exact_search.h"

inline double bare_products(const torch::Tensor& queries, const torch::Tensor& keys, const xmc::ExactSearchOptions& chunks) {
  const std::int64_t n = queries.size(0);
  const std::int64_t m = keys.size(0);
  const std::int64_t query_chunk = xmc::exact_search_query_chunk(chunks);
  double sink = 0;
  for (std::int64_t r0 = 0; r0 < n; r0 += query_chunk)
    for (std::int64_t k0 = 0; k0 < m; k0 += chunks.key_chunk) {
      const auto s = xmc::chunk_inner_products(queries.narrow(0, r0, std::min(query_chunk, n - r0)),
                                               keys.narrow(0, k0, std::min(chunks.key_chunk, m - k0)));
      sink += s.data_ptr<float>()[0];
    }
  return sink;
}
