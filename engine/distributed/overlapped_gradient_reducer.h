#pragma once
// Engine-internal (includes torch). Data-parallel training: the dense gradients summed over the ranks while
// backward is still running, bucket by bucket.
#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "engine/distributed/communicator.h"

namespace xmc {

/// Sums the gradients of dense parameters over the ranks during backward. The parameters are grouped into
/// buckets in reverse order (backward reaches the last layers first); a hook on each parameter adds its
/// gradient into its bucket's buffer, and once every parameter of a bucket has one, the bucket's all-reduce
/// starts while backward goes on. Buckets start in bucket order only, so every rank starts the same
/// collectives in the same order whatever its timing; finish() starts the rest (a parameter the step did not
/// reach takes part with zeros) and waits for all.
///
/// One backward per step is what it overlaps. A gradient that arrives after its bucket started (a second
/// backward) is kept aside; the ranks agree whether any rank had one (has_late_gradients(), carried on the
/// trainer's agreement collective) and then all reduce those too (reduce_late()), so the sums are right
/// either way.
///
/// The backward must run no collectives of its own: their order against the buckets' would depend on each
/// rank's graph (the trainer arms it only for steps that train a rank's shard as a batch of its own).
///
/// A step: arm(), the method's forward and backward, finish(), [reduce_late()], write_gradients().
class OverlappedGradientReducer {
 public:
  /// `parameters`: dense ones that require a gradient (the trainer reduces row-sparse tables its own way).
  /// Registers the hooks; the destructor removes them.
  OverlappedGradientReducer(Communicator& communicator, const std::vector<torch::Tensor>& parameters, std::int64_t bucket_bytes);
  ~OverlappedGradientReducer();
  OverlappedGradientReducer(const OverlappedGradientReducer&) = delete;
  OverlappedGradientReducer& operator=(const OverlappedGradientReducer&) = delete;

  /// Before the step's first backward: empties the buckets and lets the hooks collect. Unarmed, the hooks
  /// leave gradients alone.
  void arm();
  bool armed() const { return armed_.load(); }
  /// After the step's backward: starts the buckets not started yet and waits for every bucket.
  void finish();
  /// Whether a gradient reached this rank after its bucket had started (local; agree before reduce_late()).
  bool has_late_gradients() const;
  /// Sums the late gradients over the ranks (every rank calls it when any rank had some) into the buckets.
  void reduce_late();
  /// Each parameter's gradient becomes its share of its bucket's sum (divided by the world size when
  /// `average`); disarms.
  void write_gradients(bool average);

  /// Whether `parameter` is one of the reducer's (its gradient is reduced by it).
  bool covers(const torch::Tensor& parameter) const { return covered_.count(parameter.unsafeGetTensorImpl()) > 0; }
  std::size_t bucket_count() const { return buckets_.size(); }
  /// Buckets of this step whose all-reduce has started.
  std::size_t buckets_started() const { return next_to_start_.load(); }

 private:
  struct Slot {
    torch::Tensor parameter;
    std::size_t bucket = 0;
    std::int64_t offset = 0;  ///< in the bucket's buffer
    bool seen = false;        ///< has its gradient this step
    unsigned hook = 0;
  };
  struct Bucket {
    std::vector<std::size_t> slots;
    torch::Tensor buffer;  ///< flat, the bucket's parameters' gradients side by side
    torch::Tensor late;    ///< gradients that arrived after the start (undefined when none did)
    std::size_t waiting = 0;  ///< parameters without their gradient yet
    PendingAllReduce reduction;
    bool started = false;
  };

  void on_gradient(std::size_t slot, const torch::Tensor& grad);
  void start_ready_buckets();  // under mutex_
  void start(Bucket& bucket);  // under mutex_

  Communicator& communicator_;
  std::vector<Slot> slots_;
  std::unordered_set<const void*> covered_;  ///< the slots' parameters (their TensorImpl)
  std::vector<Bucket> buckets_;
  std::atomic<std::size_t> next_to_start_ = 0;
  std::atomic<bool> armed_ = false;
  std::mutex mutex_;  ///< hooks run on the autograd engine's threads
};

}  // namespace xmc
