#pragma once
// Engine-internal (includes torch). An even sample of query rows whose embeddings are kept as the slices holding
// them go by, for measuring an approximate search's recall against exact search once a pass is over (the
// shortlist refreshes, the evaluations).
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace xmc {

class SampledQueries {
 public:
  /// Rows i·n / sample for i < min(sample, n): evenly spread over [0, n), ascending.
  SampledQueries(std::int64_t n, std::int64_t sample) {
    sample = std::min(sample, n);
    for (std::int64_t i = 0; i < sample; ++i) rows_.push_back(i * n / sample);
  }
  /// Keeps the sampled rows among rows [begin, begin + slice's rows), whose embeddings `slice` is; slices come in order.
  void take(std::int64_t begin, const torch::Tensor& slice) {
    std::vector<std::int64_t> within;
    for (; next_ < rows_.size() && rows_[next_] < begin + slice.size(0); ++next_) within.push_back(rows_[next_] - begin);
    if (!within.empty())
      parts_.push_back(slice.detach().index_select(0, torch::tensor(within, torch::kInt64).to(slice.device())).to(torch::kCPU, torch::kFloat32));
  }
  const std::vector<std::int64_t>& rows() const { return rows_; }
  /// The sampled rows' embeddings taken so far ([taken x d] float32, CPU).
  torch::Tensor embeddings() const { return torch::cat(parts_); }
  /// How many sampled rows were taken so far.
  std::int64_t taken() const { return static_cast<std::int64_t>(next_); }

 private:
  std::vector<std::int64_t> rows_;
  std::size_t next_ = 0;
  std::vector<torch::Tensor> parts_;
};

}  // namespace xmc
