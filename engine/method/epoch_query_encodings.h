#pragma once
// Engine-internal (includes torch). The training queries encoded once at an epoch's start for both of the phases
// that need them: the clustering of NGAME's batcher (all of them held, in half precision) and a hard-negative
// shortlist refresh in the same epoch (read a slice at a time, in float32). The float32 encodings wait for the
// refresh in an unlinked temporary file (core/float_row_file.h), not in memory: held, they would add 2.3 GB at
// 2.25M queries x 256 to the refresh's peak; encoded again, they cost the refresh 39 s on 2 cores.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/method/training_stages.h"
#include "engine/sampler/hard_negative_shortlist.h"

namespace xmc {

class FloatRowFile;

class EpochQueryEncodings {
 public:
  /// Rows [begin, end) of the training queries, encoded ([end - begin x d] floating, any device).
  using Encoder = std::function<torch::Tensor(std::int64_t begin, std::int64_t end)>;

  /// Encodes the `count` training queries (told to context.progress as "encoding training queries for clustering")
  /// into a [count x d] tensor of kClusteringEmbeddingType. With `keep_for_refresh`, on the CPU, the float32
  /// encodings are kept too, in a file under the system's temporary folder (TMPDIR): when it lacks room or a write
  /// fails, the run's log says so and for_refresh() encodes again.
  EpochQueryEncodings(std::int64_t count, const Encoder& encode, bool keep_for_refresh, TrainContext& context);
  ~EpochQueryEncodings();

  /// The clustering's input, handed over (this object keeps no reference).
  torch::Tensor take_for_clustering() { return std::move(for_clustering_); }
  /// The queries for the refresh: the kept encodings read back a slice at a time, or `encode` where none were kept.
  RowEmbeddings for_refresh(const Encoder& encode) const;

 private:
  std::int64_t count_;
  torch::Tensor for_clustering_;
  std::unique_ptr<FloatRowFile> kept_;
};

}  // namespace xmc
