#pragma once
// Engine-internal (includes torch). The training steps of one process of a data-parallel job, or of the only
// process: joining the job, which rows of a batch this process trains, its forward and backward, and what the
// processes agree on at the end of each step (the summed gradients, the batch's loss, stop and pause), so that
// pausing and stopping happen at the same step everywhere.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include <torch/torch.h>

#include "engine/distributed/communicator.h"
#include "engine/distributed/overlapped_gradient_reducer.h"
#include "engine/distributed/training_job.h"
#include "engine/method/method.h"

namespace xmc {

class DataParallelSteps {
 public:
  /// Joins the process group that `request.options` describe (distributed/training_job.h): rank 0 brings the
  /// run, the others take it from rank 0 (the JoinedJob).
  JoinedJob join(JobJoinRequest request);

  /// The job as a method sees it (one process: rank 0 of 1, no communicator).
  const DistributedContext& context() const { return context_; }
  bool enabled() const { return context_.enabled(); }
  bool is_main() const { return context_.is_main(); }
  /// Other ranks wait until rank 0 has done `what` (an evaluation); nothing in one process.
  void hold_for_main(const char* what);

  /// A job's training starts (nothing in one process): rank 0's parameters and buffers of `method` everywhere, and
  /// the other ranks' generators seeded apart from rank 0's (`seed` is the run's).
  void begin_training(Method& method, std::uint64_t seed);
  /// Every rank takes rank 0's parameters and buffers of `method`.
  void share_parameters(Method& method);
  /// Every rank takes rank 0's batches.
  void share_batches(std::vector<std::vector<std::int64_t>>& batches);

  /// A stage's steps start: in a job with `overlap`, the dense ones of `parameters` are summed during backward.
  void begin_stage(const std::vector<torch::Tensor>& parameters, bool overlap);

  /// The rows of `batch` this process trains: the whole batch, or its shard.
  std::span<const std::int64_t> rows(const GradientSteps& method, const StageSpec& stage, std::span<const std::int64_t> batch) const;

  /// The method's forward and backward of `batch`. In a job, either the method splits the whole batch's work over
  /// the ranks (their gradients add up to the batch's), or each rank trains its shard as a batch of its own (the
  /// gradients and losses are averaged); afterwards every rank holds the same gradients of `parameters` and loss.
  /// `stop` and `pause` are this process's requests, read after backward and agreed with the others there.
  StepResult train_step(GradientSteps& method, const StageSpec& stage, const std::vector<std::int64_t>& batch, const PreparedBatch* prepared,
                        TrainContext& ctx, const std::vector<torch::Tensor>& parameters, const std::atomic<bool>& stop,
                        const std::atomic<bool>& pause);

  /// Before a step: waits while paused (`wait_while_paused`; in a job rank 0 waits and the others wait for it, when
  /// the last step agreed on a pause) and says whether to stop (`stop_requested`; in a job what the last step agreed).
  bool hold_or_stop_before_step(const std::function<void()>& wait_while_paused, const std::atomic<bool>& stop_requested);
  /// Right before step `step` of a run seeded `seed`, a rank other than 0 seeds its generator (worker_step_seed).
  void seed_step(std::uint64_t seed, std::int64_t step);

 private:
  std::unique_ptr<Communicator> communicator_;
  DistributedContext context_;
  /// Sums the dense gradients during backward (distributed.overlap); made per stage, armed for each step of a
  /// stage whose processes train shards of the batch as batches of their own.
  std::unique_ptr<OverlappedGradientReducer> overlapped_reducer_;
  bool stop_agreed_ = false;   ///< a rank was asked to stop (agreed during the last step's gradient reduction)
  bool pause_agreed_ = false;  ///< rank 0 was paused (agreed likewise)
};

}  // namespace xmc
