#include "engine/model/cpu_thread_policy.h"

#include "engine/core/blas_threads.h"
#include "engine/model/encoder.h"

namespace xmc {
namespace {

bool has_large_products(torch::nn::Module& model) {
  if (const auto* encoder = dynamic_cast<const EncoderImpl*>(&model)) return encoder->large_products() && encoder->device().is_cpu();
  for (const auto& child : model.modules(/*include_self=*/false))
    if (const auto* encoder = dynamic_cast<const EncoderImpl*>(child.get())) return encoder->large_products() && encoder->device().is_cpu();
  return false;
}

}  // namespace

void use_cpu_threads(torch::nn::Module& model, int threads) {
  if (has_large_products(model)) {
    at::set_num_threads(1);
    set_blas_threads(threads);
  } else {
    at::set_num_threads(threads);
    run_blas_on_calling_thread();
  }
}

}  // namespace xmc
