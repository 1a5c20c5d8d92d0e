#pragma once
// Engine-internal (includes torch). AdamW whose update of a CPU float32 parameter is one pass over the
// parameter, its gradient and both moments, where LibTorch's AdamW makes eight whole-tensor passes and two
// temporaries per parameter (for a bag-of-words embedding table: most of the optimiser's time, and every
// temporary a fresh allocation). The same arithmetic — decoupled weight decay, bias-corrected moments, eps
// added after the square root — the same options and the same state (AdamWParamState), so checkpoints load
// either way. A row-sparse gradient (a sparse COO tensor over the rows, as an embedding table with sparse
// gradients gives) is taken as is: the rows it names get their gradient, every other row a zero one, so
// the result is the dense update's without the dense gradient ever being built. Other parameters (CUDA,
// other dtypes, amsgrad) are updated as LibTorch's AdamW does, a sparse gradient made dense first.
#include <torch/torch.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xmc {

/// How a table taking deferred updates keeps AdamW's moments.
struct DeferredTableState {
  /// One second moment per row, the mean of the row's squared gradient (FBGEMM's partial row-wise Adam).
  bool second_moment_per_row = false;
  /// The first moment in bfloat16 (8 bits of mantissa, float32's range), rounded to nearest at every store;
  /// the arithmetic stays float32.
  bool bfloat16_first_moment = false;
};

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  ~FusedAdamW() override;
  FusedAdamW(const FusedAdamW&) = delete;
  FusedAdamW& operator=(const FusedAdamW&) = delete;
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// From now on the rows (first dimension) of `parameter` that a step gives no gradient keep their value and
  /// both moments, as torch's SparseAdam leaves them (with AdamW's decoupled weight decay on the rows it
  /// updates): a step costs the rows it touched, not the table. A row-sparse gradient names its rows; in a
  /// dense one, rows that are all zero count as untouched.
  void update_rows_lazily(const torch::Tensor& parameter);

  /// From now on AdamW's update of the rows of `parameter` (a CPU float32 table) that a step gives no gradient is
  /// deferred: such a row only has its moments decaying, its momentum moving it and its weight decay, which
  /// compose in closed form. A row is brought up to date when a step next touches it (before that step's update)
  /// and every row by bring_rows_up_to_date(); rows read through model/table_rows.h are brought up to date
  /// first, so a step's forward sees what the dense update would have made of them. The result is dense
  /// AdamW's — every row, every step — up to eps (the deferred steps take m / √v for m / (√v + eps)), at the cost
  /// of the touched rows: at 1.3M rows × 256 a dense step is ~0.13 s on 2 cores.
  /// With `second_moment_per_row` (a CPU float32 matrix, before its first step), the table keeps one second
  /// moment per row, the mean of the row's squared gradient, as FBGEMM's partial row-wise Adam does for
  /// embedding tables: the optimiser's memory for the table goes from twice the table to once. With
  /// `bfloat16_first_moment` the first moment takes half the table's bytes (a checkpoint's float32 one is
  /// converted at the next step, and back should the table ever be updated in full).
  void defer_untouched_rows(const torch::Tensor& parameter, const DeferredTableState& state = {});
  /// Applies every deferred update: call before the parameters are read outside a step (evaluation, checkpoint,
  /// a shortlist refresh) or the optimiser is dropped. Cheap when nothing is deferred.
  void bring_rows_up_to_date();
  /// Whether any table takes deferred updates.
  bool defers_rows() const { return !deferred_.empty(); }
  /// Every parameter's moments (first, second, and amsgrad's maximum where kept): handles sharing the state's own
  /// tensors, for setting them aside while no step runs (train/set_aside_tensors.h). Call bring_rows_up_to_date()
  /// first: deferred rows are caught up from these moments.
  std::vector<torch::Tensor> moments() const;

 private:
  /// A deferred table's bookkeeping: the step each row is up to date with, and the steps' constants since the
  /// last bring_rows_up_to_date().
  struct DeferredRows {
    torch::Tensor parameter;
    torch::Tensor up_to;          ///< int64 [rows]: the last step applied to each row
    std::int64_t since = -1;      ///< the history starts after this step (-1: not started)
    std::vector<double> gain;     ///< step since + i + 1: lr / bc1 · √bc2
    std::vector<double> decay;    ///< step since + i + 1: 1 − lr·wd
    std::vector<double> log_decay;  ///< prefix sums of log(1 − lr·wd): [i] over steps since + 1 … since + i
    std::vector<double> settled;  ///< [i]: the catch-up coefficient of a row resting from step since + i over the H steps after (catch_up_rows)
    double beta1 = 0.9, beta2 = 0.999;
    bool row_wise = false;        ///< one second moment per row ([rows x 1])
    bool bfloat16_first_moment = false;

    /// The last step the history reaches.
    std::int64_t last_step() const { return since + static_cast<std::int64_t>(gain.size()); }
    /// An empty history from `step` on (every row being up to date with it).
    void restart_at(std::int64_t step) {
      since = step;
      gain.clear();
      decay.clear();
      log_decay.assign(1, 0.0);
      settled.clear();
    }
  };
  void catch_up_rows(DeferredRows& rows, const std::int64_t* which, std::int64_t count, std::int64_t to_step);
  /// The table's rows `which` (undefined: all) brought up to the last step, before something reads them.
  void before_read(const void* table, const torch::Tensor& which);

  std::unordered_set<const void*> lazy_;  ///< TensorImpls of the parameters updated lazily
  std::unordered_map<const void*, DeferredRows> deferred_;  ///< by TensorImpl
};

}  // namespace xmc
