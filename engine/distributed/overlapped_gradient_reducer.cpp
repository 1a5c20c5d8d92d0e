#include "engine/distributed/overlapped_gradient_reducer.h"

#include <algorithm>

namespace xmc {

OverlappedGradientReducer::OverlappedGradientReducer(Communicator& communicator, const std::vector<torch::Tensor>& parameters,
                                                     std::int64_t bucket_bytes)
    : communicator_(communicator) {
  // Reverse order: the parameters whose gradients backward computes first fill the first buckets. A bucket
  // holds one dtype on one device and closes at bucket_bytes.
  std::int64_t bytes = 0;
  for (auto p = parameters.rbegin(); p != parameters.rend(); ++p) {
    if (p->numel() == 0) continue;
    const bool fits = !buckets_.empty() && bytes < bucket_bytes &&
                      slots_[buckets_.back().slots.front()].parameter.scalar_type() == p->scalar_type() &&
                      slots_[buckets_.back().slots.front()].parameter.device() == p->device();
    if (!fits) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Slot slot;
    slot.parameter = *p;
    slot.bucket = buckets_.size() - 1;
    slot.offset = bytes / static_cast<std::int64_t>(p->element_size());
    buckets_.back().slots.push_back(slots_.size());
    slots_.push_back(slot);
    covered_.insert(p->unsafeGetTensorImpl());
    bytes += p->numel() * static_cast<std::int64_t>(p->element_size());
  }
  for (Bucket& bucket : buckets_) {
    std::int64_t elements = 0;
    for (const std::size_t s : bucket.slots) elements += slots_[s].parameter.numel();
    const torch::Tensor& first = slots_[bucket.slots.front()].parameter;
    bucket.buffer = torch::zeros({elements}, first.options().requires_grad(false));
  }
  for (std::size_t s = 0; s < slots_.size(); ++s)
    slots_[s].hook = slots_[s].parameter.register_hook([this, s](const torch::Tensor& grad) { on_gradient(s, grad); });
}

OverlappedGradientReducer::~OverlappedGradientReducer() {
  for (Slot& slot : slots_) slot.parameter.remove_hook(slot.hook);
  // Buckets still travelling wait in their PendingAllReduce's destructor.
}

void OverlappedGradientReducer::arm() {
  const std::lock_guard lock(mutex_);
  for (Bucket& bucket : buckets_) {
    bucket.reduction.wait();  // none is left running after a step; a step that threw may have left one
    bucket.buffer.zero_();
    bucket.late = torch::Tensor();
    bucket.waiting = bucket.slots.size();
    bucket.started = false;
  }
  for (Slot& slot : slots_) slot.seen = false;
  next_to_start_ = 0;
  armed_ = true;
}

void OverlappedGradientReducer::on_gradient(std::size_t s, const torch::Tensor& grad) {
  if (!armed_ || !grad.defined()) return;
  torch::NoGradGuard no_grad;
  const std::lock_guard lock(mutex_);
  Slot& slot = slots_[s];
  Bucket& bucket = buckets_[slot.bucket];
  const torch::Tensor dense = grad.is_sparse() ? grad.to_dense() : grad;
  const std::int64_t n = slot.parameter.numel();
  if (bucket.started) {
    // A second backward in this step: its gradient cannot join a sum already travelling.
    if (!bucket.late.defined()) bucket.late = torch::zeros_like(bucket.buffer);
    bucket.late.narrow(0, slot.offset, n).add_(dense.reshape({-1}));
    return;
  }
  bucket.buffer.narrow(0, slot.offset, n).add_(dense.reshape({-1}));
  if (!slot.seen) {
    slot.seen = true;
    --bucket.waiting;
    start_ready_buckets();
  }
}

void OverlappedGradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].waiting == 0) {
    start(buckets_[next_to_start_]);
    ++next_to_start_;
  }
}

void OverlappedGradientReducer::start(Bucket& bucket) {
  bucket.started = true;
  bucket.reduction = communicator_.start_all_reduce_sum(bucket.buffer, "reducing gradients");
}

void OverlappedGradientReducer::finish() {
  const std::lock_guard lock(mutex_);
  for (; next_to_start_ < buckets_.size(); ++next_to_start_) start(buckets_[next_to_start_]);
  for (Bucket& bucket : buckets_) bucket.reduction.wait();
}

bool OverlappedGradientReducer::has_late_gradients() const {
  return std::any_of(buckets_.begin(), buckets_.end(), [](const Bucket& bucket) { return bucket.late.defined(); });
}

void OverlappedGradientReducer::reduce_late() {
  torch::NoGradGuard no_grad;
  for (Bucket& bucket : buckets_) {
    torch::Tensor late = bucket.late.defined() ? bucket.late : torch::zeros_like(bucket.buffer);
    communicator_.all_reduce_sum(late, "reducing gradients of a second backward");
    bucket.buffer.add_(late);
    bucket.late = torch::Tensor();
  }
}

void OverlappedGradientReducer::write_gradients(bool average) {
  torch::NoGradGuard no_grad;
  armed_ = false;
  for (Bucket& bucket : buckets_) {
    if (average) bucket.buffer.div_(communicator_.world_size());
    for (const std::size_t s : bucket.slots) {
      Slot& slot = slots_[s];
      // A copy, not a view of the buffer: the optimiser and the next step's hooks must not share memory.
      slot.parameter.mutable_grad() = bucket.buffer.narrow(0, slot.offset, slot.parameter.numel()).view_as(slot.parameter).clone();
    }
  }
}

}  // namespace xmc
