// The "random" batch order: a fresh shuffle of the training queries every epoch.
#include "engine/sampler/batch_order.h"

namespace xmc {
namespace {

class RandomBatchOrder final : public BatchOrder {
 public:
  std::vector<std::int64_t> order(std::int64_t /*epoch*/, const std::vector<std::int64_t>& queries, const torch::Tensor& /*embeddings*/,
                                  std::mt19937_64& rng, Progress* /*progress*/) override {
    std::vector<std::int64_t> out = queries;
    shuffle_rows(out, rng);
    return out;
  }
};

}  // namespace

std::unique_ptr<BatchOrder> make_random_batch_order(const ComponentConfig& /*config*/) { return std::make_unique<RandomBatchOrder>(); }

}  // namespace xmc
