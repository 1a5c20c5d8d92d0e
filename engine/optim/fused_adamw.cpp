#include "engine/optim/fused_adamw.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "engine/core/error.h"
#include "engine/model/table_rows.h"
#include "engine/optim/sparse_gradient.h"

namespace xmc {
namespace {

/// The key LibTorch files a parameter's state under: its TensorImpl's address as text (1.13) or the address
/// itself (2.x).
template <typename Map>
typename Map::key_type state_key(const Map&, c10::TensorImpl* impl) {
  if constexpr (std::is_pointer_v<typename Map::key_type>) {
    return impl;
  } else {
    std::ostringstream out;
    out << impl;
    return out.str();
  }
}

struct UpdateConstants {
  float decay;          ///< 1 - lr·weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float sqrt_bias_correction2;
  float eps;
  float minus_step;     ///< -lr / bias_correction1
};

/// Asks for the `bytes` at `row` to come into the cache, to be written. The rows a step touches lie scattered over
/// tables of a gigabyte and more, so the hardware cannot guess the next one: without this each row's first lines
/// wait on memory (loads of rows took most of the deferred update's and the catch-up's time).
inline void prefetch_row(const void* row, std::int64_t bytes) {
  const char* at = static_cast<const char*>(row);
  for (std::int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(at + offset, 1, 3);
}

/// How many rows ahead of the one being updated a row loop prefetches.
constexpr std::int64_t kPrefetchRowsAhead = 4;

/// A deferred table's first moment, float32 or bfloat16, read and written a row at a time as floats: a float32
/// row in place, a bfloat16 one through a per-thread copy that store() rounds back (to nearest, ties to even).
class FirstMomentRows {
 public:
  FirstMomentRows(const torch::Tensor& m, std::int64_t width)
      : width_(width),
        floats_(m.scalar_type() == torch::kFloat32 ? m.data_ptr<float>() : nullptr),
        halves_(m.scalar_type() == torch::kBFloat16 ? m.data_ptr<c10::BFloat16>() : nullptr) {}
  /// Row `row` as floats: the state's own, or `scratch` filled from it.
  float* load(std::int64_t row, std::vector<float>& scratch) const {
    if (floats_ != nullptr) return floats_ + row * width_;
    scratch.resize(static_cast<std::size_t>(width_));
    const c10::BFloat16* from = halves_ + row * width_;
    for (std::int64_t e = 0; e < width_; ++e) scratch[static_cast<std::size_t>(e)] = static_cast<float>(from[e]);
    return scratch.data();
  }
  /// Asks for row `row` to come into the cache (see prefetch_row).
  void prefetch(std::int64_t row) const {
    if (floats_ != nullptr) prefetch_row(floats_ + row * width_, width_ * static_cast<std::int64_t>(sizeof(float)));
    else prefetch_row(halves_ + row * width_, width_ * static_cast<std::int64_t>(sizeof(c10::BFloat16)));
  }
  /// Writes a row load() gave back (nothing to do for float32).
  void store(std::int64_t row, const float* values) const {
    if (floats_ != nullptr) return;
    c10::BFloat16* to = halves_ + row * width_;
    for (std::int64_t e = 0; e < width_; ++e) to[e] = c10::BFloat16(values[e]);
  }

 private:
  std::int64_t width_;
  float* floats_;
  c10::BFloat16* halves_;
};

/// Asks for row `row` of a deferred table (`width` floats), of its first moment and of its second moment (`v_width`
/// floats a row: the table's width, or 1 with one second moment per row) to come into the cache.
void prefetch_state_row(const float* p, const FirstMomentRows& m, const float* v, std::int64_t width, std::int64_t v_width, std::int64_t row) {
  prefetch_row(p + row * width, width * static_cast<std::int64_t>(sizeof(float)));
  m.prefetch(row);
  prefetch_row(v + row * v_width, v_width * static_cast<std::int64_t>(sizeof(float)));
}

/// p ← p·decay − step · m / (√v / √bc2 + eps), after m ← β1·m + (1−β1)·g and v ← β2·v + (1−β2)·g², over
/// [begin, end): four lanes at a time where SSE is there (std::sqrt's errno check keeps the compiler from
/// vectorising the plain loop), then one by one. Without a gradient (kWithGradient false, g unread): g = 0,
/// the rows a sparse gradient does not touch — the same bits, as adding (1−β)·0 changes nothing.
template <bool kWithGradient>
void update_range(float* p, const float* g, float* m, float* v, std::int64_t begin, std::int64_t end, const UpdateConstants& c) {
  std::int64_t i = begin;
#if defined(__SSE2__)
  const __m128 beta1 = _mm_set1_ps(c.beta1), one_minus_beta1 = _mm_set1_ps(c.one_minus_beta1);
  const __m128 beta2 = _mm_set1_ps(c.beta2), one_minus_beta2 = _mm_set1_ps(c.one_minus_beta2);
  const __m128 sqrt_bc2 = _mm_set1_ps(c.sqrt_bias_correction2), eps = _mm_set1_ps(c.eps);
  const __m128 decay = _mm_set1_ps(c.decay), minus_step = _mm_set1_ps(c.minus_step);
  for (; i + 4 <= end; i += 4) {
    __m128 mi = _mm_mul_ps(_mm_loadu_ps(m + i), beta1);
    __m128 vi = _mm_mul_ps(_mm_loadu_ps(v + i), beta2);
    if constexpr (kWithGradient) {
      const __m128 gi = _mm_loadu_ps(g + i);
      mi = _mm_add_ps(mi, _mm_mul_ps(one_minus_beta1, gi));
      vi = _mm_add_ps(vi, _mm_mul_ps(_mm_mul_ps(one_minus_beta2, gi), gi));
    }
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    const __m128 denominator = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vi), sqrt_bc2), eps);
    _mm_storeu_ps(p + i, _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(p + i), decay), _mm_mul_ps(minus_step, _mm_div_ps(mi, denominator))));
  }
#endif
  for (; i < end; ++i) {
    float mi = m[i] * c.beta1;
    float vi = v[i] * c.beta2;
    if constexpr (kWithGradient) {
      mi += c.one_minus_beta1 * g[i];
      vi += c.one_minus_beta2 * g[i] * g[i];
    }
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * c.decay + c.minus_step * (mi / (std::sqrt(vi) / c.sqrt_bias_correction2 + c.eps));
  }
}

/// The threads take whole blocks of four and the last n mod 4 entries go one by one at the end, so which
/// entries take the SSE lanes (and so how each is rounded) never depends on the number of threads.
void update(float* p, const float* g, float* m, float* v, std::int64_t n, const UpdateConstants& c) {
  const std::int64_t blocks = n / 4;
  at::parallel_for(0, blocks, 1 << 12, [&](std::int64_t begin, std::int64_t end) { update_range<true>(p, g, m, v, 4 * begin, 4 * end, c); });
  update_range<true>(p, g, m, v, 4 * blocks, n, c);
}

/// The update of a [rows × width] parameter whose gradient is row-sparse: `touched` (ascending, distinct) are the
/// rows with a gradient, `values` ([touched × width]) their gradients; every other row takes a zero gradient,
/// as a dense step would. Rows are split over threads; within a row the lanes fall as update() puts them when
/// the width is a multiple of four (the usual case), so both give the same bits.
void update_row_sparse(float* p, const std::int64_t* touched, const float* values, std::int64_t touched_count, float* m, float* v,
                       std::int64_t rows, std::int64_t width, const UpdateConstants& c) {
  at::parallel_for(0, rows, std::max<std::int64_t>(1, (1 << 12) / std::max<std::int64_t>(1, width)), [&](std::int64_t begin, std::int64_t end) {
    std::int64_t k = std::lower_bound(touched, touched + touched_count, begin) - touched;
    std::int64_t row = begin;
    while (row < end) {
      const std::int64_t next = k < touched_count ? std::min(touched[k], end) : end;
      if (next > row) update_range<false>(p, nullptr, m, v, row * width, next * width, c);  // untouched rows [row, next)
      row = next;
      if (row < end) {  // row == touched[k]
        const std::int64_t at = row * width;
        update_range<true>(p + at, values + k * width, m + at, v + at, 0, width, c);
        ++row;
        ++k;
      }
    }
  });
}

/// The lazy update: only the `touched` rows (ascending, distinct; `values` their gradients) are updated, each
/// as update_row_sparse() updates a touched row; the others keep their value and moments.
void update_touched_rows(float* p, const std::int64_t* touched, const float* values, std::int64_t touched_count, const FirstMomentRows& m,
                         float* v, std::int64_t width, const UpdateConstants& c) {
  at::parallel_for(0, touched_count, std::max<std::int64_t>(1, (1 << 12) / std::max<std::int64_t>(1, width)), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch;
    for (std::int64_t k = begin; k < end; ++k) {
      if (k + kPrefetchRowsAhead < end) prefetch_state_row(p, m, v, width, width, touched[k + kPrefetchRowsAhead]);
      const std::int64_t at = touched[k] * width;
      float* mr = m.load(touched[k], scratch);
      update_range<true>(p + at, values + k * width, mr, v + at, 0, width, c);
      m.store(touched[k], mr);
    }
  });
}

/// update_touched_rows() with one second moment per row (`v` [rows]), the mean of the row's squared gradient,
/// as FBGEMM's partial row-wise Adam: v ← β2·v + (1−β2)·mean(g²), then every element by m / (√v / √bc2 + eps).
void update_touched_rows_row_wise(float* p, const std::int64_t* touched, const float* values, std::int64_t touched_count, const FirstMomentRows& m,
                                  float* v, std::int64_t width, const UpdateConstants& c) {
  at::parallel_for(0, touched_count, std::max<std::int64_t>(1, (1 << 12) / std::max<std::int64_t>(1, width)), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch;
    for (std::int64_t k = begin; k < end; ++k) {
      if (k + kPrefetchRowsAhead < end) prefetch_state_row(p, m, v, width, 1, touched[k + kPrefetchRowsAhead]);
      const std::int64_t row = touched[k];
      const float* g = values + k * width;
      // Eight running sums, so that the additions do not wait on each other (one sum was a tenth of the update's time).
      double partial[8] = {};
      std::int64_t e = 0;
      for (; e + 8 <= width; e += 8)
        for (int lane = 0; lane < 8; ++lane) partial[lane] += static_cast<double>(g[e + lane]) * g[e + lane];
      double squares = 0;
      for (const double sum : partial) squares += sum;
      for (; e < width; ++e) squares += static_cast<double>(g[e]) * g[e];
      const float vr = v[row] = c.beta2 * v[row] + c.one_minus_beta2 * static_cast<float>(squares / static_cast<double>(std::max<std::int64_t>(1, width)));
      const float denominator = std::sqrt(vr) / c.sqrt_bias_correction2 + c.eps;
      float* pr = p + row * width;
      float* mr = m.load(row, scratch);
      for (e = 0; e < width; ++e) {
        mr[e] = c.beta1 * mr[e] + c.one_minus_beta1 * g[e];
        pr[e] = pr[e] * c.decay + c.minus_step * (mr[e] / denominator);
      }
      m.store(row, mr);
    }
  });
}

/// The touched rows (ascending) of a `rows`-row parameter's gradient and their gradients ([touched × width]).
std::pair<torch::Tensor, torch::Tensor> touched_rows(const torch::Tensor& grad, std::int64_t rows) {
  if (grad.is_sparse()) {
    const torch::Tensor coalesced_grad = coalesced(grad);
    return {coalesced_grad._indices().reshape({-1}).contiguous(), coalesced_grad._values().reshape({coalesced_grad._values().size(0), -1}).contiguous()};
  }
  const torch::Tensor by_row = grad.reshape({rows, -1});
  const torch::Tensor touched = by_row.ne(0).any(1).nonzero().reshape({-1});
  return {touched, by_row.index_select(0, touched).contiguous()};
}

/// Tensors of one parameter group at one step count, updated together.
struct MultiTensorBatch {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
};

/// LibTorch's AdamW arithmetic (no amsgrad) on a batch, with the multi-tensor kernels: the same operations in
/// the same order per element as the tensor-by-tensor form.
void update_batch(MultiTensorBatch& b, const torch::optim::AdamWOptions& options, std::int64_t step) {
  const double beta1 = std::get<0>(options.betas());
  const double beta2 = std::get<1>(options.betas());
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  if (options.weight_decay() != 0) at::_foreach_mul_(b.params, 1 - options.lr() * options.weight_decay());
  at::_foreach_mul_(b.exp_avgs, beta1);
  at::_foreach_add_(b.exp_avgs, b.grads, 1 - beta1);
  at::_foreach_mul_(b.exp_avg_sqs, beta2);
  at::_foreach_addcmul_(b.exp_avg_sqs, b.grads, b.grads, 1 - beta2);
  std::vector<torch::Tensor> denominators = at::_foreach_sqrt(b.exp_avg_sqs);
  at::_foreach_div_(denominators, std::sqrt(bias_correction2));
  at::_foreach_add_(denominators, options.eps());
  at::_foreach_addcdiv_(b.params, b.exp_avgs, denominators, -options.lr() / bias_correction1);
}

bool plain(const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() && !t.is_sparse(); }

/// A deferred table's first moment as its own path updates it: plain, or the same in bfloat16.
bool plain_first_moment(const torch::Tensor& m) {
  return plain(m) || (m.device().is_cpu() && m.scalar_type() == torch::kBFloat16 && m.is_contiguous() && !m.is_sparse());
}

bool fusable(const torch::Tensor& p, const torch::Tensor& grad, const torch::optim::AdamWParamState& state, bool amsgrad) {
  if (amsgrad || !plain(p) || !plain(state.exp_avg()) || !plain(state.exp_avg_sq())) return false;
  if (grad.is_sparse())  // row-sparse: one sparse dimension, the rows
    return grad.device().is_cpu() && grad.scalar_type() == torch::kFloat32 && grad.sparse_dim() == 1 && p.dim() >= 1 && grad.sizes() == p.sizes();
  return plain(grad) && grad.numel() == p.numel();
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    // Tensors LibTorch's arithmetic updates (on a GPU, or not float32), by their step count (which sets the bias
    // corrections): each batch is updated with multi-tensor (_foreach_) kernels, a handful of launches for the
    // whole batch on a GPU instead of about seven per tensor.
    std::map<std::int64_t, MultiTensorBatch> batches;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      const auto key = state_key(state_, p.unsafeGetTensorImpl());
      auto found = state_.find(key);
      if (found == state_.end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        const auto deferred_rows = deferred_.find(p.unsafeGetTensorImpl());
        if (deferred_rows != deferred_.end() && deferred_rows->second.bfloat16_first_moment)
          fresh->exp_avg(torch::zeros(p.sizes(), p.options().dtype(torch::kBFloat16)));  // half the bytes; its own path updates it
        else
          fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        if (deferred_rows != deferred_.end() && deferred_rows->second.row_wise)
          fresh->exp_avg_sq(torch::zeros({p.size(0), 1}, p.options()));  // one second moment per row
        else
          fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        if (options.amsgrad()) fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        state_[key] = std::move(fresh);
        found = state_.find(key);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*found->second);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
      const double step_size = options.lr() / bias_correction1;
      const UpdateConstants c{.decay = static_cast<float>(1 - options.lr() * options.weight_decay()),
                              .beta1 = static_cast<float>(beta1),
                              .one_minus_beta1 = static_cast<float>(1 - beta1),
                              .beta2 = static_cast<float>(beta2),
                              .one_minus_beta2 = static_cast<float>(1 - beta2),
                              .sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2)),
                              .eps = static_cast<float>(options.eps()),
                              .minus_step = static_cast<float>(-step_size)};  // the fused updates' constants

      const bool lazy = lazy_.count(p.unsafeGetTensorImpl()) > 0;
      const auto deferred = deferred_.find(p.unsafeGetTensorImpl());
      const double decay = 1 - options.lr() * options.weight_decay();
      if (deferred != deferred_.end() && !lazy && !options.amsgrad() && decay > 0 && plain(p) && plain_first_moment(state.exp_avg()) &&
          plain(state.exp_avg_sq())) {
        // The touched rows are brought up to the step before this one, then take this step; the others wait.
        DeferredRows& rows = deferred->second;
        // The first moment in the dtype asked for (a checkpoint's may be the other: converted once).
        const auto first_moment_type = rows.bfloat16_first_moment ? torch::kBFloat16 : torch::kFloat32;
        if (state.exp_avg().scalar_type() != first_moment_type) state.exp_avg(state.exp_avg().to(first_moment_type));
        const std::int64_t row_count = p.dim() == 0 ? 1 : p.size(0);
        // The second moment as the state holds it: one per row ([rows x 1], unlike the table), else one per element
        // (also a [rows x 1] table's, or a checkpoint's from before row-wise moments).
        const torch::Tensor& v_state = state.exp_avg_sq();
        const bool row_wise_state = v_state.dim() == 2 && v_state.size(0) == row_count && v_state.size(1) == 1 && v_state.sizes() != p.sizes();
        if (state.exp_avg().sizes() != p.sizes() || (v_state.sizes() != p.sizes() && !(rows.row_wise && row_wise_state)))
          throw Error("AdamW: the optimiser state of a table of " + std::to_string(row_count) + " rows does not fit it (a checkpoint written with "
                      "another table_second_moment?)");
        rows.row_wise = row_wise_state;
        const std::int64_t step = state.step();
        if (rows.since < 0) {  // first step since defer_untouched_rows() or a checkpoint (written up to date)
          rows.restart_at(step - 1);
          rows.up_to = torch::full({row_count}, step - 1, torch::kInt64);
        }
        rows.beta1 = beta1;
        rows.beta2 = beta2;
        rows.gain.push_back(step_size * std::sqrt(bias_correction2));
        rows.decay.push_back(decay);
        rows.log_decay.push_back(rows.log_decay.back() + std::log(decay));
        const auto [touched, values] = touched_rows(grad, row_count);
        const torch::Tensor cpu_values = values.to(torch::kFloat32).contiguous();
        catch_up_rows(rows, touched.data_ptr<std::int64_t>(), touched.numel(), step - 1);
        const std::int64_t width = p.numel() / std::max<std::int64_t>(1, row_count);
        const FirstMomentRows m(state.exp_avg(), width);
        if (rows.row_wise)
          update_touched_rows_row_wise(p.data_ptr<float>(), touched.data_ptr<std::int64_t>(), cpu_values.data_ptr<float>(), touched.numel(), m,
                                       state.exp_avg_sq().data_ptr<float>(), width, c);
        else
          update_touched_rows(p.data_ptr<float>(), touched.data_ptr<std::int64_t>(), cpu_values.data_ptr<float>(), touched.numel(), m,
                              state.exp_avg_sq().data_ptr<float>(), width, c);
        rows.up_to.index_fill_(0, touched, step);
        for (const torch::Tensor* t : {&p, &state.exp_avg(), &state.exp_avg_sq()}) t->unsafeGetTensorImpl()->bump_version();
        continue;
      }
      if (state.exp_avg_sq().sizes() != p.sizes())
        throw Error("AdamW: a table of " + std::to_string(p.size(0)) + " rows keeps one second moment per row (table_second_moment row), "
                    "which only its deferred update (deferred_rows_from, a CPU float32 table, lr x weight_decay < 1) can use");
      if (deferred != deferred_.end() && deferred->second.since >= 0) {
        // Updated in full this step (weight decay of lr·wd >= 1, or not a CPU float32 table): first the deferred steps.
        DeferredRows& rows = deferred->second;
        catch_up_rows(rows, nullptr, 0, rows.last_step());
        rows.since = -1;
      }
      if (state.exp_avg().scalar_type() == torch::kBFloat16 && p.scalar_type() != torch::kBFloat16)
        state.exp_avg(state.exp_avg().to(p.scalar_type()));  // a deferred table's bfloat16 moment, now updated as any other
      if (lazy && !options.amsgrad()) {
        // Only the touched rows, their moments and their weight decay.
        const std::int64_t rows = p.dim() == 0 ? 1 : p.size(0);
        const auto [touched, values] = touched_rows(grad, rows);
        if (plain(p) && plain(state.exp_avg()) && plain(state.exp_avg_sq())) {
          const torch::Tensor cpu_values = values.to(torch::kFloat32).contiguous();
          const std::int64_t width = p.numel() / std::max<std::int64_t>(1, rows);
          update_touched_rows(p.data_ptr<float>(), touched.data_ptr<std::int64_t>(), cpu_values.data_ptr<float>(), touched.numel(),
                              FirstMomentRows(state.exp_avg(), width), state.exp_avg_sq().data_ptr<float>(), width, c);
          for (const torch::Tensor* t : {&p, &state.exp_avg(), &state.exp_avg_sq()}) t->unsafeGetTensorImpl()->bump_version();
        } else {  // on a GPU, other dtypes: the same arithmetic on the gathered rows
          torch::Tensor p_rows = p.reshape({rows, -1}), m_rows = state.exp_avg().reshape({rows, -1}), v_rows = state.exp_avg_sq().reshape({rows, -1});
          const torch::Tensor g = values.to(p.scalar_type());
          torch::Tensor m = m_rows.index_select(0, touched).mul_(beta1).add_(g, 1 - beta1);
          torch::Tensor v = v_rows.index_select(0, touched).mul_(beta2).addcmul_(g, g, 1 - beta2);
          torch::Tensor q = p_rows.index_select(0, touched).mul_(1 - options.lr() * options.weight_decay());
          q.addcdiv_(m, (v.sqrt() / std::sqrt(bias_correction2)).add_(options.eps()), -step_size);
          m_rows.index_copy_(0, touched, m);
          v_rows.index_copy_(0, touched, v);
          p_rows.index_copy_(0, touched, q);
        }
        continue;
      }
      if (fusable(p, grad, state, options.amsgrad())) {
        if (grad.is_sparse()) {
          const torch::Tensor rows = coalesced(grad);
          const torch::Tensor touched = rows._indices().reshape({-1}).contiguous();
          const torch::Tensor values = rows._values().contiguous();
          update_row_sparse(p.data_ptr<float>(), touched.data_ptr<std::int64_t>(), values.data_ptr<float>(), touched.numel(),
                            state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(), p.size(0), p.numel() / std::max<std::int64_t>(1, p.size(0)), c);
        } else {
          update(p.data_ptr<float>(), grad.data_ptr<float>(), state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(), p.numel(), c);
        }
        // Written through raw pointers: tell autograd they changed, as LibTorch's in-place ops do.
        for (const torch::Tensor* t : {&p, &state.exp_avg(), &state.exp_avg_sq()}) t->unsafeGetTensorImpl()->bump_version();
        continue;
      }
      // LibTorch's AdamW (a sparse gradient made dense: every row decays); without amsgrad, batched (below).
      if (grad.is_sparse()) grad = grad.to_dense();
      if (!options.amsgrad()) {
        MultiTensorBatch& batch = batches[state.step()];
        batch.params.push_back(p);
        batch.grads.push_back(grad);
        batch.exp_avgs.push_back(state.exp_avg());
        batch.exp_avg_sqs.push_back(state.exp_avg_sq());
        continue;
      }
      if (options.weight_decay() != 0) p.mul_(1 - options.lr() * options.weight_decay());
      auto& exp_avg = state.exp_avg();
      auto& exp_avg_sq = state.exp_avg_sq();
      exp_avg.mul_(beta1).add_(grad, 1 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      torch::Tensor denominator;
      if (options.amsgrad()) {
        auto& max_exp_avg_sq = state.max_exp_avg_sq();
        torch::max_out(max_exp_avg_sq, exp_avg_sq, max_exp_avg_sq);
        denominator = (max_exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
      } else {
        denominator = (exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options.eps());
      }
      p.addcdiv_(exp_avg, denominator, -step_size);
    }
    for (auto& [step, batch] : batches) update_batch(batch, options, step);
  }
  return loss;
}

void FusedAdamW::update_rows_lazily(const torch::Tensor& parameter) { lazy_.insert(parameter.unsafeGetTensorImpl()); }

FusedAdamW::~FusedAdamW() {
  for (const auto& [table, rows] : deferred_) set_row_read_hook(table, nullptr);
}

void FusedAdamW::defer_untouched_rows(const torch::Tensor& parameter, const DeferredTableState& table_state) {
  DeferredRows rows;
  rows.parameter = parameter;
  // A row-wise second moment and a bfloat16 first moment only where the deferred update runs: a CPU float32 matrix.
  const bool deferrable = parameter.device().is_cpu() && parameter.scalar_type() == torch::kFloat32 && parameter.dim() == 2;
  rows.row_wise = table_state.second_moment_per_row && deferrable;
  rows.bfloat16_first_moment = table_state.bfloat16_first_moment && deferrable;
  const void* table = parameter.unsafeGetTensorImpl();
  deferred_.emplace(table, std::move(rows));
  set_row_read_hook(table, [this, table](const torch::Tensor& which) { before_read(table, which); });
}

void FusedAdamW::before_read(const void* table, const torch::Tensor& which) {
  const auto found = deferred_.find(table);
  if (found == deferred_.end()) return;
  DeferredRows& rows = found->second;
  if (rows.since < 0 || rows.gain.empty()) return;  // nothing deferred since the last bring_rows_up_to_date()
  const std::int64_t to_step = rows.last_step();
  if (!which.defined()) {
    catch_up_rows(rows, nullptr, 0, to_step);
    return;
  }
  if (which.numel() == 0) return;
  // Distinct (two threads must not bring one row up at once) and in range (else the read itself will say so).
  const torch::Tensor distinct = std::get<0>(torch::_unique(which.to(torch::kCPU, torch::kInt64).reshape({-1}), /*sorted=*/true));
  const std::int64_t row_count = rows.up_to.numel();
  const auto* first = distinct.data_ptr<std::int64_t>();
  if (first[0] < 0 || first[distinct.numel() - 1] >= row_count) return;
  catch_up_rows(rows, first, distinct.numel(), to_step);
}

std::vector<torch::Tensor> FusedAdamW::moments() const {
  std::vector<torch::Tensor> out;
  for (const auto& [key, param_state] : state_) {
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*param_state);
    for (const torch::Tensor* t : {&adam.exp_avg(), &adam.exp_avg_sq(), &adam.max_exp_avg_sq()})
      if (t->defined()) out.push_back(*t);
  }
  return out;
}

void FusedAdamW::bring_rows_up_to_date() {
  for (auto& [impl, rows] : deferred_) {
    if (rows.since < 0) continue;
    catch_up_rows(rows, nullptr, 0, rows.last_step());
    rows.restart_at(rows.last_step());
  }
}

/// Row r, up to date with step s, through the steps s+1 … u without a gradient: m ← β1^k·m, v ← β2^k·v, and
/// p ← D·p − C·m/√v with D = Π d_j and C = Σ_j gain_j·ρ^(j−s)·Π_{i>j} d_i (d_j = 1 − lr_j·wd, gain_j = lr_j/bc1_j·√bc2_j,
/// ρ = β1/√β2), since each of those steps moves p by gain_j·m_j/√v_j = gain_j·ρ^(j−s)·m/√v (eps left out). The sum
/// stops at j = s + H, where ρ^(j−s) falls below 1e-12; the decay products come from prefix sums of their logarithms.
/// C is looked up, not summed for each row (a row's sum was most of a step's catch-up): for the s within H of u,
/// from a table made by the recursion C(s−1, u) = ρ·(gain_s·Π_{i=s+1}^u d_i + C(s, u)); for older s, as
/// C(s, s+H)·Π_{i=s+H+1}^u d_i, C(s, s+H) made once per step s as the history reaches s + H.
void FusedAdamW::catch_up_rows(DeferredRows& rows, const std::int64_t* which, std::int64_t count, std::int64_t to_step) {
  if (rows.since < 0 || to_step <= rows.since) return;  // every row is up to date with `since`
  torch::Tensor& p = rows.parameter;
  const auto found = state_.find(state_key(state_, p.unsafeGetTensorImpl()));
  if (found == state_.end()) return;  // no step yet
  auto& state = static_cast<torch::optim::AdamWParamState&>(*found->second);
  float* values = p.data_ptr<float>();
  std::int64_t* up_to = rows.up_to.data_ptr<std::int64_t>();
  const std::int64_t row_count = rows.up_to.numel(), width = p.numel() / std::max<std::int64_t>(1, row_count);
  const FirstMomentRows m(state.exp_avg(), width);
  float* v = state.exp_avg_sq().data_ptr<float>();
  const double rho = rows.beta1 / std::sqrt(rows.beta2);
  const std::int64_t horizon = rho > 0 && rho < 1 ? static_cast<std::int64_t>(std::ceil(std::log(1e-12) / std::log(rho))) : 1;
  const auto log_decay = [&](std::int64_t step) { return rows.log_decay[static_cast<std::size_t>(step - rows.since)]; };
  // C(s, u) for s in [first_step, u) into `out` (if given) by the recursion; returns C(first_step, u).
  const auto coefficients = [&](std::int64_t first_step, std::int64_t u, double* out) {
    double c = 0, decay_after = 1;  // C(s, u) and Π_{i=s+1}^u d_i, from s = u down
    for (std::int64_t s = u; s > first_step; --s) {
      const auto at = static_cast<std::size_t>(s - rows.since - 1);  // step s's constants
      c = rho * (rows.gain[at] * decay_after + c);
      decay_after *= rows.decay[at];
      if (out != nullptr) out[s - 1 - first_step] = c;
    }
    return c;
  };
  const std::int64_t recent_from = std::max(rows.since, to_step - horizon);
  std::vector<double> recent(static_cast<std::size_t>(to_step - recent_from + 1), 0.0);  // C(s, u) for s in [recent_from, u]
  coefficients(recent_from, to_step, recent.data());
  for (std::int64_t s = rows.since + static_cast<std::int64_t>(rows.settled.size()); s < recent_from; ++s)
    rows.settled.push_back(coefficients(s, s + horizon, nullptr));  // C(s, s + H)
  const auto coefficient = [&](std::int64_t from) {
    if (from >= recent_from) return recent[static_cast<std::size_t>(from - recent_from)];
    return rows.settled[static_cast<std::size_t>(from - rows.since)] * std::exp(log_decay(to_step) - log_decay(from + horizon));
  };
  const std::int64_t n = which != nullptr ? count : row_count;
  at::parallel_for(0, n, std::max<std::int64_t>(1, (1 << 12) / std::max<std::int64_t>(1, width)), [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch;
    for (std::int64_t i = begin; i < end; ++i) {
      if (which != nullptr && i + kPrefetchRowsAhead < end) {  // all rows in order: the hardware follows
        const std::int64_t ahead = which[i + kPrefetchRowsAhead];
        if (up_to[ahead] < to_step) prefetch_state_row(values, m, v, width, rows.row_wise ? 1 : width, ahead);
      }
      const std::int64_t row = which != nullptr ? which[i] : i;
      const std::int64_t from = up_to[row];
      if (from >= to_step) continue;
      const double decay = std::exp(log_decay(to_step) - log_decay(from));
      const double step_coefficient = coefficient(from);
      const auto k = static_cast<double>(to_step - from);
      const auto m_factor = static_cast<float>(std::pow(rows.beta1, k)), v_factor = static_cast<float>(std::pow(rows.beta2, k));
      const auto d = static_cast<float>(decay), step = static_cast<float>(step_coefficient);
      float* pr = values + row * width;
      float* mr = m.load(row, scratch);
      if (rows.row_wise) {
        const float vr = v[row];
        const float scale = vr > 0 ? step / std::sqrt(vr) : 0.0F;
        for (std::int64_t e = 0; e < width; ++e) {
          pr[e] = pr[e] * d - scale * mr[e];
          mr[e] *= m_factor;
        }
        v[row] = vr * v_factor;
      } else {
        float* vr = v + row * width;
        for (std::int64_t e = 0; e < width; ++e) {
          pr[e] = vr[e] > 0 ? pr[e] * d - step * (mr[e] / std::sqrt(vr[e])) : pr[e] * d;
          mr[e] *= m_factor;
          vr[e] *= v_factor;
        }
      }
      m.store(row, mr);
      up_to[row] = to_step;
    }
  });
  for (const torch::Tensor* t : {&p, &state.exp_avg(), &state.exp_avg_sq()}) t->unsafeGetTensorImpl()->bump_version();
}

}  // namespace xmc
