#include "engine/sampler/hard_negative_shortlist.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "engine/core/allocator_tuning.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/csr_rows.h"
#include "engine/index/clustered_search.h"
#include "engine/index/exact_search.h"
#include "engine/index/hnsw_index.h"
#include "engine/index/probe_tuning.h"
#include "engine/index/sampled_queries.h"
#include "engine/index/streaming_top_k.h"

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
torch::Tensor by_slices(const RowEmbeddings& queries, std::int64_t size, std::int64_t slice, Progress* progress, SampledQueries* sample,
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

/// The labels are searched on the device the queries are embedded on: gathered slice by slice they lie on the CPU,
/// while a GPU's training embeds its queries on the GPU (moved there once, at the first slice).
torch::Tensor exact_shortlist(const RowEmbeddings& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                              Progress* progress) {
  torch::Tensor keys = labels;
  return by_slices(queries, size, slice_rows(size), progress, nullptr, [&](std::int64_t begin, std::int64_t end, const torch::Tensor& embedded) {
    if (keys.device() != embedded.device()) keys = keys.to(embedded.device());
    return exact_slice(embedded, keys, positives, begin, end, size);
  });
}

/// The HNSW graph's best `size` labels of each query that are not its positives: it is asked for `size` plus the
/// most positives any query has, so that removing them leaves `size` (fewer only where the graph found fewer).
torch::Tensor hnsw_shortlist(const RowEmbeddings& queries, const torch::Tensor& labels, const CsrMatrix& positives, std::int64_t size,
                             const ShortlistSearch& search, Progress& progress, SampledQueries& sample) {
  const torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  const std::int64_t num_labels = keys.size(0), dim = keys.size(1);
  std::int64_t most_positives = 0;
  for (std::int64_t r = 0; r < positives.rows; ++r) most_positives = std::max(most_positives, positives.row_size(r));
  const std::int64_t k = std::min(num_labels, size + most_positives);
  HnswIndex index(dim, {.M = search.hnsw_links,
                        .ef_construction = search.hnsw_build_candidates,
                        .ef_search = search.hnsw_search_candidates > 0 ? std::max(search.hnsw_search_candidates, k) : std::max<std::int64_t>(2 * k, 64),
                        .num_threads = at::get_num_threads()});
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
torch::Tensor ivf_shortlist(const RowEmbeddings& queries, const KeyClusters& clusters, const CsrMatrix& positives, std::int64_t size,
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
  report.bfloat16_labels = clusters.keys_in_bfloat16();
  report.scanned_fraction = queries.count > 0 ? scanned / static_cast<double>(queries.count) : 0.0;
  return ids;
}

/// The mean over rows of the share of exact[r, 0..depth) (ignoring -1) that found[r, 0..depth) holds, over the rows
/// where the exact list has any label (1 when none has). Both [n x >= depth] int64 or int32, on any device (the exact
/// lists are found where the labels lie: on a GPU when a GPU's training hands its label matrix in).
double mean_share(const torch::Tensor& found, const torch::Tensor& exact, std::int64_t depth) {
  const torch::Tensor got = found.to(torch::kCPU, torch::kInt64).contiguous(), want = exact.to(torch::kCPU, torch::kInt64).contiguous();
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
torch::Tensor embed_rows(const RowEmbeddings& queries, const std::vector<std::int64_t>& rows) {
  std::vector<torch::Tensor> parts;
  parts.reserve(rows.size());
  for (const std::int64_t r : rows) parts.push_back(queries.embed(r, r + 1).detach().to(torch::kCPU, torch::kFloat32));
  return torch::cat(parts).contiguous();
}

/// Label rows embedded at once: a slice and the sampled queries' scores against it (`scored_rows` of them) take the
/// memory budget's shortlist-slice share (6,672 labels of 256 dimensions beside 1,000 sampled queries at 512 MB).
std::int64_t label_slice_rows(std::int64_t dim, std::int64_t scored_rows) {
  return std::max<std::int64_t>(256, memory_budget_part(memory_share::kShortlistSlice) / (4 * std::max<std::int64_t>(dim + scored_rows, 1)));
}

/// Each slice of `labels` embedded, checked and handed to `take(begin, [rows x d] float32 CPU)`, in order. The first
/// slice is small: the dimension it shows sizes the others.
template <typename Take>
void for_label_slices(const RowEmbeddings& labels, std::int64_t scored_rows, Progress& progress, const Take& take) {
  progress.start("hard-negative index: encoding labels", labels.count);
  std::int64_t begin = 0, dim = -1, slice = 256;
  while (begin < labels.count) {
    if (progress.cancelled()) throw Cancelled();
    const std::int64_t end = std::min(labels.count, begin + slice);
    const torch::Tensor embedded = labels.embed(begin, end).detach().to(torch::kCPU, torch::kFloat32).contiguous();
    if (embedded.dim() != 2 || embedded.size(0) != end - begin || (dim >= 0 && embedded.size(1) != dim))
      throw Error("hard-negative index: labels " + std::to_string(begin) + " to " + std::to_string(end) + " embedded as " +
                  (embedded.dim() == 2 ? std::to_string(embedded.size(0)) + " x " + std::to_string(embedded.size(1)) : std::to_string(embedded.dim()) + "-D") +
                  (dim >= 0 ? " (the labels before them have " + std::to_string(dim) + " columns)" : ""));
    dim = embedded.size(1);
    take(begin, embedded);
    progress.update(end);
    begin = end;
    slice = label_slice_rows(dim, scored_rows);
  }
  progress.finish();
}

/// Every label's embedding, [L x d] float32 CPU, gathered slice by slice.
torch::Tensor all_labels(const RowEmbeddings& labels, Progress& progress) {
  torch::Tensor out;
  for_label_slices(labels, 0, progress, [&](std::int64_t begin, const torch::Tensor& embedded) {
    if (!out.defined()) out = torch::empty({labels.count, embedded.size(1)}, torch::kFloat32);
    out.narrow(0, begin, embedded.size(0)).copy_(embedded);
  });
  return out.defined() ? out : torch::empty({0, 0}, torch::kFloat32);
}

/// The labels in bfloat16 ([L x d], half the float32 matrix, which is never held whole), and the sampled queries'
/// exact shortlists against the float32 labels as the slices pass ([sampled x min(S, L)] int64, -1 where fewer
/// labels are not the query's positives; `exact` undefined without sampled queries). The slices' scores go through
/// a StreamingTopK, as exact search's do: ties go to the lower label id.
torch::Tensor labels_in_bfloat16(const RowEmbeddings& labels, const torch::Tensor& sample_queries, const CsrMatrix& sampled_positives,
                                 std::int64_t size, Progress& progress, torch::Tensor& exact) {
  const std::int64_t sampled = sample_queries.defined() ? sample_queries.size(0) : 0;
  const std::int64_t k = std::min(size, labels.count);
  StreamingTopK best(sampled, k);
  torch::Tensor keys;
  for_label_slices(labels, sampled, progress, [&](std::int64_t begin, const torch::Tensor& embedded) {
    const std::int64_t rows = embedded.size(0);
    if (!keys.defined()) keys = torch::empty({labels.count, embedded.size(1)}, torch::kBFloat16);
    keys.narrow(0, begin, rows).copy_(embedded);
    if (sampled == 0) return;
    if (embedded.size(1) != sample_queries.size(1))
      throw Error("hard-negative index: labels have " + std::to_string(embedded.size(1)) + " columns, queries " + std::to_string(sample_queries.size(1)));
    const torch::Tensor scores = chunk_inner_products(sample_queries, embedded).contiguous();  // [sampled x rows]
    float* score = scores.data_ptr<float>();
    for (std::int64_t r = 0; r < sampled; ++r) {
      for (const std::int32_t label : sampled_positives.row_indices(r))  // a query's own positives are not its negatives
        if (label >= begin && label < begin + rows) score[r * rows + (label - begin)] = -std::numeric_limits<float>::infinity();
      best.offer(r, score + r * rows, begin, rows);
    }
  });
  if (sampled > 0) {
    exact = torch::empty({sampled, k}, torch::kInt64);
    std::vector<float> scores(static_cast<std::size_t>(k));
    for (std::int64_t r = 0; r < sampled; ++r) best.finish(r, scores.data(), exact.data_ptr<std::int64_t>() + r * k);
  }
  return keys.defined() ? keys : torch::empty({0, 0}, torch::kBFloat16);
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
    else if (probed < first_probe && recall_target > 0)
      std::snprintf(raised, sizeof raised, ", lowered from %lld keeping recall@10 %.2f", static_cast<long long>(first_probe), recall_target);
    std::snprintf(text, sizeof text, " (%lld clusters, %lld searched%s: %.1f %% of the labels a query%s)", static_cast<long long>(clusters),
                  static_cast<long long>(probed), raised, 100.0 * scanned_fraction,
                  bfloat16          ? "; labels held and multiplied in bfloat16, candidates re-scored in float32"
                  : bfloat16_labels ? "; labels held in bfloat16, multiplied in float32"
                                    : "");
    searched = "IVF over " + std::to_string(labels) + " labels" + text;
  }
  std::snprintf(text, sizeof text, "%.3f (recall@10 %.3f)", recall, recall_at_10);
  return "hard-negative shortlists: " + searched + ", recall@" + std::to_string(size) + " " + text + " against exact on " +
         std::to_string(sampled) + " sampled queries";
}

RowEmbeddings RowEmbeddings::of(const torch::Tensor& embeddings) {
  return {.count = embeddings.size(0), .embed = [embeddings](std::int64_t begin, std::int64_t end) { return embeddings.narrow(0, begin, end - begin); }};
}

namespace {

/// "exact", "ivf" or "hnsw": what `search` asks for over `num_labels` labels (refused by name when it is not one
/// of them), once the queries and positives are checked to agree.
std::string checked_search(const ShortlistSearch& search, std::int64_t num_labels, const RowEmbeddings& queries, const CsrMatrix& positives) {
  if (search.kind != "exact" && search.kind != "ivf" && search.kind != "hnsw" && search.kind != "auto")
    throw ConfigError("hard.search must be exact, ivf, hnsw or auto, got \"" + search.kind + "\"");
  if (search.probe < 1) throw ConfigError("hard.probe must be at least 1, got " + std::to_string(search.probe));
  if (positives.rows != queries.count)
    throw Error("hard-negative shortlists: " + std::to_string(queries.count) + " queries but " + std::to_string(positives.rows) + " rows of positives");
  if (search.kind == "hnsw") return "hnsw";
  return search.kind == "ivf" || (search.kind == "auto" && num_labels >= search.ann_above) ? "ivf" : "exact";
}

}  // namespace

ShortlistSearch shortlist_search(const NegativesOptions& options) {
  const ShortlistSearchSpec spec = check_shortlist_search(options);
  const auto given = [&spec](const char* key, std::int64_t otherwise) { return spec.keys.count(key) != 0 ? spec.keys.at(key) : otherwise; };
  ShortlistSearch search{.kind = spec.kind,
                         .ann_above = options.search_above,
                         .cluster_size = given("size", options.cluster_size),
                         .probe = given("probe", options.probe),
                         .max_probe = options.max_probe,
                         .bfloat16_products = options.bfloat16_products(),
                         .bfloat16_labels = options.bfloat16_labels()};
  search.hnsw_links = given("M", search.hnsw_links);
  search.hnsw_build_candidates = given("efc", search.hnsw_build_candidates);
  search.hnsw_search_candidates = given("ef", search.hnsw_search_candidates);
  return search;
}

std::int64_t ivf_labels_per_cluster(const ShortlistSearch& search, std::int64_t num_labels) {
  if (search.cluster_size < 0) throw ConfigError("hard.cluster_size must be 0 (about sqrt(labels) / 4) or more, got " + std::to_string(search.cluster_size));
  if (search.cluster_size > 0) return search.cluster_size;
  return std::max<std::int64_t>(64, static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(num_labels)) / 4.0)));
}

namespace {

/// An IVF refresh over clustered labels: the probe is raised from search.probe toward search.recall_target on the
/// sampled queries, or lowered while they keep it (their embeddings, exclusions and exact shortlists given), then every query is searched and the
/// recall measured on the same sampled rows.
torch::Tensor tuned_ivf_shortlist(const RowEmbeddings& queries, const KeyClusters& clusters, const CsrMatrix& positives, std::int64_t size,
                                  Progress& progress, const ShortlistSearch& search, const SampledQueries& sample, const torch::Tensor& sample_queries,
                                  const ExcludeLists& sample_exclusions, const torch::Tensor& exact, ShortlistReport& own) {
  std::int64_t probe = search.probe;
  own.first_probe = search.probe;
  if (search.max_probe > probe && exact.defined()) {
    own.recall_target = search.recall_target;
    ClusteredSearchOptions options;
    options.bfloat16_products = search.bfloat16_products;
    options.exclude = sample_exclusions;
    // Trained embeddings may keep the target at fewer clusters than the first probe (0.99 at 64 of 4,546 clusters at
    // 1.3M labels): the refresh's products and selection shrink with the probe.
    probe = tune_probe({.first = probe, .max = std::min(search.max_probe, clusters.clusters()), .target = search.recall_target},
                       [&](std::int64_t tried) {
                         options.probe = tried;
                         const torch::Tensor found = clusters.search(sample_queries, std::min(size, clusters.size()), options).indices;
                         return std::vector<double>{mean_share(found, exact, std::min<std::int64_t>(10, size))};
                       })
                .probe;
  }
  progress.start("hard-negative shortlists (IVF top-" + std::to_string(size) + ")", queries.count);
  torch::Tensor ids = ivf_shortlist(queries, clusters, positives, size, probe, search.bfloat16_products, progress, own, nullptr);
  progress.finish();
  sampled_recall(ids, sample.rows(), exact, size, own);
  own.approximate = true;
  return ids;
}

}  // namespace

torch::Tensor hard_negative_shortlist(const RowEmbeddings& queries, torch::Tensor labels, const CsrMatrix& positives, std::int64_t size, Progress& progress,
                                      const ShortlistSearch& search, ShortlistReport* report) {
  ShortlistReport own;
  own.how = checked_search(search, labels.size(0), queries, positives);
  if (own.how == "ivf" && search.holds_labels_in_bfloat16()) {
    // Read a slice at a time into bfloat16 (by reference: no second handle on the caller's matrix).
    const RowEmbeddings label_rows{.count = labels.size(0), .embed = [&labels](std::int64_t begin, std::int64_t end) { return labels.narrow(0, begin, end - begin); }};
    return hard_negative_shortlist(queries, label_rows, positives, size, progress, search, report);
  }
  if (own.how == "exact") {
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
    ids = hnsw_shortlist(queries, labels, positives, size, search, progress, sample);
    torch::Tensor exact;
    if (!sample.rows().empty()) {
      ExactSearchOptions options;
      options.exclude = ExcludeLists::from_csr(sampled_positives);
      exact = exact_top_k(sample.embeddings().to(labels.device()), labels, std::min(size, labels.size(0)), options).indices;
    }
    sampled_recall(ids, sample.rows(), exact, size, own);
    own.approximate = true;
  } else {
    // The clusters take the label matrix over: regrouped in place when the caller handed its only handle in.
    torch::Tensor keys = labels.detach().to(torch::kCPU, torch::kFloat32).contiguous();  // the same tensor when it already is
    labels.reset();
    const std::int64_t cluster_size = ivf_labels_per_cluster(search, keys.size(0));
    const KeyClusters clusters(std::move(keys), cluster_size);
    return_freed_memory();  // the k-means' temporaries, before the shortlists' ids are allocated
    // The sampled queries' exact shortlists first: the probe is tuned on them, then the refresh's recall measured.
    const torch::Tensor sample_queries = sample.rows().empty() ? torch::Tensor() : embed_rows(queries, sample.rows());
    const ExcludeLists sample_exclusions = ExcludeLists::from_csr(sampled_positives);
    const torch::Tensor exact = sample.rows().empty() ? torch::Tensor() : clusters.exact(sample_queries, size, sample_exclusions).indices;
    ids = tuned_ivf_shortlist(queries, clusters, positives, size, progress, search, sample, sample_queries, sample_exclusions, exact, own);
  }
  if (report != nullptr) *report = own;
  return ids;
}

torch::Tensor hard_negative_shortlist(const RowEmbeddings& queries, const RowEmbeddings& labels, const CsrMatrix& positives, std::int64_t size,
                                      Progress& progress, const ShortlistSearch& search, ShortlistReport* report) {
  ShortlistReport own;
  own.how = checked_search(search, labels.count, queries, positives);
  if (own.how != "ivf" || !search.holds_labels_in_bfloat16())
    return hard_negative_shortlist(queries, all_labels(labels, progress), positives, size, progress, search, report);
  // The sampled queries first: their exact shortlists are found against the float32 labels as each slice passes
  // on its way into bfloat16, so that the recall reported is against float32 search.
  SampledQueries sample(queries.count, search.recall_sample);
  const CsrMatrix sampled_positives = csr_rows(positives, sample.rows());
  const torch::Tensor sample_queries = sample.rows().empty() ? torch::Tensor() : embed_rows(queries, sample.rows());
  torch::Tensor exact;
  const KeyClusters clusters(labels_in_bfloat16(labels, sample_queries, sampled_positives, size, progress, exact), ivf_labels_per_cluster(search, labels.count));
  // The label slices' and the k-means' temporaries go back to the system before the shortlists' ids (0.9 GB at 2.25M
  // queries x 100) are allocated: the heap keeps freed blocks for reuse, and that one does not fit in them.
  return_freed_memory();
  const ExcludeLists sample_exclusions = ExcludeLists::from_csr(sampled_positives);
  torch::Tensor ids = tuned_ivf_shortlist(queries, clusters, positives, size, progress, search, sample, sample_queries, sample_exclusions, exact, own);
  if (report != nullptr) *report = own;
  return ids;
}

torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, torch::Tensor labels, const CsrMatrix& positives, std::int64_t size,
                                      Progress& progress, const ShortlistSearch& search, ShortlistReport* report) {
  return hard_negative_shortlist(RowEmbeddings::of(queries), std::move(labels), positives, size, progress, search, report);
}

}  // namespace xmc
