#include "engine/sampler/hard_negative_shortlist.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/csr_rows.h"
#include "engine/index/clustered_search.h"
#include "engine/index/exact_search.h"
#include "engine/index/hnsw_index.h"
#include "engine/index/sampled_queries.h"

namespace xmc {
namespace {

/// Rows embedded and searched at once: a slice's results (scores and ids, 12 bytes a result) take the memory
/// budget's share (27,962 rows of 100 at 512 MB), and only the ids are kept, in the [N x size] output.
std::int64_t slice_rows(std::int64_t size) {
  return std::max<std::int64_t>(64, memory_budget_part(memory_share::kShortlistSlice) / (12 * std::max<std::int64_t>(size, 1)));
}

/// Fills `out` ([N x size] int32, -1 beyond what a query has) slice by slice: each slice of queries is embedded,
/// offered to `sample`, and searched by `search(begin, end, embeddings)`, which returns the ids of rows
/// [begin, end) ([end - begin x k'], k' <= size).
template <typename Search>
torch::Tensor by_slices(const QueryRows& queries, std::int64_t size, std::int64_t slice, Progress* progress, SampledQueries* sample,
                        const Search& search) {
  const std::int64_t n = queries.count;
  torch::Tensor out = torch::full({n, size}, -1, torch::kInt32);
  for (std::int64_t begin = 0; begin < n; begin += slice) {
    const std::int64_t end = std::min(n, begin + slice);
    if (progress != nullptr && progress->cancelled()) throw Cancelled();
    const torch::Tensor embedded = queries.embed(begin, end);
    if (embedded.dim() != 2 || embedded.size(0) != end - begin)
      throw Error("hard-negative shortlists: rows " + std::to_string(begin) + " to " + std::to_string(end) + " embedded as " +
                  std::to_string(embedded.dim() == 2 ? embedded.size(0) : -1) + " rows");
    if (sample != nullptr) sample->take(begin, embedded);
    const torch::Tensor ids = search(begin, end, embedded).to(torch::kCPU);
    out.narrow(0, begin, end - begin).narrow(1, 0, ids.size(1)).copy_(ids);
    if (progress != nullptr) progress->update(end);
  }
  return out;
}

/// Exact top-`size` of `queries` ([n x d]) whose positives are rows [begin, end) of `positives`, leaving them out.
torch::Tensor exact_slice(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t begin,
                          std::int64_t end, std::int64_t size) {
  ExactSearchOptions options;
  options.exclude = ExcludeLists::from_csr(csr_row_range(positives, begin, end));
  return exact_top_k(queries, labels, std::min(size, labels.size(0)), options).indices;
}

torch::Tensor exact_shortlist(const QueryRows& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                              Progress* progress) {
  return by_slices(queries, size, slice_rows(size), progress, nullptr, [&](std::int64_t begin, std::int64_t end, const torch::Tensor& embedded) {
    return exact_slice(embedded, labels, positives, begin, end, size);
  });
}

/// The HNSW graph's best `size` labels of each query that are not its positives: it is asked for `size` plus the
/// most positives any query has, so that removing them leaves `size` (fewer only where the graph found fewer).
torch::Tensor hnsw_shortlist(const QueryRows& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                             Progress& progress, SampledQueries& sample) {
  const torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  const std::int64_t num_labels = keys.size(0), dim = keys.size(1);
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
  progress.start("hard-negative shortlists (HNSW top-" + std::to_string(size) + ")", queries.count);
  std::vector<float> scores;
  std::vector<std::int64_t> found;
  torch::Tensor out = by_slices(queries, size, slice_rows(k), &progress, &sample, [&](std::int64_t first, std::int64_t end, const torch::Tensor& embedded) {
    const torch::Tensor rows = embedded.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    const std::int64_t count = end - first;
    scores.resize(static_cast<std::size_t>(count * k));
    found.resize(static_cast<std::size_t>(count * k));
    index.search(count, rows.data_ptr<float>(), k, scores.data(), found.data());
    torch::Tensor ids = torch::full({count, size}, -1, torch::kInt32);
    auto* shortlist = ids.data_ptr<std::int32_t>();
    for (std::int64_t i = 0; i < count; ++i) {
      const auto own = positives.row_indices(first + i);  // ascending
      std::int64_t kept = 0;
      for (std::int64_t j = 0; j < k && kept < size; ++j) {
        const std::int64_t label = found[static_cast<std::size_t>(i * k + j)];
        if (label < 0 || std::binary_search(own.begin(), own.end(), static_cast<std::int32_t>(label))) continue;
        shortlist[i * size + kept++] = static_cast<std::int32_t>(label);
      }
    }
    return ids;
  });
  progress.finish();
  return out;
}

/// The clustered (IVF) search's best `size` labels of each query that are not its positives.
torch::Tensor ivf_shortlist(const QueryRows& queries, const KeyClusters& clusters, const CsrMatrix& positives, std::int64_t size,
                            std::int64_t probe, Progress& progress, ShortlistReport& report, SampledQueries& sample) {
  double scanned = 0;
  torch::Tensor ids = by_slices(queries, size, slice_rows(size), &progress, &sample, [&](std::int64_t begin, std::int64_t end, const torch::Tensor& embedded) {
    ClusteredSearchOptions options;
    options.probe = probe;
    options.exclude = ExcludeLists::from_csr(csr_row_range(positives, begin, end));
    ClusteredSearchStats stats;
    torch::Tensor found =
        clusters.search(embedded.detach().to(torch::kCPU, torch::kFloat32).contiguous(), std::min(size, clusters.size()), options, &stats).indices;
    scanned += stats.scanned_fraction * static_cast<double>(end - begin);
    report.probed = stats.probed;
    return found;
  });
  report.clusters = clusters.clusters();
  report.scanned_fraction = queries.count > 0 ? scanned / static_cast<double>(queries.count) : 0.0;
  return ids;
}

/// Over the sampled queries (evenly spread), the mean share of the exact shortlist's labels that the approximate
/// one holds (recall@S), and the mean share of the exact top-10 in the approximate top-10 (recall@10).
/// `exact(queries, k, exclude)`: the exact top-k ids, positives excluded.
using ExactSearch = std::function<torch::Tensor(const torch::Tensor&, std::int64_t, const ExcludeLists&)>;

void sampled_recall(const torch::Tensor& approximate, const SampledQueries& sample, const ExactSearch& exact_search, const CsrMatrix& positives,
                    std::int64_t size, ShortlistReport& report) {
  const std::vector<std::int64_t>& rows = sample.rows();
  report.sampled = static_cast<std::int64_t>(rows.size());
  report.recall = report.recall_at_10 = 1.0;
  if (rows.empty()) return;
  const CsrMatrix own = csr_rows(positives, rows);
  const torch::Tensor exact = exact_search(sample.embeddings(), size, ExcludeLists::from_csr(own)).to(torch::kCPU, torch::kInt64).contiguous();
  const std::int64_t exact_width = exact.size(1);
  const auto* want = exact.data_ptr<std::int64_t>();
  const auto* got = approximate.data_ptr<std::int32_t>();
  // Share of want[0, depth) (ignoring -1) found in got[0, depth).
  const auto share = [&](std::size_t i, std::int64_t depth, double& sum, std::int64_t& counted) {
    std::vector<std::int64_t> mine(got + rows[i] * size, got + rows[i] * size + depth);
    std::sort(mine.begin(), mine.end());
    std::int64_t hits = 0, total = 0;
    for (std::int64_t j = 0; j < depth; ++j) {
      const std::int64_t label = j < exact_width ? want[static_cast<std::int64_t>(i) * exact_width + j] : -1;
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

QueryRows QueryRows::of(const torch::Tensor& embeddings) {
  return {.count = embeddings.size(0), .embed = [embeddings](std::int64_t begin, std::int64_t end) { return embeddings.narrow(0, begin, end - begin); }};
}

torch::Tensor hard_negative_shortlist(const QueryRows& queries, torch::Tensor labels, const CsrMatrix& positives, std::int64_t size, Progress& progress,
                                      const ShortlistSearch& search, ShortlistReport* report) {
  if (search.kind != "exact" && search.kind != "ivf" && search.kind != "hnsw" && search.kind != "auto")
    throw ConfigError("hard.search must be exact, ivf, hnsw or auto, got \"" + search.kind + "\"");
  if (search.probe < 1) throw ConfigError("hard.probe must be at least 1, got " + std::to_string(search.probe));
  if (positives.rows != queries.count)
    throw Error("hard-negative shortlists: " + std::to_string(queries.count) + " queries but " + std::to_string(positives.rows) + " rows of positives");
  const bool approximate = search.kind == "hnsw" || search.kind == "ivf" || (search.kind == "auto" && labels.size(0) >= search.ann_above);
  ShortlistReport own;
  own.how = approximate ? (search.kind == "hnsw" ? "hnsw" : "ivf") : "exact";
  if (!approximate) {
    progress.start("hard-negative shortlists (exact top-" + std::to_string(size) + ")", queries.count);
    torch::Tensor ids = exact_shortlist(queries, labels, positives, size, &progress);
    progress.finish();
    if (report != nullptr) *report = own;
    return ids;
  }
  SampledQueries sample(queries.count, search.recall_sample);
  torch::Tensor ids;
  if (own.how == "hnsw") {
    ids = hnsw_shortlist(queries, labels, positives, size, progress, sample);
    sampled_recall(ids, sample, [&](const torch::Tensor& q, std::int64_t k, const ExcludeLists& exclude) {
      ExactSearchOptions options;
      options.exclude = exclude;
      return exact_top_k(q, labels, std::min(k, labels.size(0)), options).indices;
    }, positives, size, own);
  } else {
    progress.start("hard-negative shortlists (IVF top-" + std::to_string(size) + ")", queries.count);
    // The clusters take the label matrix over: regrouped in place when the caller handed its only handle in.
    torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // the same tensor when it already is
    labels.reset();
    const KeyClusters clusters(std::move(keys));
    ids = ivf_shortlist(queries, clusters, positives, size, search.probe, progress, own, sample);
    progress.finish();
    sampled_recall(ids, sample, [&](const torch::Tensor& q, std::int64_t k, const ExcludeLists& exclude) {
      return clusters.exact(q, k, exclude).indices;
    }, positives, size, own);
  }
  own.approximate = true;
  if (report != nullptr) *report = own;
  return ids;
}

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, torch::Tensor labels, const CsrMatrix& positives, std::int64_t size,
                                      Progress& progress, const ShortlistSearch& search, ShortlistReport* report) {
  return hard_negative_shortlist(QueryRows::of(queries), std::move(labels), positives, size, progress, search, report);
}

}  // namespace xmc
