#include "engine/model/heads.h"

#include "engine/model/unit_rows.h"

namespace xmc {

DualEncoderHeadImpl::DualEncoderHeadImpl(const HeadOptions& options)
    : linear_(register_module("linear", torch::nn::Linear(options.in_dim, options.out_dim))),
      dropout_(register_module("dropout", Dropout(options.dropout))) {}

torch::Tensor DualEncoderHeadImpl::forward(const torch::Tensor& x) {
  return unit_rows(torch::tanh(dropout_(linear_(x))), 1e-8);
}

ClassifierHeadImpl::ClassifierHeadImpl(const HeadOptions& options)
    : linear_(register_module("linear", torch::nn::Linear(options.in_dim, options.out_dim))),
      dropout_(register_module("dropout", Dropout(options.dropout))) {}

torch::Tensor ClassifierHeadImpl::forward(const torch::Tensor& x) { return dropout_(linear_(x)); }

}  // namespace xmc
