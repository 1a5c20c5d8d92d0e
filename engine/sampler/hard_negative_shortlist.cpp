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
                            std::int64_t probe, bool bfloat16_products, Progress& progress, ShortlistReport& report, SampledQueries* sample) {
  double scanned = 0;
  torch::Tensor ids = by_slices(queries, size, slice_rows(size), &progress, sample, [&](std::int64_t begin, std::int64_t end, const torch::Tensor& embedded) {
    ClusteredSearchOptions options;
    options.probe = probe;
    options.bfloat16_products = bfloat16_products;
    options.exclude = ExcludeLists::from_csr(csr_row_range(positives, begin, end));
    ClusteredSearchStats stats;
    torch::Tensor found =
        clusters.search(embedded.detach().to(torch::kCPU, torch::kFloat32).contiguous(), std::min(size, clusters.size()), options, &stats).indices;
    scanned += stats.scanned_fraction * static_cast<double>(end - begin);
    report.probed = stats.probed;
    return found;
  });
  report.clusters = clusters.clusters();
  report.bfloat16 = bfloat16_products;
  report.scanned_fraction = queries.count > 0 ? scanned / static_cast<double>(queries.count) : 0.0;
  return ids;
}

/// The mean over rows of the share of exact[r, 0..depth) (ignoring -1) that found[r, 0..depth) holds, over the rows
/// where the exact list has any label (1 when none has). Both [n x >= depth] int64 or int32, CPU.
double mean_share(const torch::Tensor& found, const torch::Tensor& exact, std::int64_t depth) {
  const torch::Tensor got = found.to(torch::kInt64).contiguous(), want = exact.to(torch::kInt64).contiguous();
  const std::int64_t got_width = got.size(1), want_width = want.size(1);
  const auto* got_ids = got.data_ptr<std::int64_t>();
  const auto* want_ids = want.data_ptr<std::int64_t>();
  double sum = 0;
  std::int64_t counted = 0;
  for (std::int64_t r = 0; r < want.size(0); ++r) {
    std::vector<std::int64_t> mine(got_ids + r * got_width, got_ids + r * got_width + std::min(depth, got_width));
    std::sort(mine.begin(), mine.end());
    std::int64_t hits = 0, total = 0;
    for (std::int64_t j = 0; j < std::min(depth, want_width); ++j) {
      const std::int64_t label = want_ids[r * want_width + j];
      if (label < 0) continue;
      ++total;
      hits += std::binary_search(mine.begin(), mine.end(), label) ? 1 : 0;
    }
    if (total == 0) continue;
    sum += static_cast<double>(hits) / static_cast<double>(total);
    ++counted;
  }
  return counted > 0 ? sum / static_cast<double>(counted) : 1.0;
}

/// The approximate shortlist's recall@S and recall@10 on the sampled rows, against their exact shortlists
/// (`exact`: [rows x <= S] ids, positives excluded).
void sampled_recall(const torch::Tensor& approximate, const std::vector<std::int64_t>& rows, const torch::Tensor& exact, std::int64_t size,
                    ShortlistReport& report) {
  report.sampled = static_cast<std::int64_t>(rows.size());
  report.recall = report.recall_at_10 = 1.0;
  if (rows.empty()) return;
  const torch::Tensor found = approximate.index_select(0, torch::tensor(rows, torch::kInt64));
  report.recall = mean_share(found, exact, size);
  report.recall_at_10 = mean_share(found, exact, std::min<std::int64_t>(10, size));
}

/// The sampled rows' embeddings, row by row ([rows x d] float32, CPU): for tuning a search before the pass that
/// embeds every row.
torch::Tensor embed_rows(const QueryRows& queries, const std::vector<std::int64_t>& rows) {
  std::vector<torch::Tensor> parts;
  parts.reserve(rows.size());
  for (const std::int64_t r : rows) parts.push_back(queries.embed(r, r + 1).detach().to(torch::kCPU, torch::kFloat32));
  return torch::cat(parts).contiguous();
}

}  // namespace

std::string ShortlistReport::describe(std::int64_t labels, std::int64_t size) const {
  if (!approximate) return "hard-negative shortlists: exact top-" + std::to_string(size) + " of " + std::to_string(labels) + " labels";
  char text[320];
  std::string searched = "HNSW over " + std::to_string(labels) + " labels";
  if (how == "ivf") {
    char raised[96] = "";
    if (probed > first_probe && first_probe > 0)
      std::snprintf(raised, sizeof raised, ", raised from %lld toward recall@10 %.2f", static_cast<long long>(first_probe), recall_target);
    std::snprintf(text, sizeof text, " (%lld clusters, %lld searched%s: %.1f %% of the labels a query%s)", static_cast<long long>(clusters),
                  static_cast<long long>(probed), raised, 100.0 * scanned_fraction, bfloat16 ? "; bfloat16 products, candidates re-scored in float32" : "");
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
  const CsrMatrix sampled_positives = csr_rows(positives, sample.rows());
  torch::Tensor ids;
  if (own.how == "hnsw") {
    ids = hnsw_shortlist(queries, labels, positives, size, progress, sample);
    torch::Tensor exact;
    if (!sample.rows().empty()) {
      ExactSearchOptions options;
      options.exclude = ExcludeLists::from_csr(sampled_positives);
      exact = exact_top_k(sample.embeddings(), labels, std::min(size, labels.size(0)), options).indices;
    }
    sampled_recall(ids, sample.rows(), exact, size, own);
  } else {
    // The clusters take the label matrix over: regrouped in place when the caller handed its only handle in.
    torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // the same tensor when it already is
    labels.reset();
    const KeyClusters clusters(std::move(keys));
    // The sampled queries' exact shortlists first: the probe is tuned on them, then the refresh's recall measured.
    const torch::Tensor sample_queries = sample.rows().empty() ? torch::Tensor() : embed_rows(queries, sample.rows());
    const ExcludeLists sample_exclusions = ExcludeLists::from_csr(sampled_positives);
    const torch::Tensor exact = sample.rows().empty() ? torch::Tensor() : clusters.exact(sample_queries, size, sample_exclusions).indices;
    std::int64_t probe = search.probe;
    own.first_probe = search.probe;
    if (search.max_probe > probe && exact.defined()) {
      own.recall_target = search.recall_target;
      ClusteredSearchOptions options;
      options.bfloat16_products = search.bfloat16_products;
      options.exclude = sample_exclusions;
      for (;; probe *= 2) {
        options.probe = probe;
        const torch::Tensor found = clusters.search(sample_queries, std::min(size, clusters.size()), options).indices;
        if (mean_share(found, exact, std::min<std::int64_t>(10, size)) >= search.recall_target || 2 * probe > search.max_probe ||
            probe >= clusters.clusters())
          break;
      }
    }
    progress.start("hard-negative shortlists (IVF top-" + std::to_string(size) + ")", queries.count);
    ids = ivf_shortlist(queries, clusters, positives, size, probe, search.bfloat16_products, progress, own, nullptr);
    progress.finish();
    sampled_recall(ids, sample.rows(), exact, size, own);
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
