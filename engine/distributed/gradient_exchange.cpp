#include "engine/distributed/gradient_exchange.h"

#include "engine/distributed/communicator.h"
#include "engine/distributed/overlapped_gradient_reducer.h"
#include "engine/optim/sparse_gradient.h"

namespace xmc {
namespace {

/// Dense gradients flattened into buckets of up to ~32 MB, each summed over the ranks by one all-reduce, not
/// one per tensor. The first buckets, up to `started_bytes`, start at once, so that they travel while the
/// caller works on; the rest start one at a time in finish(), which writes the sums (or means) back. Holding
/// only that much in flight bounds the extra memory (a copy of every dense gradient at once would be ~340 MB
/// for a BERT-base encoder).
class DenseGradientBuckets {
 public:
  DenseGradientBuckets(Communicator& communicator, const std::vector<torch::Tensor>& parameters, std::int64_t started_bytes)
      : communicator_(communicator) {
    constexpr std::int64_t kBucketBytes = 32 << 20;
    std::int64_t bytes = 0;
    for (const auto& p : parameters) {
      if (buckets_.empty() || buckets_.back().parameters.front().scalar_type() != p.scalar_type() || bytes >= kBucketBytes) {
        buckets_.emplace_back();
        bytes = 0;
      }
      buckets_.back().parameters.push_back(p);
      bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
    }
    std::int64_t started = 0;
    for (Bucket& b : buckets_) {
      if (started >= started_bytes) break;
      start(b);
      started += b.joined.numel() * static_cast<std::int64_t>(b.joined.element_size());
    }
  }

  void finish(bool average) {
    for (Bucket& b : buckets_) {
      if (!b.joined.defined()) start(b);
      b.pending.wait();
      if (average) b.joined.div_(communicator_.world_size());
      std::int64_t at = 0;
      for (const auto& p : b.parameters) {
        p.mutable_grad().copy_(b.joined.narrow(0, at, p.numel()).view_as(p));
        at += p.numel();
      }
      b.joined = torch::Tensor();  // freed before the next bucket starts
    }
    buckets_.clear();
  }

 private:
  struct Bucket {
    std::vector<torch::Tensor> parameters;
    torch::Tensor joined;
    PendingAllReduce pending;
  };

  void start(Bucket& b) {
    std::vector<torch::Tensor> flat;
    for (const auto& p : b.parameters) flat.push_back(p.grad().reshape({-1}));
    b.joined = torch::cat(flat);
    b.pending = communicator_.start_all_reduce_sum(b.joined, "reducing gradients");
  }

  Communicator& communicator_;
  std::vector<Bucket> buckets_;
};

}  // namespace

bool may_reduce_row_sparse(const torch::Tensor& parameter) {
  constexpr std::int64_t kSparseMinRows = 1024;
  constexpr std::int64_t kRowsPerColumn = 8;
  return parameter.dim() == 2 && parameter.size(0) >= kSparseMinRows && parameter.size(0) >= kRowsPerColumn * parameter.size(1) &&
         parameter.element_size() <= 8;
}

StepAgreement reduce_gradients(Communicator& communicator, const std::vector<torch::Tensor>& parameters, bool average,
                               std::pair<bool, bool> flags, OverlappedGradientReducer* overlapped, double local_loss) {
  constexpr double kSparseMaxDensity = 0.25;
  torch::NoGradGuard no_grad;
  if (overlapped != nullptr) overlapped->finish();
  const auto by_overlap = [&](const torch::Tensor& p) { return overlapped != nullptr && overlapped->covers(p); };
  for (const auto& p : parameters)
    if (!p.grad().defined() && !by_overlap(p)) p.mutable_grad() = torch::zeros_like(p);

  // What the exchange below decides does not concern the dense parameters that are not tables: their first
  // buckets start now, and travel while this rank looks for its tables' touched rows (the backends then run
  // the collectives in the order they were started).
  constexpr std::int64_t kStartedEarlyBytes = 64 << 20;
  std::vector<torch::Tensor> dense;
  for (const auto& p : parameters) {
    if (by_overlap(p) || may_reduce_row_sparse(p)) continue;
    if (p.grad().is_sparse()) p.mutable_grad() = p.grad().to_dense();
    dense.push_back(p);
  }
  DenseGradientBuckets dense_reduction(communicator, dense, kStartedEarlyBytes);

  std::vector<std::size_t> candidates;
  std::vector<torch::Tensor> touched;
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (may_reduce_row_sparse(parameters[i])) {
      candidates.push_back(i);
      torch::Tensor grad = parameters[i].grad();
      if (grad.is_sparse()) {  // a row-sparse gradient names its rows
        parameters[i].mutable_grad() = grad = coalesced(grad);  // the same tensor when it already is
        touched.push_back(grad._indices().reshape({-1}));
      } else {
        touched.push_back(grad.count_nonzero(at::IntArrayRef{1}).nonzero().squeeze(1));
      }
    }
  // Summed over the ranks: [stop, pause, late gradients, loss, then per candidate whether it is too dense for
  // the row exchange here (0/1), then per candidate its touched rows at this rank's slot (0 at the others')].
  constexpr std::int64_t kHead = 4;
  const auto world = static_cast<std::int64_t>(communicator.world_size());
  const auto count = static_cast<std::int64_t>(candidates.size());
  torch::Tensor control = torch::zeros({kHead + count * (1 + world)}, torch::kDouble);
  auto* slot = control.data_ptr<double>();
  slot[0] = flags.first ? 1.0 : 0.0;
  slot[1] = flags.second ? 1.0 : 0.0;
  slot[2] = overlapped != nullptr && overlapped->has_late_gradients() ? 1.0 : 0.0;
  slot[3] = local_loss;
  for (std::int64_t c = 0; c < count; ++c) {
    const auto rows = static_cast<double>(touched[static_cast<std::size_t>(c)].size(0));
    slot[kHead + c] = rows / static_cast<double>(parameters[candidates[static_cast<std::size_t>(c)]].size(0)) > kSparseMaxDensity ? 1.0 : 0.0;
    slot[kHead + count + c * world + communicator.rank()] = rows;
  }
  communicator.all_reduce_sum(control, "agreeing on the step");
  const StepAgreement agreement{slot[0] > 0, slot[1] > 0, slot[2] > 0, slot[3]};
  std::vector<bool> sparse(parameters.size(), false);
  for (std::int64_t c = 0; c < count; ++c) sparse[candidates[static_cast<std::size_t>(c)]] = slot[kHead + c] == 0;
  if (overlapped != nullptr) {
    if (agreement.late_gradients) overlapped->reduce_late();
    overlapped->write_gradients(average);
  }

  for (std::int64_t c = 0; c < count; ++c) {
    const std::size_t index = candidates[static_cast<std::size_t>(c)];
    if (!sparse[index]) continue;
    const torch::Tensor& parameter = parameters[index];
    const torch::Tensor& rows_here = touched[static_cast<std::size_t>(c)];
    torch::Tensor grad = parameter.grad();
    // Each touched row travels with its row number, whose int64 bits ride in leading columns of the row.
    const std::int64_t n = rows_here.size(0);
    const std::int64_t number_columns = 8 / static_cast<std::int64_t>(grad.element_size());  // int64 bits per row
    const torch::Tensor numbers = rows_here.contiguous().view(grad.scalar_type()).reshape({n, number_columns});
    const torch::Tensor local_values = grad.is_sparse() ? grad._values() : grad.index_select(0, rows_here);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(world));
    for (std::int64_t r = 0; r < world; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(slot[kHead + count + c * world + r]);
    const torch::Tensor packed = communicator.all_gather_rows(torch::cat({numbers, local_values}, /*dim=*/1), counts, "gathering gradient rows");
    const torch::Tensor rows = packed.narrow(1, 0, number_columns).contiguous().view(torch::kInt64).reshape({-1});
    torch::Tensor values = packed.narrow(1, number_columns, grad.size(1));
    if (average) values = values / communicator.world_size();
    // Every rank ends with the same row-sparse gradient, whatever its own layout was: the rows any rank
    // touched, each the sum of the ranks' rows in rank order (a stable sort keeps that order).
    const auto [sorted_rows, order] = torch::sort(rows, /*stable=*/true, /*dim=*/0, /*descending=*/false);
    const auto [distinct_rows, slot_of_row, unused] = torch::unique_consecutive(sorted_rows, /*return_inverse=*/true);
    const torch::Tensor sums =
        torch::zeros({distinct_rows.size(0), grad.size(1)}, values.options()).index_add_(0, slot_of_row, values.index_select(0, order));
    torch::Tensor reduced = torch::sparse_coo_tensor(distinct_rows.unsqueeze(0), sums, grad.sizes());
    reduced._coalesced_(true);  // ascending, distinct rows
    parameter.mutable_grad() = reduced;
  }

  // A table the ranks agreed to reduce densely (too many rows touched somewhere) goes next, one bucket at a time.
  std::vector<torch::Tensor> dense_tables;
  for (std::int64_t c = 0; c < count; ++c) {
    const torch::Tensor& p = parameters[candidates[static_cast<std::size_t>(c)]];
    if (sparse[candidates[static_cast<std::size_t>(c)]]) continue;
    if (p.grad().is_sparse()) p.mutable_grad() = p.grad().to_dense();
    dense_tables.push_back(p);
  }
  DenseGradientBuckets(communicator, dense_tables, /*started_bytes=*/0).finish(average);
  dense_reduction.finish(average);
  return agreement;
}

}  // namespace xmc
