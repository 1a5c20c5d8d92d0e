#include "engine/sampler/query_batcher_options.h"

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup query_batcher_option_group(const std::vector<std::string>& orders) {
  return OptionGroupBuilder<QueryBatcherOptions>("Batching")
      .text("sampler.type", &QueryBatcherOptions::type, orders, "Batches: random, or NGAME clusters of query embeddings")
      .build();
}

}  // namespace xmc
