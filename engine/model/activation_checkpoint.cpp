#include "engine/model/activation_checkpoint.h"

#include <cstdint>

#include "engine/model/autocast.h"
#include "engine/model/random_state.h"

namespace xmc {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Inputs: x, the context tensors, the trainable parameters; the block itself travels as a pointer.
struct CheckpointedRun : public torch::autograd::Function<CheckpointedRun> {
  // The lists are TensorLists: autograd tracks each of their tensors as an input (a std::vector would be opaque).
  static variable_list forward(AutogradContext* ctx, torch::Tensor x, at::TensorList context, at::TensorList parameters,
                               RecomputableBlock* block, std::int64_t device_index, std::int64_t device_type, std::int64_t autocast) {
    const torch::Device device(static_cast<torch::DeviceType>(device_type), static_cast<c10::DeviceIndex>(device_index));
    const RandomState rng_state = RandomState::of(device);
    ctx->saved_data["block"] = reinterpret_cast<std::int64_t>(block);
    ctx->saved_data["contexts"] = static_cast<std::int64_t>(context.size());
    ctx->saved_data["parameters"] = static_cast<std::int64_t>(parameters.size());
    ctx->saved_data["device_index"] = device_index;
    ctx->saved_data["device_type"] = device_type;
    ctx->saved_data["autocast"] = autocast;
    ctx->saved_data["x_requires_grad"] = x.requires_grad();
    // The device generator's state is undefined on the CPU (an undefined saved tensor comes back undefined).
    variable_list saved{x, rng_state.cpu_state(), rng_state.device_state()};
    saved.insert(saved.end(), context.begin(), context.end());
    saved.insert(saved.end(), parameters.begin(), parameters.end());
    ctx->save_for_backward(saved);
    // Forward of a custom function runs with grad mode off: nothing of the block's graph is kept.
    const AutocastScope mixed_precision(device, static_cast<torch::ScalarType>(autocast));
    return {block->run(x, context.vec())};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    auto* block = reinterpret_cast<RecomputableBlock*>(ctx->saved_data["block"].toInt());
    const auto contexts = static_cast<std::size_t>(ctx->saved_data["contexts"].toInt());
    const auto parameters = static_cast<std::size_t>(ctx->saved_data["parameters"].toInt());
    const torch::Device device(static_cast<torch::DeviceType>(ctx->saved_data["device_type"].toInt()),
                               static_cast<c10::DeviceIndex>(ctx->saved_data["device_index"].toInt()));
    const auto autocast = static_cast<torch::ScalarType>(ctx->saved_data["autocast"].toInt());
    const bool x_requires_grad = ctx->saved_data["x_requires_grad"].toBool();

    torch::Tensor x = saved[0].detach().requires_grad_(x_requires_grad);
    constexpr std::ptrdiff_t kFirstContext = 3;  // after x and the two generator states
    const variable_list context(saved.begin() + kFirstContext, saved.begin() + kFirstContext + static_cast<std::ptrdiff_t>(contexts));
    const variable_list params(saved.begin() + kFirstContext + static_cast<std::ptrdiff_t>(contexts), saved.end());

    // The forward is replayed under the generators' states of the first one (the same dropout masks), and the
    // generators are left where the backward found them.
    const RandomState rng_after = RandomState::of(device);
    RandomState(device, saved[1], saved[2]).restore();
    torch::Tensor output;
    {
      const torch::AutoGradMode grad_on(true);
      const AutocastScope mixed_precision(device, autocast);
      output = block->run(x, context);
    }
    rng_after.restore();

    variable_list wrt;
    std::vector<std::size_t> where;  // position in the result of each input differentiated
    if (x_requires_grad) {
      wrt.push_back(x);
      where.push_back(0);
    }
    for (std::size_t p = 0; p < parameters; ++p)
      if (params[p].requires_grad()) {
        wrt.push_back(params[p]);
        where.push_back(1 + contexts + p);
      }
    // One gradient per input of forward: x, each context tensor, each parameter, then the 4 non-tensor arguments.
    variable_list result(1 + contexts + parameters + 4);
    if (!wrt.empty() && output.requires_grad()) {
      const variable_list grads = torch::autograd::grad({output}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                                                        /*create_graph=*/false, /*allow_unused=*/true);
      for (std::size_t i = 0; i < grads.size(); ++i) result[where[i]] = grads[i];
    }
    return result;
  }
};

}  // namespace

torch::Tensor run_checkpointed(RecomputableBlock& block, const torch::Tensor& x, const std::vector<torch::Tensor>& context,
                               torch::Device device, torch::ScalarType autocast) {
  std::vector<torch::Tensor> parameters = block.trainable_parameters();
  bool needs_graph = x.requires_grad();
  for (const auto& p : parameters) needs_graph = needs_graph || p.requires_grad();
  if (!torch::GradMode::is_enabled() || !needs_graph) return block.run(x, context);
  return CheckpointedRun::apply(x, at::TensorList(context), at::TensorList(parameters), &block, static_cast<std::int64_t>(device.has_index() ? device.index() : -1),
                                static_cast<std::int64_t>(device.type()), static_cast<std::int64_t>(autocast))[0];
}

}  // namespace xmc
