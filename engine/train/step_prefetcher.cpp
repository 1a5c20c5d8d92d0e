#include "engine/train/step_prefetcher.h"

#include <ATen/Parallel.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace xmc {

StepPrefetcher::~StepPrefetcher() {
  drop();
  if (!worker_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void StepPrefetcher::work() {
  // One thread for this thread's own parallel regions: a second team of OpenMP threads beside the training
  // thread's would fight it for the cores. LibTorch sets a thread's count on its first parallel call, so
  // that call comes first.
  at::internal::lazy_init_num_threads();
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
  for (;;) {
    std::packaged_task<std::shared_ptr<PreparedBatch>()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return has_pending_ || stopping_; });
      if (!has_pending_) return;
      task = std::move(pending_);
      has_pending_ = false;
    }
    task();  // its result or its exception goes to the future
  }
}

std::shared_ptr<PreparedBatch> StepPrefetcher::prepared(std::int64_t index, std::int64_t count, const PrepareBatch& prepare) {
  std::shared_ptr<PreparedBatch> batch = take(index);
  if (!batch && prepares_batches_) {
    batch = prepare(index);
    prepares_batches_ = batch != nullptr;
  }
  if (ahead_ && prepares_batches_ && index + 1 < count) start(index + 1, [prepare, index] { return prepare(index + 1); });
  return batch;
}

void StepPrefetcher::start(std::int64_t index, Prepare prepare) {
  drop();
  // The worker first: if it cannot start, nothing is left pending that drop() would wait for.
  if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
  rng_before_ = rng_;
  index_ = index;
  std::packaged_task<std::shared_ptr<PreparedBatch>()> task(std::move(prepare));
  future_ = task.get_future();
  {
    const std::lock_guard lock(mutex_);
    pending_ = std::move(task);
    has_pending_ = true;
  }
  wake_.notify_one();
}

std::shared_ptr<PreparedBatch> StepPrefetcher::take(std::int64_t index) {
  if (!future_.valid()) return nullptr;
  if (index_ != index) {
    drop();
    return nullptr;
  }
  index_ = -1;
  return future_.get();  // rethrows the preparation's error here, on the training thread
}

void StepPrefetcher::drop() {
  if (!future_.valid()) return;
  try {
    future_.get();
  } catch (...) {
    // A batch that is dropped is prepared again when it is trained, and then its error surfaces.
  }
  rng_ = rng_before_;
  index_ = -1;
}

}  // namespace xmc
