#include "engine/sampler/hard_negative_shortlist.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/data/csr_rows.h"
#include "engine/index/exact_search.h"
#include "engine/index/hnsw_index.h"

namespace xmc {
namespace {

torch::Tensor exact_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                              Progress* progress) {
  // exact_top_k chunks the queries itself and leaves each query's own positives out.
  ExactSearchOptions options;
  options.exclude = ExcludeLists::from_csr(positives);
  options.progress = progress;
  torch::Tensor ids = exact_top_k(queries, labels, std::min(size, labels.size(0)), options).indices.to(torch::kCPU);
  if (ids.size(1) < size)  // fewer labels than the shortlist size: pad to [N x size]
    ids = torch::cat({ids, torch::full({ids.size(0), size - ids.size(1)}, -1, torch::kInt64)}, 1);
  return ids.contiguous();
}

/// The HNSW graph's best `size` labels of each query that are not its positives: it is asked for `size` plus the
/// most positives any query has, so that removing them leaves `size` (fewer only where the graph found fewer).
torch::Tensor hnsw_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                             Progress& progress) {
  const torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  const torch::Tensor rows = queries.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  const std::int64_t n = rows.size(0), num_labels = keys.size(0), dim = keys.size(1);
  std::int64_t most_positives = 0;
  for (std::int64_t r = 0; r < positives.rows; ++r) most_positives = std::max(most_positives, positives.row_size(r));
  const std::int64_t k = std::min(num_labels, size + most_positives);
  HnswIndex index(dim, {.M = 16, .ef_construction = 100, .ef_search = std::max<std::int64_t>(2 * k, 64), .num_threads = at::get_num_threads()});
  progress.start("hard-negative shortlists: HNSW graph over " + std::to_string(num_labels) + " labels", num_labels);
  constexpr std::int64_t kAddChunk = 65536;
  for (std::int64_t first = 0; first < num_labels; first += kAddChunk) {
    const std::int64_t count = std::min(kAddChunk, num_labels - first);
    if (progress.cancelled()) throw Cancelled();
    index.add(count, keys.data_ptr<float>() + first * dim);
    progress.update(first + count);
  }
  progress.finish();
  progress.start("hard-negative shortlists (HNSW top-" + std::to_string(size) + ")", n);
  torch::Tensor out = torch::full({n, size}, -1, torch::kInt64);
  auto* shortlist = out.data_ptr<std::int64_t>();
  constexpr std::int64_t kQueryChunk = 16384;
  std::vector<float> scores;
  std::vector<std::int64_t> found;
  for (std::int64_t first = 0; first < n; first += kQueryChunk) {
    const std::int64_t count = std::min(kQueryChunk, n - first);
    if (progress.cancelled()) throw Cancelled();
    scores.resize(static_cast<std::size_t>(count * k));
    found.resize(static_cast<std::size_t>(count * k));
    index.search(count, rows.data_ptr<float>() + first * dim, k, scores.data(), found.data());
    for (std::int64_t i = 0; i < count; ++i) {
      const auto own = positives.row_indices(first + i);  // ascending
      std::int64_t kept = 0;
      for (std::int64_t j = 0; j < k && kept < size; ++j) {
        const std::int64_t label = found[static_cast<std::size_t>(i * k + j)];
        if (label < 0 || std::binary_search(own.begin(), own.end(), static_cast<std::int32_t>(label))) continue;
        shortlist[(first + i) * size + kept++] = label;
      }
    }
    progress.update(first + count);
  }
  progress.finish();
  return out;
}

/// Mean over `sample` evenly spread queries of how many of the exact shortlist's labels the approximate one has.
double sampled_recall(const torch::Tensor& approximate, const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                      std::int64_t size, std::int64_t sample, std::int64_t& sampled) {
  const std::int64_t n = queries.size(0);
  sample = std::min(sample, n);
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < sample; ++i) rows.push_back(i * n / sample);
  sampled = static_cast<std::int64_t>(rows.size());
  if (rows.empty()) return 1.0;
  const torch::Tensor picked = torch::tensor(rows, torch::kInt64);
  const torch::Tensor exact = exact_shortlist(queries.index_select(0, picked.to(queries.device())), labels, csr_rows(positives, rows), size, nullptr);
  const auto* want = exact.data_ptr<std::int64_t>();
  const auto* got = approximate.data_ptr<std::int64_t>();
  double sum = 0;
  std::int64_t counted = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::int64_t> mine(got + rows[i] * size, got + (rows[i] + 1) * size);
    std::sort(mine.begin(), mine.end());
    std::int64_t hits = 0, total = 0;
    for (std::int64_t j = 0; j < size; ++j) {
      const std::int64_t label = want[static_cast<std::int64_t>(i) * size + j];
      if (label < 0) continue;
      ++total;
      hits += std::binary_search(mine.begin(), mine.end(), label) ? 1 : 0;
    }
    if (total == 0) continue;
    sum += static_cast<double>(hits) / static_cast<double>(total);
    ++counted;
  }
  return counted == 0 ? 1.0 : sum / static_cast<double>(counted);
}

}  // namespace

std::string ShortlistReport::describe(std::int64_t labels, std::int64_t size) const {
  if (!approximate) return "hard-negative shortlists: exact top-" + std::to_string(size) + " of " + std::to_string(labels) + " labels";
  char recall_text[32];
  std::snprintf(recall_text, sizeof recall_text, "%.3f", recall);
  return "hard-negative shortlists: HNSW over " + std::to_string(labels) + " labels, recall@" + std::to_string(size) + " " + recall_text +
         " against exact on " + std::to_string(sampled) + " sampled queries";
}

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress, const ShortlistSearch& search, ShortlistReport* report) {
  if (search.kind != "exact" && search.kind != "hnsw" && search.kind != "auto")
    throw ConfigError("hard.search must be exact, hnsw or auto, got \"" + search.kind + "\"");
  if (positives.rows != queries.size(0))
    throw Error("hard-negative shortlists: " + std::to_string(queries.size(0)) + " queries but " + std::to_string(positives.rows) + " rows of positives");
  const bool approximate = search.kind == "hnsw" || (search.kind == "auto" && labels.size(0) >= search.ann_above);
  ShortlistReport own;
  if (!approximate) {
    progress.start("hard-negative shortlists (exact top-" + std::to_string(size) + ")", queries.size(0));
    torch::Tensor ids = exact_shortlist(queries, labels, positives, size, &progress);
    progress.finish();
    if (report != nullptr) *report = own;
    return ids;
  }
  torch::Tensor ids = hnsw_shortlist(queries, labels, positives, size, progress);
  own.approximate = true;
  own.recall = sampled_recall(ids, queries, labels, positives, size, search.recall_sample, own.sampled);
  if (report != nullptr) *report = own;
  return ids;
}

}  // namespace xmc
