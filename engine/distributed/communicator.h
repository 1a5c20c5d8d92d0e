#pragma once
// Engine-internal (includes torch). The collectives of data-parallel training, on LibTorch's own distributed
// engine (c10d): a TCPStore rendezvous at rank 0, then a Gloo process group (tensors on a GPU are staged
// through host memory) or an NCCL one (tensors stay on each rank's GPU). Every collective must be called by
// every rank, in the same order; one that fails throws xmc::Error saying so, on every surviving rank: at once
// on Gloo when a rank dies, after the timeout on NCCL (which cannot tell a dead peer from a slow one).
#include <torch/torch.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/distributed/distributed_options.h"

namespace xmc {

/// An all-reduce under way (Communicator::start_all_reduce_sum). wait() ends it: the sum is then in the
/// tensor it was started on, or it throws like a blocking collective. Destroying one that was not waited for
/// waits for it, and drops any failure (the rank is failing for another reason already).
class PendingAllReduce {
 public:
  PendingAllReduce();
  PendingAllReduce(PendingAllReduce&&) noexcept;
  PendingAllReduce& operator=(PendingAllReduce&&) noexcept;
  ~PendingAllReduce();
  void wait();

 private:
  friend class Communicator;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Communicator {
 public:
  /// Opens the rendezvous: rank 0 listens on master_host:master_port (port 0: a free one, see port()), the
  /// others connect to it. Does not wait for the other ranks (join() does).
  explicit Communicator(const DistributedOptions& options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// Root's bytes on every rank through the rendezvous store: works before join(), so rank 0 can send what the
  /// group's choice depends on (the run's config and device).
  std::string share_from_main(const std::string& bytes, const char* what);
  /// Every rank's bytes at rank 0, in rank order (empty elsewhere), through the rendezvous store: works before
  /// join(), so every rank can report whether it can take part before any of them waits in a group.
  std::vector<std::string> gather_at_main(const std::string& bytes, const char* what);

  /// Joins the process group on `backend` ("gloo" or "nccl", as choose_collective_backend chose it; every rank
  /// the same) for tensors on `device`; blocks until every rank has joined (or the timeout passes). On NCCL the
  /// GPU communicators are made here too, by a first collective.
  void join(torch::Device device, const std::string& backend);
  /// The backend joined: "gloo" or "nccl" ("" before join()).
  std::string backend() const;
  /// Which backends this build has.
  static bool has_gloo();
  static bool has_nccl();

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  /// The rendezvous port (the one chosen when master_port was 0).
  int port() const;
  const DistributedOptions& options() const { return options_; }

  /// In place: the element-wise sum (max) over ranks.
  void all_reduce_sum(torch::Tensor& tensor, const char* what);
  void all_reduce_max(torch::Tensor& tensor, const char* what);
  /// The element-wise sum over ranks of `tensor`, started and not waited for: the caller may compute on while
  /// it travels, but must not touch `tensor` until wait(). Collectives still start in the same order on every
  /// rank: a later blocking one runs after it.
  PendingAllReduce start_all_reduce_sum(torch::Tensor tensor, const char* what);
  /// In place: root's tensor on every rank (same shape and dtype everywhere).
  void broadcast(torch::Tensor& tensor, const char* what, int root = 0);
  /// The ranks' tensors concatenated along dim 0 in rank order; row counts may differ, the other
  /// dimensions and the dtype may not. On the local tensor's device.
  torch::Tensor all_gather_rows(const torch::Tensor& local, const char* what);
  /// The same, also giving each rank's row count (in rank order).
  torch::Tensor all_gather_rows(const torch::Tensor& local, const char* what, std::vector<std::int64_t>& counts);
  /// The same when every rank already knows every rank's row count (counts[r], in rank order; counts[rank()]
  /// must be local's): one collective instead of two.
  torch::Tensor all_gather_rows(const torch::Tensor& local, const std::vector<std::int64_t>& counts, const char* what);
  /// The ranks' shards of a `total_rows`-row tensor, split as shard_range() splits it, concatenated: one
  /// collective (the row counts are known). On the local tensor's device.
  torch::Tensor all_gather_shards(const torch::Tensor& local, std::int64_t total_rows, const char* what);
  /// Root's bytes on every rank.
  std::string broadcast_bytes(const std::string& bytes, const char* what, int root = 0);
  void barrier(const char* what);

  /// Work rank 0 does alone (an evaluation, a pause) while the others wait, however long it takes: every rank
  /// calls this at the same point, rank 0 when its work is done. The others wait on the rendezvous store
  /// rather than in a collective, so the wait is bounded by rank 0's life, not by the collectives' timeout.
  void hold_for_main(const char* what);

 private:
  torch::Tensor gather_padded(const torch::Tensor& local, const std::vector<std::int64_t>& counts, const char* what);
  struct Impl;
  DistributedOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// Rows [begin, end) of `count` rows that rank `rank` of `world` takes: contiguous, in rank order, sizes
/// differing by at most one.
std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t count, int rank, int world);

/// This rank's shard of `rows`, as shard_range() splits them.
std::span<const std::int64_t> own_shard(std::span<const std::int64_t> rows, const Communicator& communicator);

/// A differentiable all_gather_shards: every rank gets the whole `total_rows`-row tensor; in backward, the
/// gradient of the whole is summed over ranks and each rank keeps its own rows. Right when the ranks' losses
/// add up to the objective (a loss computed in full on every rank contributes loss / world_size).
torch::Tensor all_gather_rows_with_grad(Communicator& communicator, const torch::Tensor& local, std::int64_t total_rows);

}  // namespace xmc
