#include "engine/sampler/hard_negative_shortlist.h"

#include "engine/index/exact_search.h"

namespace xmc {

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress) {
  // exact_top_k chunks the queries itself and leaves each query's own positives out; rows with fewer
  // than `size` negatives come back padded with -1.
  ExactSearchOptions options;
  options.exclude = ExcludeLists::from_csr(positives);
  options.progress = &progress;
  progress.start("hard-negative shortlists (exact top-" + std::to_string(size) + ")", queries.size(0));
  torch::Tensor ids = exact_top_k(queries, labels, std::min(size, labels.size(0)), options).indices.to(torch::kCPU);
  progress.finish();
  if (ids.size(1) < size)  // fewer labels than the shortlist size: pad to [N x size]
    ids = torch::cat({ids, torch::full({ids.size(0), size - ids.size(1)}, -1, torch::kInt64)}, 1);
  return ids.contiguous();
}

}  // namespace xmc
