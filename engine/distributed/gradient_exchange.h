#pragma once
// Engine-internal (includes torch). A data-parallel step's exchange after backward: the ranks' gradients summed
// (or averaged) so that every rank holds the same bits, embedding tables as the rows they touched, and the
// step's control flags and loss agreed in the same collective.
#include <torch/torch.h>

#include <utility>
#include <vector>

namespace xmc {

class Communicator;
class OverlappedGradientReducer;

/// Whether a parameter's gradient may travel row-sparse (an embedding table: many more rows than columns, of
/// which a step touches few): reduce_gradients() decides per step from how many rows were touched; the others
/// are dense, and may be reduced during backward. A transformer's wide layers ([3072 × 768]) are dense.
bool may_reduce_row_sparse(const torch::Tensor& parameter);

/// What the ranks agreed on while reducing a step's gradients: each flag true when any rank raised it.
struct StepAgreement {
  bool stop = false;
  bool pause = false;
  bool late_gradients = false;  ///< a gradient reached the overlapped reducer after its bucket had started
  double loss_sum = 0;          ///< the ranks' local losses added up (0 when none was given)
};

/// Sums (or averages) the gradients of `parameters` over the ranks, leaving every rank the same bits, and
/// agrees on the control flags and adds up the ranks' `local_loss` (they ride on one collective after backward).
///  - The dense ones were reduced during backward by `overlapped` when it was armed for this step (it finishes
///    here); otherwise those that are not tables are flattened into buckets, the first of which start before
///    the agreement (up to 64 MB in flight).
///  - Row-sparse gradients (an embedding table: a step touches only its tokens' rows; sparse tensors, or dense
///    ones whose other rows are zero) travel as their touched rows, all-gathered together with the row numbers
///    and added in rank order into a sparse gradient: a fraction of the table. Which tables go this way, and how
///    many rows each rank sends, is agreed in that one collective, so every rank runs the same collectives.
/// A parameter without a gradient on this rank takes part with zeros. `flags` are this rank's stop and pause
/// requests; `overlapped` is null when no reducer was armed for the step.
StepAgreement reduce_gradients(Communicator& communicator, const std::vector<torch::Tensor>& parameters, bool average,
                               std::pair<bool, bool> flags, OverlappedGradientReducer* overlapped, double local_loss = 0);

}  // namespace xmc
