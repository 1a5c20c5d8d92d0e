#include "engine/model/heads.h"

#include "engine/model/row_parallel_linear.h"
#include "engine/model/unit_rows.h"

namespace xmc {

DualEncoderHeadImpl::DualEncoderHeadImpl(const HeadOptions& options)
    : linear_(register_module("linear", torch::nn::Linear(options.in_dim, options.out_dim))),
      dropout_(register_module("dropout", Dropout(options.dropout))) {}

torch::Tensor DualEncoderHeadImpl::forward(const torch::Tensor& x) {
  return unit_rows(torch::tanh(dropout_(row_parallel_linear(x, linear_->weight, linear_->bias))), 1e-8);
}

ClassifierHeadImpl::ClassifierHeadImpl(const HeadOptions& options)
    : linear_(register_module("linear", torch::nn::Linear(options.in_dim, options.out_dim))),
      dropout_(register_module("dropout", Dropout(options.dropout))) {}

torch::Tensor ClassifierHeadImpl::forward(const torch::Tensor& x) { return dropout_(row_parallel_linear(x, linear_->weight, linear_->bias)); }

}  // namespace xmc
