#pragma once
// Engine-internal (includes torch). Builds the next batch's PreparedBatch (method.h) on a worker thread while
// the current batch trains: on a GPU the host's share of a step (label pool, token ids, pinning them and
// queueing their copy on the device's stream) then overlaps the device's work. The preparation draws from the
// label-pool random stream, so the prefetcher remembers where the stream stood before it: a checkpoint keeps
// that state, and a batch prepared but never trained (a stop or max_steps comes first) is dropped and the
// stream put back, so training is the same, bit for bit, as without prefetching.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "engine/method/method.h"

namespace xmc {

class StepPrefetcher {
 public:
  using Prepare = std::function<std::shared_ptr<PreparedBatch>()>;

  explicit StepPrefetcher(std::mt19937_64& label_pool_rng) : rng_(label_pool_rng) {}
  ~StepPrefetcher();
  StepPrefetcher(const StepPrefetcher&) = delete;
  StepPrefetcher& operator=(const StepPrefetcher&) = delete;

  using PrepareBatch = std::function<std::shared_ptr<PreparedBatch>(std::int64_t index)>;

  /// An epoch's batches start: prepared ahead (`ahead`) or not, for a method that prepares batches.
  void begin_epoch(bool ahead) {
    ahead_ = ahead;
    prepares_batches_ = true;
  }
  /// Batch `index` of the epoch's `count`, prepared: ahead (take()) or now by `prepare`; then, when ahead, the
  /// next batch's preparation starts. A method's first null (it prepares nothing) ends the preparing for the epoch.
  std::shared_ptr<PreparedBatch> prepared(std::int64_t index, std::int64_t count, const PrepareBatch& prepare);

  /// Starts `prepare` for batch `index` on a worker thread (dropping one still in flight).
  void start(std::int64_t index, Prepare prepare);
  /// Batch `index`'s prepared batch when it was started, waiting for it and rethrowing what it threw; null when
  /// another batch (or none) was started, which is then dropped.
  std::shared_ptr<PreparedBatch> take(std::int64_t index);
  /// Waits for the batch in flight, if any, drops it and puts the label-pool stream back where it stood
  /// before it was prepared.
  void drop();
  bool in_flight() const { return future_.valid(); }
  /// The label-pool stream as it stood before the batch in flight was prepared (the stream itself when none
  /// is): what a checkpoint written now keeps, since a run resumed from it prepares that batch again while
  /// this run goes on with the prepared one.
  std::mt19937_64 stream_before_in_flight() const { return in_flight() ? rng_before_ : rng_; }

 private:
  std::mt19937_64& rng_;
  bool ahead_ = false;
  bool prepares_batches_ = true;
  std::mt19937_64 rng_before_;
  std::int64_t index_ = -1;
  std::future<std::shared_ptr<PreparedBatch>> future_;
  // One worker thread for the whole run, started with the first batch: LibTorch sets up its thread pools
  // once per thread, and a thread per batch paid for that (and for their spinning) at every step.
  void work();
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::packaged_task<std::shared_ptr<PreparedBatch>()> pending_;
  bool has_pending_ = false;
  bool stopping_ = false;
};

}  // namespace xmc
