#include "engine/model/row_parallel_linear.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace xmc {
namespace {

/// Below this many multiply-adds a product is not worth a hand-off to the other threads.
constexpr std::int64_t kMinMultiplyAdds = std::int64_t{1} << 22;

bool plain_cpu_float(const torch::Tensor& t) { return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32; }

/// Runs body(begin, end) on `threads` about equal blocks of [0, count), one block a thread, with no autograd
/// recording on any of them (the products write into views of tensors this function's own backward owns).
template <typename Body>
void in_blocks(std::int64_t count, int threads, const Body& body) {
  const std::int64_t block = (count + threads - 1) / threads;
  at::parallel_for(0, threads, 1, [&](std::int64_t first_part, std::int64_t end_part) {
    const torch::NoGradGuard no_grad;  // grad mode is per thread: the pool's threads do not inherit the caller's
    for (std::int64_t part = first_part; part < end_part; ++part) {
      const std::int64_t begin = part * block, end = std::min(count, begin + block);
      if (begin < end) body(begin, end);
    }
  });
}

struct RowParallelLinear : public torch::autograd::Function<RowParallelLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
    const torch::Tensor x = input.contiguous();
    const torch::Tensor w_t = weight.t();
    torch::Tensor y = torch::empty({x.size(0), weight.size(0)}, x.options());
    in_blocks(x.size(0), at::get_num_threads(), [&](std::int64_t begin, std::int64_t end) {
      torch::Tensor rows = y.narrow(0, begin, end - begin);
      if (bias.numel() > 0) {
        at::addmm_out(rows, bias, x.narrow(0, begin, end - begin), w_t);
      } else {
        at::mm_out(rows, x.narrow(0, begin, end - begin), w_t);
      }
    });
    ctx->save_for_backward({x, weight});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor g = grad_outputs[0].contiguous();
    const int threads = at::get_num_threads();
    torch::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) {
      // ∂x = g·W, a block of rows each.
      grad_input = torch::empty_like(x);
      in_blocks(x.size(0), threads, [&](std::int64_t begin, std::int64_t end) {
        torch::Tensor rows = grad_input.narrow(0, begin, end - begin);
        at::mm_out(rows, g.narrow(0, begin, end - begin), weight);
      });
    }
    if (ctx->needs_input_grad(1)) {
      // ∂W = gᵀ·x, a block of W's rows each: every entry is one thread's whole sum over the texts.
      grad_weight = torch::empty_like(weight);
      in_blocks(weight.size(0), threads, [&](std::int64_t begin, std::int64_t end) {
        torch::Tensor rows = grad_weight.narrow(0, begin, end - begin);
        at::mm_out(rows, g.narrow(1, begin, end - begin).t(), x);
      });
    }
    if (ctx->needs_input_grad(2)) grad_bias = g.sum(0);  // never for the empty stand-in of no bias, which needs no gradient
    return {grad_input, grad_weight, grad_bias};
  }
};

}  // namespace

torch::Tensor row_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool splits = x.dim() == 2 && plain_cpu_float(x) && plain_cpu_float(weight) && (!bias.defined() || plain_cpu_float(bias)) &&
                      at::get_num_threads() >= 2 && !at::in_parallel_region() && x.size(0) >= 2 * at::get_num_threads() &&
                      x.size(0) * weight.size(0) * weight.size(1) >= kMinMultiplyAdds;
  if (!splits) return torch::nn::functional::linear(x, weight, bias);
  // No bias goes in as an empty tensor: an undefined one has no device for autograd's bookkeeping of the inputs.
  return RowParallelLinear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

}  // namespace xmc
