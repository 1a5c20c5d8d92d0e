#include "engine/model/image_fusion.h"

#include "engine/config/component_config.h"
#include "engine/core/error.h"
#include "engine/data/image_bank.h"
#include "engine/model/encoder.h"
#include "engine/model/image_options.h"

namespace xmc {

ImageFusionOptions image_fusion_for(const ComponentConfig& config) {
  ImageFusionOptions out;
  const ImageOptions* found = config.find<ImageOptions>();  // images fuse into bert and decoder encoders only
  if (found == nullptr) {
    out.max_images = 0;
    return out;
  }
  const ImageOptions& images = *found;
  out.kind = images.fusion == "late" ? ImageFusionKind::late : ImageFusionKind::early;
  out.image_dim = images.max > 0 ? dataset_image_dim(config.run.dataset) : 0;
  out.max_images = out.image_dim > 0 ? images.max : 0;
  return out;
}

std::string describe_image_fusion(const ImageFusionOptions& options) {
  if (options.max_images <= 0) return "";
  return ", fusing up to " + std::to_string(options.max_images) + " image" + (options.max_images == 1 ? "" : "s") + " (m = " +
         std::to_string(options.image_dim) + ") " + (options.kind == ImageFusionKind::early ? "early" : "late");
}

BatchImages gather_batch_images(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows, std::int64_t max_images,
                                std::int64_t image_dim) {
  BatchImages out;
  out.per_row.assign(rows.size(), 0);
  if (!corpus.images || max_images <= 0) return out;
  const ImageBank& bank = *corpus.images;
  if (bank.dim() != image_dim)
    throw ConfigError("image fusion: the bank " + bank.source().string() + " holds embeddings of " + std::to_string(bank.dim()) +
                      " numbers, but the encoder's image projection takes " + std::to_string(image_dim));
  std::vector<std::pair<std::int64_t, std::int64_t>> taken;  // (batch row, slot)
  std::vector<std::int64_t> bank_rows;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const std::vector<std::int64_t> slots = bank.image_slots(rows[b], max_images);
    out.per_row[b] = static_cast<std::int64_t>(slots.size());
    for (const std::int64_t s : slots) {
      taken.emplace_back(static_cast<std::int64_t>(b), s);
      bank_rows.push_back(rows[b]);
    }
  }
  const auto n = static_cast<std::int64_t>(taken.size());
  out.features = torch::empty({n, image_dim}, torch::kFloat);
  out.rows = torch::empty({n}, torch::kLong);
  float* features = out.features.data_ptr<float>();
  std::int64_t* batch_rows = out.rows.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    bank.copy_image(bank_rows[static_cast<std::size_t>(i)], taken[static_cast<std::size_t>(i)].second, features + i * image_dim);
    batch_rows[i] = taken[static_cast<std::size_t>(i)].first;
  }
  return out;
}

void stage_batch_images(BatchImages& images, const torch::Tensor& positions, const torch::Device& device) {
  if (images.empty()) return;
  images.features = staged_to(images.features, device);
  images.rows = staged_to(images.rows, device);
  images.positions = staged_to(positions, device);
}

ImageProjectionImpl::ImageProjectionImpl(std::int64_t image_dim, std::int64_t hidden, torch::Device device) {
  linear_ = register_module("linear", torch::nn::Linear(image_dim, hidden));
  torch::NoGradGuard no_grad;
  linear_->weight.normal_(0.0, 0.02);
  linear_->bias.zero_();
  to(device);
}

torch::Tensor place_image_tokens(const torch::Tensor& embeddings, const BatchImages& images, ImageProjectionImpl& projection) {
  if (images.empty()) return embeddings;
  const torch::Tensor tokens = projection.forward(images.features).to(embeddings.scalar_type());
  return embeddings.index_put({images.rows, images.positions}, tokens);
}

torch::Tensor add_pooled_images(const torch::Tensor& pooled, const BatchImages& images, ImageProjectionImpl& projection) {
  if (images.empty()) return pooled;
  const torch::Tensor projected = projection.forward(images.features).to(pooled.scalar_type());
  const torch::Tensor sums = torch::zeros_like(pooled).index_add(0, images.rows, projected);
  const torch::Tensor counts =
      torch::zeros({pooled.size(0)}, pooled.options()).index_add(0, images.rows, torch::ones({images.rows.size(0)}, pooled.options()));
  return pooled + sums / counts.clamp_min(1.0).unsqueeze(1);
}

}  // namespace xmc
