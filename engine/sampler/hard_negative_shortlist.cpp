#include "engine/sampler/hard_negative_shortlist.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/csr_rows.h"
#include "engine/index/clustered_search.h"
#include "engine/index/exact_search.h"
#include "engine/index/hnsw_index.h"

namespace xmc {
namespace {

/// Rows searched at once: a slice's results (scores and ids, 12 bytes a result) take the memory budget's share
/// (27,962 rows of 100 at 512 MB), and only the ids are kept, in the [N x size] output.
std::int64_t slice_rows(std::int64_t size) {
  return std::max<std::int64_t>(64, memory_budget_part(memory_share::kShortlistSlice) / (12 * std::max<std::int64_t>(size, 1)));
}

/// Fills `out` ([N x size] int64, -1 beyond what a query has) slice by slice with `search(begin, end)`, the ids of
/// rows [begin, end) ([end - begin x k'], k' <= size).
template <typename Search>
torch::Tensor by_slices(std::int64_t n, std::int64_t size, Progress* progress, const Search& search) {
  torch::Tensor out = torch::full({n, size}, -1, torch::kInt64);
  const std::int64_t slice = slice_rows(size);
  for (std::int64_t begin = 0; begin < n; begin += slice) {
    const std::int64_t end = std::min(n, begin + slice);
    if (progress != nullptr && progress->cancelled()) throw Cancelled();
    const torch::Tensor ids = search(begin, end).to(torch::kCPU);
    out.narrow(0, begin, end - begin).narrow(1, 0, ids.size(1)).copy_(ids);
    if (progress != nullptr) progress->update(end);
  }
  return out;
}

torch::Tensor exact_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                              Progress* progress) {
  // exact_top_k leaves each query's own positives out.
  return by_slices(queries.size(0), size, progress, [&](std::int64_t begin, std::int64_t end) {
    ExactSearchOptions options;
    options.exclude = ExcludeLists::from_csr(csr_row_range(positives, begin, end));
    return exact_top_k(queries.narrow(0, begin, end - begin), labels, std::min(size, labels.size(0)), options).indices;
  });
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
  const std::int64_t query_chunk = slice_rows(k);
  std::vector<float> scores;
  std::vector<std::int64_t> found;
  for (std::int64_t first = 0; first < n; first += query_chunk) {
    const std::int64_t count = std::min(query_chunk, n - first);
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

/// The clustered (IVF) search's best `size` labels of each query that are not its positives.
torch::Tensor ivf_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                            std::int64_t probe, Progress& progress, ShortlistReport& report) {
  const torch::Tensor rows = queries.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  progress.start("hard-negative shortlists (IVF top-" + std::to_string(size) + ")", rows.size(0));
  const KeyClusters clusters(labels.detach().to(torch::kCPU, torch::kFloat32).contiguous());
  double scanned = 0;
  torch::Tensor ids = by_slices(rows.size(0), size, &progress, [&](std::int64_t begin, std::int64_t end) {
    ClusteredSearchOptions options;
    options.probe = probe;
    options.exclude = ExcludeLists::from_csr(csr_row_range(positives, begin, end));
    ClusteredSearchStats stats;
    torch::Tensor found = clusters.search(rows.narrow(0, begin, end - begin), std::min(size, labels.size(0)), options, &stats).indices;
    scanned += stats.scanned_fraction * static_cast<double>(end - begin);
    report.probed = stats.probed;
    return found;
  });
  progress.finish();
  report.clusters = clusters.clusters();
  report.scanned_fraction = rows.size(0) > 0 ? scanned / static_cast<double>(rows.size(0)) : 0.0;
  return ids;
}

/// Over `sample` evenly spread queries, the mean share of the exact shortlist's labels that the approximate one
/// holds (recall@S), and the mean share of the exact top-10 in the approximate top-10 (recall@10).
void sampled_recall(const torch::Tensor& approximate, const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                    std::int64_t size, std::int64_t sample, ShortlistReport& report) {
  const std::int64_t n = queries.size(0);
  sample = std::min(sample, n);
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < sample; ++i) rows.push_back(i * n / sample);
  report.sampled = static_cast<std::int64_t>(rows.size());
  report.recall = report.recall_at_10 = 1.0;
  if (rows.empty()) return;
  const torch::Tensor picked = torch::tensor(rows, torch::kInt64);
  const torch::Tensor exact = exact_shortlist(queries.index_select(0, picked.to(queries.device())), labels, csr_rows(positives, rows), size, nullptr);
  const auto* want = exact.data_ptr<std::int64_t>();
  const auto* got = approximate.data_ptr<std::int64_t>();
  // Share of want[0, depth) (ignoring -1) found in got[0, depth).
  const auto share = [&](std::size_t i, std::int64_t depth, double& sum, std::int64_t& counted) {
    std::vector<std::int64_t> mine(got + rows[i] * size, got + rows[i] * size + depth);
    std::sort(mine.begin(), mine.end());
    std::int64_t hits = 0, total = 0;
    for (std::int64_t j = 0; j < depth; ++j) {
      const std::int64_t label = want[static_cast<std::int64_t>(i) * size + j];
      if (label < 0) continue;
      ++total;
      hits += std::binary_search(mine.begin(), mine.end(), label) ? 1 : 0;
    }
    if (total == 0) return;
    sum += static_cast<double>(hits) / static_cast<double>(total);
    ++counted;
  };
  double sum = 0, sum_10 = 0;
  std::int64_t counted = 0, counted_10 = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    share(i, size, sum, counted);
    share(i, std::min<std::int64_t>(10, size), sum_10, counted_10);
  }
  if (counted > 0) report.recall = sum / static_cast<double>(counted);
  if (counted_10 > 0) report.recall_at_10 = sum_10 / static_cast<double>(counted_10);
}

}  // namespace

std::string ShortlistReport::describe(std::int64_t labels, std::int64_t size) const {
  if (!approximate) return "hard-negative shortlists: exact top-" + std::to_string(size) + " of " + std::to_string(labels) + " labels";
  char text[160];
  std::string searched = "HNSW over " + std::to_string(labels) + " labels";
  if (how == "ivf") {
    std::snprintf(text, sizeof text, " (%lld clusters, %lld searched: %.1f %% of the labels a query)", static_cast<long long>(clusters),
                  static_cast<long long>(probed), 100.0 * scanned_fraction);
    searched = "IVF over " + std::to_string(labels) + " labels" + text;
  }
  std::snprintf(text, sizeof text, "%.3f (recall@10 %.3f)", recall, recall_at_10);
  return "hard-negative shortlists: " + searched + ", recall@" + std::to_string(size) + " " + text + " against exact on " +
         std::to_string(sampled) + " sampled queries";
}

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress, const ShortlistSearch& search, ShortlistReport* report) {
  if (search.kind != "exact" && search.kind != "ivf" && search.kind != "hnsw" && search.kind != "auto")
    throw ConfigError("hard.search must be exact, ivf, hnsw or auto, got \"" + search.kind + "\"");
  if (search.probe < 1) throw ConfigError("hard.probe must be at least 1, got " + std::to_string(search.probe));
  if (positives.rows != queries.size(0))
    throw Error("hard-negative shortlists: " + std::to_string(queries.size(0)) + " queries but " + std::to_string(positives.rows) + " rows of positives");
  const bool approximate = search.kind == "hnsw" || search.kind == "ivf" || (search.kind == "auto" && labels.size(0) >= search.ann_above);
  ShortlistReport own;
  own.how = approximate ? (search.kind == "hnsw" ? "hnsw" : "ivf") : "exact";
  if (!approximate) {
    progress.start("hard-negative shortlists (exact top-" + std::to_string(size) + ")", queries.size(0));
    torch::Tensor ids = exact_shortlist(queries, labels, positives, size, &progress);
    progress.finish();
    if (report != nullptr) *report = own;
    return ids;
  }
  torch::Tensor ids = own.how == "hnsw" ? hnsw_shortlist(queries, labels, positives, size, progress)
                                         : ivf_shortlist(queries, labels, positives, size, search.probe, progress, own);
  own.approximate = true;
  sampled_recall(ids, queries, labels, positives, size, search.recall_sample, own);
  if (report != nullptr) *report = own;
  return ids;
}

}  // namespace xmc
