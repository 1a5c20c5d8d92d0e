#include "engine/index/clustered_search.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/index/streaming_top_k.h"
#include "engine/index/spherical_kmeans.h"

namespace xmc {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw ConfigError("clustered_top_k: " + what);
}

/// bfloat16 products are padded to multiples of this in both dimensions: the matrix library makes (and caches) a
/// kernel per shape, and clusters' sizes and the queries probing them vary from product to product.
constexpr std::int64_t kProductPadding = 64;

std::int64_t padded(std::int64_t size) { return (size + kProductPadding - 1) / kProductPadding * kProductPadding; }

/// A bfloat16's value: its 16 bits are the top half of the float32 it rounds.
inline float widened(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

/// <a, b> over `d` values (float32, or bfloat16 bits widened as they are read), in eight running sums the
/// compiler vectorises.
template <typename Key>
float dot(const float* a, const Key* b, std::int64_t d) {
  const auto value = [](Key key) {
    if constexpr (std::is_same_v<Key, float>) return key;
    else return widened(key);
  };
  float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t e = 0;
  for (; e + 8 <= d; e += 8)
    for (int lane = 0; lane < 8; ++lane) sums[lane] += a[e + lane] * value(b[e + lane]);
  float total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
  for (; e < d; ++e) total += a[e] * value(b[e]);
  return total;
}

}  // namespace

/// The keys regrouped so that each cluster is one contiguous block, with the maps between the two orders.
struct KeyClusters::Groups {
  torch::Tensor keys;                      ///< [m, d] float32 or bfloat16, cluster after cluster; borrowed keys: float32 in id order
  bool borrowed = false;                   ///< keys in id order, each cluster's rows gathered when searched
  torch::Tensor centroids;                 ///< [C, d] unit rows (zero for a cluster without keys)
  std::vector<std::int64_t> start;         ///< C + 1 offsets of the blocks in `keys`
  std::vector<std::int64_t> key_at;        ///< position in `keys` -> key id
  std::vector<std::int64_t> position_of;   ///< key id -> position in `keys`
  std::vector<std::int32_t> cluster_at;    ///< position in `keys` -> cluster
  std::int64_t dim = 0;
  double clustering_seconds = 0;
  /// <query, the key at `position` of the grouped order>, in float32 arithmetic.
  float score(const float* query, std::int64_t position) const {
    const std::int64_t row = borrowed ? key_at[static_cast<std::size_t>(position)] : position;
    if (keys.scalar_type() == torch::kBFloat16)
      return dot(query, reinterpret_cast<const std::uint16_t*>(keys.data_ptr<at::BFloat16>()) + row * keys.stride(0), dim);
    return dot(query, keys.data_ptr<float>() + row * keys.stride(0), dim);
  }
  std::int64_t clusters() const { return static_cast<std::int64_t>(start.size()) - 1; }
  std::int64_t size(std::int64_t cluster) const { return start[cluster + 1] - start[cluster]; }
  /// A cluster's keys, [size(cluster), d]: a slice of `keys`, or its rows gathered when the keys are borrowed.
  torch::Tensor block(std::int64_t cluster) const {
    if (!borrowed) return keys.narrow(0, start[cluster], size(cluster));
    return keys.index_select(0, torch::from_blob(const_cast<std::int64_t*>(key_at.data() + start[cluster]), {size(cluster)}, torch::kInt64));
  }
};

namespace {

void cluster_keys(KeyClusters::Groups& out, const torch::Tensor& keys, std::int64_t clusters, std::uint64_t seed, bool in_place, bool borrowed) {
  const std::int64_t m = keys.size(0);
  const SphericalKMeans kmeans = spherical_kmeans(keys, clusters, {.seed = seed});
  clusters = kmeans.centroids.size(0);
  out.centroids = kmeans.centroids;
  // Counting sort of the keys by cluster (ascending ids within a cluster).
  const auto* assigned = kmeans.assignment.data_ptr<std::int64_t>();
  out.start.assign(static_cast<std::size_t>(clusters + 1), 0);
  for (std::int64_t j = 0; j < m; ++j) ++out.start[static_cast<std::size_t>(assigned[j] + 1)];
  for (std::int64_t c = 0; c < clusters; ++c) out.start[c + 1] += out.start[c];
  std::vector<std::int64_t> next(out.start.begin(), out.start.end() - 1);
  out.key_at.resize(static_cast<std::size_t>(m));
  out.position_of.resize(static_cast<std::size_t>(m));
  out.cluster_at.resize(static_cast<std::size_t>(m));
  for (std::int64_t j = 0; j < m; ++j) {
    const std::int64_t position = next[static_cast<std::size_t>(assigned[j])]++;
    out.key_at[static_cast<std::size_t>(position)] = j;
    out.position_of[static_cast<std::size_t>(j)] = position;
    out.cluster_at[static_cast<std::size_t>(position)] = static_cast<std::int32_t>(assigned[j]);
  }
  if (borrowed) {
    out.keys = keys;
    out.borrowed = true;
    return;
  }
  if (!in_place) {
    out.keys = keys.index_select(0, torch::from_blob(out.key_at.data(), {m}, torch::kInt64)).contiguous();
    return;
  }
  // Rows moved along the permutation's cycles: position p receives key key_at[p], one row held aside a cycle.
  out.keys = keys;
  const auto row_bytes = static_cast<std::size_t>(keys.size(1)) * keys.element_size();
  auto* rows = static_cast<unsigned char*>(out.keys.data_ptr());
  std::vector<unsigned char> held(row_bytes);
  std::vector<bool> placed(static_cast<std::size_t>(m), false);
  for (std::int64_t start = 0; start < m; ++start) {
    if (placed[static_cast<std::size_t>(start)]) continue;
    std::memcpy(held.data(), rows + start * row_bytes, row_bytes);
    std::int64_t position = start;
    while (true) {
      placed[static_cast<std::size_t>(position)] = true;
      const std::int64_t source = out.key_at[static_cast<std::size_t>(position)];
      if (source == start) {
        std::memcpy(rows + position * row_bytes, held.data(), row_bytes);
        break;
      }
      std::memcpy(rows + position * row_bytes, rows + source * row_bytes, row_bytes);
      position = source;
    }
  }
}

}  // namespace

KeyClusters::KeyClusters(const torch::Tensor& keys, std::int64_t cluster_size, std::uint64_t seed) { build(keys, cluster_size, seed, Placement::kCopied); }

KeyClusters::KeyClusters(torch::Tensor&& keys, std::int64_t cluster_size, std::uint64_t seed) {
  torch::Tensor own = std::move(keys);
  const bool sole = own.defined() && own.use_count() == 1 && own.storage().use_count() == 1 && own.is_cpu() &&
                    (own.scalar_type() == torch::kFloat || own.scalar_type() == torch::kBFloat16) && own.is_contiguous() && !own.requires_grad();
  build(own, cluster_size, seed, sole ? Placement::kRegroupedInPlace : Placement::kCopied);
}

KeyClusters KeyClusters::borrowing(const torch::Tensor& keys, std::int64_t cluster_size, std::uint64_t seed) {
  check(keys.is_cpu() && keys.scalar_type() == torch::kFloat && has_unit_column_stride(keys),
        "borrowed keys must be a 2-D float32 CPU tensor with unit column stride");
  KeyClusters out;
  out.build(keys, cluster_size, seed, Placement::kBorrowed);
  return out;
}

void KeyClusters::build(const torch::Tensor& keys, std::int64_t cluster_size, std::uint64_t seed, Placement placement) {
  check(keys.dim() == 2, "keys must be 2-D");
  check(keys.is_cpu() && keys.is_floating_point(), "keys must be floating point, on the CPU");
  check(cluster_size >= 0, "cluster_size must be >= 0, got " + std::to_string(cluster_size));
  check(keys.size(0) < (std::int64_t{1} << 31), "at most 2^31 - 1 keys");
  torch::NoGradGuard no_grad;
  auto groups = std::make_shared<Groups>();
  groups_ = groups;
  const std::int64_t m = keys.size(0);
  groups->dim = keys.size(1);
  if (m == 0) {
    groups->keys = torch::zeros({0, keys.size(1)});
    groups->centroids = torch::zeros({0, keys.size(1)});
    groups->start = {0};
    return;
  }
  if (cluster_size == 0) cluster_size = std::max<std::int64_t>(64, static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(m)))));
  const auto began = std::chrono::steady_clock::now();
  const std::int64_t clusters = (m + cluster_size - 1) / cluster_size;
  if (placement == Placement::kBorrowed) cluster_keys(*groups, keys, clusters, seed, false, true);
  else cluster_keys(*groups, keys.to(keys.scalar_type() == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat).contiguous(), clusters, seed,
                    placement == Placement::kRegroupedInPlace, false);
  groups->clustering_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

TopK KeyClusters::exact(const torch::Tensor& queries, std::int64_t k, const ExcludeLists& exclude) const {
  const Groups& grouped = *groups_;
  if (grouped.borrowed) {  // the keys in id order: searched as they are
    TopK found = exact_top_k(queries, grouped.keys, std::min(k, grouped.keys.size(0)), {.exclude = exclude});
    found.indices = found.indices.to(torch::kCPU, torch::kInt64).contiguous();
    return found;
  }
  ExactSearchOptions options;
  if (!exclude.empty()) {
    // Key ids to positions in the grouped keys.
    const torch::Tensor ids = exclude.indices.to(torch::kCPU, torch::kInt64).contiguous();
    torch::Tensor positions = torch::empty_like(ids);
    const auto* id = ids.data_ptr<std::int64_t>();
    auto* position = positions.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
      check(id[i] >= 0 && id[i] < grouped.keys.size(0), "an exclusion list names key " + std::to_string(id[i]));
      position[i] = grouped.position_of[static_cast<std::size_t>(id[i])];
    }
    options.exclude = {.indptr = exclude.indptr, .indices = positions};
  }
  TopK found = exact_top_k(queries, grouped.keys, std::min(k, grouped.keys.size(0)), options);
  found.indices = found.indices.to(torch::kCPU, torch::kInt64).contiguous();
  auto* index = found.indices.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < found.indices.numel(); ++i)
    if (index[i] >= 0) index[i] = grouped.key_at[static_cast<std::size_t>(index[i])];
  return found;
}

std::int64_t KeyClusters::clusters() const { return groups_->clusters(); }
std::int64_t KeyClusters::size() const { return groups_->keys.size(0); }
double KeyClusters::clustering_seconds() const { return groups_->clustering_seconds; }
const void* KeyClusters::grouped_keys() const { return groups_->borrowed ? nullptr : groups_->keys.data_ptr(); }
bool KeyClusters::keys_in_bfloat16() const { return groups_->keys.scalar_type() == torch::kBFloat16; }
const std::vector<std::int64_t>& KeyClusters::key_at() const { return groups_->key_at; }
const std::vector<std::int64_t>& KeyClusters::position_of() const { return groups_->position_of; }

TopK clustered_top_k(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k, const ClusteredSearchOptions& options,
                     ClusteredSearchStats* stats) {
  check(queries.dim() == 2 && keys.dim() == 2, "queries and keys must be 2-D");
  check(queries.size(1) == keys.size(1),
        "queries have " + std::to_string(queries.size(1)) + " columns, keys " + std::to_string(keys.size(1)));
  check(options.cluster_size >= 0, "cluster_size must be >= 0, got " + std::to_string(options.cluster_size));
  check(queries.is_cpu() && keys.is_cpu(), "queries and keys must be on the CPU");
  check(queries.is_floating_point() && keys.is_floating_point(), "queries and keys must be floating point");
  check(k >= 0, "k must be >= 0, got " + std::to_string(k));
  check(options.probe > 0, "probe must be > 0, got " + std::to_string(options.probe));
  if (queries.size(0) == 0 || k == 0 || keys.size(0) == 0) {
    if (stats != nullptr) *stats = {};
    const std::int64_t width = std::min(k, keys.size(0));
    return {torch::empty({queries.size(0), width}, torch::kFloat), torch::empty({queries.size(0), width}, torch::kInt64)};
  }
  return KeyClusters(keys, options.cluster_size, options.seed).search(queries, k, options, stats);
}

TopK KeyClusters::search(const torch::Tensor& queries, std::int64_t k, const ClusteredSearchOptions& options, ClusteredSearchStats* stats) const {
  const Groups& grouped = *groups_;
  check(queries.dim() == 2, "queries must be 2-D");
  check(queries.size(1) == grouped.dim, "queries have " + std::to_string(queries.size(1)) + " columns, keys " + std::to_string(grouped.dim));
  check(queries.is_cpu() && queries.is_floating_point(), "queries must be floating point, on the CPU");
  check(k >= 0, "k must be >= 0, got " + std::to_string(k));
  check(options.probe > 0, "probe must be > 0, got " + std::to_string(options.probe));
  check(options.scores_bytes >= 0, "scores_bytes must be >= 0, got " + std::to_string(options.scores_bytes));
  torch::NoGradGuard no_grad;

  const std::int64_t n = queries.size(0);
  const std::int64_t m = grouped.keys.size(0);
  k = std::min(k, m);
  TopK out{torch::empty({n, k}, torch::kFloat), torch::empty({n, k}, torch::kInt64)};
  if (stats != nullptr) *stats = {};
  if (n == 0 || k == 0) return out;

  const torch::Tensor q = queries.to(torch::kFloat).contiguous();
  const std::int64_t clusters = grouped.clusters();
  const std::int64_t probe = std::min(options.probe, clusters);
  // With bfloat16 products, more candidates than asked for, each re-scored in float32 before the best k are kept.
  const bool bf16 = options.bfloat16_products;
  const std::int64_t candidates = bf16 ? std::min(m, k + std::max<std::int64_t>(16, k / 4)) : k;

  const bool exclude = !options.exclude.empty();
  torch::Tensor ex_ptr, ex_ids;
  if (exclude) {
    options.exclude.check(n, "clustered_top_k");
    ex_ptr = options.exclude.indptr.to(torch::kCPU, torch::kInt64).contiguous();
    ex_ids = options.exclude.indices.to(torch::kCPU, torch::kInt64).contiguous();
  }
  const std::int64_t* ex_row = exclude ? ex_ptr.data_ptr<std::int64_t>() : nullptr;
  const std::int64_t* ex_key = exclude ? ex_ids.data_ptr<std::int64_t>() : nullptr;

  // Each cluster's products go straight into the selectors, one per thread: a thread takes a run of clusters in
  // ascending order (so each query's scores reach its selector in ascending key positions, as StreamingTopK wants),
  // and the threads' candidates are merged per query at the end of a chunk. No query's scores are held whole, so a
  // chunk can hold many queries, and each cluster's product then has many rows: the products' rate grows with them
  // (on 2 cores, float32 products of ~25 queries run ~90 GFLOP/s a core, of ~200 queries ~200).
  // The chunk is sized for a selector per core of the machine, not per thread searching now: a product's rows, and
  // with them its rounding, are then the same however many threads search (some BLAS kernels round a row's scores
  // differently as the product has more or fewer rows), and so is the result.
  const int threads = std::max(1, at::get_num_threads());
  const std::int64_t planned_selectors = std::max(1U, std::thread::hardware_concurrency());
  const std::int64_t per_query = planned_selectors * StreamingTopK::bytes_per_row(candidates) +
                                 probe * static_cast<std::int64_t>(3 * sizeof(std::int64_t));  // probed, pairs, exclusions' offsets
  const std::int64_t scores_bytes = options.scores_bytes > 0 ? options.scores_bytes : memory_budget_part(memory_share::kClusteredSearchScores);
  const std::int64_t chunk = std::clamp<std::int64_t>(scores_bytes / per_query, 1, n);
  // Queries whose centroid scores (a float each, and oneDNN's copy of it) are made at once: an eighth of the share.
  const std::int64_t coarse_rows = std::max<std::int64_t>(1, scores_bytes / 8 / (clusters * 2 * static_cast<std::int64_t>(sizeof(float))));
  std::vector<std::int64_t> first_pair(static_cast<std::size_t>(clusters + 1));
  std::vector<std::int64_t> pairs(static_cast<std::size_t>(chunk * probe));
  std::vector<std::int64_t> excluded_start(static_cast<std::size_t>(chunk * probe + 1));
  std::vector<std::int64_t> excluded_column;
  std::vector<std::int64_t> run_start(static_cast<std::size_t>(threads + 1));
  std::int64_t scanned = 0;
  const float minus_inf = -std::numeric_limits<float>::infinity();

  for (std::int64_t r0 = 0; r0 < n; r0 += chunk) {
    const std::int64_t c = std::min(chunk, n - r0);
    const torch::Tensor q_chunk = q.narrow(0, r0, c);
    const torch::Tensor q16 = bf16 ? q_chunk.to(torch::kBFloat16) : torch::Tensor();
    // Each query's `probe` best clusters, in ascending cluster order. The centroid scores are made a slice of the
    // chunk at a time: [chunk x clusters] floats at once, twice over while oneDNN's result is copied out, held 0.8 GB
    // at 23k queries x 4,562 clusters.
    torch::Tensor probed = torch::empty({c, probe}, torch::kInt64);
    for (std::int64_t s0 = 0; s0 < c; s0 += coarse_rows) {
      const std::int64_t rows = std::min(coarse_rows, c - s0);
      probed.narrow(0, s0, rows).copy_(std::get<0>(std::get<1>(chunk_inner_products(q_chunk.narrow(0, s0, rows), grouped.centroids).topk(probe, 1)).sort(1)));
    }
    const auto* probe_of = probed.data_ptr<std::int64_t>();
    // Inverted lists: the (query, slot) pairs of each cluster, by counting sort.
    std::fill(first_pair.begin(), first_pair.end(), 0);
    for (std::int64_t p = 0; p < c * probe; ++p) ++first_pair[static_cast<std::size_t>(probe_of[p] + 1)];
    for (std::int64_t cl = 0; cl < clusters; ++cl) first_pair[cl + 1] += first_pair[cl];
    {
      std::vector<std::int64_t> fill(first_pair.begin(), first_pair.end() - 1);
      for (std::int64_t p = 0; p < c * probe; ++p) pairs[static_cast<std::size_t>(fill[static_cast<std::size_t>(probe_of[p])]++)] = p;
    }
    // The chunk's work: every probing query against its cluster's keys (the products' entries).
    const auto work_of = [&](std::int64_t cl) { return (first_pair[cl + 1] - first_pair[cl]) * grouped.size(cl); };
    std::int64_t total = 0;
    for (std::int64_t cl = 0; cl < clusters; ++cl) total += work_of(cl);
    scanned += total;
    // Exclusions as columns of (query, slot) pairs: the excluded keys that lie in a cluster the query probes.
    std::fill(excluded_start.begin(), excluded_start.begin() + c * probe + 1, 0);
    excluded_column.clear();
    if (exclude) {
      std::vector<std::pair<std::int64_t, std::int64_t>> hits;  // (pair, column in its cluster's block)
      for (std::int64_t r = 0; r < c; ++r) {
        const std::int64_t* mine = probe_of + r * probe;
        for (std::int64_t e = ex_row[r0 + r]; e < ex_row[r0 + r + 1]; ++e) {
          const std::int64_t key = ex_key[e];
          if (key < 0 || key >= m) continue;
          const std::int64_t position = grouped.position_of[static_cast<std::size_t>(key)];
          const std::int64_t cl = grouped.cluster_at[static_cast<std::size_t>(position)];
          const std::int64_t* slot = std::lower_bound(mine, mine + probe, cl);
          if (slot == mine + probe || *slot != cl) continue;
          hits.emplace_back(r * probe + (slot - mine), position - grouped.start[cl]);
        }
      }
      for (const auto& hit : hits) ++excluded_start[static_cast<std::size_t>(hit.first + 1)];
      for (std::int64_t p = 0; p < c * probe; ++p) excluded_start[p + 1] += excluded_start[p];
      excluded_column.resize(hits.size());
      std::vector<std::int64_t> fill(excluded_start.begin(), excluded_start.begin() + c * probe);
      for (const auto& hit : hits) excluded_column[static_cast<std::size_t>(fill[static_cast<std::size_t>(hit.first)]++)] = hit.second;
    }
    // Runs of clusters of about equal work (queries × keys), one a thread.
    {
      std::int64_t done = 0, t = 1;
      run_start[0] = 0;
      for (std::int64_t cl = 0; cl < clusters && t < threads; ++cl) {
        done += work_of(cl);
        while (t < threads && done * threads >= total * t) run_start[static_cast<std::size_t>(t++)] = cl + 1;
      }
      while (t <= threads) run_start[static_cast<std::size_t>(t++)] = clusters;
    }
    std::vector<StreamingTopK> selectors;
    selectors.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) selectors.emplace_back(c, candidates);
    at::parallel_for(0, threads, 1, [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int64_t> rows;
      torch::Tensor keys16;  // with bfloat16 products: the cluster's keys converted, zero rows after them
      for (std::int64_t t = begin; t < end; ++t) {
        StreamingTopK& selector = selectors[static_cast<std::size_t>(t)];
        for (std::int64_t cl = run_start[t]; cl < run_start[t + 1]; ++cl) {
          const std::int64_t first = first_pair[cl], count = first_pair[cl + 1] - first;
          const std::int64_t width = grouped.size(cl);
          if (count == 0 || width == 0) continue;
          const std::int64_t row_count = bf16 ? padded(count) : count;
          rows.resize(static_cast<std::size_t>(row_count));
          for (std::int64_t i = 0; i < count; ++i) rows[i] = pairs[first + i] / probe;
          std::fill(rows.begin() + count, rows.end(), rows[0]);  // padding rows: scored, never offered
          const torch::Tensor picked = torch::from_blob(rows.data(), {row_count}, torch::kInt64);
          torch::Tensor block;
          std::int64_t row_stride = width;
          if (bf16) {
            // oneDNN's bfloat16 kernels, on shapes padded so that few distinct ones occur (the padding columns are
            // never offered). The keys are converted a cluster at a time, as they are multiplied: a bfloat16 copy of
            // them all would add half the float32 keys' memory (0.67 GB at 1.3M x 256) for a few seconds' saving.
            row_stride = padded(width);
            if (!keys16.defined() || keys16.size(0) < row_stride) keys16 = torch::empty({row_stride, grouped.dim}, torch::kBFloat16);
            keys16.narrow(0, 0, width).copy_(grouped.block(cl));
            keys16.narrow(0, width, row_stride - width).zero_();
            block = torch::mm(q16.index_select(0, picked), keys16.narrow(0, 0, row_stride).t()).to(torch::kFloat32).contiguous();
          } else {
            // torch::mm (the system BLAS, OpenBLAS under packaging/setup.sh, on this thread) rather than oneDNN: the
            // products' shapes change from cluster to cluster, and oneDNN makes a new kernel for every shape.
            block = torch::mm(q_chunk.index_select(0, picked), grouped.block(cl).to(torch::kFloat).t()).contiguous();
          }
          for (std::int64_t i = 0; i < count; ++i) {
            const std::int64_t p = pairs[first + i];
            float* row_scores = block.data_ptr<float>() + i * row_stride;
            for (std::int64_t e = excluded_start[p]; e < excluded_start[p + 1]; ++e) row_scores[excluded_column[e]] = minus_inf;
            selector.offer(p / probe, row_scores, grouped.start[cl], width);
          }
        }
      }
    });
    // Per query, the threads' candidates merged: the best k (equal scores in position order, as one selector over
    // every probed cluster would have ranked them, whatever the threads).
    float* score_out = out.scores.data_ptr<float>() + r0 * k;
    std::int64_t* id_out = out.indices.data_ptr<std::int64_t>() + r0 * k;
    at::parallel_for(0, c, 16, [&](std::int64_t begin, std::int64_t end) {
      const std::size_t all = static_cast<std::size_t>(threads * candidates);
      std::vector<float> candidate_score(all);
      std::vector<std::int64_t> candidate(all);
      std::vector<std::int64_t> order(all);
      for (std::int64_t r = begin; r < end; ++r) {
        std::int64_t found = 0;
        for (int t = 0; t < threads; ++t) {  // each thread's list, padded with -1, written after the ones before it
          selectors[static_cast<std::size_t>(t)].finish(r, candidate_score.data() + found, candidate.data() + found);
          const std::int64_t end_of_list = found + candidates;
          while (found < end_of_list && candidate[found] >= 0) ++found;
        }
        const auto better = [&](std::int64_t a, std::int64_t b) {
          return candidate_score[a] != candidate_score[b] ? candidate_score[a] > candidate_score[b] : candidate[a] < candidate[b];
        };
        for (std::int64_t j = 0; j < found; ++j) order[j] = j;
        std::int64_t kept = std::min(found, candidates);
        std::partial_sort(order.begin(), order.begin() + kept, order.begin() + found, better);
        if (bf16) {  // the candidates' float32 scores, and the best k of them
          const float* query = q_chunk.data_ptr<float>() + r * grouped.dim;
          for (std::int64_t j = 0; j < kept; ++j) candidate_score[order[j]] = grouped.score(query, candidate[order[j]]);
          const std::int64_t best = std::min(kept, k);
          std::partial_sort(order.begin(), order.begin() + best, order.begin() + kept, better);
          kept = best;
        }
        for (std::int64_t j = 0; j < k; ++j) {
          score_out[r * k + j] = j < kept ? candidate_score[order[j]] : minus_inf;
          id_out[r * k + j] = j < kept ? grouped.key_at[static_cast<std::size_t>(candidate[order[j]])] : -1;
        }
      }
    });
    if (options.progress != nullptr) {
      if (options.progress->cancelled()) throw Cancelled();
      options.progress->update(r0 + c);
    }
  }
  if (stats != nullptr) {
    stats->clusters = clusters;
    stats->probed = probe;
    stats->clustering_seconds = grouped.clustering_seconds;
    stats->scanned_fraction = static_cast<double>(scanned) / (static_cast<double>(n) * static_cast<double>(m));
  }
  return out;
}

}  // namespace xmc
