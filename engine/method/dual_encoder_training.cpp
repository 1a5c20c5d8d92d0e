#include "engine/method/dual_encoder_training.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "engine/core/allocator_tuning.h"
#include "engine/core/error.h"
#include "engine/data/csr_rows.h"
#include "engine/data/dataset.h"
#include "engine/distributed/communicator.h"
#include "engine/optim/optim_options.h"
#include "engine/sampler/hard_negative_shortlist.h"
#include "engine/sampler/label_pool.h"
#include "engine/sampler/query_batcher.h"
#include "engine/text/corpus_rows.h"
#include "engine/method/epoch_query_encodings.h"
#include "engine/method/grad_cache.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"

namespace xmc {

DualEncoderTraining::DualEncoderTraining(const ComponentConfig& config) : config_(config), loss_(&loss_entry(config.get<LossOptions>().kind)),
      loss_options_(config.get<LossOptions>()) {}

torch::Tensor DualEncoderTraining::loss(const torch::Tensor& scores, const torch::Tensor& positive_mask) const {
  return loss_->compute(scores, positive_mask, loss_options_);
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
  // optim.decay all: biases, norms and the head decay too.
  const double kept_from_decay = config_.get<OptimOptions>().decay == "all" ? config_.run.weight_decay : 0.0;
  return {{std::move(decay), config_.run.lr, config_.run.weight_decay},
          {std::move(no_decay), config_.run.lr, kept_from_decay},
          {std::move(head), config_.run.lr * config_.run.head_lr_scale, kept_from_decay}};
}

torch::Tensor DualEncoderTraining::refreshed_shortlist(XmcModel& model, TrainContext& context, const EpochQueryEncodings* encoded) const {
  // The labels are embedded a slice at a time as the search asks: an IVF search in bfloat16 never holds them in
  // float32 (1.3 GB at 1.3M labels x 256), the others gather them.
  const RowEmbeddings labels{.count = context.label_corpus.size(), .embed = [&](std::int64_t begin, std::int64_t end) {
                               return model->embed_all(corpus_rows(context.label_corpus, begin, end));
                             }};
  const std::int64_t num_labels = labels.count;
  const NegativesOptions& negatives = config_.get<NegativesOptions>();
  const ShortlistSearch search = shortlist_search(negatives);
  ShortlistReport report;
  // The training queries (this rank's share of them in data-parallel training) are embedded a slice at a time
  // as the search reaches them (2.3 GB held otherwise at 2.25M queries x 256).
  const auto query_rows = [&](std::int64_t begin, std::int64_t end) {
    return RowEmbeddings{.count = end - begin, .embed = [&model, &context, begin](std::int64_t first, std::int64_t last) {
                       return model->embed_all(corpus_rows(context.train_corpus, begin + first, begin + last));
                     }};
  };
  if (!context.distributed.enabled()) {
    const RowEmbeddings queries = query_rows(0, context.dataset.num_train());
    torch::Tensor shortlist = hard_negative_shortlist(encoded ? encoded->for_refresh(queries.embed) : queries, labels, context.dataset.train_labels,
                                                      negatives.shortlist, context.progress, search, &report);
    if (report.approximate) context.phase(report.describe(num_labels, negatives.shortlist));
    return shortlist;
  }
  // Split over the ranks: each one searches for its slice of the training queries, then the slices are gathered.
  Communicator& communicator = *context.distributed.communicator;
  const std::int64_t rows = context.dataset.num_train();
  const auto [begin, end] = shard_range(rows, communicator.rank(), communicator.world_size());
  const torch::Tensor slice = hard_negative_shortlist(query_rows(begin, end), labels, csr_row_range(context.dataset.train_labels, begin, end),
                                                      negatives.shortlist, context.progress, search, &report);
  if (report.approximate) context.phase(report.describe(num_labels, negatives.shortlist) + " (this rank's slice)");
  return communicator.all_gather_shards(slice, rows, "gathering hard-negative shortlists");
}

std::vector<std::vector<std::int64_t>> DualEncoderTraining::epoch_batches(XmcModel& model, std::int64_t epoch, TrainContext& context) {
  // In data-parallel training the batches are rank 0's (the trainer sends them): the others skip the
  // clustering and its encoding.
  const bool draws_batches = !context.distributed.enabled() || context.distributed.is_main();
  QueryBatcher& batcher = context.batcher;
  const NegativesOptions& negatives = config_.get<NegativesOptions>();
  const bool shortlists = negatives_kind(negatives.kind).draws_from_shortlists;
  const bool hard_yet = shortlists && epoch >= negatives.start_epoch;
  const bool refreshes_shortlist = hard_yet && (!shortlist_.defined() || epoch - shortlist_epoch_ >= negatives.refresh_every);
  std::vector<std::vector<std::int64_t>> batches;
  // Encoded for the clustering in a single process, the queries are kept for this epoch's refresh too (the same
  // model); in data-parallel training each rank refreshes for its own slice of them.
  std::optional<EpochQueryEncodings> encoded;
  if (draws_batches) {
    // The clustering's input is encoded afresh by the current encoder and dropped with this scope: kept from
    // the steps instead, it would be held all through training (1.15 GB at 2.25M queries).
    torch::Tensor embeddings;
    if (batcher.needs_embeddings(epoch)) {
      context.phase("encoding training queries");
      const EpochQueryEncodings::Encoder encode = [&](std::int64_t begin, std::int64_t end) {
        return model->embed_all(corpus_rows(context.train_corpus, begin, end));
      };
      encoded.emplace(context.train_corpus.size(), encode, refreshes_shortlist && !context.distributed.enabled(), context);
      embeddings = encoded->take_for_clustering();
      context.phase(batcher.refresh_phase(epoch));
    }
    batches = batcher.epoch_batches(epoch, embeddings, &context.progress);
  }
  if (shortlists && !hard_yet)
    context.phase("in-batch negatives alone until epoch " + std::to_string(negatives.start_epoch + 1) + " (hard.start_epoch " + std::to_string(negatives.start_epoch) + ")");
  else if (refreshes_shortlist) {
    // The clustering's embeddings and temporaries go back to the system before the refresh allocates its own (as
    // UniDEC's refresh does).
    return_freed_memory();
    context.phase("refreshing hard-negative shortlists");
    shortlist_ = refreshed_shortlist(model, context, encoded ? &*encoded : nullptr);
    shortlist_epoch_ = epoch;
  }
  return batches;
}

/// A batch's label pool and the encoder inputs of the queries and pool labels this process encodes (all of
/// them in one process, its shares in a data-parallel job; none when every label is scored in chunks).
struct DualEncoderTraining::Prepared final : PreparedRows {
  LabelPool pool;
  std::shared_ptr<const EncoderInput> queries;
  std::shared_ptr<const EncoderInput> labels;
  std::shared_ptr<const EncoderInput> joined;  // queries then labels in one pass, when the encoder can
};

std::shared_ptr<PreparedBatch> DualEncoderTraining::prepare(const XmcModel& model, std::span<const std::int64_t> batch,
                                                            TrainContext& context) const {
  const NegativesKind& negatives = negatives_kind(config_.get<NegativesOptions>().kind);
  const LabelPoolOptions pool_options{.hard_per_query = negatives.draws_from_shortlists ? config_.get<NegativesOptions>().hard_per_query : 0,
                                      .all_labels = negatives.scores_every_label};
  auto prepared = std::make_shared<Prepared>();
  prepared->batch.assign(batch.begin(), batch.end());
  prepared->pool = build_label_pool(context.dataset.train_labels, batch, context.label_pool_rng, pool_options, shortlist_);
  if (negatives.scores_every_label) return prepared;
  if (context.distributed.enabled()) {
    const Communicator& communicator = *context.distributed.communicator;
    prepared->queries = model->prepare_input(context.train_corpus, own_shard(batch, communicator));
    prepared->labels = model->prepare_input(context.label_corpus, own_shard(prepared->pool.labels, communicator));
  } else {
    prepared->queries = model->prepare_input(context.train_corpus, batch);
    prepared->labels = model->prepare_input(context.label_corpus, prepared->pool.labels);
    prepared->joined = model->join_inputs(*prepared->queries, *prepared->labels);
  }
  return prepared;
}

StepResult DualEncoderTraining::step(XmcModel& model, std::span<const std::int64_t> batch, const PreparedBatch* prepared_batch,
                                     TrainContext& context) {
  std::shared_ptr<PreparedBatch> prepared_here;
  const auto& prepared =
      prepared_for<Prepared>(batch, prepared_batch, prepared_here, [&] { return prepare(model, batch, context); }, "training step");
  const LabelPool& pool = prepared.pool;
  if (context.distributed.enabled()) return distributed_step(model, batch, prepared, context);
  auto loss_of = [this](const torch::Tensor& scores, const torch::Tensor& mask) { return loss(scores, mask); };
  if (negatives_kind(config_.get<NegativesOptions>().kind).scores_every_label) {
    // Every label: gradient caching keeps memory constant in the number of labels.
    return {grad_cached_backward(model, context.train_corpus, batch, context.label_corpus, pool.positive_mask, loss_of,
                                 config_.get<NegativesOptions>().label_chunk)
                .first};
  }
  torch::Tensor queries, labels;
  if (prepared.joined) {
    const torch::Tensor both = model->embed_input(*prepared.joined);
    const auto query_count = static_cast<std::int64_t>(batch.size());
    queries = both.narrow(0, 0, query_count);
    labels = both.narrow(0, query_count, both.size(0) - query_count);
  } else {
    queries = model->embed_input(*prepared.queries);
    labels = model->embed_input(*prepared.labels);
  }
  const torch::Tensor batch_loss = loss(torch::matmul(queries, labels.t()), pool.positive_mask.to(context.device));
  const double value = batch_loss.item<double>();
  if (std::isfinite(value)) batch_loss.backward();
  return {value};
}

ShardedLoss DualEncoderTraining::sharded_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& whole_mask,
                                              std::int64_t label_begin) const {
  const torch::Tensor positive_mask = whole_mask.narrow(1, label_begin, scores.size(1));
  if (loss_->sharded) return loss_->sharded(communicator, scores, positive_mask, loss_options_);
  // Other losses need whole rows: gather the columns (with gradient); every rank computes the whole loss.
  const torch::Tensor whole = all_gather_rows_with_grad(communicator, scores.t().contiguous(), whole_mask.size(1)).t();
  const torch::Tensor value = loss(whole, whole_mask);
  return {value / communicator.world_size(), value.item<double>()};
}

StepResult DualEncoderTraining::distributed_step(XmcModel& model, std::span<const std::int64_t> batch, const Prepared& prepared,
                                                 TrainContext& context) {
  Communicator& communicator = *context.distributed.communicator;
  const LabelPool& pool = prepared.pool;
  const torch::Tensor mask = pool.positive_mask.to(context.device);
  if (negatives_kind(config_.get<NegativesOptions>().kind).scores_every_label) {
    auto loss_of = [&](const torch::Tensor& scores, std::int64_t begin, std::int64_t /*end*/) {
      return sharded_loss(communicator, scores, mask, begin);
    };
    return {sharded_grad_cached_backward(model, context.train_corpus, batch, context.label_corpus, loss_of,
                                         config_.get<NegativesOptions>().label_chunk, communicator)
                .first};
  }
  // Each rank encodes a contiguous share of the queries and of the pool's labels; the gathers put the
  // whole batch and pool on every rank, and send each rank the gradient of its share in backward.
  const torch::Tensor queries =
      all_gather_rows_with_grad(communicator, model->embed_input(*prepared.queries), static_cast<std::int64_t>(batch.size()));
  const torch::Tensor labels =
      all_gather_rows_with_grad(communicator, model->embed_input(*prepared.labels), static_cast<std::int64_t>(pool.labels.size()));
  const torch::Tensor batch_loss = loss(torch::matmul(queries, labels.t()), mask);
  const double value = batch_loss.item<double>();
  // Every rank holds the whole loss: each contributes 1/world of it, and the gathers sum the contributions.
  if (std::isfinite(value)) (batch_loss / communicator.world_size()).backward();
  return {value};
}

void DualEncoderTraining::save_state(torch::serialize::OutputArchive& archive) const {
  archive.write("has_shortlist", torch::tensor({static_cast<std::int64_t>(shortlist_.defined())}, torch::kInt64));
  if (shortlist_.defined()) archive.write("shortlist", shortlist_.to(torch::kCPU));
  archive.write("shortlist_epoch", torch::tensor({shortlist_epoch_}, torch::kInt64));
}

void DualEncoderTraining::load_state(torch::serialize::InputArchive& archive) {
  torch::Tensor has, epoch;
  shortlist_ = torch::Tensor();
  if (archive.try_read("has_shortlist", has) && has.item<std::int64_t>() != 0) {
    archive.read("shortlist", shortlist_);
    if (shortlist_.dim() != 2 || (shortlist_.scalar_type() != torch::kInt32 && shortlist_.scalar_type() != torch::kInt64))
      throw Error("checkpoint: the hard-negative shortlist is not a matrix of label ids");
    // Checkpoints before int32 shortlists hold int64 ids: kept as int32, half the memory for the rest of the run.
    if (shortlist_.scalar_type() == torch::kInt64) {
      if (shortlist_.numel() > 0 && shortlist_.max().item<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
        throw Error("checkpoint: the hard-negative shortlist holds a label id beyond int32");
      shortlist_ = shortlist_.to(torch::kInt32).contiguous();
    }
  }
  if (archive.try_read("shortlist_epoch", epoch)) shortlist_epoch_ = epoch.item<std::int64_t>();
}

}  // namespace xmc
