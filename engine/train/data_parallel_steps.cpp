#include "engine/train/data_parallel_steps.h"

#include "engine/distributed/gradient_exchange.h"

namespace xmc {

JoinedJob DataParallelSteps::join(JobJoinRequest request) {
  communicator_ = std::make_unique<Communicator>(request.options);
  JoinedJob job = join_training_job(*communicator_, std::move(request));
  context_ = {.rank = communicator_->rank(), .world_size = communicator_->world_size(), .communicator = communicator_.get()};
  return job;
}

void DataParallelSteps::hold_for_main(const char* what) {
  if (enabled()) communicator_->hold_for_main(what);
}

void DataParallelSteps::begin_training(Method& method, std::uint64_t seed) {
  if (!enabled()) return;
  share_parameters(method);
  // Dropout differs between ranks (rank 0 keeps the single-process stream; the others are seeded again at every
  // step, worker_step_seed). Batches and shortlists are rank 0's; the label-pool stream starts alike everywhere, so
  // ranks that split a batch draw the same pools (ranks training batch shards of their own then draw for different
  // queries).
  if (!is_main()) torch::manual_seed(seed + 1000003ULL * static_cast<std::uint64_t>(context_.rank));
}

void DataParallelSteps::share_parameters(Method& method) {
  std::vector<torch::Tensor> tensors = method.module().parameters();
  for (const auto& b : method.module().buffers()) tensors.push_back(b);
  xmc::share_parameters(*communicator_, std::move(tensors));
}

void DataParallelSteps::share_batches(std::vector<std::vector<std::int64_t>>& batches) { xmc::share_batches(*communicator_, batches); }

void DataParallelSteps::begin_stage(const std::vector<torch::Tensor>& parameters, bool overlap) {
  overlapped_reducer_.reset();
  if (!enabled() || !overlap) return;
  std::vector<torch::Tensor> dense;
  for (const auto& p : parameters)
    if (!may_reduce_row_sparse(p) && p.requires_grad()) dense.push_back(p);
  // Small buckets: the first starts while most of backward is still to come; each costs one collective's latency.
  constexpr std::int64_t kOverlapBucketBytes = 4 << 20;
  if (!dense.empty()) overlapped_reducer_ = std::make_unique<OverlappedGradientReducer>(*communicator_, dense, kOverlapBucketBytes);
}

std::span<const std::int64_t> DataParallelSteps::rows(const GradientSteps& method, const StageSpec& stage, std::span<const std::int64_t> batch) const {
  if (!enabled() || method.splits_batch_across_ranks(stage)) return batch;
  return own_shard(batch, *communicator_);
}

StepResult DataParallelSteps::train_step(GradientSteps& method, const StageSpec& stage, const std::vector<std::int64_t>& batch, const PreparedBatch* prepared,
                                         TrainContext& ctx, const std::vector<torch::Tensor>& parameters, const std::atomic<bool>& stop,
                                         const std::atomic<bool>& pause) {
  if (!enabled()) return method.train_step(stage, batch, prepared, ctx);
  const bool split = method.splits_batch_across_ranks(stage);
  // A split batch's backward runs collectives of its own (the gathers' gradients): where a rank's share is
  // empty its graph differs, and buckets started from hooks could interleave with those collectives in
  // another order than on the other ranks. Its dense gradients are reduced after backward.
  OverlappedGradientReducer* overlapped = split ? nullptr : overlapped_reducer_.get();
  if (overlapped != nullptr) overlapped->arm();
  StepResult result = method.train_step(stage, rows(method, stage, batch), prepared, ctx);
  // A split batch's loss is already the whole batch's on every rank; shards' losses are averaged. Only rank 0 pauses.
  const StepAgreement agreed =
      reduce_gradients(*communicator_, parameters, /*average=*/!split, {stop.load(), is_main() && pause.load()}, overlapped, split ? 0.0 : result.loss);
  stop_agreed_ = agreed.stop;
  pause_agreed_ = agreed.pause;
  if (!split) result.loss = agreed.loss_sum / context_.world_size;
  return result;
}

bool DataParallelSteps::hold_or_stop_before_step(const std::function<void()>& wait_while_paused, const std::atomic<bool>& stop_requested) {
  if (!enabled()) {
    wait_while_paused();
    return stop_requested.load();
  }
  if (pause_agreed_) {
    // Rank 0 was paused when the last step ended: it waits, the others wait for it.
    if (is_main()) wait_while_paused();
    communicator_->hold_for_main("pause");
    pause_agreed_ = false;
  }
  return stop_agreed_;
}

void DataParallelSteps::seed_step(std::uint64_t seed, std::int64_t step) {
  if (enabled() && !is_main()) torch::manual_seed(worker_step_seed(seed, context_.rank, step));
}

}  // namespace xmc
