#include "engine/model/cpu_thread_policy.h"

#include "engine/core/blas_threads.h"
#include "engine/model/encoder.h"

namespace xmc {
namespace {

bool has_large_products(torch::nn::Module& model) {
  const EncoderImpl* encoder = find_encoder(model);
  return encoder != nullptr && encoder->large_products() && encoder->device().is_cpu();
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
