#include "engine/method/dual_encoder_training.h"

#include "engine/data/dataset.h"
#include "engine/sampler/hard_negative_shortlist.h"
#include "engine/sampler/label_pool.h"
#include "engine/sampler/query_batcher.h"
#include "engine/train/grad_cache.h"

namespace xmc {

DualEncoderTraining::DualEncoderTraining(const TrainConfig& config) : config_(config), loss_kind_(parse_loss_kind(config.loss)) {
  loss_options_.temperature = config.temperature;
  loss_options_.margin = config.margin;
  loss_options_.hardest_k = config.hardest_k;
  loss_options_.topk_k = config.topk_k;
}

torch::Tensor DualEncoderTraining::loss(const torch::Tensor& scores, const torch::Tensor& positive_mask) const {
  return compute_loss(loss_kind_, scores, positive_mask, loss_options_);
}

std::vector<ParameterGroup> DualEncoderTraining::parameter_groups(XmcModel& model) const {
  std::vector<torch::Tensor> decay, no_decay, head;
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (name.rfind("classifier_residuals", 0) == 0) continue;
    if (name.rfind("de_head.", 0) == 0) head.push_back(item.value());
    else if (item.value().dim() <= 1 || name.find("norm") != std::string::npos || name.find("LayerNorm") != std::string::npos)
      no_decay.push_back(item.value());
    else decay.push_back(item.value());
  }
  return {{std::move(decay), config_.lr, config_.weight_decay},
          {std::move(no_decay), config_.lr, 0.0},
          {std::move(head), config_.lr * config_.head_lr_scale, 0.0}};
}

std::vector<std::vector<std::int64_t>> DualEncoderTraining::epoch_batches(XmcModel& model, std::int64_t epoch, TrainContext& context) {
  QueryBatcher& batcher = context.batcher;
  if (batcher.needs_embeddings(epoch)) {
    if (!context.stale_query_embeddings.defined() || epoch == 0) {
      context.phase("encoding training queries");
      context.stale_query_embeddings = model->embed_all(context.train_corpus, context.progress, "encoding training queries for clustering");
    }
    context.phase("clustering queries (C = " + std::to_string(batcher.cluster_size_at(epoch)) + ")");
  }
  auto batches = batcher.epoch_batches(epoch, context.stale_query_embeddings, &context.progress);
  if (config_.negatives == "hard" && (!shortlist_.defined() || epoch - shortlist_epoch_ >= config_.shortlist_refresh_every)) {
    context.phase("refreshing hard-negative shortlists");
    shortlist_ = hard_negative_shortlist(model->embed_all(context.train_corpus, context.progress, "hard-negative index: encoding training queries"),
                                         model->embed_all(context.label_corpus, context.progress, "hard-negative index: encoding labels"),
                                         context.dataset.train_labels, config_.shortlist_size, context.progress);
    shortlist_epoch_ = epoch;
  }
  return batches;
}

StepResult DualEncoderTraining::step(XmcModel& model, std::span<const std::int64_t> batch, TrainContext& context) {
  const LabelPoolOptions pool_options{.hard_per_query = config_.negatives == "hard" ? config_.hard_per_query : 0,
                                      .all_labels = config_.negatives == "all"};
  const LabelPool pool = build_label_pool(context.dataset.train_labels, batch, context.label_pool_rng, pool_options, shortlist_);
  auto loss_of = [this](const torch::Tensor& scores, const torch::Tensor& mask) { return loss(scores, mask); };
  if (config_.negatives == "all") {
    // Every label: gradient caching keeps memory constant in the number of labels.
    auto [value, queries] = grad_cached_backward(model, context.train_corpus, batch, context.label_corpus, pool.positive_mask, loss_of,
                                                 config_.label_chunk);
    return {value, queries};
  }
  const torch::Tensor queries = model->embed(context.train_corpus, batch);
  const torch::Tensor labels = model->embed(context.label_corpus, pool.labels);
  const torch::Tensor batch_loss = loss(torch::matmul(queries, labels.t()), pool.positive_mask.to(context.device));
  const double value = batch_loss.item<double>();
  if (std::isfinite(value)) batch_loss.backward();
  return {value, queries.detach()};
}

void DualEncoderTraining::save_state(torch::serialize::OutputArchive& archive) const {
  archive.write("has_shortlist", torch::tensor({static_cast<std::int64_t>(shortlist_.defined())}, torch::kInt64));
  if (shortlist_.defined()) archive.write("shortlist", shortlist_.to(torch::kCPU));
  archive.write("shortlist_epoch", torch::tensor({shortlist_epoch_}, torch::kInt64));
}

void DualEncoderTraining::load_state(torch::serialize::InputArchive& archive) {
  torch::Tensor has, epoch;
  shortlist_ = torch::Tensor();
  if (archive.try_read("has_shortlist", has) && has.item<std::int64_t>() != 0) archive.read("shortlist", shortlist_);
  if (archive.try_read("shortlist_epoch", epoch)) shortlist_epoch_ = epoch.item<std::int64_t>();
}

}  // namespace xmc
