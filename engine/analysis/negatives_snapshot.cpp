#include "engine/analysis/negatives_snapshot.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/index/exact_search.h"
#include "engine/sampler/query_batcher.h"

namespace xmc {
namespace {

constexpr std::size_t kMaxTextBytes = 200;

/// At most kMaxTextBytes bytes, cut before a UTF-8 continuation byte, with an ellipsis when cut.
std::string short_text(const std::string& text) {
  if (text.size() <= kMaxTextBytes) return text;
  std::size_t end = kMaxTextBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "\xE2\x80\xA6";
}

/// m distinct entries of `items` chosen uniformly (partial Fisher-Yates), in their original order.
std::vector<std::int64_t> uniform_subset(const std::vector<std::int64_t>& items, std::int64_t m, std::mt19937_64& rng) {
  const auto n = static_cast<std::int64_t>(items.size());
  if (m >= n) return items;
  std::vector<std::int64_t> slots(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) slots[static_cast<std::size_t>(i)] = i;
  for (std::int64_t k = 0; k < m; ++k)
    std::swap(slots[static_cast<std::size_t>(k)], slots[static_cast<std::size_t>(k + uniform_index(rng, n - k))]);
  slots.resize(static_cast<std::size_t>(m));
  std::sort(slots.begin(), slots.end());
  std::vector<std::int64_t> out;
  out.reserve(slots.size());
  for (auto s : slots) out.push_back(items[static_cast<std::size_t>(s)]);
  return out;
}

}  // namespace

QueryBatchPool in_batch_negatives(const CsrMatrix& train_labels, const std::vector<std::vector<std::int64_t>>& batches,
                                  std::int64_t query) {
  QueryBatchPool pool;
  for (const auto& batch : batches) {
    if (std::find(batch.begin(), batch.end(), query) == batch.end()) continue;
    pool.batch_queries = static_cast<std::int64_t>(batch.size());
    const auto own = train_labels.row_indices(query);
    std::unordered_set<std::int64_t> seen(own.begin(), own.end());
    for (std::int64_t other : batch) {
      if (other == query) continue;
      for (std::int32_t label : train_labels.row_indices(other))
        if (seen.insert(label).second) pool.labels.push_back(label);
    }
    break;
  }
  return pool;
}

std::string negatives_snapshot_json(const NegativesSnapshotInput& input, const NegativesSnapshotOptions& options,
                                    const std::function<void(const std::string& json)>& forming) {
  const torch::Tensor& labels = input.label_embeddings;
  if (!labels.defined() || labels.dim() != 2) throw Error("negatives snapshot: label embeddings must be an [L, d] tensor");
  const std::int64_t num_labels = labels.size(0);
  const torch::Tensor query = input.query_embedding.defined() ? input.query_embedding.detach().reshape({1, -1}) : torch::Tensor();
  if (!query.defined() || query.size(1) != labels.size(1))
    throw Error("negatives snapshot: the query embedding must have the labels' dimension " + std::to_string(labels.size(1)));
  if (input.label_text != nullptr && static_cast<std::int64_t>(input.label_text->size()) != num_labels)
    throw Error("negatives snapshot: " + std::to_string(input.label_text->size()) + " label texts for " + std::to_string(num_labels) + " labels");
  if (options.hard < 0 || options.random < 0 || options.max_in_batch < 0 || options.max_positives < 0 ||
      1 + options.max_positives + options.hard + options.max_in_batch + options.random > NegativesSnapshotOptions::kMaxPoints)
    throw Error("negatives snapshot: 1 + max_positives + hard + max_in_batch + random must be in [1, " +
                std::to_string(NegativesSnapshotOptions::kMaxPoints) + "] (exact t-SNE)");
  auto check = [&](std::int64_t label, const char* what) {
    if (label < 0 || label >= num_labels)
      throw Error(std::string("negatives snapshot: ") + what + " label " + std::to_string(label) + " is outside [0, " + std::to_string(num_labels) + ")");
  };

  // Groups, in order of precedence; `used` keeps every label in one group only.
  std::unordered_set<std::int64_t> used;
  std::vector<std::int64_t> positives;
  {
    std::unordered_set<std::int64_t> all;
    for (auto l : input.positives) {
      check(l, "positive");
      if (all.insert(l).second) positives.push_back(l);
    }
    std::sort(positives.begin(), positives.end());
    if (static_cast<std::int64_t>(positives.size()) > options.max_positives) positives.resize(static_cast<std::size_t>(options.max_positives));
    used = std::move(all);  // even positives left out by the cap never show up as negatives
  }
  std::unordered_set<std::int64_t> in_batch_set;
  for (auto l : input.in_batch_pool) {
    check(l, "in-batch");
    if (!used.contains(l)) in_batch_set.insert(l);
  }

  std::vector<std::int64_t> ann_hard, missed_hard;
  const std::int64_t hard = std::min(options.hard, num_labels);
  if (hard > 0) {
    ExactSearchOptions search;
    const std::vector<std::int64_t> excluded(used.begin(), used.end());
    search.exclude.indptr = torch::tensor(std::vector<std::int64_t>{0, static_cast<std::int64_t>(excluded.size())}, torch::kInt64).to(labels.device());
    search.exclude.indices = torch::tensor(excluded, torch::kInt64).to(labels.device());
    const TopK top = exact_top_k(query.to(labels.device(), torch::kFloat32), labels.to(torch::kFloat32), hard, search);
    const torch::Tensor ids = top.indices.to(torch::kCPU).contiguous();
    const auto* id = ids.data_ptr<std::int64_t>();
    for (std::int64_t k = 0; k < ids.size(1); ++k) {
      if (id[k] < 0) continue;
      (in_batch_set.contains(id[k]) ? ann_hard : missed_hard).push_back(id[k]);
      used.insert(id[k]);
    }
  }

  std::mt19937_64 rng(options.seed);
  std::vector<std::int64_t> in_batch;
  {
    std::unordered_set<std::int64_t> taken;
    for (auto l : input.in_batch_pool)
      if (!used.contains(l) && taken.insert(l).second) in_batch.push_back(l);
    used.insert(in_batch.begin(), in_batch.end());  // also those the cap leaves out: they are not random
    in_batch = uniform_subset(in_batch, options.max_in_batch, rng);
  }
  // Random labels that are neither positives nor hard or in-batch negatives: rejection sampling while
  // they are plentiful, else a uniform subset of what is left.
  std::vector<std::int64_t> random;
  const std::int64_t free_labels = num_labels - static_cast<std::int64_t>(used.size());
  if (free_labels <= 4 * options.random) {
    std::vector<std::int64_t> left;
    for (std::int64_t l = 0; l < num_labels; ++l)
      if (!used.contains(l)) left.push_back(l);
    random = uniform_subset(left, options.random, rng);
  } else {
    while (static_cast<std::int64_t>(random.size()) < options.random) {
      const std::int64_t l = uniform_index(rng, num_labels);
      if (used.insert(l).second) random.push_back(l);
    }
  }

  // t-SNE of [query; labels of every group].
  const std::vector<std::pair<const char*, const std::vector<std::int64_t>*>> groups{
      {"positive", &positives}, {"ann_hard", &ann_hard}, {"missed_hard", &missed_hard}, {"in_batch", &in_batch}, {"random", &random}};
  std::vector<std::int64_t> ids;
  for (const auto& [name, members] : groups) ids.insert(ids.end(), members->begin(), members->end());
  // Built key by key: large nested initializer lists of nlohmann::json make GCC 12 at -O3 use >20 GB.
  using json = nlohmann::json;
  const auto snapshot_of = [&](const torch::Tensor& map) {
    const torch::Tensor contiguous = map.to(torch::kFloat32).contiguous();
    const auto* xy = contiguous.data_ptr<float>();
    json points = json::array();
    json counts = json::object();
    auto point = [&](std::size_t row, const char* group, std::int64_t label, const std::string& text) {
      json p = json::object();
      p["x"] = xy[2 * row];
      p["y"] = xy[2 * row + 1];
      p["group"] = group;
      p["label"] = label;
      p["text"] = short_text(text);
      points.push_back(std::move(p));
    };
    point(0, "query", -1, input.query_text);
    counts["query"] = 1;
    std::size_t row = 1;
    for (const auto& [name, members] : groups) {
      for (auto l : *members) {
        point(row++, name, l, input.label_text != nullptr ? (*input.label_text)[static_cast<std::size_t>(l)] : "label " + std::to_string(l));
      }
      counts[name] = members->size();
    }
    json tsne = json::object();
    tsne["perplexity"] = options.tsne.perplexity;
    tsne["iterations"] = options.tsne.iterations;
    tsne["seed"] = options.tsne.seed;
    json out = json::object();
    out["query"] = input.query;
    out["query_text"] = input.query_text;
    out["epoch"] = input.epoch;
    out["step"] = input.step;
    out["batch_queries"] = input.batch_queries;
    out["num_labels"] = num_labels;
    out["counts"] = std::move(counts);
    out["tsne"] = std::move(tsne);
    out["points"] = std::move(points);
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  torch::Tensor map;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor rows = torch::tensor(ids, torch::kInt64).to(labels.device());
    const torch::Tensor points = torch::cat({query.to(labels.device(), torch::kFloat32), labels.index_select(0, rows).to(torch::kFloat32)});
    TsneOptions tsne = options.tsne;
    if (forming) tsne.on_layout = [&](const torch::Tensor& so_far, std::int64_t) { forming(snapshot_of(so_far)); };
    map = tsne_2d(points, tsne).contiguous();
  }
  return snapshot_of(map);
}

}  // namespace xmc
