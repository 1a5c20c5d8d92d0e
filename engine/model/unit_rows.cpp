#include "engine/model/unit_rows.h"

#include <ATen/Parallel.h>

#include <cmath>

namespace xmc {
namespace {

/// Rows per parallel task: about 16k elements, so that a [512 × 128] matrix splits in two.
std::int64_t row_grain(std::int64_t width) { return std::max<std::int64_t>(1, (std::int64_t{1} << 14) / std::max<std::int64_t>(1, width)); }

bool plain_cpu_float(const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.dim() == 2; }

struct UnitRows : public torch::autograd::Function<UnitRows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input, double eps) {
    // scale: [rows] 1 / max(‖x‖, eps); projected: [rows] ‖x‖ ≥ eps (below it the denominator is the constant
    // eps, and the projection term drops out of the gradient, as normalize's clamp makes it).
    torch::Tensor y, scale, projected;
    if (plain_cpu_float(input)) {
      const torch::Tensor x = input.contiguous();
      const std::int64_t rows = x.size(0), width = x.size(1);
      y = torch::empty_like(x);
      scale = torch::empty({rows}, x.options());
      projected = torch::empty({rows}, x.options().dtype(torch::kBool));
      const float* in = x.data_ptr<float>();
      float* out = y.data_ptr<float>();
      float* inverse = scale.data_ptr<float>();
      bool* above = projected.data_ptr<bool>();
      at::parallel_for(0, rows, row_grain(width), [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
          const float* row = in + r * width;
          double squares = 0;
          for (std::int64_t j = 0; j < width; ++j) squares += static_cast<double>(row[j]) * row[j];
          const double norm = std::sqrt(squares);
          const auto s = static_cast<float>(1.0 / std::max(norm, eps));
          inverse[r] = s;
          above[r] = norm >= eps;
          for (std::int64_t j = 0; j < width; ++j) out[r * width + j] = row[j] * s;
        }
      });
    } else {
      const torch::Tensor norm = input.norm(2, /*dim=*/1);
      projected = norm >= eps;
      scale = norm.clamp_min(eps).reciprocal();
      y = input * scale.unsqueeze(1);
    }
    ctx->save_for_backward({y, scale, projected});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& y = saved[0];
    const torch::Tensor& scale = saved[1];
    const torch::Tensor& projected = saved[2];
    const torch::Tensor g = grad_outputs[0].contiguous();
    torch::Tensor grad;
    if (plain_cpu_float(g) && y.is_contiguous()) {
      const std::int64_t rows = y.size(0), width = y.size(1);
      grad = torch::empty_like(g);
      const float* gy = g.data_ptr<float>();
      const float* yy = y.data_ptr<float>();
      const float* s = scale.data_ptr<float>();
      const bool* keep = projected.data_ptr<bool>();
      float* out = grad.data_ptr<float>();
      at::parallel_for(0, rows, row_grain(width), [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
          const float* gr = gy + r * width;
          const float* yr = yy + r * width;
          float dot = 0;
          if (keep[r])
            for (std::int64_t j = 0; j < width; ++j) dot += gr[j] * yr[j];
          for (std::int64_t j = 0; j < width; ++j) out[r * width + j] = (gr[j] - yr[j] * dot) * s[r];
        }
      });
    } else {
      const torch::Tensor dot = (g * y).sum(/*dim=*/1, /*keepdim=*/true) * projected.unsqueeze(1).to(g.scalar_type());
      grad = (g - y * dot) * scale.unsqueeze(1);
    }
    return {grad, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor unit_rows(const torch::Tensor& x, double eps) {
  TORCH_CHECK(x.dim() == 2, "unit_rows: a 2-D tensor, got ", x.dim(), " dimensions");
  return UnitRows::apply(x, eps);
}

}  // namespace xmc
